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

This module owns the pass driver (what a pass covers, :meth:`Agent._this_pass`; one pass,
:meth:`Agent.sync_workloads`) and the loop (:meth:`Agent.run`: watchers, batching, resyncs).
Within a pass the workloads an event touched are decided (and their writes sent) before the
resync's, and the resync's give way to the next event (issue 35.1: a replacement turning
Ready, the next rollout step, waited for whole resync slices).

The rooms it drives: :mod:`.dispatch` (step 1), :mod:`.release_step` (step 2), on the state
of :mod:`.workbench`; the settings are :mod:`.config`'s.

Losing leadership stops everything at once (:class:`~.execute.Executor` asks ``active()``
before each write). A PodGang that cannot be read gets one Event and one warning and is
retried with backoff; it never blocks other gangs.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor

from grove_gitops.agent import blocked, release
from grove_gitops.agent.actions import Action, Memories
from grove_gitops.agent.cache import Key, WatchCache, WorkloadKey
from grove_gitops.agent.config import AgentConfig
from grove_gitops.agent.execute import Executor
from grove_gitops.agent.kube import Kube
from grove_gitops.agent.release_step import ReleaseStep
from grove_gitops.agent.scaling.scaler import Scaler
from grove_gitops.agent.workbench import INITIALIZED
from grove_gitops.metrics import Registry
from grove_gitops.readmodel.snapshot import Snapshot, Views

__all__ = ["INITIALIZED", "PASS_SLICE", "RESYNC_SLICE", "Agent", "AgentConfig"]

log = logging.getLogger("grove_gitops.agent")
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
#: several short passes; a pass decides its events' workloads before its slice, and the
#: slice gives way to an event that comes while it is decided (:meth:`Agent.sync_workloads`).
RESYNC_SLICE = 250
PASS_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


def batch_pause(now: float, started: float, ended: float, window: float) -> float:
    """How long the loop waits before a pass over events that are waiting (monotonic seconds;
    ``started`` / ``ended``: the last pass's).

    Idle until now (the last pass ended at least ``window`` ago): ``window``, so the rest of
    the burst arrives and one pass takes it all. Busy: until ``window`` after the last pass
    *started*, so passes start at most one per ``window`` however fast the events come. A
    scale-out's own writes and the kubelet's answers are a stream of ~1,000 pod events in
    two seconds; each pass re-derives the whole workload, and starting one as soon as the
    last ended made the number of passes (and the agent's CPU) grow with the events rather
    than with the time (issue 35.2: 252 passes, ~7 ms of deciding each, for one 2 -> 50
    scale-out). An event waits at most ``window`` plus one pass either way.
    """
    if window <= 0:
        return 0.0
    if now - ended >= window:
        return window
    return min(window, max(0.0, started + window - now))


class Agent(ReleaseStep):
    """The agent's loop over the rooms it inherits (see the module's comment)."""

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
        # Of the workloads :meth:`_this_pass` took, those only the resync asked for (no event):
        # the pass decides them last and gives them back when an event comes meanwhile.
        self._resync_taken: set[WorkloadKey] = set()
        self._deferred: collections.deque[WorkloadKey] = collections.deque()  # dirty, too large so far
        self._pass_started = 0.0  # when the last pass started (monotonic)
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

    # -- one pass ----------------------------------------------------------------------
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
            # The loop (``wait=False``) sends each workload's writes as soon as that workload
            # is decided: they run in the pool, so the deletes of fifty PodCliqueSets rolling
            # side by side still go out in parallel, and the first one's DELETE does not wait
            # for the other forty-nine decisions (issue 35.1: a pass of twenty dirty workloads
            # on a loaded machine decided for 190 ms before any DELETE left). Waiting
            # (``wait=True``), a whole part is decided first and its deletes waited for together.
            with self._inflight_lock:
                writing = set(self._holding)
            # The workloads an event touched first, and their writes sent before the resync's
            # are decided: a replacement turning Ready (the next rollout step) never waits for
            # a resync slice. The resync's workloads then go one by one, and give the rest of
            # the slice back as soon as another event is waiting (issue 35.1); the first is
            # always decided, so a stream of events never stops the resync (its timers).
            resync = [wl for wl in keys if wl in self._resync_taken]
            self._resync_taken = set()
            for part in ([wl for wl in keys if wl not in resync], resync):
                actions: list[Action] = []
                decided = time.monotonic()
                for n, wl in enumerate(part):
                    if part is resync and n > 0 and self._event_waiting():
                        self._resync.extendleft(reversed(part[n:]))
                        keys = [k for k in keys if k not in part[n:]]
                        break
                    if wl in writing:
                        # Its PodGang writes are still under way: deciding now would read the
                        # conditions they change (and repeat their Events). Their end marks it dirty.
                        continue
                    snap = self._snapshot(wl)
                    self._warn_problems(snap)
                    found = self.day2_actions(snap, now)
                    if not found:
                        unchanged[wl] = snap  # nothing done to it: the release step reads the same state
                    elif wait:
                        actions += found
                    else:
                        self._decide_s += time.monotonic() - decided
                        if self.active():
                            self._run_actions(found, wait)
                        decided = time.monotonic()
                self._decide_s += time.monotonic() - decided
                if actions and self.active():
                    self._run_actions(actions, wait)
        gang_keys: set[Key] = set(self._poll_due())
        for wl in keys:
            gang_keys.update(self.cache.gang_keys(wl))
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

    def _event_waiting(self) -> bool:
        """An event has marked a workload dirty since this pass took its batch."""
        with self.cache.lock:
            return bool(self.cache.dirty)

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
        self._resync_taken = set()
        while self._resync and budget > 0:
            wl = self._resync.popleft()
            if wl not in take:
                take.add(wl)
                self._resync_taken.add(wl)
                cost = self.cache.cost(wl)
                total += cost
                budget -= cost
        return take

    # -- the loop ----------------------------------------------------------------------
    def run(self, stop: threading.Event) -> None:
        watchers = [
            threading.Thread(target=self.cache.list_watch, args=(kind, stop), name=f"watch-{kind}", daemon=True)
            for kind in ("pods", "podgangs")
        ]
        if self.scaler is not None:
            watchers.append(threading.Thread(target=self.scaler.run, args=(stop,), name="scaler", daemon=True))
        for t in watchers:
            t.start()
        # Published only once started: healthy() reads a listed thread that is not alive as
        # a dead one, and a probe between the two answered 503 (stop 43's CI).
        self._threads = [*watchers, threading.current_thread()]
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
                pause = batch_pause(time.monotonic(), self._pass_started, self._pass_ended,
                                    self.config.batch_window) if burst else 0.0
                if pause > 0:
                    stop.wait(pause)
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
                self._pass_started = time.monotonic()
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
