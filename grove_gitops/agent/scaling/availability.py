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
  member cliques, come from the day-2 annotation of its base PodGang (``podgangs.day2_annotation``).

Everything read here comes from objects the render produced, but a hand-edited one is read
defensively: values that are not plain non-negative ints are ignored (the clique then counts as
unavailable, the cautious side), and a long annotation is parsed without being memoised.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from grove_gitops.agent.scaling.status import DAY2, SlotIndex, base_gangs

Raw = Mapping[str, Any]

#: Annotations longer than this are parsed each time instead of memoised (a hostile one must
#: not fill the memo): the render's own are a few hundred bytes.
_MEMO_MAX = 4096
#: A PodClique's name is an object name: no longer than this. A longer podgroup name in a
#: (hand-edited) PodGang is no PodClique of ours, and is skipped before :func:`group_replicas`
#: cuts it at each ``-`` (a 1 MB name of dashes would otherwise cost a pass minutes).
_MAX_NAME = 253


@dataclass(frozen=True)
class Layout:
    """What one PodCliqueSet replica's availability rests on (its day-2 annotation)."""

    replica: int
    cliques: tuple[tuple[str, int], ...]  # standalone PodClique name, minAvailable
    groups: tuple[tuple[str, int, tuple[str, ...]], ...]  # group name, minAvailable, member clique names


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


@functools.lru_cache(maxsize=1024)
def _layout(raw: str) -> Layout | None:
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict) or _count(value.get("replicaIndex")) is None:
        return None
    raw_cliques, raw_groups = value.get("cliques"), value.get("scalingGroups")
    cliques: list[tuple[str, int]] = []
    for c in raw_cliques if isinstance(raw_cliques, list) else []:
        if isinstance(c, dict) and isinstance(c.get("name"), str) and _count(c.get("minAvailable")) is not None:
            cliques.append((c["name"], c["minAvailable"]))
    groups: list[tuple[str, int, tuple[str, ...]]] = []
    for g in raw_groups if isinstance(raw_groups, list) else []:
        if not (isinstance(g, dict) and isinstance(g.get("name"), str) and _count(g.get("minAvailable")) is not None):
            continue
        members = g.get("cliques")
        if isinstance(members, list) and members and all(isinstance(m, str) for m in members):
            groups.append((g["name"], g["minAvailable"], tuple(members)))
    return Layout(value["replicaIndex"], tuple(cliques), tuple(groups))


def layout_of(gang: Raw) -> Layout | None:
    """The replica layout a PodGang's day-2 annotation gives, or None."""
    raw = ((gang.get("metadata") or {}).get("annotations") or {}).get(DAY2)
    if not isinstance(raw, str):
        return None
    return _layout(raw) if len(raw) <= _MEMO_MAX else _layout.__wrapped__(raw)


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


def replica_available(layout: Layout, ready: Mapping[str, int], minimums: Mapping[str, int],
                      indexes: Mapping[str, set[str]] | None = None) -> bool:
    """Grove's PodCliqueSet replica availability (module docstring)."""
    return all(_clique_available(name, ready, minimums, floor) for name, floor in layout.cliques) and all(
        group_available(name, members, ready, minimums, None if indexes is None else indexes.get(name, set()))
        >= floor for name, floor, members in layout.groups)


def available_replicas(podgangs: Sequence[Raw], pcs: str, index: SlotIndex, replicas: int) -> int:
    """How many of the PodCliqueSet's replicas ``0..replicas-1`` are available. A replica whose
    base PodGang is missing, or carries no readable layout, is not."""
    layouts: dict[int, Layout] = {}
    for gang in base_gangs(podgangs, pcs):
        layout = layout_of(gang)
        if layout is not None:
            layouts.setdefault(layout.replica, layout)
    ready, minimums = ready_by_clique(index), clique_minimums(podgangs)
    groups = {name: members for layout in layouts.values() for name, _, members in layout.groups}
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
