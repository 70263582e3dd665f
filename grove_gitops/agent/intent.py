"""Is a gated pod that no PodGang lists behind its workload's PodGangs, or ahead of them?

A rendered pod arrives gated. When no PodGang lists it, there are two readings:

- **behind**: the workload's PodGangs changed after the pod was applied and no longer want
  it (a second update overtook the first, a scale-in or removal before it ever ran). It never
  ran, so deleting it disrupts nothing; it is deleted ``grace`` seconds after that change.
- **ahead**: the GitOps tool applied the pod before the PodGang that will list it (Flux
  applies a revision in one go in no set order, an Argo CD sync wave stalled, the PodGang
  was refused). Deleting it only makes the GitOps tool re-create it, a whole Flux interval
  later (issue 22: a 15 s stall deleted 40 new pods).

Git does not say which render is newer, so the agent tells them apart by what it saw, in
order: the **intent** of a workload is the set of pods its PodGangs reference; a pod is
behind only when the agent saw the intent change *after* it first saw the pod, or saw a
change drop it from the intent. A pod that arrived with or after the last change, unlisted,
is ahead and waits for its PodGang however long that takes. When the order is unknown (the pod was already there when this agent started, and
the intent has not changed since), the pod is deleted only after ``unordered_grace``, 30
minutes by default: three of the shipped Flux interval (10 minutes), so a GitOps tool that
is merely slow never loses a pod, and a pod orphaned before an agent restart still goes.

Released pods are not asked here: a pod the agent released was listed when it was released,
so a released pod no PodGang wants is behind by construction (scale-in, removal; see
:mod:`.scalein`).
"""

from __future__ import annotations

from grove_gitops.agent.actions import Memory
from grove_gitops.readmodel.snapshot import PodView, Workload

#: How long an unlisted gated pod waits when the agent does not know whether it is ahead or
#: behind (the module docstring): three of the shipped Flux interval of 10 minutes.
UNORDERED_GRACE = 1800.0


def _listed(wl: Workload) -> frozenset[tuple[str, str]]:
    """The workload's intent: which pods its readable PodGangs reference. Only the references
    count, so a status write (the agent's own conditions) is never a change of intent."""
    return frozenset((ns, name) for g in wl.gangs.values() for _, ns, name in g.refs)


def unlisted_gated(wl: Workload) -> list[PodView]:
    """Gated pods of the workload no PodGang lists: old pods of wanted slots, and unwanted ones."""
    out = [p for s in wl.slots.values() for p in s.old if p.gated]
    out += [p for p in wl.unwanted if p.gated]
    return out


def observe(wl: Workload, memory: Memory, now: float) -> None:
    """Record an intent change and the unlisted gated pods of this pass (``memory`` in place).

    Only this workload's entries are touched (its memory is its own). A pod seen for the
    first time in the same pass as an intent change counts as *not* behind it: the cautious
    side when both arrived between two passes.
    """
    listed = _listed(wl)
    before = memory.listed
    changed = before is not None and listed != before
    if before is None or changed:
        memory.listed = listed
    if changed:
        memory.intent_at = now
    current: dict[tuple[str, str], tuple[str, float, float | None]] = {}
    for pod in unlisted_gated(wl):
        kept = memory.unlisted.get(pod.key)
        if kept is None or kept[0] != pod.uid:
            # A pod listed until this change is behind it by definition (a second update
            # overtook the first, or its slot was scaled in, before it ran).
            dropped = changed and before is not None and pod.key in before
            current[pod.key] = (pod.uid, now, now if dropped else None)
        elif changed and kept[2] is None and kept[1] < now:
            current[pod.key] = (kept[0], kept[1], now)
        else:
            current[pod.key] = kept
    memory.unlisted = current


def gated_due(pod: PodView, memory: Memory, now: float, grace: float, unordered_grace: float,
              listed_is_newer: bool = False) -> tuple[bool, str]:
    """Whether an unlisted gated pod may be deleted now, and why (or why not).

    ``listed_is_newer``: the pod its slot's PodGang lists exists and was created after this
    one (by the API server's clock), so the PodGang wants a pod applied later: this one is
    behind it. That holds after an agent restart too, when the order of what the agent saw
    is lost (an update overtaken by a second one before the restart).
    """
    kept = memory.unlisted.get(pod.key)
    if kept is None or kept[0] != pod.uid:
        return False, "not seen before"
    _, seen, stated = kept
    if stated is not None:
        waited = now - stated
        return waited >= grace, f"its PodGangs changed {waited:.0f}s ago without it (grace {grace:g}s)"
    if listed_is_newer:
        waited = now - seen
        return waited >= grace, f"its slot's PodGang lists a pod created after it (grace {grace:g}s)"
    waited = now - seen
    return waited >= unordered_grace, (
        f"no PodGang has listed it for {waited:.0f}s and its PodGangs have not changed since it appeared "
        f"(applied before its PodGang; deleted only after {unordered_grace:g}s)")
