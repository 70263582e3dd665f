"""The autoscaling loop: scale targets, objects above the floor, status (docs/autoscaling.md).

Runs beside the day-2 loop in the agent, on the leader only. Per workload (a
``gitops.grove.io`` PodCliqueSet Git holds), each pass:

1. creates the missing scale targets (count = Grove's start value, once; never written
   again: the count belongs to scalers) and keeps their bounds equal to Git's;
2. reads the live counts and renders the workload's inputs at them (:mod:`.expansion`);
3. creates, replaces and deletes its own objects (:mod:`.plan`): whole gangs, or nothing
   when a ResourceQuota refuses a pod (condition ``ScaleBlocked`` and a Warning Event);
4. writes the status of the scale targets and of the workload: only when it changed. While
   a scale is in flight (counts still moving toward the target's) its progress (the counts,
   ``observedGeneration``, ``Ready`` moving between ``ReplicasNotReady`` and ``Available``)
   is held back: written once the scale has settled, or once a change has waited
   ``status_interval``, so a scale-out writes each status once (issue 35.2: a 2 -> 50
   scale-out wrote a target's status on 14-17 passes, one per batch of pods turning Ready;
   then 2-3 times, its start and its end). Anything else (``ScaleBlocked``, the selector, a
   problem) is written at once; a change held back is written by a later pass (every resync
   runs one).

Bursts of scale writes coalesce by construction: a pass reads the latest count, and an
intermediate count nobody saw is never materialised. A workload that leaves Git takes its
scale targets and every object the agent created for it along (ownerReferences; the agent
also deletes them itself, pods first).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from grove_gitops.agent.cache import WatchCache
from grove_gitops.agent.execute import rfc3339
from grove_gitops.agent.kube import Kube, Raw
from grove_gitops.agent.ratelog import agent_log, describe
from grove_gitops.agent.release import ReleaseGuard
from grove_gitops.agent.scaling import availability as A
from grove_gitops.agent.scaling import status as S
from grove_gitops.agent.scaling.expansion import Desired, Expander
from grove_gitops.agent.scaling.limits import ScalingLimits
from grove_gitops.agent.scaling.plan import PODGANG_API_VERSION, GangCreate, Plan, owned_by, plan, unit_of
from grove_gitops.agent.scaling.watch import GitopsCache
from grove_gitops.agent.scaling.workload import UNREADABLE, BadWorkload, ScaledWorkload, Target, parse
from grove_gitops.expand import labels as L
from grove_gitops.expand.gitsplit import ObjectKey, object_key
from grove_gitops.expand.scaling import API_VERSION, PCLQ_KIND, PCS_KIND, PCSG_KIND
from grove_gitops.metrics import Registry

log = logging.getLogger("grove_gitops.agent")
WorkloadKey = tuple[str, str]
#: How long a refused gang waits before the next try (doubling up to the maximum).
BLOCKED_BACKOFF, BLOCKED_BACKOFF_MAX = 2.0, 60.0
#: Other owned kinds (backend objects, claims) are listed again this often.
RELIST_SECONDS = 30.0
#: While a scale is in flight, a target's or the workload's progress waits at most this long
#: (seconds) for the scale to settle before it is written; anything else is written at once.
STATUS_INTERVAL = 5.0


@dataclass
class _Memory:
    """What the loop keeps between passes of one workload (all of it re-derivable)."""

    uid: str = ""
    others: dict[ObjectKey, Raw] = field(default_factory=dict)
    listed_at: float = -1e9
    blocked_until: float = 0.0
    blocked_for: float = 0.0
    blocked: dict[str, str] = field(default_factory=dict)  # target -> message
    #: Scale targets whose create the server refused (target -> message), from the last pass.
    refused_targets: dict[str, str] = field(default_factory=dict)
    problem: str = ""
    pod_states: dict[tuple[str, str], S.PodState] = field(default_factory=dict)
    #: The workload as last read: whose counts size which pods (:meth:`Scaler.wanted`).
    workload: ScaledWorkload | None = None
    #: Since when a target's or the workload's changed progress is held back (name -> monotonic).
    status_held: dict[str, float] = field(default_factory=dict)


class Scaler:
    def __init__(self, kube: Kube, cache: WatchCache, namespace: str | None, registry: Registry,
                 active: Callable[[], bool] = lambda: True, *, resync: float = 1.0, workers: int = 16,
                 watch_read_timeout: float = 30.0, batch_window: float = 0.05,
                 limits: ScalingLimits | None = None, guard: ReleaseGuard | None = None,
                 status_interval: float = STATUS_INTERVAL) -> None:
        self.kube = kube
        self.cache = cache
        self.namespace = namespace
        self.registry = registry
        self.active = active
        self.resync = resync
        self.workers = workers
        #: The agent's own limits (never a record's): render limits, writes per pass, cache.
        self.limits = limits or ScalingLimits()
        self.expander = Expander(self.limits)
        #: Shared with the day-2 loop's releases: a pod is released only while wanted at the
        #: latest count, and deleted only once no release of it is under way.
        self.guard = guard or ReleaseGuard()
        self.guard.wanted = self.wanted
        #: The list+watch threads of our kinds, started by :meth:`run` (:meth:`healthy`).
        self.threads: list[threading.Thread] = []
        self.lock = threading.Lock()
        self.wake = threading.Condition(self.lock)
        self.dirty: set[WorkloadKey] = set()
        self.memory: dict[WorkloadKey, _Memory] = {}
        self.gitops = GitopsCache(kube, namespace, self.notify, watch_read_timeout=watch_read_timeout)
        self.writes = 0
        self.progress = time.monotonic()
        self._last_resync = 0.0
        #: After an event, wait this long so one pass takes the whole burst (a scale-out's
        #: hundreds of pod events).
        self.batch_window = batch_window
        self.status_interval = status_interval
        self.pool = ThreadPoolExecutor(workers, thread_name_prefix="scaler-write")
        cache.listeners.append(self.notify)

    # -- wiring ------------------------------------------------------------------------
    def notify(self, key: WorkloadKey) -> None:
        with self.wake:
            self.dirty.add(key)
            self.wake.notify()

    def healthy(self) -> bool:
        """Every list+watch thread of our kinds is alive (each survives any exception, so a
        dead one is a bug the liveness probe must see: without it no workload is scaled)."""
        return all(t.is_alive() for t in self.threads)

    def run(self, stop: threading.Event) -> None:
        threads = [
            threading.Thread(target=self.gitops.list_watch, args=(kind, stop), name=f"scaler-{kind}", daemon=True)
            for kind in self.gitops.objects
        ]
        for t in threads:
            t.start()
        self.threads = threads  # only once started, as Agent.run does (healthy() reads them)
        try:
            while not stop.is_set():
                with self.wake:
                    if not self.dirty:
                        self.wake.wait(max(0.0, self._last_resync + self.resync - time.monotonic()))
                    burst = bool(self.dirty)
                if burst and self.batch_window > 0:
                    stop.wait(self.batch_window)  # one pass for the whole burst of events
                with self.wake:
                    dirty, self.dirty = self.dirty, set()
                self.progress = time.monotonic()
                if not self.gitops.ready() or not self.cache.ready() or not self.active():
                    continue
                keys = set(dirty)
                if time.monotonic() - self._last_resync >= self.resync:
                    # Every workload on every resync (grace and backoff timers expire silently);
                    # between resyncs only those an event touched.
                    self._last_resync = time.monotonic()
                    keys |= {k for k, _ in self.gitops.items(PCS_KIND)} | set(self.memory)
                for key in sorted(keys):
                    if stop.is_set() or not self.active():
                        break
                    try:
                        self.sync(key)
                        self.progress = time.monotonic()  # a pass over many workloads is progress too
                    except (ApiException, HTTPError, OSError) as exc:
                        agent_log.warning("autoscaling pass of %s/%s failed: %s", key[0], key[1], describe(exc))
                        self.notify(key)
                        stop.wait(0.5)
                    except Exception:  # a bug must not stop every other workload's scaling
                        log.exception("autoscaling pass of %s/%s failed", key[0], key[1])
                        stop.wait(1.0)
        finally:
            self.pool.shutdown(wait=False, cancel_futures=True)

    # -- one workload -----------------------------------------------------------------
    def sync(self, key: WorkloadKey) -> None:
        obj = self.gitops.get(PCS_KIND, key)
        memory = self.memory.setdefault(key, _Memory())
        if obj is None:
            self._gone(key, memory)
            return
        try:
            workload = parse(obj, self.limits.max_pods_per_pcs)
        except BadWorkload as exc:
            self._report(obj, memory, f"{key[0]}/{key[1]}: {exc}")
            return
        memory.uid = workload.uid
        memory.workload = workload
        desired: Desired | None = None
        if workload.targets:
            # Render before creating anything: inputs that do not render get no scale target.
            try:
                self.expander.desired(workload, self._counts(workload, self._known_targets(workload)))
            except BadWorkload as exc:
                self._report(obj, memory, f"{key[0]}/{key[1]}: {exc}")
                return
        targets = self._targets(workload, obj)
        if workload.targets:
            desired = self.expander.desired(workload, self._counts(workload, targets))
            self._apply(workload, desired, memory)
        memory.problem = ""
        self._status(workload, obj, desired, targets, memory)

    def _known_targets(self, workload: ScaledWorkload) -> dict[str, Raw]:
        out = {}
        for t in workload.targets:
            live = self.gitops.get(t.kind, (workload.namespace, t.name))
            if live is not None and owned_by(live, workload.uid):
                out[t.name] = live
        return out

    def _counts(self, workload: ScaledWorkload, targets: dict[str, Raw]) -> dict[tuple[int, str], int]:
        return {(t.replica, t.template): self._count(t, targets.get(t.name)) for t in workload.targets}

    def _count(self, target: Target, live: Raw | None) -> int:
        """The live count, clamped into Git's bounds (a count outside them was written before
        Git moved them; the CRD refuses new ones)."""
        if live is None:
            return target.initial
        value = (live.get("spec") or {}).get("replicas")
        if isinstance(value, bool) or not isinstance(value, int):
            return target.initial
        return max(target.min_replicas, min(value, target.max_replicas))

    def _targets(self, workload: ScaledWorkload, owner: Raw) -> dict[str, Raw]:
        """Create missing scale targets, keep bounds in step with Git, delete stale ones."""
        out: dict[str, Raw] = {}
        refused: dict[str, str] = {}
        wanted = {t.name for t in workload.targets}
        for target in workload.targets:
            live = self.gitops.get(target.kind, (workload.namespace, target.name))
            if live is not None and not owned_by(live, workload.uid):
                live = None  # someone else's object of that name: never adopted
                self._report(owner, self.memory[(workload.namespace, workload.name)],
                             f"{target.kind} {workload.namespace}/{target.name} exists and is not this workload's")
                continue
            bounds = {"minAvailable": target.min_available, "minReplicas": target.min_replicas,
                      "maxReplicas": target.max_replicas}
            if live is None:
                body = {
                    "apiVersion": API_VERSION, "kind": target.kind,
                    "metadata": {
                        "name": target.name, "namespace": workload.namespace,
                        "labels": {L.MANAGED_BY: L.MANAGED_BY_VALUE, L.PART_OF: workload.name,
                                   L.PCS_REPLICA_INDEX: str(target.replica),
                                   L.COMPONENT: "pcsg-scale-target" if target.kind == PCSG_KIND
                                   else "pclq-scale-target"},
                        "ownerReferences": [workload.owner_reference],
                    },
                    "spec": {"replicas": target.initial, **bounds},
                }
                try:
                    live = self.kube.create(body)
                    self.writes += 1
                except ApiException as exc:
                    if exc.status in (403, 422):
                        # Said on the workload's status (ScaleBlocked) and logged, rate-limited;
                        # the other targets and the rest of the pass go on.
                        message = f"scale target {target.kind} {workload.namespace}/{target.name} was not created: " \
                                  f"{_api_message(exc)}"
                        agent_log.warning("autoscaling: %s", message)
                        refused[target.name] = message
                        continue
                    if exc.status != 409:
                        raise
                    continue
                self.gitops.put(target.kind, live)
            elif any((live.get("spec") or {}).get(k) != v for k, v in bounds.items()):
                live = self.kube.patch_object(API_VERSION, target.kind, workload.namespace, target.name,
                                              {"spec": bounds})
                self.writes += 1
                self.gitops.put(target.kind, live)
            out[target.name] = live
        for kind in (PCSG_KIND, PCLQ_KIND):
            for (ns, name), live in self.gitops.items(kind):
                if ns == workload.namespace and name not in wanted and owned_by(live, workload.uid):
                    uid = str((live.get("metadata") or {}).get("uid", ""))
                    self.kube.delete_object(API_VERSION, kind, ns, name, uid)
                    self.writes += 1
        self.memory[(workload.namespace, workload.name)].refused_targets = refused
        return out

    # -- objects -----------------------------------------------------------------------
    def _live(self, workload: ScaledWorkload, desired: Desired, memory: _Memory) -> dict[ObjectKey, Raw]:
        live = _cached(self.cache, (workload.namespace, workload.name))
        kinds = {(k[0], k[1]) for k in desired.objects} - {("v1", "Pod")}
        kinds = {k for k in kinds if k[1] != "PodGang"}
        if time.monotonic() - memory.listed_at > RELIST_SECONDS or any(
                k not in {(o[0], o[1]) for o in memory.others} for k in kinds):
            others: dict[ObjectKey, Raw] = {}
            for api_version, kind in sorted(kinds | {(o[0], o[1]) for o in memory.others}):
                try:
                    listed = self.kube.list_objects(api_version, kind, workload.namespace,
                                                    f"{L.PART_OF}={workload.name}")
                except ApiException as exc:
                    if exc.status == 404:
                        continue
                    raise
                for item in listed.get("items") or []:
                    item.setdefault("apiVersion", api_version)
                    item.setdefault("kind", kind)
                    others[object_key(item)] = item
            memory.others = others
            memory.listed_at = time.monotonic()
        live.update(memory.others)
        return live

    def _apply(self, workload: ScaledWorkload, desired: Desired, memory: _Memory) -> None:
        live = self._live(workload, desired, memory)
        todo = plan(desired.objects, live, workload.uid, desired.git, units=[t.name for t in workload.targets])
        if todo.empty:
            return
        log.debug("autoscaling %s/%s: %d gangs, %d pods joining, %d replaced, deletes %s", workload.namespace,
                  workload.name, len(todo.gangs), len(todo.join), len(todo.replace), todo.delete)
        budget = _Budget(self.limits.writes_per_pass)
        self._write(workload, todo, live, memory, budget, desired)
        if budget.short:
            # The rest in a later pass, after every other workload's turn (issue 31: one
            # record's scale-out of thousands of pods held the loop for minutes).
            self.notify((workload.namespace, workload.name))

    def _write(self, workload: ScaledWorkload, todo: Plan, live: dict[ObjectKey, Raw], memory: _Memory,
               budget: _Budget, desired: Desired) -> None:
        now = time.monotonic()
        owner = workload.owner_reference
        for obj in todo.loose:
            if budget.take(1):
                self._create(obj, owner, memory)
        if todo.gangs and now >= memory.blocked_until:
            refused: list[tuple[GangCreate, str]] = []
            stop = threading.Event()
            units = {t.name for t in workload.targets}
            gangs = _within(sorted(todo.gangs, key=_gang_order), budget)

            def build(gang: GangCreate) -> None:
                if stop.is_set():
                    return
                if not self._wanted(workload, units, gang.pods):
                    # The count fell since this pass read it: never create a superseded gang.
                    self.notify((workload.namespace, workload.name))
                    return
                problem = self._create_gang(gang, owner, memory)
                if problem is not None:
                    stop.set()
                    refused.append((gang, problem))

            list(self.pool.map(build, gangs))
            self._blocked(workload, memory, refused)
        # Replaced before pods join them, and never left for later: only the agent's own
        # gangs and backend objects (a few per gang), and a pod that joined a gang which does
        # not list it yet would wait in no gang.
        for obj in todo.replace:
            budget.left -= 1
            meta = obj["metadata"]
            live_obj = live.get(object_key(obj)) or {}
            done = self.kube.patch_object(obj["apiVersion"], obj["kind"], meta["namespace"], meta["name"],
                                          _replace_ops(obj, live_obj), patch_type="application/json-patch+json")
            self.writes += 1
            if obj["kind"] not in ("Pod", "PodGang"):  # the watch caches those; others live here
                done.setdefault("apiVersion", obj["apiVersion"])
                done.setdefault("kind", obj["kind"])
                memory.others[object_key(obj)] = done
        for pod in todo.join:
            if budget.take(1) and self._wanted(workload, {t.name for t in workload.targets}, [pod]):
                self._create(pod, owner, memory)
        units = {t.name for t in workload.targets}
        for wave in todo.delete_waves():
            pods = [live[key] for key, _ in wave if key[:2] == ("v1", "Pod") and key in live]
            if pods and any(self._wanted(workload, units, [p]) and unit_of(p, units) is not None for p in pods):
                # The count rose again since this pass read it: these pods are wanted (a burst
                # 3 -> 1 -> 3 must not delete what count 3 holds).
                self.notify((workload.namespace, workload.name))
                break
            if not budget.take(len(wave), whole=True):
                break
            # A gang is released whole before it is deleted, or not at all (issue 31).
            self.guard.retire([uid for key, uid in wave if key[:2] == ("v1", "Pod")])
            self._unrelease(wave, live, desired, workload.uid)
            self.writes += sum(self.pool.map(lambda kv: self._delete(kv[0], kv[1], memory), wave))

    def _unrelease(self, wave: list[tuple[ObjectKey, str]], live: dict[ObjectKey, Raw], desired: Desired,
                   uid: str) -> None:
        """Reset ``Initialized`` of the agent's PodGangs whose pods a scale-in deletes, before
        the deletes. Issue 31: a burst 3 -> 1 -> 3 deleted a released gang's pods and created
        them again before its PodGang went; the PodGang still said ``Initialized``, so the day-2
        loop released each new pod on its own, as replacements, while the others were missing:
        a partial gang. Reset, the re-created pods are released together, as a whole gang."""
        names = {((live.get(key) or {}).get("metadata") or {}).get("labels", {}).get(L.PODGANG)
                 for key, _ in wave if key[:2] == ("v1", "Pod")}
        for name in sorted(n for n in names if isinstance(n, str)):
            key = (PODGANG_API_VERSION, "PodGang", wave[0][0][2], name)
            gang = live.get(key)
            if gang is None or key in desired.objects or key in desired.git or not owned_by(gang, uid):
                continue  # a gang that stays (a clique's base gang losing a pod), or Git's
            # Read afresh: its release (and Initialized) may have been written just before the
            # retire returned; none can come after it, the pods being retired.
            path = self.kube.path(*key)
            if path is None:
                continue
            try:
                gang = self.kube.raw("GET", path)
            except ApiException as exc:
                if exc.status == 404:
                    continue
                raise
            status = dict(gang.get("status") or {})
            conditions = [dict(c) for c in status.get("conditions") or [] if isinstance(c, Mapping)]
            if not any(c.get("type") == "Initialized" and c.get("status") == "True" for c in conditions):
                continue
            conditions = [c for c in conditions if c.get("type") != "Initialized"] + [{
                "type": "Initialized", "status": "False", "reason": "ScaledIn",
                "message": "its replica is being scaled in: pods created for it again are released as a whole gang",
                "lastTransitionTime": rfc3339()}]
            status["conditions"] = sorted(conditions, key=lambda c: str(c.get("type")))
            done = self.kube.patch_object(PODGANG_API_VERSION, "PodGang", key[2], name, {"status": status},
                                          subresource="status")
            self.writes += 1
            done.setdefault("apiVersion", PODGANG_API_VERSION)
            done.setdefault("kind", "PodGang")
            self.cache.apply("podgangs", "MODIFIED", done)

    def _wanted(self, workload: ScaledWorkload, units: set[str], pods: Sequence[Mapping[str, Any]]) -> bool:
        """Every pod of a unit of the count is below its target's latest count (issue 31: a
        burst 3 -> 8 -> 3 had the agent create the pods of count 8 after the count was 3)."""
        for pod in pods:
            unit = unit_of(pod, units)
            if unit is not None and unit[1] >= self.latest_count(workload, unit[0]):
                return False
        return True

    def wanted(self, pod: Mapping[str, Any]) -> bool:
        """Whether a pod is still wanted at the latest count its scale target holds (what the
        day-2 loop asks right before it releases the pod): a pod of no autoscaled unit is."""
        meta = pod.get("metadata") or {}
        key = (str(meta.get("namespace", "")), str((meta.get("labels") or {}).get(L.PART_OF, "")))
        memory = self.memory.get(key)
        workload = memory.workload if memory is not None else None
        if workload is None:
            return True
        return self._wanted(workload, {t.name for t in workload.targets}, [pod])

    def latest_count(self, workload: ScaledWorkload, target_name: str) -> int:
        """The count of one scale target as the agent last heard it, clamped into Git's bounds."""
        for target in workload.targets:
            if target.name == target_name:
                return self._count(target, self.gitops.get(target.kind, (workload.namespace, target.name)))
        return 0

    def _create(self, obj: dict[str, Any], owner: Raw, memory: _Memory) -> Raw | None:
        log.debug("creating %s %s", obj["kind"], obj["metadata"]["name"])
        body = {**obj, "metadata": {**obj["metadata"], "ownerReferences": [owner]}}
        try:
            created = self.kube.create(body)
        except ApiException as exc:
            if exc.status == 409:
                return None  # exists (Git applied it, or a previous pass did)
            raise
        self.writes += 1
        if obj["kind"] in ("Pod", "PodGang"):
            # Into the watch cache at once, as the day-2 loop does with its writes' answers: the
            # next pass reads pods and PodGangs from it, and before the watch brought them it
            # created them again (a 409 each: 21-63 of 192 pods in a 2 -> 50 scale-out).
            created.setdefault("apiVersion", obj["apiVersion"])
            created.setdefault("kind", obj["kind"])
            self.cache.apply("pods" if obj["kind"] == "Pod" else "podgangs", "ADDED", created)
        else:
            memory.others[object_key(created)] = created
        return created

    def _create_gang(self, gang: GangCreate, owner: Raw, memory: _Memory) -> str | None:
        """Pods, then backend objects, then the PodGang. A refused create (a ResourceQuota's 403,
        OwnerReferencesPermissionEnforcement's 403, a 422) undoes what this gang got, its pods of
        earlier passes included, and returns the server's message (issue 32.2: a refused PodGang
        failed the whole pass, the pods stayed and the target still said every gang was created)."""
        made: list[Raw] = []
        objects: list[Raw] = []
        try:
            for pod in gang.pods:
                created = self._create(pod, owner, memory)
                if created is not None:
                    made.append(created)
            for obj in gang.objects:
                created = self._create(obj, owner, memory)
                if created is not None:
                    objects.append({**created, "apiVersion": obj["apiVersion"], "kind": obj["kind"]})
        except ApiException as exc:
            if exc.status not in (403, 422):
                raise
            undo = [(("v1", "Pod"), p) for p in [*made, *gang.existing]]
            undo += [((str(o["apiVersion"]), str(o["kind"])), o) for o in reversed(objects)]
            for kind, done in undo:
                meta = done["metadata"]
                self._delete((*kind, meta["namespace"], meta["name"]), str(meta.get("uid", "")), memory)
            return _api_message(exc)
        return None

    def _delete(self, key: ObjectKey, uid: str, memory: _Memory) -> bool:
        log.debug("deleting %s", key)
        if key[:2] == ("v1", "Pod"):
            self.guard.retire([uid])  # no release of it begins now; one under way ends first
        try:
            self.kube.delete_object(key[0], key[1], key[2], key[3], uid)
        except ApiException as exc:
            if exc.status == 409:
                log.debug("not deleting %s %s/%s: %s", key[1], key[2], key[3], _api_message(exc))
                return False  # replaced under the same name since: not ours to delete
            raise
        memory.others.pop(key, None)
        return True

    def _blocked(self, workload: ScaledWorkload, memory: _Memory, refused: list[tuple[GangCreate, str]]) -> None:
        if not refused:
            memory.blocked_for = 0.0
            memory.blocked = {}
            return
        gang, message = refused[0]
        what = "quota" if _is_quota(message) else "refusal"
        memory.blocked_for = min(BLOCKED_BACKOFF_MAX, max(BLOCKED_BACKOFF, memory.blocked_for * 2))
        memory.blocked_until = time.monotonic() + memory.blocked_for
        target = _target_of(workload, gang)
        note = (f"gang {gang.name} was not created: {message}; what was created of it was removed again so "
                f"that no partial gang holds {'quota' if what == 'quota' else 'resources'}; retrying in "
                f"{memory.blocked_for:.0f}s")
        if memory.blocked.get(target) != note:
            live = self.gitops.get(PCSG_KIND, (workload.namespace, target)) or self.gitops.get(
                PCLQ_KIND, (workload.namespace, target))
            if live is not None:
                self.kube.emit_event(workload.namespace, live, "GangCreationRefused", note)
        memory.blocked = {target: note}

    # -- status ------------------------------------------------------------------------
    def _status(self, workload: ScaledWorkload, obj: Raw, desired: Desired | None, targets: dict[str, Raw],
                memory: _Memory) -> None:
        pods, gangs = self.cache.workload((workload.namespace, workload.name))
        pod_list, gang_list = list(pods.values()), list(gangs.values())
        index = S.SlotIndex.of(pod_list, memory.pod_states)
        now = rfc3339()
        every_target_settled = True
        ready, minimums = A.ready_by_clique(index), A.clique_minimums(gang_list)
        for target in workload.targets:
            live = targets.get(target.name)
            if live is None or desired is None:
                continue
            count = self._count(target, live)
            units = desired.units.get(target.name, [])[:count]
            counted = index.count(units)
            # A group's replicas are available at their cliques' minAvailable (Grove's
            # PodCliqueScalingGroup); a clique's, one pod each, when Ready.
            available = A.units_available(units, ready, minimums) if target.kind == PCSG_KIND else counted.ready
            old = live.get("status") or {}
            blocked = memory.blocked.get(target.name)
            conditions = [
                S.condition("ScaleBlocked", blocked is not None, _blocked_reason(blocked),
                            blocked or "every gang of the count was created", now,
                            int((live.get("metadata") or {}).get("generation", 0) or 0), old.get("conditions") or []),
            ]
            new = {"replicas": counted.replicas, "readyReplicas": counted.ready, "updatedReplicas": counted.updated,
                   "availableReplicas": available, "selector": target.selector,
                   "observedGeneration": int((live.get("metadata") or {}).get("generation", 0) or 0),
                   "conditions": conditions}
            settled = counted.replicas == counted.ready == counted.updated == count
            every_target_settled = every_target_settled and settled
            if self._due(memory, target.name, old, new, settled):
                done = self.kube.patch_object(API_VERSION, target.kind, workload.namespace, target.name,
                                              {"status": new}, subresource="status")
                self.writes += 1
                self.gitops.put(target.kind, done)
        slots = {p.name: p.slot for p in index.by_name.values()}
        replicas = int((obj.get("spec") or {}).get("replicas", 0) or 0)
        # Updated and settled judge a replica by its base PodGang only: a group's scaled
        # replicas (or an autoscaled clique's pods) starting above minAvailable are their
        # target's progress (issue 35.2: counting them, a scale-out longer than status_interval
        # wrote the workload back and forth).
        per_replica = S.base_units(gang_list, workload.name, slots)
        counted = index.count([per_replica.get(i, []) for i in range(min(replicas, len(per_replica) + 1))])
        # Available as Grove says it: each standalone clique and each group at its minAvailable.
        available = A.available_replicas(gang_list, workload.name, index, replicas)
        old = obj.get("status") or {}
        generation = workload.generation
        is_ready = available >= replicas
        blocked_any = {**memory.refused_targets, **memory.blocked}
        conditions = [
            S.condition("Ready", is_ready and not memory.problem, "Available" if is_ready else "ReplicasNotReady",
                        memory.problem or (f"{available} of {replicas} replicas available (each standalone PodClique"
                                           " and scaling group at its minAvailable)"), now,
                        generation, old.get("conditions") or []),
            S.condition("ScaleBlocked", bool(blocked_any), _blocked_reason(next(iter(blocked_any.values()), None)),
                        next(iter(blocked_any.values()), "every gang of every count was created"), now,
                        generation, old.get("conditions") or []),
        ]
        # Conditions another part of the agent writes (RolloutBlocked, agent/blocked.py) are kept.
        conditions += [c for c in old.get("conditions") or []
                       if isinstance(c, dict) and c.get("type") not in ("Ready", "ScaleBlocked")]
        new = {"observedGeneration": generation, "replicas": replicas, "availableReplicas": available,
               "updatedReplicas": counted.updated, "conditions": conditions}
        settled = every_target_settled and counted.ready == counted.updated == replicas
        if self._due(memory, workload.name, old, new, settled):
            done = self.kube.patch_object(API_VERSION, PCS_KIND, workload.namespace, workload.name,
                                          {"status": new}, subresource="status")
            self.writes += 1
            self.gitops.put(PCS_KIND, done)

    def _due(self, memory: _Memory, name: str, old: Raw, new: Raw, settled: bool) -> bool:
        return status_due(memory.status_held, name, old, new, settled, self.status_interval, time.monotonic())

    def _report(self, obj: Raw, memory: _Memory, problem: str) -> None:
        """A record the agent cannot act on: logged, a Warning Event, and ``Ready=False`` with
        the problem on the record itself, once per problem."""
        if memory.problem == problem:
            return
        memory.problem = problem
        meta = obj.get("metadata") or {}
        log.error("autoscaling: %s", problem)
        self.kube.emit_event(str(meta.get("namespace", "default")), obj, "InvalidWorkload", problem)
        old = obj.get("status") or {}
        generation = meta.get("generation", 0) if isinstance(meta.get("generation"), int) else 0
        conditions = [S.condition("Ready", False, "InvalidWorkload", problem, rfc3339(), generation,
                                  old.get("conditions") or [])]
        try:
            done = self.kube.patch_object(API_VERSION, PCS_KIND, str(meta.get("namespace", "")),
                                          str(meta.get("name", "")), {"status": {"conditions": conditions}},
                                          subresource="status")
        except ApiException as exc:
            agent_log.warning("status of %s/%s not written: %s", meta.get("namespace"), meta.get("name"), describe(exc))
            return
        self.writes += 1
        if UNREADABLE not in obj:  # (the answer would carry the unread part back in)
            self.gitops.put(PCS_KIND, done)

    def _gone(self, key: WorkloadKey, memory: _Memory) -> None:
        """The workload left Git: delete what the agent created for it, pods first."""
        if not memory.uid:
            self.memory.pop(key, None)
            return
        live = _cached(self.cache, key)
        live.update(memory.others)
        # Only what it created: Git's pods of a removed workload are the day-2 loop's (after its
        # grace period).
        todo = plan({}, live, memory.uid)
        for k, uid in todo.delete:
            self._delete(k, uid, memory)
        for kind in (PCSG_KIND, PCLQ_KIND):
            for (ns, name), obj in self.gitops.items(kind):
                if ns == key[0] and owned_by(obj, memory.uid):
                    self.kube.delete_object(API_VERSION, kind, ns, name, str(obj["metadata"].get("uid", "")))
        if not any(owned_by(o, memory.uid) for o in live.values()):
            self.memory.pop(key, None)
            self.expander.forget(key)


