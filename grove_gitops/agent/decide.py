"""The day-2 decisions of one pass, as one pure function of a snapshot, the memory and the time.

The loop (:mod:`.loop`) derives one workload per snapshot and calls this; tests call it the
same way, with any interleaving of workloads, to show that a pass over one workload never
changes what the agent decides about another (issue 22).
"""

from __future__ import annotations

from grove_gitops.agent import healing, intent, rollout, scalein
from grove_gitops.agent.actions import Action, Memories
from grove_gitops.readmodel.snapshot import Snapshot, Workload


def day2_actions(snap: Snapshot, memories: Memories, now: float, grace: float,
                 unordered_grace: float = intent.UNORDERED_GRACE) -> tuple[list[Action], list[tuple[Workload, rollout.Progress]]]:
    """Every day-2 action of ``snap``, in the order they must run, and each workload's progress.

    Per workload, with that workload's own memory: the intent is observed first (what its
    PodGangs want, :mod:`.intent`), then failed pods, breach bookkeeping and gang termination
    (:mod:`.healing`), the rolling update (:mod:`.rollout`) and scale-in (:mod:`.scalein`).
    """
    actions: list[Action] = []
    progress: list[tuple[Workload, rollout.Progress]] = []
    for wl in snap.workloads.values():
        memory = memories.of(wl.key)  # this workload's own: no other workload's pass touches it
        intent.observe(wl, memory, now)
        rolling = rollout.rolling_replicas(wl)
        actions += healing.failed_pods(wl)
        units = healing.workload_units(wl)  # once for both (they derived the same units each)
        actions += healing.gang_termination(wl, memory, now, rolling, units)
        breached = healing.breached_replicas(wl, memory, now, rolling, units)
        retire, found = rollout.rollout(wl, memory, now, breached=breached, grace=grace, unordered_grace=unordered_grace)
        actions += retire
        actions += scalein.unwanted_pods(wl, memory, now, grace, snap, unordered_grace)
        progress.append((wl, found))
    return actions, progress
