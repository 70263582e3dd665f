"""The day-2 dispatch (:class:`Day2Dispatch`): what healing, the rollout and scale-in decided
for one snapshot (:mod:`.decide`), and carrying it out.

Owns: the day-2 actions of a snapshot and the report of a rollout that waits too long
(``RolloutBlocked`` on the PodGang and, mirrored, on the ``gitops.grove.io`` PodCliqueSet);
running actions in their order (``Initialized`` resets, then deletes in parallel, then
conditions and Events); and the per-PodGang queues that write a PodGang's conditions and
Events one at a time, in order, in the background.
"""

from __future__ import annotations

import functools
import logging

from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from grove_gitops.agent import blocked, decide, rollout
from grove_gitops.agent.actions import Action, DeletePod, Event, SetCondition
from grove_gitops.agent.cache import Key, WorkloadKey, workload_of
from grove_gitops.agent.ratelog import agent_log, describe
from grove_gitops.agent.workbench import INITIALIZED, Workbench
from grove_gitops.expand.scaling import API_VERSION as PCS_API_VERSION
from grove_gitops.expand.scaling import PCS_KIND
from grove_gitops.readmodel.snapshot import Snapshot, Workload

log = logging.getLogger("grove_gitops.agent")


class Day2Dispatch(Workbench):
    """Day-2 actions: decided per snapshot, run in order (see the module's comment)."""

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