class _Budget:
    """Writes one pass may still make for one workload (:class:`~.limits.ScalingLimits`)."""

    def __init__(self, size: int) -> None:
        self.left = size
        self.size = size
        self.short = False  # something was left for a later pass

    def take(self, n: int, *, whole: bool = False) -> bool:
        """Room for ``n`` writes? ``whole``: a unit never split (a gang, a wave of deletes),
        taken even beyond the budget when nothing was taken yet, so every pass progresses."""
        if n <= self.left or (whole and self.left == self.size):
            self.left -= n
            return True
        self.short = True
        return False


def _within(gangs: list[GangCreate], budget: _Budget) -> list[GangCreate]:
    """The gangs this pass creates: whole ones, lowest index first, while the budget holds.
    A gang larger than the whole budget (a standalone clique's base gang starting at
    thousands of pods) gets only its pods, a budget's worth a pass, and its PodGang in the
    pass that creates its last pod: the day-2 loop never sees it before it is complete, and a
    refused pod still takes back the pods of earlier passes (:attr:`GangCreate.existing`)."""
    out = [g for g in gangs if budget.take(len(g.pods) + len(g.objects))]
    if out or not gangs:
        return out
    first = gangs[0]
    if len(first.pods) + len(first.objects) <= budget.left:
        return [first]
    part = GangCreate(first.name, first.pods[:budget.left], [], first.existing)
    budget.left = 0
    budget.short = True
    return [part]


