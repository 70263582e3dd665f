"""The per-node placement of before issue 21, kept as the oracle of the grouped one.

``grove_gitops.feasibility`` now keeps a pool of identical nodes as one group; this is the
search it replaced, over every node listed one by one (a pool expanded into ``count`` node
objects). The differential tests place the same gangs with both and demand the same answer:
fits, reasons, domains chosen, extra pods placed, and the room left in every domain.
Only the inventory side is adapted (it expands the groups it is given); the search is the
old code unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from grove_gitops.api.inventory import HOSTNAME
from grove_gitops.feasibility.demand import NodeFilter
from grove_gitops.feasibility.inventory import ClusterNode, Inventory, Level
from grove_gitops.feasibility.model import Gang, Run, Scope
from grove_gitops.feasibility.units import UNLIMITED, UNTRACKED_WHEN_ABSENT, fmt, order_key


@dataclass
class RefInventory:
    """The old inventory: one node object per node."""

    nodes: list[ClusterNode] = field(default_factory=list)
    levels: dict[str, Level] = field(default_factory=dict)

    def level_name(self, key: str) -> str:
        level = self.levels.get(key)
        return level.name if level is not None else key

    def domain_of(self, node: ClusterNode, key: str) -> tuple[str, ...] | None:
        value = node.labels.get(key)
        if value is None:
            return None
        level = self.levels.get(key)
        parents = tuple(node.labels.get(k, "") for k in (level.ancestors if level else ()))
        return (*parents, value)


def expand(inventory: Inventory) -> RefInventory:
    """Every node of every group, as the old ``build_inventory`` listed them."""
    out = RefInventory(levels=dict(inventory.levels))
    for group in inventory.groups:
        alloc = group.millis(list(group.allocatable))
        for j in range(group.count):
            node = group.node(j)
            labels = {HOSTNAME: node.name, **group.labels} if group.pooled else dict(group.labels)
            out.nodes.append(ClusterNode(node.name, labels, group.taints, alloc))
    return out


#: How many domains of a preferred level are tried before the preference is given up.
MAX_PREFERRED_TRIES = 16
#: Nodes per chunk of a long node list (see ``Placer._chunks``).
CHUNK = 32

Nodes = Sequence[int]


@dataclass
class GangResult:
    gang: Gang
    fits: bool
    reason: str | None = None
    extra_unplaced: int = 0
    #: Leaf label → the domain path (or "cluster") its pods were confined to.
    placed_in: dict[str, str] = field(default_factory=dict)


class _Failure(Exception):
    """A scope did not fit; the message says why, in the user's terms."""


