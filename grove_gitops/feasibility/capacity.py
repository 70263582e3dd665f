"""The free room of every node, kept per group of identical nodes (issue 21).

A node of a group is *fresh* (its free room is the group's allocatable, and nothing is stored
for it) or *explicit*: it has taken pods (or been chosen as a domain), or it is *pinned*
because something singles it out by name: a node filter mentions its name or hostname, or
another node carries its hostname label. Explicit nodes have a row of their own; they are
never more than the pods placed plus the pinned ones, so a pool of 100,000 nodes costs what
its busy nodes cost.

Every fresh node of a group is alike in everything but its name: the same room, the same
answer from every node filter, the same domains (or, at a level whose path holds the
hostname, a domain of its own). ``placement`` relies on that: first fit fills a run of fresh
nodes in one step, and trying one fresh node as a domain answers for all of them.

Running free totals (the cluster, each group, each static domain, each 32-node chunk of a
long group) let a search skip room that cannot hold a pod in one test. Every change goes
through :meth:`Capacity.take` and is logged, so a failed attempt is undone exactly
(:meth:`Capacity.undo`), including the nodes it made explicit.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from grove_gitops.api.inventory import HOSTNAME
from grove_gitops.api.inventorycheck import split_node_name
from grove_gitops.feasibility.demand import NodeFilter
from grove_gitops.feasibility.inventory import Inventory
from grove_gitops.feasibility.units import UNLIMITED, UNTRACKED_WHEN_ABSENT

#: Nodes per chunk of a long group (see ``Capacity.chunk_free``).
CHUNK = 32

#: (group, first index, end index): consecutive nodes of one group.
Span = tuple[int, int, int]
Nodes = tuple[Span, ...]
Vector = tuple[tuple[int, int], ...]
Path = tuple[str, ...]


@dataclass
class Mask:
    """Which nodes a node filter (or any of several) allows: per group, the answer for its
    unpinned nodes, and the answer for each pinned node."""

    generic: list[bool]
    pinned: dict[tuple[int, int], bool]
    every: bool

    def ok(self, g: int, j: int) -> bool:
        return self.pinned.get((g, j), self.generic[g])


@dataclass
class Domain:
    """A domain of a level as a search sees it: its path, the nodes of it in reach, and its
    running free total. A *class* (``fresh`` set) stands for every fresh node of
    ``fresh[0]`` in ``fresh[1]:fresh[2]``, each a domain of its own, all alike."""

    path: Path
    members: Nodes
    free: list[int]
    fresh: Span | None = None


def lex_order(lo: int, hi: int) -> Iterator[int]:
    """The integers of ``[lo, hi)`` in the order of their decimal strings (``10`` before
    ``2``), lazily: the order in which the paths of a pool's hosts sort."""
    if lo >= hi:
        return
    if lo == 0:
        yield 0
    stack = list(range(9, 0, -1))
    while stack:
        p = stack.pop()
        if lo <= p < hi:
            yield p
        children = [p * 10 + d for d in range(9, -1, -1)]
        stack.extend(c for c in children if _reaches(c, lo, hi))


def _reaches(prefix: int, lo: int, hi: int) -> bool:
    """Whether some integer of ``[lo, hi)`` has the decimal string of ``prefix`` as a prefix."""
    low, high = prefix, prefix + 1
    while low < hi:
        if high > lo:
            return True
        low, high = low * 10, high * 10
    return False


