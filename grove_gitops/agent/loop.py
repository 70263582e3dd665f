"""The agent's one loop: watch, derive, decide, act.

Every event marks its workload (namespace, PodCliqueSet) dirty. A pass takes the dirty
workloads (and, every ``resync`` seconds, all of them: grace periods and terminationDelay
expire without any event), at most :data:`PASS_SLICE` objects and references of them plus
one large workload (:meth:`Agent._this_pass`), builds a :mod:`.snapshot` of each from the
cache, and asks the decision modules in a fixed order:

1. :mod:`.healing` (failed pods, MinAvailableBreached and gang termination),
   :mod:`.rollout` (retire old pods in Grove's order), :mod:`.scalein` (unwanted pods);
   their deletes run in parallel, ``Initialized`` resets before the deletes they explain;
2. :mod:`.release` on a fresh snapshot, so a slot freed in step 1 is released in the same
   pass; whole gangs are released together and then marked ``Initialized``.

Losing leadership stops everything at once (:class:`~.execute.Executor` asks ``active()``
before each write). A PodGang that cannot be read gets one Event and one warning and is
retried with backoff; it never blocks other gangs.
"""

from __future__ import annotations

import collections
import functools
import logging
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from grove_gitops.agent import blocked, decide, intent, release, rollout
from grove_gitops.agent import gangs as G
from grove_gitops.agent.actions import Action, DeletePod, Event, Memories, SetCondition
from grove_gitops.agent.cache import Key, WatchCache, WorkloadKey, workload_of
from grove_gitops.agent.execute import Executor
from grove_gitops.agent.kube import Kube
from grove_gitops.agent.ratelog import agent_log, describe
from grove_gitops.agent.scaling.limits import ScalingLimits
from grove_gitops.agent.scaling.scaler import Scaler
from grove_gitops.agent.snapshot import Snapshot, Views, Workload, build, unit_of
from grove_gitops.expand.scaling import API_VERSION as PCS_API_VERSION
from grove_gitops.expand.scaling import PCS_KIND
from grove_gitops.gitops.metrics import Registry

log = logging.getLogger("grove_gitops.agent")
INITIALIZED = "Initialized"
SLOW_PASS = 1.0  # a pass at least this long is logged (what it covered, how long deciding took)
#: What one pass may cover, in objects and pod references (:meth:`~.cache.WatchCache.cost`):
#: dirty workloads go cheapest first while they fit, a workload that does not fit waits for a
#: later pass (one of those per pass, oldest first), and the resync under way fills what is
#: left. So a small workload's event waits for one large workload at most, never for every
#: large one in the cluster (issue 21: hostile PodGangs in one namespace made the passes, and
#: the releases of every other namespace queued behind them, take seconds).
PASS_SLICE = 5_000
#: Of that, what one pass may spend on the resync under way (same units). A resync re-derives
#: every workload; done in one pass it took 220-500 ms for fifty workloads of twenty pods on a
#: loaded machine, and every event that came meanwhile (a replacement turning Ready: the
#: next rollout step) waited for it (issue 35.1). In slices of this size a resync runs over
#: several short passes, and an event waits for one slice at most.
RESYNC_SLICE = 250
PASS_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


@dataclass
class AgentConfig:
    namespace: str | None = None
    concurrency: int = 16
    recheck: float = 0.25  # gangs waiting for a backend object are asked again this often
    resync: float = 2.0  # every workload is re-derived this often (timers expire silently)
    grace: float = 60.0  # a released pod no PodGang wants is deleted after this long
    # a gated pod no PodGang lists, not known to be behind its PodGangs (intent.py)
    unordered_grace: float = intent.UNORDERED_GRACE
    day2: bool = True  # rolling updates, healing, scale-in (False: gate release only)
    watch_timeout: int = 60
    watch_read_timeout: float = 2.0
    max_retries: int = 5
    backoff_base: float = 0.05
    backoff_max: float = 2.0
    stale_after: float = 30.0  # /healthz fails when a loop has not made progress for this long
    batch_window: float = 0.02  # after an event, wait this long so one pass takes the whole burst
    # scale targets and the objects above the autoscaling floor (docs/autoscaling.md)
    autoscaling: bool = True
    # the autoscaling loop's own limits, never a record's (agent/scaling/limits.py)
    scaling_limits: ScalingLimits = field(default_factory=ScalingLimits)
    # a rollout or gang waiting longer than this says why (RolloutBlocked, a metric, a log line)
    blocked_after: float = blocked.DEFAULT_THRESHOLD