class Placer:
    def __init__(self, inventory: RefInventory, resources: Iterable[str]) -> None:
        self.inv = inventory
        names = {"pods", *resources}
        for node in inventory.nodes:
            names.update(node.allocatable)
        self.resources = sorted(names, key=order_key)
        self.index = {r: i for i, r in enumerate(self.resources)}
        self.alloc: list[list[int]] = []
        for node in inventory.nodes:
            row = []
            for r in self.resources:
                if r in node.allocatable:
                    row.append(node.allocatable[r])
                else:
                    row.append(UNLIMITED if r in UNTRACKED_WHEN_ABSENT else 0)
            self.alloc.append(row)
        self.free = [list(row) for row in self.alloc]
        self.log: list[tuple[int, tuple[tuple[int, int], ...], int]] = []
        self._allowed: dict[NodeFilter, list[bool]] = {}
        # Domains per level key: node → domain, domain → nodes, and running totals.
        self.keys = list(inventory.levels)
        self.node_domain: dict[str, list[tuple[str, ...] | None]] = {}
        self.domain_nodes: dict[str, dict[tuple[str, ...], list[int]]] = {}
        self.domain_free: dict[str, dict[tuple[str, ...], list[int]]] = {}
        self.domain_alloc: dict[str, dict[tuple[str, ...], list[int]]] = {}
        width = len(self.resources)
        self.cluster_alloc = [sum(row[r] for row in self.alloc) for r in range(width)]
        self.cluster_free = list(self.cluster_alloc)
        #: The running free totals each node counts in: the cluster's and its domains'.
        self._memberships: list[list[list[int]]] = [[self.cluster_free] for _ in inventory.nodes]
        self.all_nodes = list(range(len(inventory.nodes)))
        self._demands: dict[int, tuple[tuple[int, int], ...]] = {}
        self._all_allowed: dict[NodeFilter, bool] = {}
        self._largest_cache: dict[NodeFilter, list[int] | None] = {}
        self._any_cache: dict[tuple[str, ...], list[bool]] = {}
        #: Per leaf scope (by id), the nodes its required constraints confined it to (None: any).
        self._bounds: dict[int, Nodes | None] = {}
        for key in self.keys:
            self._add_level(key)
        #: Running free totals of runs of CHUNK consecutive nodes of the long node lists (the
        #: cluster, large domains), by the list's id: a full chunk is skipped in one test.
        self._chunks: dict[int, list[tuple[int, int, list[int]]]] = {}
        for members in [self.all_nodes, *(m for doms in self.domain_nodes.values() for m in doms.values())]:
            if len(members) > 2 * CHUNK:
                self._add_chunks(members)

    def _add_chunks(self, members: list[int]) -> None:
        chunks = []
        for start in range(0, len(members), CHUNK):
            end = min(start + CHUNK, len(members))
            totals = [sum(self.alloc[i][r] for i in members[start:end]) for r in range(len(self.resources))]
            for i in members[start:end]:
                self._memberships[i].append(totals)
            chunks.append((start, end, totals))
        self._chunks[id(members)] = chunks

    def _add_level(self, key: str) -> None:
        per_node = [self.inv.domain_of(n, key) for n in self.inv.nodes]
        nodes: dict[tuple[str, ...], list[int]] = {}
        for i, dom in enumerate(per_node):
            if dom is not None:
                nodes.setdefault(dom, []).append(i)
        self.node_domain[key] = per_node
        self.domain_nodes[key] = dict(sorted(nodes.items()))
        free: dict[tuple[str, ...], list[int]] = {}
        alloc: dict[tuple[str, ...], list[int]] = {}
        for dom, members in self.domain_nodes[key].items():
            total = [sum(self.alloc[i][r] for i in members) for r in range(len(self.resources))]
            free[dom], alloc[dom] = list(total), total
            for i in members:
                self._memberships[i].append(free[dom])
        self.domain_free[key], self.domain_alloc[key] = free, alloc

    # -- capacity bookkeeping ---------------------------------------------------------

    def vector(self, requests: Iterable[tuple[str, int]]) -> tuple[tuple[int, int], ...]:
        return tuple((self.index[name], amount) for name, amount in requests if name in self.index)

    def allowed(self, node_filter: NodeFilter) -> list[bool]:
        found = self._allowed.get(node_filter)
        if found is None:
            found = [node_filter.allows(n) for n in self.inv.nodes]
            self._allowed[node_filter] = found
            self._all_allowed[node_filter] = all(found)
        return found

    def _largest(self, node_filter: NodeFilter) -> list[int] | None:
        """Per resource, the most any node the filter allows has (None: it allows none)."""
        if node_filter not in self._largest_cache:
            ok = self.allowed(node_filter)
            rows = [self.alloc[i] for i in self.all_nodes if ok[i]]
            self._largest_cache[node_filter] = [max(col) for col in zip(*rows, strict=True)] if rows else None
        return self._largest_cache[node_filter]

    def allows_all(self, scope: Scope) -> bool:
        """Whether every pod of ``scope`` may use every node (running totals then apply as they are)."""
        for leaf in scope.leaves():
            for run in leaf.runs:
                self.allowed(run.node_filter)
                if not self._all_allowed[run.node_filter]:
                    return False
        return True

    def _take(self, i: int, vec: tuple[tuple[int, int], ...], k: int) -> None:
        row = self.free[i]
        for r, need in vec:
            row[r] -= need * k
            for totals in self._memberships[i]:
                totals[r] -= need * k
        self.log.append((i, vec, k))

    def undo(self, checkpoint: int) -> None:
        while len(self.log) > checkpoint:
            i, vec, k = self.log.pop()
            row = self.free[i]
            for r, need in vec:
                row[r] += need * k
                for totals in self._memberships[i]:
                    totals[r] += need * k

    def place_runs(self, runs: Sequence[Run], nodes: Nodes) -> int:
        """First fit of each run's pods over ``nodes``; returns how many pods found no room
        (those placed stay placed: the caller undoes a failed attempt)."""
        left_total = 0
        whole: list[tuple[int, int, list[int] | None]] = [(0, len(nodes), None)]
        chunks: Sequence[tuple[int, int, list[int] | None]] = self._chunks.get(id(nodes)) or whole
        for run in runs:
            ok = self.allowed(run.node_filter)
            vec = self.vector(run.requests)
            left = run.count
            for start, end, totals in chunks:
                if totals is not None and any(totals[r] < need for r, need in vec):
                    continue  # not one node of this chunk has room for a pod
                left = self._first_fit(nodes, start, end, ok, vec, left)
                if left == 0:
                    break
            left_total += left
        return left_total

    def _first_fit(
        self, nodes: Nodes, start: int, end: int, ok: list[bool], vec: tuple[tuple[int, int], ...], left: int
    ) -> int:
        for j in range(start, end):
            i = nodes[j]
            if not ok[i]:
                continue
            row = self.free[i]
            k = left
            for r, need in vec:
                can = row[r] // need
                if can < k:
                    k = can
                    if k == 0:
                        break
            if k:
                self._take(i, vec, k)
                left -= k
                if left == 0:
                    return 0
        return left

    # -- the search ------------------------------------------------------------------

    def _domains(self, key: str, nodes: Nodes | None) -> list[tuple[tuple[str, ...], list[int]]]:
        if nodes is None:
            return list(self.domain_nodes.get(key, {}).items())
        doms = self.node_domain.get(key)
        if doms is None:
            return []
        out: dict[tuple[str, ...], list[int]] = {}
        for i in nodes:
            dom = doms[i]
            if dom is not None:
                out.setdefault(dom, []).append(i)
        return list(out.items())

    def _candidates(
        self, key: str, nodes: Nodes | None, demand: tuple[tuple[int, int], ...]
    ) -> list[tuple[tuple[str, ...], list[int]]]:
        """Domains of ``key`` whose free total covers ``demand``, tightest first."""
        free = self.domain_free.get(key, {})
        first = demand[0][0] if demand else 0
        fitting = [
            (dom, members)
            for dom, members in self._domains(key, nodes)
            if all(free[dom][r] >= need for r, need in demand)
        ]
        fitting.sort(key=lambda d: (free[d[0]][first], d[0]))
        return fitting

    def _demand(self, scope: Scope) -> tuple[tuple[int, int], ...]:
        found = self._demands.get(id(scope))
        if found is None:
            vec = self.vector(scope.demand().items())
            found = tuple(sorted(((r, n) for r, n in vec if n > 0), key=lambda x: x[0]))
            self._demands[id(scope)] = found
        return found

    def _runs_demand(self, runs: Sequence[Run]) -> dict[int, int]:
        out: dict[int, int] = {}
        for run in runs:
            for r, need in self.vector(run.requests):
                out[r] = out.get(r, 0) + need * run.count
        return out

    def place(
        self, scope: Scope, nodes: Nodes | None, where: str, placed: dict[str, str], agg: list[int] | None = None
    ) -> None:
        """Place ``scope``'s pods inside ``nodes`` (None: the whole cluster) or raise _Failure.

        ``agg`` is the running free total of a superset of ``nodes`` (the cluster's when None):
        a demand above it cannot fit, which spares the node-by-node search.
        """
        agg = self.cluster_free if agg is None else agg
        if scope.required is None:
            self._inner(scope, nodes, where, placed, agg)
            return
        demand = self._demand(scope)
        first_failure: _Failure | None = None
        free = self.domain_free.get(scope.required, {})
        candidates = self._candidates(scope.required, nodes, demand) if self._covers(agg, demand) else []
        for dom, members in candidates:
            checkpoint = len(self.log)
            try:
                self._inner(scope, members, self._name(scope.required, dom), placed, free[dom])
                return
            except _Failure as exc:
                self.undo(checkpoint)
                first_failure = first_failure or exc
        raise _Failure(self._required_reason(scope, nodes, where, first_failure))

    @staticmethod
    def _covers(agg: list[int], demand: Iterable[tuple[int, int]]) -> bool:
        return all(agg[r] >= need for r, need in demand)

    def _inner(self, scope: Scope, nodes: Nodes | None, where: str, placed: dict[str, str], agg: list[int]) -> None:
        if scope.preferred is not None and scope.preferred != scope.required:
            demand = self._demand(scope)
            free = self.domain_free.get(scope.preferred, {})
            candidates = self._candidates(scope.preferred, nodes, demand) if self._covers(agg, demand) else []
            for dom, members in candidates[:MAX_PREFERRED_TRIES]:
                checkpoint = len(self.log)
                try:
                    self._content(scope, members, self._name(scope.preferred, dom), placed, free[dom], nodes)
                    return
                except _Failure:
                    self.undo(checkpoint)
        self._content(scope, nodes, where, placed, agg, nodes)

    def _content(
        self,
        scope: Scope,
        nodes: Nodes | None,
        where: str,
        placed: dict[str, str],
        agg: list[int],
        bound: Nodes | None,
    ) -> None:
        """Place the scope's own pods and then its parts inside ``nodes``; ``bound`` is where its
        required constraints confine it (``nodes`` may be narrower: a preferred domain)."""
        if scope.runs or scope.extra:
            self._bounds[id(scope)] = bound
            checkpoint = len(self.log)
            fits_total = self._covers(agg, self._runs_demand(scope.runs).items())
            if not fits_total or self.place_runs(scope.runs, self.all_nodes if nodes is None else nodes):
                self.undo(checkpoint)  # the reason speaks of the room before this attempt
                raise _Failure(self._leaf_reason(scope, nodes, where))
            placed[scope.label] = where
        children = sorted(scope.children, key=lambda c: (self._size(c), c.label))
        for child in children:
            self.place(child, nodes, where, placed, agg)

    def _size(self, scope: Scope) -> tuple[int, ...]:
        """Sort key putting the scope with the largest pod first (first-fit *decreasing* is
        about item sizes: small pods placed first could take the one node a large pod needs),
        then the one with the largest total (GPUs first, then cpu, memory)."""
        peak = min((self._pod_key(run) for leaf in scope.leaves() for run in leaf.runs), default=())
        totals = dict(self._demand(scope))
        return (*peak, *(-totals.get(r, 0) for r in range(len(self.resources))))

    def _pod_key(self, run: Run) -> tuple[int, ...]:
        amounts = dict(self.vector(run.requests))
        return tuple(-amounts.get(r, 0) for r in range(len(self.resources)))

    def gang_size(self, gang: Gang) -> tuple[int, ...]:
        return self._size(gang.scope)

    def place_extras(self, scope: Scope) -> int:
        """Best-effort placement of the pods beyond ``minReplicas``, inside the domain their
        podgroup's required pods went to; returns how many found no room."""
        unplaced = 0
        for leaf in scope.leaves():
            if leaf.extra:
                bound = self._bounds.get(id(leaf))
                unplaced += self.place_runs(leaf.extra, self.all_nodes if bound is None else bound)
        return unplaced

    # -- names and reasons ------------------------------------------------------------

    def _name(self, key: str, dom: tuple[str, ...]) -> str:
        return f"{self.inv.level_name(key)} {'/'.join(dom)}"

    def _allowed_any(self, scope: Scope) -> list[bool]:
        filters = {run.node_filter for leaf in scope.leaves() for run in leaf.runs} or {NodeFilter.of({})}
        key = tuple(sorted(f.text for f in filters))
        found = self._any_cache.get(key)
        if found is None:
            masks = [self.allowed(f) for f in filters]
            found = masks[0] if len(masks) == 1 else [any(m[i] for m in masks) for i in self.all_nodes]
            self._any_cache[key] = found
        return found

    def _short(self, demand: tuple[tuple[int, int], ...], have: list[int]) -> int | None:
        """The first resource (GPUs first) of ``demand`` above ``have``, by index."""
        for r, need in demand:
            if need > have[r]:
                return r
        return None

    def _sum(self, rows: list[list[int]], nodes: Iterable[int], ok: list[bool]) -> list[int]:
        out = [0] * len(self.resources)
        for i in nodes:
            if ok[i]:
                for r, v in enumerate(rows[i]):
                    out[r] += v
        return out

    def _required_reason(self, scope: Scope, nodes: Nodes | None, where: str, inner: _Failure | None) -> str:
        assert scope.required is not None
        level = self.inv.level_name(scope.required)
        demand = self._demand(scope)
        inside = "" if nodes is None else f" of {where}"
        if not self.allows_all(scope):
            inside += " on the nodes its pods may use (taints, nodeSelector or affinity rule out others)"
        if nodes is None and self.allows_all(scope):  # the running totals say it all
            allocs = list(self.domain_alloc.get(scope.required, {}).values())
            frees = list(self.domain_free.get(scope.required, {}).values())
        else:
            ok = self._allowed_any(scope)
            doms = [(d, m) for d, m in self._domains(scope.required, nodes) if any(ok[i] for i in m)]
            allocs = [self._sum(self.alloc, m, ok) for _, m in doms]
            frees = [self._sum(self.free, m, ok) for _, m in doms]
        if not allocs:
            return (
                f"{scope.label} must pack inside one {level}, but no node{inside} it may use has the label "
                f"{scope.required}"
            )
        for r, need in demand:
            name = self.resources[r]
            largest = max(a[r] for a in allocs)
            if need > largest:
                return (
                    f"{scope.label} needs {fmt(name, need)} {name} inside one {level}; the largest {level}{inside} "
                    f"has {fmt(name, largest)} allocatable"
                )
        for r, need in demand:
            name = self.resources[r]
            most = max(f[r] for f in frees)
            if need > most:
                return (
                    f"{scope.label} needs {fmt(name, need)} {name} inside one {level}; the most free in any {level}"
                    f"{inside} is {fmt(name, most)} once the gangs placed before it are counted"
                )
        detail = f": {inner}" if inner is not None else ""
        return f"{scope.label} fits in no single {level}{inside}{detail}"

    def _leaf_reason(self, scope: Scope, nodes: Nodes | None, where: str) -> str:
        members = self.all_nodes if nodes is None else nodes
        for run in scope.runs:
            largest_of = self._largest(run.node_filter)
            if largest_of is None:
                return f"{scope.label}: no node matches its pods' {run.node_filter.reasons()}"
            ok = self.allowed(run.node_filter)
            if nodes is not None and not any(ok[i] for i in members):
                return f"{scope.label}: no node in {where} matches its pods' {run.node_filter.reasons()}"
            vec = self.vector(run.requests)
            for r, need in vec:
                largest = largest_of[r]
                if need > largest:
                    name = self.resources[r]
                    return (
                        f"{scope.label}: a pod needs {fmt(name, need)} {name}; the largest node it may use has "
                        f"{fmt(name, largest)} allocatable"
                    )
        demand = self._demand(scope)
        if nodes is None and self.allows_all(scope):
            have, allocs = self.cluster_free, self.cluster_alloc
        else:
            ok_any = self._allowed_any(scope)
            have, allocs = self._sum(self.free, members, ok_any), self._sum(self.alloc, members, ok_any)
        short = self._short(demand, have)
        if short is not None:
            name, need = self.resources[short], dict(demand)[short]
            alloc = allocs[short]
            return (
                f"{scope.label} needs {fmt(name, need)} {name} for {scope.pods()} pod(s); {where} has "
                f"{fmt(name, have[short])} free of {fmt(name, alloc)} allocatable"
            )
        return (
            f"{scope.label}: its {scope.pods()} pod(s) do not fit the room left on single nodes of {where} "
            f"(enough in total, but split across nodes)"
        )


