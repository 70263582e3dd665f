"""NodeInventory pools and ``v1`` Nodes → groups of identical nodes, and the topology levels.

A pool of ``count`` nodes stays ONE :class:`NodeGroup` with a count (issue 21: expanding 100
pools of 100,000 nodes into node objects ran out of memory); a ``v1`` Node is a group of one.
The nodes of a pool differ only in their name ``<pool>-<i>`` and, unless the pool's labels set
it, their ``kubernetes.io/hostname`` label, which is that name.

A topology level is a node-label key of a ClusterTopologyBinding. A node's domain at a level
is the path of its label values from the binding's broadest level down to that one, so rack
``r1`` of zone ``a`` and rack ``r1`` of zone ``b`` are two racks. A node without the label is
in no domain of that level, and cannot host pods that must pack at it. All nodes of a group
share their domain at a level unless the path holds the generated hostname: then each node is
a domain of its own (:meth:`Inventory.per_node`), which ``placement`` handles without listing them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from grove_gitops.api.inventory import HOSTNAME, NodeTaint, Taint
from grove_gitops.api.topology import ClusterTopologyBinding
from grove_gitops.feasibility.units import milli
from grove_gitops.load.source import SourceSet

#: What ``kubectl cordon`` means to the scheduler.
UNSCHEDULABLE_TAINT = ("node.kubernetes.io/unschedulable", "", "NoSchedule")

Quantity = str | int | float


@dataclass(frozen=True)
class ClusterNode:
    """One node as a node filter sees it (built on demand, one at a time)."""

    name: str
    labels: Mapping[str, str]
    #: (key, value, effect); PreferNoSchedule taints are left out (they never block).
    taints: tuple[tuple[str, str, str], ...]
    #: Thousandths of a unit, by resource name.
    allocatable: Mapping[str, int]


@dataclass(frozen=True)
class NodeGroup:
    """``count`` identical nodes: a pool (``pooled``: nodes ``<name>-0`` ... with their names as
    hostnames), or one ``v1`` Node (count 1, its own name and labels)."""

    name: str
    count: int
    labels: Mapping[str, str]
    taints: tuple[tuple[str, str, str], ...]
    #: Kubernetes quantities by resource name; ``millis`` converts the ones placement uses.
    allocatable: Mapping[str, Quantity]
    pooled: bool

    @property
    def named_hosts(self) -> bool:
        """Whether each node carries its own generated hostname label."""
        return self.pooled and HOSTNAME not in self.labels

    def node_name(self, index: int) -> str:
        return f"{self.name}-{index}" if self.pooled else self.name

    def node(self, index: int) -> ClusterNode:
        name = self.node_name(index)
        labels = {HOSTNAME: name, **self.labels} if self.pooled else self.labels
        return ClusterNode(name, labels, self.taints, {})

    def millis(self, names: Sequence[str]) -> dict[str, int]:
        """The allocatable amounts of ``names`` the group lists, in thousandths of a unit."""
        return {n: milli(self.allocatable[n]) for n in names if n in self.allocatable}


@dataclass(frozen=True)
class Level:
    """One topology level: its node-label key, its name in the binding, and the broader keys."""

    key: str
    name: str
    ancestors: tuple[str, ...]


@dataclass
class Inventory:
    groups: list[NodeGroup] = field(default_factory=list)
    #: By key, in binding order (broadest first).
    levels: dict[str, Level] = field(default_factory=dict)

    @property
    def node_count(self) -> int:
        return sum(g.count for g in self.groups)

    def level_name(self, key: str) -> str:
        level = self.levels.get(key)
        return level.name if level is not None else key

    def path_keys(self, key: str) -> tuple[str, ...]:
        level = self.levels.get(key)
        return (*(level.ancestors if level else ()), key)

    def per_node(self, group: NodeGroup, key: str) -> bool:
        """Whether every node of ``group`` is a domain of its own at ``key`` (its path holds
        the node's generated hostname)."""
        if not group.named_hosts or group.count == 1:
            return False
        return (key == HOSTNAME or key in group.labels) and HOSTNAME in self.path_keys(key)

    def domain_of(self, group: NodeGroup, key: str, index: int = 0) -> tuple[str, ...] | None:
        """The domain of node ``index`` of ``group`` at ``key`` (a path of label values), or
        None without the label."""
        name = group.node_name(index)
        hostname = group.named_hosts
        if key == HOSTNAME and hostname:
            value: str | None = name
        else:
            value = group.labels.get(key)
        if value is None:
            return None
        keys = self.path_keys(key)[:-1]
        return (*(name if hostname and k == HOSTNAME else group.labels.get(k, "") for k in keys), value)


def _taints(taints: Sequence[Taint | NodeTaint]) -> tuple[tuple[str, str, str], ...]:
    """PreferNoSchedule taints never block a pod, so they are left out."""
    return tuple((t.key, t.value or "", str(t.effect)) for t in taints if t.effect != "PreferNoSchedule")


def build_inventory(source: SourceSet, bindings: dict[str, ClusterTopologyBinding]) -> Inventory:
    """A group per pool and per Node (the loader has checked them and bounded their number)."""
    inv = Inventory()
    for item in source.inventories:
        for pool in item.obj.pools:
            inv.groups.append(
                NodeGroup(pool.name, pool.count, dict(pool.labels), _taints(pool.taints), dict(pool.allocatable), True)
            )
    for sourced in source.nodes:
        node = sourced.obj[1]
        node_taints = _taints(node.spec.taints or [])
        if node.spec.unschedulable:
            node_taints += (UNSCHEDULABLE_TAINT,)
        labels = dict(node.metadata.labels or {})
        inv.groups.append(NodeGroup(node.metadata.name, 1, labels, node_taints, node.allocatable(), False))
    for binding in bindings.values():
        keys = [level.key for level in binding.spec.levels]
        for i, level in enumerate(binding.spec.levels):
            inv.levels.setdefault(level.key, Level(level.key, level.domain, tuple(keys[:i])))
    return inv
