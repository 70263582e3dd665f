"""Grove's availability, behind the ``availableReplicas`` of the workload and of a scaling group.

Grove (spec grove-desired-state.md §8, grove-autoscaling.md "status"): a PodClique is available
when its Ready pods reach its ``minAvailable``; a scaling-group replica when every member
PodClique is; a scaling group's ``availableReplicas`` counts those replicas; a PodCliqueSet
replica is available when every standalone PodClique is and every scaling group has at least
its ``minAvailable`` replicas available. So one pod of four down, under ``minAvailable: 3``,
leaves the replica available, as Grove reports it (before, the agent asked for every pod of the
base PodGang to be Ready, a stricter meaning under Grove's field name).

Where the agent reads it, with no PodClique objects in the cluster (Git holds none):

- Ready is counted by *slot* (``spec.hostname``, the pod's place in its PodClique), as the
  other counts of :mod:`.status`: an old pod still serving during a rolling update counts;
- a PodClique's ``minAvailable`` is its podgroup's ``minReplicas`` in the rendered PodGangs
  (Grove's PodGang sets it so), which every gang, base or scaled, carries;
- a replica's standalone PodCliques and scaling groups, with the groups' ``minAvailable`` and
  member cliques, come from the day-2 annotation of its base PodGang (``podgangs.day2_annotation``),
  read by the day-2 loop's own parser (``readmodel.snapshot.day2_or_none``).

Everything read here comes from objects the render produced, but a hand-edited one is read
defensively: a day-2 annotation the parser refuses leaves its replica unavailable (the cautious
side), and a ``minReplicas`` that is not a plain non-negative int is ignored.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from grove_gitops.agent.scaling.status import SlotIndex, base_gangs
from grove_gitops.readmodel.gangs import MAX_NAME
from grove_gitops.readmodel.snapshot import Day2, day2_or_none

Raw = Mapping[str, Any]

#: A PodClique's name is an object name (the read models' bound): a longer podgroup name in a
#: (hand-edited) PodGang is no PodClique of ours, and is skipped before :func:`group_replicas`
#: cuts it at each ``-`` (a 1 MB name of dashes would otherwise cost a pass minutes).
_MAX_NAME = MAX_NAME


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def clique_minimums(podgangs: Iterable[Raw]) -> dict[str, int]:
    """Each PodClique's ``minAvailable``: the ``minReplicas`` of its podgroup in ``podgangs``."""
    out: dict[str, int] = {}
    for gang in podgangs:
        for group in (gang.get("spec") or {}).get("podgroups") or []:
            if isinstance(group, Mapping) and isinstance(group.get("name"), str) and len(group["name"]) <= _MAX_NAME:
                floor = _count(group.get("minReplicas"))
                if floor is not None:
                    out[group["name"]] = floor
    return out


def ready_by_clique(index: SlotIndex) -> dict[str, int]:
    """Per PodClique, its slots (``<podclique>-<k>``) holding a Ready pod that is not terminating."""
    out: dict[str, int] = {}
    for slot, states in index.by_slot.items():
        clique, _, k = slot.rpartition("-")
        if clique and k.isascii() and k.isdigit() and any(p.ready and not p.terminating for p in states):
            out[clique] = out.get(clique, 0) + 1
    return out


def _clique_available(name: str, ready: Mapping[str, int], minimums: Mapping[str, int],
                      floor: int | None = None) -> bool:
    need = floor if floor is not None else minimums.get(name)
    return need is not None and ready.get(name, 0) >= need


def group_replicas(minimums: Mapping[str, int], groups: Mapping[str, tuple[str, ...]]) -> dict[str, set[str]]:
    """Per scaling group (name -> member clique names), the replica indexes ``j`` the PodGangs
    list a member podgroup ``<group>-<j>-<clique>`` of; one walk over the podgroups, whatever
    the number of groups (a name is cut at each ``-`` until a prefix is a group's)."""
    out: dict[str, set[str]] = {group: set() for group in groups}
    for name in minimums:
        if len(name) > _MAX_NAME:
            continue
        cut = name.find("-")
        while cut > 0:
            members = groups.get(name[:cut])
            if members is not None:
                j, _, clique = name[cut + 1:].partition("-")
                if clique in members and j.isascii() and j.isdigit():
                    out[name[:cut]].add(j)
            cut = name.find("-", cut + 1)
    return out


def group_available(group: str, members: tuple[str, ...], ready: Mapping[str, int],
                    minimums: Mapping[str, int], indexes: set[str] | None = None) -> int:
    """A scaling group's ``availableReplicas``: its replicas ``j`` (``indexes``, else found with
    :func:`group_replicas`) whose every member PodClique is available."""
    if indexes is None:
        indexes = group_replicas(minimums, {group: members})[group]
    prefix = f"{group}-"
    return sum(all(_clique_available(f"{prefix}{j}-{c}", ready, minimums) for c in members) for j in indexes)


def replica_available(layout: Day2, ready: Mapping[str, int], minimums: Mapping[str, int],
                      indexes: Mapping[str, set[str]] | None = None) -> bool:
    """Grove's PodCliqueSet replica availability (module docstring)."""
    return all(_clique_available(c.name, ready, minimums, c.min_available) for c in layout.cliques) and all(
        group_available(g.name, g.cliques, ready, minimums, None if indexes is None else indexes.get(g.name, set()))
        >= g.min_available for g in layout.scaling_groups)


def available_replicas(podgangs: Sequence[Raw], pcs: str, index: SlotIndex, replicas: int) -> int:
    """How many of the PodCliqueSet's replicas ``0..replicas-1`` are available. A replica whose
    base PodGang is missing, or carries no readable layout, is not."""
    layouts: dict[int, Day2] = {}
    for gang in base_gangs(podgangs, pcs):
        layout = day2_or_none(gang)
        if layout is not None:
            layouts.setdefault(layout.replica, layout)
    ready, minimums = ready_by_clique(index), clique_minimums(podgangs)
    groups = {g.name: g.cliques for layout in layouts.values() for g in layout.scaling_groups}
    indexes = group_replicas(minimums, groups)
    return sum(replica_available(layouts[i], ready, minimums, indexes) for i in range(replicas) if i in layouts)


def units_available(units: Iterable[list[tuple[str, str]]], ready: Mapping[str, int],
                    minimums: Mapping[str, int]) -> int:
    """Of a scaling group's replicas, each given as its pods' ``(name, slot)``, those whose every
    member PodClique is available (a clique without a known ``minAvailable``: all of its slots)."""
    out = 0
    for unit in units:
        slots: dict[str, int] = {}
        for _, slot in unit:
            clique = slot.rpartition("-")[0]
            slots[clique] = slots.get(clique, 0) + 1
        out += bool(slots) and all(_clique_available(c, ready, minimums, minimums.get(c, n)) for c, n in slots.items())
    return out