def place_all(inventory: RefInventory, gangs: list[Gang]) -> tuple[Placer, list[GangResult]]:
    """Base gangs, then scaled gangs (Grove releases a scaled gang only after its base gang),
    largest first within each phase; then every fitting gang's extra pods."""
    resources = {name for g in gangs for leaf in g.scope.leaves() for run in leaf.runs + leaf.extra for name, _ in run.requests}
    placer = Placer(inventory, resources)
    results: dict[tuple[str, str], GangResult] = {}
    placements: dict[tuple[str, str], dict[str, str]] = {}
    for phase in ("base", "scaled"):
        members = [g for g in gangs if g.kind == phase]
        members.sort(key=lambda g: (placer.gang_size(g), g.namespace, g.name))
        for gang in members:
            if gang.base is not None:
                base = results.get((gang.namespace, gang.base))
                if base is not None and not base.fits:
                    results[gang.key] = GangResult(
                        gang,
                        False,
                        f"its base gang {gang.base} does not fit, and Grove schedules a scaled gang only after it",
                    )
                    continue
            checkpoint = len(placer.log)
            placed: dict[str, str] = {}
            try:
                placer.place(gang.scope, None, "the cluster", placed)
            except _Failure as exc:
                placer.undo(checkpoint)
                results[gang.key] = GangResult(gang, False, str(exc))
                continue
            results[gang.key] = GangResult(gang, True, placed_in=placed)
            placements[gang.key] = placed
    for gang in gangs:
        if gang.key in placements:
            results[gang.key].extra_unplaced = placer.place_extras(gang.scope)
    return placer, [results[g.key] for g in gangs]
