"""NodeInventory pools and ``v1`` Nodes → one list of nodes, and the topology domains over them.

A topology level is a node-label key of a ClusterTopologyBinding. A node's domain at a level
is the path of its label values from the binding's broadest level down to that one, so rack
``r1`` of zone ``a`` and rack ``r1`` of zone ``b`` are two racks. A node without the label is
in no domain of that level, and cannot host pods that must pack at it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from grove_gitops.api.inventory import NodeTaint, Taint
from grove_gitops.api.topology import ClusterTopologyBinding
from grove_gitops.feasibility.units import milli
from grove_gitops.load.source import HOSTNAME, SourceSet

#: What ``kubectl cordon`` means to the scheduler.
UNSCHEDULABLE_TAINT = ("node.kubernetes.io/unschedulable", "", "NoSchedule")


@dataclass(frozen=True)
class ClusterNode:
    name: str
    labels: dict[str, str]
    #: (key, value, effect); PreferNoSchedule taints are left out (they never block).
    taints: tuple[tuple[str, str, str], ...]
    #: Thousandths of a unit, by resource name.
    allocatable: dict[str, int]


@dataclass(frozen=True)
class Level:
    """One topology level: its node-label key, its name in the binding, and the broader keys."""

    key: str
    name: str
    ancestors: tuple[str, ...]


@dataclass
class Inventory:
    nodes: list[ClusterNode] = field(default_factory=list)
    #: By key, in binding order (broadest first).
    levels: dict[str, Level] = field(default_factory=dict)

    def level_name(self, key: str) -> str:
        level = self.levels.get(key)
        return level.name if level is not None else key

    def domain_of(self, node: ClusterNode, key: str) -> tuple[str, ...] | None:
        """The node's domain at ``key`` (a path of label values), or None without the label."""
        value = node.labels.get(key)
        if value is None:
            return None
        level = self.levels.get(key)
        parents = tuple(node.labels.get(k, "") for k in (level.ancestors if level else ()))
        return (*parents, value)


def _millis(values: dict[str, object]) -> dict[str, int]:
    return {name: milli(v) for name, v in values.items()}


def _taints(taints: Sequence[Taint | NodeTaint]) -> tuple[tuple[str, str, str], ...]:
    """PreferNoSchedule taints never block a pod, so they are left out."""
    return tuple((t.key, t.value or "", str(t.effect)) for t in taints if t.effect != "PreferNoSchedule")


def build_inventory(source: SourceSet, bindings: dict[str, ClusterTopologyBinding]) -> Inventory:
    """Every node of every NodeInventory and Node list (the loader has checked them)."""
    inv = Inventory()
    for item in source.inventories:
        for pool in item.obj.pools:
            alloc = _millis(dict(pool.allocatable))
            taints = _taints(pool.taints)
            for i in range(pool.count):
                name = f"{pool.name}-{i}"
                labels = {HOSTNAME: name, **pool.labels}
                inv.nodes.append(ClusterNode(name, labels, taints, alloc))
    for sourced in source.nodes:
        node = sourced.obj[1]
        node_taints = _taints(node.spec.taints or [])
        if node.spec.unschedulable:
            node_taints += (UNSCHEDULABLE_TAINT,)
        labels = dict(node.metadata.labels or {})
        inv.nodes.append(ClusterNode(node.metadata.name, labels, node_taints, _millis(node.allocatable())))
    for binding in bindings.values():
        keys = [level.key for level in binding.spec.levels]
        for i, level in enumerate(binding.spec.levels):
            inv.levels.setdefault(level.key, Level(level.key, level.domain, tuple(keys[:i])))
    return inv