def _replace_ops(desired: Raw, live: Raw) -> list[dict[str, Any]]:
    """JSON patch taking ``live`` to the render's spec, labels and annotations. Keys others put
    on the object (a scheduler's labels) are kept: only the render's keys are set."""
    ops: list[dict[str, Any]] = [{"op": "replace", "path": "/spec", "value": desired.get("spec", {})}]
    live_meta = live.get("metadata") or {}
    for part in ("labels", "annotations"):
        want = (desired.get("metadata") or {}).get(part) or {}
        have = live_meta.get(part)
        if not isinstance(have, dict):
            if want:
                ops.append({"op": "add", "path": f"/metadata/{part}", "value": dict(want)})
            continue
        for k, v in sorted(want.items()):
            if have.get(k) != v:
                escaped = k.replace("~", "~0").replace("/", "~1")
                ops.append({"op": "add", "path": f"/metadata/{part}/{escaped}", "value": v})
    return ops


def _cached(cache: WatchCache, key: WorkloadKey) -> dict[ObjectKey, Raw]:
    """The workload's pods and PodGangs from the day-2 loop's cache, by object key."""
    pods, gangs = cache.workload(key)
    live: dict[ObjectKey, Raw] = {}
    for (ns, name), raw in pods.items():
        live[("v1", "Pod", ns, name)] = raw
    for (ns, name), raw in gangs.items():
        live[(PODGANG_API_VERSION, "PodGang", ns, name)] = raw
    return live


