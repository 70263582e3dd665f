"""What scale targets and the ``gitops.grove.io`` PodCliqueSet report, from the live pods.

Derived, never remembered: every pass recomputes it from the cache. Counting is by *slot*
(``spec.hostname``, the pod's place in its PodClique), so an old pod still serving during a
rolling update counts as existing and ready; "updated" needs the pod the current render names.

- ``replicas``: units of the count whose every slot holds a pod that is not terminating
  (a scaling-group replica counts once all its pods exist, as Grove's scheduled replicas);
- ``readyReplicas``: units whose every slot holds a Ready pod;
- ``updatedReplicas``: units whose every pod is the current render's pod, and Ready.

The workload's units are its replicas' base PodGangs (:func:`base_units`: an autoscaled
standalone clique's pods from its ``minAvailable`` up left out) for ``updatedReplicas`` and
whether a scale has settled; ``availableReplicas`` and ``Ready`` are Grove's availability
(:mod:`.availability`: each clique at its ``minAvailable``).

The ``/scale`` subresource reads ``status.replicas`` and ``status.selector``; an HPA's
"current replicas" is ``spec.replicas`` (Kubernetes' rule), so a unit still starting never
makes it scale again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from grove_gitops.agent.scaling.plan import gang_members
from grove_gitops.readmodel.snapshot import DAY2_ANNOTATION, day2_or_none, hostname_of

Raw = Mapping[str, Any]
DAY2 = DAY2_ANNOTATION


@dataclass(frozen=True)
class PodState:
    name: str
    slot: str
    ready: bool
    terminating: bool


def pod_state(pod: Raw) -> PodState:
    meta = pod.get("metadata") or {}
    conditions = (pod.get("status") or {}).get("conditions") or []
    ready = any(isinstance(c, Mapping) and c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    return PodState(str(meta.get("name", "")), str((pod.get("spec") or {}).get("hostname") or ""), ready,
                    bool(meta.get("deletionTimestamp")))


@dataclass
class Counted:
    replicas: int = 0
    ready: int = 0
    updated: int = 0


@dataclass
class SlotIndex:
    """The live pods of one workload by slot and by name."""

    by_slot: dict[str, list[PodState]] = field(default_factory=dict)
    by_name: dict[str, PodState] = field(default_factory=dict)

    @staticmethod
    def of(pods: Iterable[Raw], memo: dict[tuple[str, str], PodState] | None = None) -> SlotIndex:
        """The index; ``memo`` (pod name and resourceVersion -> state) is read and refilled
        with exactly these pods, so a pass derives only the pods that changed since the last."""
        out = SlotIndex()
        seen: dict[tuple[str, str], PodState] = {}
        for pod in pods:
            meta = pod.get("metadata") or {}
            key = (str(meta.get("name", "")), str(meta.get("resourceVersion", "")))
            state = memo.get(key) if memo is not None else None
            if state is None:
                state = pod_state(pod)
            seen[key] = state
            out.by_name[state.name] = state
            out.by_slot.setdefault(state.slot, []).append(state)
        if memo is not None:
            memo.clear()
            memo.update(seen)
        return out

    def count(self, units: Iterable[list[tuple[str, str]]]) -> Counted:
        """Count units, each a list of (pod name, slot) the current render wants."""
        out = Counted()
        for unit in units:
            alive = [[p for p in self.by_slot.get(slot, []) if not p.terminating] for _, slot in unit]
            if unit and all(alive):
                out.replicas += 1
                if all(any(p.ready for p in ps) for ps in alive):
                    out.ready += 1
            current = [self.by_name.get(name) for name, _ in unit]
            if unit and all(p is not None and p.ready and not p.terminating for p in current):
                out.updated += 1
        return out


def replica_units(podgangs: Iterable[Raw], pods: Mapping[str, str]) -> dict[int, list[tuple[str, str]]]:
    """Per PodCliqueSet replica (from each PodGang's day-2 annotation), the pods its PodGangs
    list as (name, slot); ``pods`` maps a pod name to its slot where the pod is known."""
    out: dict[int, list[tuple[str, str]]] = {}
    for gang in podgangs:
        day2 = day2_or_none(gang)
        if day2 is None:
            continue
        for name in gang_members(gang):
            out.setdefault(day2.replica, []).append((name, pods.get(name, hostname_of(name))))
    return out


def base_gangs(podgangs: Iterable[Raw], pcs: str) -> list[Raw]:
    """The base PodGangs (``<pcs>-<i>``) of ``podgangs``: a replica's standalone cliques and
    its scaling groups' replicas below ``minAvailable``, what Grove's PodCliqueSet
    availability rests on; the scaled gangs (``<pcs>-<i>-<group>-<j>``) are left out."""
    prefix = f"{pcs}-"
    out = []
    for gang in podgangs:
        name = str((gang.get("metadata") or {}).get("name", ""))
        if name.startswith(prefix) and name[len(prefix):].isdigit():
            out.append(gang)
    return out


def base_units(podgangs: Iterable[Raw], pcs: str, pods: Mapping[str, str]) -> dict[int, list[tuple[str, str]]]:
    """Per PodCliqueSet replica, the pods its availability rests on, as Grove's: the members
    of its base PodGang (:func:`base_gangs`) but an autoscaled standalone clique's slots from
    its ``minAvailable`` up (Grove: the clique's ``readyReplicas >= minAvailable``; its pods
    above the floor join the base PodGang, and starting they must not make the replica
    unavailable)."""
    gangs = base_gangs(podgangs, pcs)
    out = replica_units(gangs, pods)
    for gang in gangs:
        day2 = day2_or_none(gang)
        floors = tuple((c.name, c.min_available) for c in day2.cliques if c.scale_target) if day2 is not None else ()
        if day2 is not None and day2.replica in out and floors:
            out[day2.replica] = [(name, slot) for name, slot in out[day2.replica] if not _above_floor(slot, floors)]
    return out


def _above_floor(slot: str, floors: tuple[tuple[str, int], ...]) -> bool:
    for clique, floor in floors:
        index = slot[len(clique) + 1:] if slot.startswith(f"{clique}-") else ""
        if index.isascii() and index.isdigit() and int(index) >= floor:
            return True
    return False


def condition(kind: str, status: bool, reason: str, message: str, now: str, generation: int,
              old: Iterable[Raw] = ()) -> dict[str, Any]:
    """A metav1.Condition; ``lastTransitionTime`` kept from ``old`` while the status holds."""
    value = "True" if status else "False"
    since = now
    for c in old:
        if isinstance(c, Mapping) and c.get("type") == kind and c.get("status") == value:
            since = str(c.get("lastTransitionTime") or now)
    return {"type": kind, "status": value, "reason": reason, "message": message[:1024],
            "lastTransitionTime": since, "observedGeneration": generation}
