"""The workbench every room of the agent's loop shares (:class:`Workbench`): the state one
agent keeps between passes, declared once, and the two things each room needs from it:

- :meth:`Workbench._snapshot`, one workload derived from the cache (pods another workload's
  PodGangs list included, pods being deleted seen as terminating);
- :meth:`Workbench._in_background`, one pod write (a DELETE or a gate PATCH) run in the pool
  without the pass waiting for it: the pod is "in flight" meanwhile, and its workload is
  marked dirty when the write ends.

The rooms: :mod:`.dispatch` (day-2 actions: rollout, healing, scale-in, and their writes),
:mod:`.release_step` (gang releases and the waits they report), :mod:`.loop` (the pass driver
and the loop itself). Only the loop thread decides; the pool's threads only write.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from grove_gitops.agent import blocked, release
from grove_gitops.agent.actions import Action, Memories
from grove_gitops.agent.cache import Key, WatchCache, WorkloadKey, workload_of
from grove_gitops.agent.config import AgentConfig
from grove_gitops.agent.execute import Executor
from grove_gitops.agent.kube import Kube
from grove_gitops.agent.scaling.scaler import Scaler
from grove_gitops.metrics import Registry
from grove_gitops.readmodel import gangs as G
from grove_gitops.readmodel.snapshot import Snapshot, Views, build

INITIALIZED = "Initialized"


class Workbench:
    """The agent's state (set by :class:`~.loop.Agent`'s constructor, where each is explained)."""

    kube: Kube
    config: AgentConfig
    registry: Registry
    active: Callable[[], bool]
    clock: Callable[[], float]
    cache: WatchCache
    executor: Executor
    memory: Memories
    waits: blocked.Waits
    views: Views
    guard: release.ReleaseGuard
    scaler: Scaler | None
    _warned: set[str]
    _deleted_uids: set[str]
    _pool: ThreadPoolExecutor
    _waiting: dict[Key, float]
    _poll: dict[Key, float]
    _complete_since: dict[Key, float]
    _bad: dict[Key, tuple[int, float]]
    _bad_rv: dict[Key, str]
    _reported: dict[Key, str]
    _inflight: set[Key]
    _inflight_lock: threading.Lock
    _deleting: set[Key]
    _gang_queues: dict[Key, tuple[WorkloadKey, list[tuple[list[Action], bool]]]]
    _holding: dict[WorkloadKey, int]
    _resync: collections.deque[WorkloadKey]
    _deferred: collections.deque[WorkloadKey]
    _decide_s: float
    _asked_s: float

    def _backoff(self, attempt: int, slow: bool = False) -> float:
        """Exponential backoff; ``slow`` (a malformed object, fixed only by a person) starts
        at one second and tops out at five minutes."""
        if slow:
            return float(min(300.0, 2 ** max(0, attempt - 1)))
        return float(min(self.config.backoff_max, self.config.backoff_base * 2 ** max(0, attempt - 1)))

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