#: Status fields that move while a scale is in flight: held back until it settles.
_PROGRESS = frozenset({"replicas", "readyReplicas", "updatedReplicas", "availableReplicas", "observedGeneration"})
#: ``Ready`` of a workload whose pods are merely still starting, or all Ready (its progress).
_PROGRESS_READY = frozenset({("False", "ReplicasNotReady"), ("True", "Available")})


def _strip(c: Mapping[str, Any]) -> tuple[Any, ...]:
    return (c.get("type"), c.get("status"), c.get("reason"), c.get("message"))


def _changed(old: Raw, new: Raw) -> bool:
    if any(old.get(k) != v for k, v in new.items() if k != "conditions"):
        return True
    return [_strip(c) for c in old.get("conditions") or []] != [_strip(c) for c in new.get("conditions") or []]


def status_due(held: dict[str, float], name: str, old: Raw, new: Raw, settled: bool, interval: float,
               now: float) -> bool:
    """Write the status ``new`` of ``name`` (a target or the workload; ``old`` is what it says)
    now? Only when it changed; then at once when the scale has settled or something other than
    its progress changed (:func:`_urgent`), else once the change has been held back
    ``interval`` seconds (``held``: name -> since when; issue 35.2: one write per scale-out,
    not one at its start and one at its end)."""
    if not _changed(old, new):
        held.pop(name, None)
        return False
    if not settled and not _urgent(old, new) and now - held.setdefault(name, now) < interval:
        return False
    held.pop(name, None)
    return True