@dataclass
class Capacity:
    inv: Inventory
    #: The resources tracked, in order (GPUs first).
    resources: list[str]
    #: The node filters the gangs use: the names they mention pin those nodes.
    filters: Iterable[NodeFilter] = ()
    log: list[tuple[int, int, Vector, int, bool]] = field(default_factory=list)

    def __post_init__(self) -> None:
        groups = self.inv.groups
        width = len(self.resources)
        self.alloc: list[list[int]] = []
        for group in groups:
            have = group.millis(self.resources)
            self.alloc.append(
                [have.get(r, UNLIMITED if r in UNTRACKED_WHEN_ABSENT else 0) for r in self.resources]
            )
        self.rows: list[dict[int, list[int]]] = [{} for _ in groups]
        self.order: list[list[int]] = [[] for _ in groups]
        self.group_alloc = [[a * g.count for a in row] for row, g in zip(self.alloc, groups, strict=True)]
        self.group_free = [list(row) for row in self.group_alloc]
        self.cluster_alloc = [sum(row[r] for row in self.group_alloc) for r in range(width)]
        self.cluster_free = list(self.cluster_alloc)
        #: The running totals a take on a node of the group changes (cluster, group, domains).
        self._totals: list[list[list[int]]] = [[self.cluster_free, free] for free in self.group_free]
        self._pin_totals: dict[tuple[int, int], list[list[int]]] = {}
        self.chunk_free: list[dict[int, list[int]] | None] = [{} if g.count > 2 * CHUNK else None for g in groups]
        self.pins = self._pins()
        self._generic = [next((j for j in range(g.count) if j not in self.pins[i]), None) for i, g in enumerate(groups)]
        self.all_nodes: Nodes = tuple((g, 0, group.count) for g, group in enumerate(groups))
        self.keys = list(self.inv.levels)
        self.dom_members: dict[str, dict[Path, list[Span]]] = {}
        self.dom_alloc: dict[str, dict[Path, list[int]]] = {}
        self.dom_free: dict[str, dict[Path, list[int]]] = {}
        self.per_node: dict[str, list[int]] = {}
        #: By level, the domain of each group whose nodes share theirs (None: none, or per node).
        self.group_dom: dict[str, list[Path | None]] = {}
        for key in self.keys:
            self._add_level(key)
        for g, pinned in enumerate(self.pins):
            for j in sorted(pinned):
                self._materialize(g, j)
        self._masks: dict[NodeFilter, Mask] = {}
        self._paths: dict[tuple[str, int, int], Path | None] = {}

    # -- construction -----------------------------------------------------------------

    def _pins(self) -> list[set[int]]:
        """The nodes of pools that something names: a filter's string, or the hostname label
        of a node that is not one of a pool's own (two nodes may share a host domain)."""
        groups = self.inv.groups
        by_name: dict[str, int] = {}
        for g, group in enumerate(groups):
            if group.named_hosts and group.count > 1:
                by_name.setdefault(group.name, g)
        names: set[str] = set()
        for node_filter in self.filters:
            names.update(node_filter.strings())
        for group in groups:
            if not group.named_hosts or group.count == 1:
                host = group.node(0).labels.get(HOSTNAME)
                if host is not None:
                    names.add(host)
        pins: list[set[int]] = [set() for _ in groups]
        for name in names:
            split = split_node_name(name)
            owner = by_name.get(split[0]) if split is not None else None
            if owner is not None and split is not None and split[1] < groups[owner].count:
                pins[owner].add(split[1])
        return pins

    def _add_level(self, key: str) -> None:
        members: dict[Path, list[Span]] = {}
        per_node: list[int] = []
        group_dom: list[Path | None] = [None] * len(self.inv.groups)
        self.group_dom[key] = group_dom
        for g, group in enumerate(self.inv.groups):
            if self.inv.per_node(group, key):
                per_node.append(g)
                for j in sorted(self.pins[g]):
                    dom = self.inv.domain_of(group, key, j)
                    if dom is not None:
                        members.setdefault(dom, []).append((g, j, j + 1))
                continue
            dom = group_dom[g] = self.inv.domain_of(group, key)
            if dom is not None:
                members.setdefault(dom, []).append((g, 0, group.count))
        self.dom_members[key] = dict(sorted(members.items()))
        self.per_node[key] = per_node
        allocs: dict[Path, list[int]] = {}
        frees: dict[Path, list[int]] = {}
        for dom, spans in self.dom_members[key].items():
            total = [sum(self.alloc[g][r] * (hi - lo) for g, lo, hi in spans) for r in range(len(self.resources))]
            allocs[dom], frees[dom] = total, list(total)
            for g, lo, hi in spans:
                if hi - lo == self.inv.groups[g].count:
                    self._totals[g].append(frees[dom])
                else:  # a pinned node of a pool whose nodes are domains of their own
                    self._pin_totals.setdefault((g, lo), []).append(frees[dom])
        self.dom_alloc[key], self.dom_free[key] = allocs, frees

    # -- the state of nodes --------------------------------------------------------------

    def _materialize(self, g: int, j: int) -> list[int]:
        row = list(self.alloc[g])
        self.rows[g][j] = row
        insort(self.order[g], j)
        chunks = self.chunk_free[g]
        if chunks is not None and j // CHUNK not in chunks:
            c = j // CHUNK
            size = min(CHUNK, self.inv.groups[g].count - c * CHUNK)
            chunks[c] = [a * size for a in self.alloc[g]]
        return row

    def _node_totals(self, g: int, j: int) -> list[list[int]]:
        totals = self._totals[g]
        pinned = self._pin_totals.get((g, j))
        chunks = self.chunk_free[g]
        if pinned is None and chunks is None:
            return totals
        return [*totals, *(pinned or ()), *([chunks[j // CHUNK]] if chunks is not None else [])]

    def take(self, g: int, j: int, vec: Vector, k: int) -> list[int]:
        """``k`` pods of ``vec`` onto node ``j`` of group ``g`` (k = 0 only makes it explicit);
        returns the node's row."""
        rows = self.rows[g]
        created = j not in rows
        row = self._materialize(g, j) if created else rows[j]
        if k:
            totals = self._node_totals(g, j)
            for r, need in vec:
                row[r] -= need * k
                for t in totals:
                    t[r] -= need * k
        self.log.append((g, j, vec, k, created))
        return row

    def undo(self, checkpoint: int) -> None:
        while len(self.log) > checkpoint:
            g, j, vec, k, created = self.log.pop()
            row = self.rows[g][j]
            if k:
                totals = self._node_totals(g, j)
                for r, need in vec:
                    row[r] += need * k
                    for t in totals:
                        t[r] += need * k
            if created:
                del self.rows[g][j]
                order = self.order[g]
                order.pop(bisect_left(order, j))

    def explicit(self, g: int, lo: int, hi: int) -> list[int]:
        """The explicit nodes of group ``g`` in ``[lo, hi)``, in order."""
        order = self.order[g]
        return order[bisect_left(order, lo) : bisect_left(order, hi)]

    def fresh_count(self, g: int, lo: int, hi: int) -> int:
        order = self.order[g]
        return (hi - lo) - (bisect_left(order, hi) - bisect_left(order, lo))

    # -- node filters -------------------------------------------------------------------

    def mask(self, node_filter: NodeFilter) -> Mask:
        found = self._masks.get(node_filter)
        if found is None:
            groups = self.inv.groups
            generic = [
                node_filter.allows(group.node(j)) if j is not None else False
                for group, j in zip(groups, self._generic, strict=True)
            ]
            pinned = {(g, j): node_filter.allows(groups[g].node(j)) for g, js in enumerate(self.pins) for j in js}
            every = all(ok for ok, j in zip(generic, self._generic, strict=True) if j is not None)
            found = Mask(generic, pinned, every and all(pinned.values()))
            self._masks[node_filter] = found
        return found

    def union(self, masks: Sequence[Mask]) -> Mask:
        """The nodes any of ``masks`` allows."""
        if len(masks) == 1:
            return masks[0]
        generic = [any(m.generic[g] for m in masks) for g in range(len(masks[0].generic))]
        pinned = {node: any(m.pinned[node] for m in masks) for node in masks[0].pinned}
        every = all(ok for ok, j in zip(generic, self._generic, strict=True) if j is not None)
        return Mask(generic, pinned, every and all(pinned.values()))

    def any_allowed(self, mask: Mask, nodes: Nodes) -> bool:
        for g, lo, hi in nodes:
            if mask.generic[g] and self.fresh_count(g, lo, hi):
                return True
            if any(mask.ok(g, j) for j in self.explicit(g, lo, hi)):
                return True
        return False

    def largest(self, mask: Mask) -> list[int] | None:
        """Per resource, the most any node the mask allows has (None: it allows none)."""
        rows = [
            self.alloc[g]
            for g in range(len(self.alloc))
            if (mask.generic[g] and self._generic[g] is not None) or any(mask.ok(g, j) for j in self.pins[g])
        ]
        return [max(col) for col in zip(*rows, strict=True)] if rows else None

    def sums(self, nodes: Nodes, mask: Mask) -> tuple[list[int], list[int]]:
        """Allocatable and free totals of the nodes of ``nodes`` the mask allows."""
        width = len(self.resources)
        alloc, free = [0] * width, [0] * width
        for g, lo, hi in nodes:
            row = self.alloc[g]
            fresh = self.fresh_count(g, lo, hi) if mask.generic[g] else 0
            for r in range(width):
                alloc[r] += row[r] * fresh
                free[r] += row[r] * fresh
            for j in self.explicit(g, lo, hi):
                if mask.ok(g, j):
                    node = self.rows[g][j]
                    for r in range(width):
                        alloc[r] += row[r]
                        free[r] += node[r]
        return alloc, free

    # -- first fit ----------------------------------------------------------------------

    def fit(self, nodes: Nodes, mask: Mask, vec: Vector, left: int) -> int:
        """First fit of ``left`` pods of ``vec`` over ``nodes`` in order; returns how many
        found no room (those placed stay placed: the caller undoes a failed attempt)."""
        group_free = self.group_free
        for g, lo, hi in nodes:
            free = group_free[g]
            for r, need in vec:
                if free[r] < need:
                    break  # not one node of the group has room for a pod
            else:
                left = self._fit_group(g, lo, hi, mask, vec, left)
                if left == 0:
                    return 0
        return left

    def _fit_group(self, g: int, lo: int, hi: int, mask: Mask, vec: Vector, left: int) -> int:
        chunks = self.chunk_free[g]
        order = self.order[g]
        rows = self.rows[g]
        generic = mask.generic[g]
        pos = lo
        while pos < hi:
            if chunks is not None:
                totals = chunks.get(pos // CHUNK)
                if totals is not None and any(totals[r] < need for r, need in vec):
                    pos = (pos // CHUNK + 1) * CHUNK  # not one node of this chunk has room
                    continue
            i = bisect_left(order, pos)
            nxt = order[i] if i < len(order) else hi
            if nxt > pos:  # fresh nodes up to the next explicit one
                end = min(nxt, hi)
                if generic:
                    left = self._fill_fresh(g, pos, end, vec, left)
                    if left == 0:
                        return 0
                pos = end
                continue
            if mask.ok(g, pos):
                row = rows[pos]
                k = left
                for r, need in vec:
                    can = row[r] // need
                    if can < k:
                        k = can
                        if k == 0:
                            break
                if k:
                    self.take(g, pos, vec, k)
                    left -= k
                    if left == 0:
                        return 0
            pos += 1
        return left

    def _fill_fresh(self, g: int, lo: int, hi: int, vec: Vector, left: int) -> int:
        """First fit over fresh nodes ``[lo, hi)`` of ``g``: each takes as many pods as fit,
        the last one the rest, exactly as node after node would."""
        row = self.alloc[g]
        cap = min(row[r] // need for r, need in vec) if vec else left
        if cap <= 0:
            return left
        full = min(hi - lo, left // cap)
        for j in range(lo, lo + full):
            self.take(g, j, vec, cap)
        left -= full * cap
        if left and lo + full < hi:
            self.take(g, lo + full, vec, left)
            left = 0
        return left

    # -- domains ------------------------------------------------------------------------

    def domains(self, key: str, nodes: Nodes | None) -> list[Domain]:
        """The domains of ``key`` with nodes in ``nodes`` (None: all), each with those nodes;
        the fresh nodes of a pool whose nodes are domains of their own come as a class."""
        out: list[Domain] = []
        static = self.dom_members.get(key)
        if static is None:
            return out
        frees = self.dom_free[key]
        if nodes is None:
            out += [Domain(dom, tuple(spans), frees[dom]) for dom, spans in static.items()]
            spans_of = [(g, 0, self.inv.groups[g].count) for g in self.per_node[key]]
        else:
            per_node = set(self.per_node[key])
            group_doms = self.group_dom[key]
            found: dict[Path, list[Span]] = {}
            spans_of = []
            for g, lo, hi in nodes:
                if g in per_node:
                    spans_of.append((g, lo, hi))
                    for j in self.pins[g]:
                        if lo <= j < hi:
                            dom = self.inv.domain_of(self.inv.groups[g], key, j)
                            if dom is not None:
                                found.setdefault(dom, []).append((g, j, j + 1))
                    continue
                dom = group_doms[g]
                if dom is not None:
                    found.setdefault(dom, []).append((g, lo, hi))
            out += [Domain(dom, tuple(sorted(spans)), frees[dom]) for dom, spans in found.items()]
        for g, lo, hi in spans_of:
            pins = self.pins[g]
            for j in self.explicit(g, lo, hi):
                dom = self.node_path(key, g, j)
                if j not in pins and dom is not None:
                    out.append(Domain(dom, ((g, j, j + 1),), self.rows[g][j]))
            first = self.first_fresh(g, lo, hi)
            if first is not None:
                dom = self.node_path(key, g, first)
                if dom is not None:
                    out.append(Domain(dom, ((g, first, first + 1),), self.alloc[g], (g, lo, hi)))
        return out

    def node_path(self, key: str, g: int, j: int) -> Path | None:
        """The domain of node ``j`` of group ``g`` at ``key`` (remembered: searches ask often)."""
        if (key, g, j) not in self._paths:
            self._paths[(key, g, j)] = self.inv.domain_of(self.inv.groups[g], key, j)
        return self._paths[(key, g, j)]

    def fresh_in_lex_order(self, span: Span) -> Iterator[int]:
        """The fresh nodes of a class in the order their host paths sort."""
        g, lo, hi = span
        rows = self.rows[g]
        return (j for j in lex_order(lo, hi) if j not in rows)

    def first_fresh(self, g: int, lo: int, hi: int) -> int | None:
        if not self.fresh_count(g, lo, hi):
            return None
        return next(self.fresh_in_lex_order((g, lo, hi)), None)

    def domain_count(self, key: str) -> int:
        """How many domains ``key`` has (the per-node ones are counted, not listed)."""
        per_node = sum(self.inv.groups[g].count - len(self.pins[g]) for g in self.per_node.get(key, []))
        return len(self.dom_members.get(key, {})) + per_node

    def domain_rows(self, key: str) -> list[tuple[Path, int, list[int], list[int]]]:
        """Every domain of ``key`` by path: (path, nodes, allocatable, free)."""
        out = [
            (dom, sum(hi - lo for _, lo, hi in spans), self.dom_alloc[key][dom], self.dom_free[key][dom])
            for dom, spans in self.dom_members.get(key, {}).items()
        ]
        for g in self.per_node.get(key, []):
            group, rows, alloc, pins = self.inv.groups[g], self.rows[g], self.alloc[g], self.pins[g]
            # The path of node j: node 0's, with node j's hostname where the path holds it.
            template = self.inv.domain_of(group, key, 0)
            assert template is not None  # per_node: every node has the label
            hosts = {i for i, k in enumerate(self.inv.path_keys(key)) if k == HOSTNAME}
            last = len(template) - 1
            head = template[:-1]
            for j in range(group.count):
                if j not in pins:
                    name = f"{group.name}-{j}"
                    if hosts == {last}:  # the usual host level: the hostname ends the path
                        dom = (*head, name)
                    else:
                        dom = tuple(name if i in hosts else part for i, part in enumerate(template))
                    out.append((dom, 1, alloc, rows.get(j, alloc)))
        out.sort(key=lambda row: row[0])
        return out