class Agent:
    def __init__(
        self,
        kube: Kube,
        config: AgentConfig,
        registry: Registry | None = None,
        active: Callable[[], bool] = lambda: True,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.kube = kube
        self.config = config
        self.registry = registry or Registry()
        self.active = active
        self.clock = clock
        self.cache = WatchCache(kube, self.registry, config.namespace, watch_timeout=config.watch_timeout,
                                watch_read_timeout=config.watch_read_timeout, backoff=self._backoff)
        self.executor = Executor(self.cache, self.registry, active, max_retries=config.max_retries, backoff=self._backoff)
        self.memory = Memories()
        self.waits = blocked.Waits(self.registry, config.blocked_after)  # only the loop thread uses it
        self._warned: set[str] = set()  # problems of no workload, already logged
        # uids of pods this agent deleted (DELETE sent): whatever the cache says later (a
        # watch event older than the DELETE), such a pod is terminating to every decision and
        # never counts towards a gang's completeness (issue 22); dropped once the cache holds
        # no pod with that uid (on resync)
        self._deleted_uids: set[str] = set()
        self.views = Views()  # parsed objects per resourceVersion (only the loop thread uses it)
        self._pool = ThreadPoolExecutor(max_workers=config.concurrency, thread_name_prefix="agent")
        self._waiting: dict[Key, float] = {}  # gang -> since when it waits
        # Of those, the gangs asked again whatever the watches say, with when (monotonic): a
        # backend object (not watched) or a failed release at the next pass, a malformed gang
        # when its backoff ends. Every other waiting gang waits for a pod or PodGang of its own
        # workload, whose watch event marks the workload dirty: re-deciding every waiting gang
        # on every pass made each pass cost as much as all of them in the cluster (issue 21:
        # a namespace of hostile PodGangs slowed releases in all others).
        self._poll: dict[Key, float] = {}
        self._complete_since: dict[Key, float] = {}
        self._bad: dict[Key, tuple[int, float]] = {}  # malformed gang -> (failures, retry at)
        self._bad_rv: dict[Key, str] = {}  # the resourceVersion found malformed: a new one is read at once
        self._reported: dict[Key, str] = {}
        self._threads: list[threading.Thread] = []
        # Pods with a DELETE or gate PATCH under way (run without the loop waiting for it):
        # no decision about them is carried out until it ends, so nothing is sent twice.
        self._inflight: set[Key] = set()
        self._inflight_lock = threading.Lock()
        # Of those, the pods being deleted: every decision sees them as terminating already
        # (what the API server will say), so a rollout never starts a second step meanwhile.
        self._deleting: set[Key] = set()
        # PodGang -> (its workload, condition/Event writes queued, each with whether it holds
        # the workload back: it is not decided about again until those are written)
        self._gang_queues: dict[Key, tuple[WorkloadKey, list[tuple[list[Action], bool]]]] = {}
        self._holding: dict[WorkloadKey, int] = {}  # workload -> queued batches that hold it back
        self._last_resync = 0.0
        self._resync: collections.deque[WorkloadKey] = collections.deque()  # still to re-derive
        self._deferred: collections.deque[WorkloadKey] = collections.deque()  # dirty, too large so far
        self._pass_ended = 0.0  # when the last pass ended (monotonic)
        self.passes = 0
        self._decide_s = 0.0  # this pass's time spent deciding (reported as a metric)
        self._asked_s = 0.0  # time spent asking the API server whether backend objects exist
        self.pass_max = 0.0  # the longest pass (seconds): the rollout benchmark reports it
        # Releases and the autoscaling loop's deletes of the same pods never overlap (issue 31).
        self.guard = release.ReleaseGuard()
        self.scaler = (
            Scaler(kube, self.cache, config.namespace, self.registry, active, resync=config.resync,
                   watch_read_timeout=config.watch_read_timeout, limits=config.scaling_limits, guard=self.guard)
            if config.autoscaling else None
        )

    # -- compatibility with the gate-lifter's surface ----------------------------------
    @property
    def pods(self) -> dict[Key, dict[str, object]]:
        return self.cache.pods

    @property
    def podgangs(self) -> dict[Key, dict[str, object]]:
        return self.cache.podgangs

    @property
    def patches(self) -> int:
        return self.executor.patches

    @property
    def progress(self) -> dict[str, float]:
        return self.cache.progress

    def ready(self) -> bool:
        return self.cache.ready()

    def healthy(self) -> bool:
        """Every loop thread is alive and has made progress within ``stale_after`` seconds.

        With an unreachable or hanging API server the watchers stop making progress, so the
        liveness probe fails and Kubernetes restarts the process instead of leaving it idle.
        """
        now = time.monotonic()
        alive = all(t.is_alive() for t in self._threads)
        scaling = self.scaler is None or not self._threads or (
            now - self.scaler.progress < self.config.stale_after and self.scaler.healthy())
        return alive and scaling and all(now - t < self.config.stale_after for t in self.cache.progress.values())

    def _backoff(self, attempt: int, slow: bool = False) -> float:
        """Exponential backoff; ``slow`` (a malformed object, fixed only by a person) starts
        at one second and tops out at five minutes."""
        if slow:
            return float(min(300.0, 2 ** max(0, attempt - 1)))
        return float(min(self.config.backoff_max, self.config.backoff_base * 2 ** max(0, attempt - 1)))

    # -- one pass ----------------------------------------------------------------------
    def _snapshot(self, wl: WorkloadKey) -> Snapshot:
        pods, gangs = self.cache.workload(wl)
        with self.cache.lock:
            # Pods these PodGangs list that belong to another workload: seen, so a bad
            # reference is reported (and never acted on).
            total = 0
            for key, gang in sorted(gangs.items()):
                try:
                    refs = self.views.gang(key, gang)[1]
                except G.MalformedPodGang:
                    continue
                total += len(refs)
                if total > G.MAX_WORKLOAD_PODS:
                    break  # the snapshot finds these PodGangs malformed (snapshot.build)
                for _, ns, name in refs:
                    if (ns, name) not in pods and (ns, name) in self.cache.pods:
                        pods[(ns, name)] = self.cache.pods[(ns, name)]
            elsewhere = [k for k in pods if self.cache.ref_count.get(k)]
        with self._inflight_lock:
            deleting = self._deleting & pods.keys()
            if self._deleted_uids:
                deleting |= {k for k, p in pods.items()
                             if str((p.get("metadata") or {}).get("uid", "")) in self._deleted_uids}
        return build(pods, gangs, elsewhere, self.views, deleting)

    def _object_exists(self, ref: G.ObjectRef) -> bool:
        """Ask the API server every time: a backend object deleted since the last check must
        not be remembered as present (asked only once everything else is in place)."""
        began = time.monotonic()
        try:
            return self.kube.object_exists(ref)
        except ApiException as exc:
            self.registry.inc("grove_gitops_lifter_api_errors_total", "API errors", code=str(exc.status or 0))
            return False
        except (HTTPError, OSError):
            self.registry.inc("grove_gitops_lifter_api_errors_total", "API errors", code="connection")
            return False
        finally:
            self._asked_s += time.monotonic() - began

    def _warn_problems(self, snap: Snapshot) -> None:
        """Log each problem once (a warning, no Event: problems can repeat on every pass and
        an Event per PodGang would be noise; the agent deletes nothing in their presence)."""
        for wl_key, problem in snap.problems:
            warned = self.memory.of(wl_key).warned if wl_key is not None else self._warned
            if problem in warned:
                continue
            if len(self._warned) > 10_000:
                self._warned.clear()  # bounded: at worst a problem is logged again
            warned.add(problem)
            log.warning("%s", problem)
            self.registry.inc("grove_gitops_agent_problems_total", "Surprising cluster states the agent left alone")

    def day2_actions(self, snap: Snapshot, now: float) -> list[Action]:
        """Every day-2 action of one snapshot, in the order they must run (:mod:`.decide`)."""
        actions, progress = decide.day2_actions(snap, self.memory, now, self.config.grace, self.config.unordered_grace)
        for wl, found in progress:
            actions += self._rollout_wait(wl, found, now)
            self.registry.set("grove_gitops_agent_outdated_pods", "Old pods still running", float(found.outdated),
                              namespace=wl.namespace, podcliqueset=wl.pcs)
            if found.replica is not None:
                self.registry.set("grove_gitops_agent_rollout_step", "Step of the replica being rolled",
                                  float(found.step), namespace=wl.namespace, podcliqueset=wl.pcs)
        return actions

    def _rollout_wait(self, wl: Workload, found: rollout.Progress, now: float) -> list[Action]:
        """Report a rollout that waits past the threshold (:mod:`.blocked`): the condition on
        the replica's base PodGang and the ``gitops.grove.io`` PodCliqueSet, metric, log."""
        gang = rollout.base_gang(wl, found.replica) if found.replica is not None else None
        wait = blocked.Wait(*found.blocked) if found.blocked is not None and gang is not None else None
        writes = self.waits.observe(("rollout", wl.namespace, wl.pcs), wl.key, (wl.namespace, gang) if gang else None,
                                    wait, now)
        if wait is None:
            for name, view in wl.gangs.items():
                writes += self.waits.stale(("rollout", wl.namespace, wl.pcs), (wl.namespace, name), view.raw,
                                           False, now)
        for write in writes:
            self._pool.submit(self._mirror_to_podcliqueset, wl.key, write)
        reported = self.waits.blocked(("rollout", wl.namespace, wl.pcs))
        if not writes and reported is not None and self._mirror_lost(wl.key, reported):
            # The autoscaling half rewrote the record's status from an older copy: say it again.
            self._pool.submit(self._mirror_to_podcliqueset, wl.key, reported)
        return list(writes)

    def _mirror_lost(self, wl: WorkloadKey, reported: SetCondition) -> bool:
        if self.scaler is None:
            return False
        obj = self.scaler.gitops.get(PCS_KIND, wl)
        if obj is None:
            return False
        conditions = (obj.get("status") or {}).get("conditions") or []
        kept = next((c for c in conditions if isinstance(c, dict) and c.get("type") == blocked.ROLLOUT_BLOCKED), None)
        return kept is None or kept.get("status") != "True" or kept.get("reason") != reported.reason

    def _mirror_to_podcliqueset(self, wl: WorkloadKey, write: SetCondition) -> None:
        """The RolloutBlocked condition on the workload's ``gitops.grove.io`` PodCliqueSet, when
        there is one (the autoscaling half reads it; without it, only the PodGang says it)."""
        if self.scaler is None or not self.active():
            return
        obj = self.scaler.gitops.get(PCS_KIND, wl)
        if obj is None:
            return
        old = [c for c in ((obj.get("status") or {}).get("conditions") or []) if isinstance(c, dict)]
        kept = next((c for c in old if c.get("type") == blocked.ROLLOUT_BLOCKED), None)
        since = write.since if write.since is not None else self.clock()
        condition = {"type": blocked.ROLLOUT_BLOCKED, "status": write.status, "reason": write.reason,
                     "message": write.message,
                     "lastTransitionTime": str(kept.get("lastTransitionTime")) if kept and kept.get("status") == write.status
                     else blocked.iso(since),
                     "observedGeneration": int((obj.get("metadata") or {}).get("generation") or 0)}
        conditions = [c for c in old if c.get("type") != blocked.ROLLOUT_BLOCKED] + [condition]
        try:
            done = self.kube.patch_object(PCS_API_VERSION, PCS_KIND, wl[0], wl[1], {"status": {"conditions": conditions}},
                                          subresource="status")
            self.scaler.gitops.put(PCS_KIND, done)
        except (ApiException, HTTPError, OSError) as exc:
            agent_log.warning("RolloutBlocked of PodCliqueSet %s/%s not written: %s", wl[0], wl[1], describe(exc),
                              key=f"pcs-blocked:{describe(exc)}")

    def _gang_waits(self, decisions: dict[Key, object], now: float) -> list[Action]:
        """Report gangs that wait for release past the threshold (whole gangs only: a slot of
        an initialized gang waits for its rollout, which reports itself)."""
        out: list[Action] = []
        for key, decision in decisions.items():
            if not isinstance(decision, release.GangRelease):
                continue
            wait = None
            if decision.whole_gang and not decision.complete:
                named = decision.waiting_for[:3]
                more = len(decision.waiting_for) - len(named)
                wait = blocked.Wait(blocked.GANG_INCOMPLETE, "the gang is released whole, and waits for "
                                    + ", ".join(named) + (f" and {more} more" if more > 0 else ""))
            with self.cache.lock:
                raw = self.cache.podgangs.get(key)
            wl = workload_of(raw) if raw is not None else (key[0], "")
            out += self.waits.observe(("gang", key[0], key[1]), wl, key if raw is not None else None, wait, now)
            if wait is None:
                out += self.waits.stale(("gang", key[0], key[1]), key, raw, True, now)
        return out

    def _in_background(self, key: Key, call: Callable[[], bool], deleting: str | None = None) -> Future[bool] | None:
        """Start one pod write in the pool; None when one for that pod is already under way.

        ``deleting``: the uid of the pod a DELETE is for. The pass does not wait: while the
        write runs the pod is in flight, and when it ends (the executor has put the answer
        into the cache by then) the pod's workload is marked dirty, so the next pass continues
        from the new state. A pod deleted stays terminating to every decision (its uid is
        remembered); a DELETE that did not happen forgets it again.
        """
        with self._inflight_lock:
            if key in self._inflight:
                return None
            self._inflight.add(key)
            if deleting is not None:
                self._deleting.add(key)
                self._deleted_uids.add(deleting)
        with self.cache.lock:
            pod = self.cache.pods.get(key)
        wl = workload_of(pod) if pod is not None else (key[0], "")

        def run() -> bool:
            done = False
            try:
                done = call()
                return done
            finally:
                with self._inflight_lock:
                    self._inflight.discard(key)
                    self._deleting.discard(key)
                    if deleting is not None and not done:
                        self._deleted_uids.discard(deleting)
                with self.cache.lock:
                    self.cache.dirty.add(wl)
                    self.cache.wake.notify_all()

        return self._pool.submit(run)

    def _ungate_counted(self, namespace: str, name: str, uid: str) -> bool:
        pods = self._releasable([(namespace, name)], {name: uid})
        if pods is None:
            return False
        try:
            lifted = self.executor.ungate(namespace, name, uid)
        finally:
            self.guard.end(pods)
        if lifted:
            self.registry.inc("grove_gitops_lifter_gates_lifted_total", "Scheduling gates removed")
            log.info("released pod %s/%s of an initialized gang", namespace, name)
        return lifted

    def _releasable(self, keys: list[Key], uids: dict[str, str]) -> list[dict[str, object]] | None:
        """The pods ``keys`` as the cache holds them now, marked as being released, when every
        one exists (with the uid decided about, for those in ``uids``), is not terminating or
        being deleted, and is still wanted (:class:`~.release.ReleaseGuard`); else None.
        Whoever gets pods here calls ``self.guard.end`` with them."""
        with self.cache.lock:
            pods = [self.cache.pods.get(k) for k in keys]
        found: list[dict[str, object]] = []
        with self._inflight_lock:
            for key, pod in zip(keys, pods, strict=True):
                meta: dict[str, object] = (pod or {}).get("metadata") or {}
                uid = str(meta.get("uid") or "")
                if pod is None or meta.get("deletionTimestamp") or key in self._deleting or uid in self._deleted_uids:
                    return None
                if key[1] in uids and uids[key[1]] != uid:
                    return None
                found.append(pod)
            deleting = list(self._deleting)
        if deleting and self._unit_still_being_vacated(found, deleting):
            return None
        return found if self.guard.begin(found) else None

    def _unit_still_being_vacated(self, pods: list[dict[str, object]], deleting: list[Key]) -> bool:
        """Whether a DELETE of another pod of the same scaling-group replica is still on its way.

        A step retires a scaling-group replica whole: its DELETEs are sent in parallel, and the
        first pod can be gone (its slot free) before the last DELETE has reached the server. A
        replacement released then would run beside an old pod of its replica that is not even
        terminating yet: a partial gang (seen on the real control plane, whose nodes finish a
        deletion at once). So a replica's replacements wait until every DELETE of the step is
        answered; a standalone pod has only its own slot, which the caller already checks."""
        units = {u for p in pods if (u := unit_of(p)) is not None}
        if not units:
            return False
        with self.cache.lock:
            others = [self.cache.pods.get(k) for k in deleting]
        return any(o is not None and unit_of(o) in units for o in others)

    def _run_actions(self, actions: list[Action], wait: bool = True) -> int:
        """Execute: Initialized resets first, then deletes (in parallel; waited for only when
        ``wait``), then conditions and Events."""
        seen: set[tuple[str, str]] = set()
        first = [a for a in actions if isinstance(a, SetCondition) and a.type == INITIALIZED]
        deletes = []
        for a in actions:
            if isinstance(a, DeletePod) and (a.namespace, a.name) not in seen:
                seen.add((a.namespace, a.name))
                deletes.append(a)
        rest = [a for a in actions if not isinstance(a, DeletePod) and a not in first]
        for a in first:
            self.executor.set_condition(a)
        futures = [f for a in deletes
                   if (f := self._in_background((a.namespace, a.name), functools.partial(self.executor.delete, a), a.uid))]
        done = sum(1 for f in futures if f.result()) if wait else 0
        # Conditions and Events: PodGangs in parallel, each PodGang's in order (a status
        # patch carries the whole condition list, so two at once could lose one).
        by_gang: dict[Key, list[Action]] = {}
        for a in rest:
            # A condition the PodGang already states is left out here: in the background a
            # no-op would still end in a new pass, and that pass would decide it again.
            if isinstance(a, Event) or (isinstance(a, SetCondition) and self.executor.needed(a)):
                by_gang.setdefault(a.gang, []).append(a)
        if wait:
            list(self._pool.map(self._gang_writes, by_gang.values()))
        else:
            for gang, writes in by_gang.items():
                self._gang_in_background(gang, writes)
        return done

    def _gang_in_background(self, gang: Key, writes: list[Action]) -> None:
        """Queue one PodGang's condition and Event writes behind any still under way for it
        (first in, first out, one at a time per PodGang); the pass does not wait. When the
        queue is drained the workload is marked dirty, as after a pod write."""
        with self.cache.lock:
            raw = self.cache.podgangs.get(gang)
        wl = workload_of(raw) if raw is not None else (gang[0], "")
        # Only an Event or a condition whose status changes holds the workload's decisions
        # back; a step counter refresh changes nothing any decision reads.
        holds = any(isinstance(a, Event) or (isinstance(a, SetCondition) and self.executor.changes_status(a))
                    for a in writes)
        with self._inflight_lock:
            if holds:
                self._holding[wl] = self._holding.get(wl, 0) + 1
            queued = self._gang_queues.get(gang)
            if queued is not None:
                if any(batch == writes for batch, _ in queued[1]):
                    # The same writes are waiting already (a pass decided them again before the
                    # first copy landed in the cache): once is enough.
                    if holds:
                        self._holding[wl] -= 1
                        if not self._holding[wl]:
                            del self._holding[wl]
                    return
                queued[1].append((writes, holds))
                return
            self._gang_queues[gang] = (wl, [(writes, holds)])

        def drain() -> None:
            while True:
                with self._inflight_lock:
                    queue = self._gang_queues[gang][1]
                    if not queue:
                        del self._gang_queues[gang]
                        break
                    batch, held = queue.pop(0)
                try:
                    self._gang_writes(batch)
                except Exception:  # a write that failed is decided again on the next pass
                    log.exception("writing to PodGang %s/%s failed", gang[0], gang[1])
                if held:
                    with self._inflight_lock:
                        left = self._holding.get(wl, 1) - 1
                        if left > 0:
                            self._holding[wl] = left
                        else:
                            self._holding.pop(wl, None)
            with self.cache.lock:
                self.cache.dirty.add(wl)
                self.cache.wake.notify_all()

        self._pool.submit(drain)

    def _gang_writes(self, actions: list[Action]) -> None:
        for a in actions:
            if isinstance(a, SetCondition):
                self.executor.set_condition(a)
            elif isinstance(a, Event):
                self.executor.event(a)

    def sync_workloads(self, keys: Iterable[WorkloadKey], wait: bool = True) -> None:
        """One pass over some workloads: day-2 actions, then releases. The loop passes
        ``wait=False``: pod deletes and the gate patches of initialized gangs then run on
        while it goes on deciding (see :meth:`_in_background`)."""
        started = time.monotonic()
        self._decide_s = 0.0
        keys = sorted(set(keys))
        now = self.clock()
        unchanged: dict[WorkloadKey, Snapshot] = {}
        if self.config.day2 and self.active():
            # Decide for every workload first, then act on all of them at once: the deletes
            # of fifty PodCliqueSets rolling side by side go out in parallel, not one
            # workload's round trips after another's.
            actions: list[Action] = []
            with self._inflight_lock:
                writing = set(self._holding)
            for wl in keys:
                if wl in writing:
                    # Its PodGang writes are still under way: deciding now would read the
                    # conditions they change (and repeat their Events). Their end marks it dirty.
                    continue
                snap = self._snapshot(wl)
                self._warn_problems(snap)
                found = self.day2_actions(snap, now)
                if found:
                    actions += found
                else:
                    unchanged[wl] = snap  # nothing done to it: the release step reads the same state
            self._decide_s += time.monotonic() - started
            if actions and self.active():
                self._run_actions(actions, wait)
        gang_keys: set[Key] = set(self._poll_due())
        for wl in keys:
            _, gangs = self.cache.workload(wl)
            gang_keys.update(gangs)
        self.sync_gangs(sorted(gang_keys), unchanged, wait)
        self.passes += 1
        took = time.monotonic() - started
        self.pass_max = max(self.pass_max, took)
        self.registry.observe("grove_gitops_agent_pass", "Time of one agent pass, API calls included", took, PASS_BUCKETS)
        self.registry.observe("grove_gitops_agent_decide", "Time of one pass spent deriving state and deciding "
                              "(no API calls)", self._decide_s, PASS_BUCKETS)
        self.registry.set("grove_gitops_agent_pass_longest_seconds", "The longest agent pass so far", self.pass_max)
        if took >= SLOW_PASS:
            log.info("slow pass: %d workloads, %d gangs in %.2f s (deciding %.2f s)", len(keys), len(gang_keys),
                     took, self._decide_s)

    # -- releases ----------------------------------------------------------------------
    def _report_bad(self, key: Key, problem: str) -> None:
        """One warning and one Event per distinct problem of a gang; then retry with backoff."""
        failures = self._bad.get(key, (0, 0.0))[0] + 1
        self._bad[key] = (failures, time.monotonic() + self._backoff(failures, slow=True))
        with self.cache.lock:
            self._bad_rv[key] = str(((self.cache.podgangs.get(key) or {}).get("metadata") or {}).get("resourceVersion", ""))
        self.registry.inc("grove_gitops_lifter_malformed_podgangs_total", "PodGangs that could not be read")
        if self._reported.get(key) == problem:
            return
        self._reported[key] = problem
        log.warning("PodGang %s/%s cannot be evaluated: %s", key[0], key[1], problem)
        with self.cache.lock:
            gang = self.cache.podgangs.get(key)
        if gang is not None:
            self.kube.emit_event(key[0], gang, "MalformedPodGang", f"grove-gitops agent cannot evaluate this PodGang: {problem}")

    def _this_pass(self, dirty: set[WorkloadKey]) -> set[WorkloadKey]:
        """The workloads this pass derives, within :data:`PASS_SLICE` plus one large workload:
        the dirty ones that fit, cheapest first (the others wait, in order), the oldest
        waiting one, then the resync under way while room is left."""
        costs = {wl: self.cache.cost(wl) for wl in dirty}
        take: set[WorkloadKey] = set()
        total = 0
        for wl in sorted(dirty, key=lambda w: (costs[w], w)):
            if total + costs[wl] <= PASS_SLICE:
                take.add(wl)
                total += costs[wl]
            elif wl not in self._deferred:
                self._deferred.append(wl)
        if take:
            self._deferred = collections.deque(w for w in self._deferred if w not in take)
        if self._deferred:
            wl = self._deferred.popleft()
            take.add(wl)
            total += self.cache.cost(wl)
        budget = min(RESYNC_SLICE, PASS_SLICE - total)
        while self._resync and budget > 0:
            wl = self._resync.popleft()
            if wl not in take:
                take.add(wl)
                cost = self.cache.cost(wl)
                total += cost
                budget -= cost
        return take

    def _wait(self, key: Key, since: float, *, poll: bool) -> None:
        """The gang waits; ``poll``: it is asked again at the next pass, or when its backoff
        ends if it is malformed (else only when an event marks its workload dirty)."""
        self._waiting.setdefault(key, since)
        if poll:
            bad = self._bad.get(key)
            self._poll[key] = bad[1] if bad is not None else time.monotonic() + self.config.recheck
        else:
            self._poll.pop(key, None)

    def _not_waiting(self, key: Key) -> None:
        self._waiting.pop(key, None)
        self._poll.pop(key, None)

    def _poll_due(self) -> list[Key]:
        now = time.monotonic()
        return [k for k, due in self._poll.items() if due <= now]

    def evaluate(self, key: Key) -> release.GangRelease:
        """The release decision for one gang (raises MalformedPodGang)."""
        wl = self._workload_of_gang(key)
        snap = self._snapshot(wl)
        pods, gangs = self.cache.workload(wl)
        result = release.decide_all([key], snap, pods, gangs, self._object_exists)[key]
        if isinstance(result, G.MalformedPodGang):
            raise result
        return result

    def _workload_of_gang(self, key: Key) -> WorkloadKey:
        with self.cache.lock:
            gang = self.cache.podgangs.get(key)
        return workload_of(gang) if gang is not None else (key[0], "")

    def sync_gang(self, key: Key) -> bool:
        """Evaluate one gang and release what it allows; True when nothing is left to wait for."""
        return self.sync_gangs([key])[key]

    def sync_gangs(
        self, keys: list[Key], snapshots: dict[WorkloadKey, Snapshot] | None = None, wait: bool = True
    ) -> dict[Key, bool]:
        """Evaluate gangs and release what each allows (``snapshots``: workloads already
        derived in this pass and left untouched since, so they need not be derived again).

        The pods of all releasable gangs go to the worker pool together, so many small gangs
        completing at once (a sync of a large app) are released in parallel; a gang that is not
        Initialized is still released only as a whole.
        """
        done: dict[Key, bool] = {}
        now = time.monotonic()
        by_wl: dict[WorkloadKey, list[Key]] = {}
        for key in keys:
            bad = self._bad.get(key)
            with self.cache.lock:
                rv = str(((self.cache.podgangs.get(key) or {}).get("metadata") or {}).get("resourceVersion", ""))
            if bad is not None and now < bad[1] and self._bad_rv.get(key) == rv:
                self._wait(key, now, poll=True)
                done[key] = False
                continue
            by_wl.setdefault(self._workload_of_gang(key), []).append(key)
        releasing: dict[Key, tuple[float, bool, list[Future[bool]], list[dict[str, object]]]] = {}
        for wl, wl_keys in sorted(by_wl.items()):
            try:
                began = time.monotonic()
                snap = (snapshots or {}).get(wl) or self._snapshot(wl)
                pods, gangs = self.cache.workload(wl)
                asked = self._asked_s
                decisions = release.decide_all(wl_keys, snap, pods, gangs, self._object_exists)
                self._decide_s += time.monotonic() - began - (self._asked_s - asked)
            except Exception as exc:  # one workload's surprise must never block the others
                log.exception("evaluating workload %s/%s failed", wl[0], wl[1])
                for key in wl_keys:
                    self._report_bad(key, f"{type(exc).__name__}: {exc}")
                    self._wait(key, now, poll=True)
                    done[key] = False
                continue
            waits = self._gang_waits(dict(decisions), self.clock())
            if waits and self.active():
                self._run_actions(waits, wait=False)
            for key in wl_keys:
                decision = decisions[key]
                if isinstance(decision, G.MalformedPodGang):
                    self._report_bad(key, str(decision))
                    self._wait(key, now, poll=True)
                    done[key] = False
                    continue
                self._bad.pop(key, None)
                self._reported.pop(key, None)
                if not decision.complete and decision.whole_gang:
                    if key in self.cache.podgangs:
                        self._wait(key, time.monotonic(), poll=decision.poll)
                    else:
                        self._not_waiting(key)
                    done[key] = False
                    continue
                if decision.complete:
                    self._not_waiting(key)
                else:
                    self._wait(key, time.monotonic(), poll=False)  # a slot or base gang: its pods' events
                complete_at = self._complete_since.setdefault(key, time.monotonic())
                if not self.active():
                    self._wait(key, time.monotonic(), poll=True)
                    done[key] = False
                    continue
                done[key] = decision.complete
                if not wait and not decision.whole_gang:
                    # Pods of an initialized gang, one by one (a rollout step's release):
                    # nothing follows from them in this pass, so the pass does not wait.
                    for name, uid in decision.to_ungate:
                        self._in_background((key[0], name), functools.partial(self._ungate_counted, key[0], name, uid))
                    self._complete_since.pop(key, None)
                    continue
                # Re-checked at the moment of release: a whole gang's every member, else the pods.
                members = ([(ns, n) for _, ns, n in G.referenced_pods(gangs.get(key) or {})] if decision.whole_gang
                           else [(key[0], n) for n, _ in decision.to_ungate])
                held = self._releasable(members, dict(decision.to_ungate)) if members else None
                if held is None:
                    self._wait(key, time.monotonic(), poll=True)
                    done[key] = False
                    continue
                futures = [self._pool.submit(self.executor.ungate, key[0], name, uid) for name, uid in decision.to_ungate]
                releasing[key] = (complete_at, decision.whole_gang and decision.complete, futures, held)
        for key, (complete_at, whole, futures, held) in releasing.items():
            try:  # the gang's Initialized too is written before the autoscaling loop may delete it
                self._released(key, complete_at, whole, futures, done)
            finally:
                self.guard.end(held)
        return done

    def _released(self, key: Key, complete_at: float, whole: bool, futures: list[Future[bool]],
                  done: dict[Key, bool]) -> None:
        """The end of one gang's release: count it, and mark a whole gang ``Initialized``."""
        results = [f.result() for f in futures]
        lifted = sum(1 for r in results if r)
        if lifted:
            self.registry.inc("grove_gitops_lifter_gates_lifted_total", "Scheduling gates removed", float(lifted))
            self.registry.observe(
                "grove_gitops_lifter_release", "Time from gang complete to release", time.monotonic() - complete_at
            )
            if whole:
                log.info("released gang %s/%s (%d pods)", key[0], key[1], lifted)
            else:
                log.info("released %d pods of initialized gang %s/%s", lifted, key[0], key[1])
        if not all(results):
            done[key] = False
            self._wait(key, time.monotonic(), poll=True)  # a failed patch: try again
            return
        self._complete_since.pop(key, None)
        if whole:
            self.executor.set_condition(
                SetCondition(key, INITIALIZED, "True", "PodGangPodsCreated", "PodGang is fully initialized")
            )

    # -- the loop ----------------------------------------------------------------------
    def run(self, stop: threading.Event) -> None:
        watchers = [
            threading.Thread(target=self.cache.list_watch, args=(kind, stop), name=f"watch-{kind}", daemon=True)
            for kind in ("pods", "podgangs")
        ]
        if self.scaler is not None:
            watchers.append(threading.Thread(target=self.scaler.run, args=(stop,), name="scaler", daemon=True))
        self._threads = [*watchers, threading.current_thread()]
        for t in watchers:
            t.start()
        try:
            while not stop.is_set():
                self.cache.mark("worker")
                if not self.active():
                    stop.wait(0.1)
                    continue
                with self.cache.lock:
                    if not self.cache.dirty and not self._deferred and not self._resync:
                        self.cache.wake.wait(self.config.recheck)
                    burst = bool(self.cache.dirty)
                if burst and self.config.batch_window > 0 and time.monotonic() - self._pass_ended >= self.config.batch_window:
                    # Idle until now: let the rest of the burst arrive, one pass for it all. (Right
                    # after a pass the events that came during it are a batch already.)
                    stop.wait(self.config.batch_window)
                gone: list[Key] = []
                with self.cache.lock:
                    batch = set(self.cache.dirty)
                    self.cache.dirty.clear()
                    if time.monotonic() - self._last_resync >= self.config.resync and self.cache.ready():
                        if not self._resync:  # the last resync is done: start the next one
                            self._resync.extend(sorted(self.cache.by_workload))
                        self._last_resync = time.monotonic()
                        self.views.retain(set(self.cache.pods), set(self.cache.podgangs))
                        self.memory.retain(set(self.cache.by_workload))
                        self.waits.retain({("rollout", ns, pcs) for ns, pcs in self.cache.by_workload}
                                          | {("gang", ns, name) for ns, name in self.cache.podgangs})
                        live_uids = {str((p.get("metadata") or {}).get("uid", "")) for p in self.cache.pods.values()}
                        with self._inflight_lock:
                            self._deleted_uids &= live_uids
                        self.guard.forget(live_uids)
                        gone = [k for k in self._waiting if k not in self.cache.podgangs]
                for key in gone:
                    self._not_waiting(key)  # a gang deleted while it waited (no event names it again)
                if stop.is_set() or not self.active():
                    continue
                if not self.cache.ready():
                    with self.cache.lock:
                        self.cache.dirty |= batch
                    stop.wait(0.05)
                    continue
                batch = self._this_pass(batch)
                if not batch and not self._poll_due():
                    continue  # nothing changed and no gang must be asked again: no pass (none counted)
                try:
                    self.sync_workloads(batch, wait=False)
                except Exception:
                    log.exception("a pass over %d workloads failed", len(batch))
                    with self.cache.lock:
                        self.cache.dirty |= batch
                self._pass_ended = time.monotonic()
                self.registry.set(
                    "grove_gitops_lifter_gangs_waiting", "Gangs not yet complete", float(len(self._waiting))
                )
                self.registry.set("grove_gitops_agent_cached_pods", "Managed pods in the agent's watch cache",
                                  float(len(self.cache.pods)))
        finally:
            stop.set()
            with self.cache.lock:
                self.cache.wake.notify_all()
            for t in watchers:
                t.join(timeout=5)
            self._pool.shutdown(wait=True, cancel_futures=True)