def _urgent(old: Raw, new: Raw) -> bool:
    """Whether ``new`` differs from ``old`` in more than a scale's progress: the selector, a
    condition (``ScaleBlocked``, a problem, one another part of the agent wrote), or ``Ready``
    for any reason but pods still starting. Such a change is never held back."""
    if any(old.get(k) != v for k, v in new.items() if k not in _PROGRESS and k != "conditions"):
        return True
    before = {c.get("type"): c for c in old.get("conditions") or [] if isinstance(c, Mapping)}
    after = {c.get("type"): c for c in new.get("conditions") or [] if isinstance(c, Mapping)}
    for kind in before.keys() | after.keys():
        was, now = before.get(kind), after.get(kind)
        if kind == "Ready" and now is not None and (now.get("status"), now.get("reason")) in _PROGRESS_READY and (
                was is None or (was.get("status"), was.get("reason")) in _PROGRESS_READY):
            continue
        if was is None or now is None or _strip(was) != _strip(now):
            return True
    return False


def _gang_order(gang: GangCreate) -> tuple[int, str]:
    tail = gang.name.rsplit("-", 1)[-1]
    return (int(tail) if tail.isdigit() else -1, gang.name)


def _target_of(workload: ScaledWorkload, gang: GangCreate) -> str:
    for target in sorted(workload.targets, key=lambda t: -len(t.name)):
        if gang.name.startswith(f"{target.name}-") or gang.name == target.name:
            return target.name
    return workload.targets[0].name if workload.targets else workload.name


def _is_quota(message: str) -> bool:
    """The ResourceQuota admission plugin's refusals (``exceeded quota: ...``, ``failed quota: ...``)."""
    return "exceeded quota" in message or "failed quota" in message


def _blocked_reason(note: str | None) -> str:
    """``ScaleBlocked``'s reason: ``GangsCreated`` (not blocked), ``QuotaExceeded`` (a ResourceQuota
    refused a create) or ``CreateRefused`` (any other refusal: RBAC, OwnerReferencesPermissionEnforcement,
    an admission policy, validation)."""
    if note is None:
        return "GangsCreated"
    return "QuotaExceeded" if _is_quota(note) else "CreateRefused"


def _api_message(exc: ApiException) -> str:
    try:
        return str(json.loads(exc.body or "{}").get("message") or exc.reason)[:512]
    except ValueError:
        return str(exc.reason)[:512]
