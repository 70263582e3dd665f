"""Pack gangs onto nodes, gang by gang, never moving a gang once placed.

The heuristic (deterministic: ties break on names): base gangs first, then scaled gangs;
within each phase the largest gangs first (first-fit decreasing). A scope that must pack at
a level tries the domains of that level with room for its total demand, tightest first (best
fit), and keeps the first in which all of its children fit; a ``preferred`` level is tried
the same way first and then given up. Pods go to the first nodes with room, in node order.
After every gang's ``minReplicas`` pods, the extra pods are placed where room is left.

It can answer "does not fit" for a gang that a cleverer packing would fit (it never
backtracks into a gang placed earlier); it never answers "fits" for a gang that does not.

The nodes are groups of identical nodes (``capacity``), never listed one by one, and the
answer is exactly the one of the same search over the nodes listed one by one: at a level
where each node of a pool is a domain of its own, the pool's fresh nodes are one class, and
as they are alike, the first of them that fails answers for all (it is tried once, and
counted for each of its members that a preferred search would have tried).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import islice

from grove_gitops.feasibility.capacity import Capacity, Domain, Mask, Nodes, Vector
from grove_gitops.feasibility.demand import NodeFilter
from grove_gitops.feasibility.inventory import Inventory
from grove_gitops.feasibility.model import Gang, Run, Scope
from grove_gitops.feasibility.units import REPORTED, fmt, order_key

#: How many domains of a preferred level are tried before the preference is given up.
MAX_PREFERRED_TRIES = 16


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


@dataclass(frozen=True)
class _Candidate:
    """A domain to try: a static or explicit one, or member ``index`` of a class."""

    path: tuple[str, ...]
    domain: Domain
    index: int | None


class Placer:
    def __init__(self, inventory: Inventory, resources: Iterable[str], filters: Iterable[NodeFilter] = ()) -> None:
        self.inv = inventory
        # Only what some pod requests (and the table's columns) is tracked: a resource no pod
        # asks for changes no answer, and the inventory cannot widen every node's row.
        self.resources = sorted({"pods", *REPORTED, *resources}, key=order_key)
        self.index = {r: i for i, r in enumerate(self.resources)}
        self.cap = Capacity(inventory, self.resources, filters)
        self.keys = self.cap.keys
        self._demands: dict[int, Vector] = {}
        self._vectors: dict[tuple[tuple[str, int], ...], Vector] = {}
        self._pod_keys: dict[tuple[tuple[str, int], ...], tuple[int, ...]] = {}
        self._any_cache: dict[tuple[str, ...], Mask] = {}
        #: Per leaf scope (by id), the nodes its required constraints confined it to (None: any).
        self._bounds: dict[int, Nodes | None] = {}

    @property
    def log(self) -> list[tuple[int, int, Vector, int, bool]]:
        return self.cap.log

    def undo(self, checkpoint: int) -> None:
        self.cap.undo(checkpoint)

    # -- capacity bookkeeping ---------------------------------------------------------

    def vector(self, requests: Iterable[tuple[str, int]]) -> Vector:
        return tuple((self.index[name], amount) for name, amount in requests if name in self.index)

    def _run_vector(self, run: Run) -> Vector:
        found = self._vectors.get(run.requests)
        if found is None:
            found = self._vectors[run.requests] = self.vector(run.requests)
        return found

    def allows_all(self, scope: Scope) -> bool:
        """Whether every pod of ``scope`` may use every node (running totals then apply as they are)."""
        return all(self.cap.mask(run.node_filter).every for leaf in scope.leaves() for run in leaf.runs)

    def place_runs(self, runs: Sequence[Run], nodes: Nodes) -> int:
        """First fit of each run's pods over ``nodes``; returns how many pods found no room
        (those placed stay placed: the caller undoes a failed attempt)."""
        return sum(self.cap.fit(nodes, self.cap.mask(run.node_filter), self._run_vector(run), run.count) for run in runs)

    # -- the search ------------------------------------------------------------------

    def _candidates(self, key: str, nodes: Nodes | None, demand: Vector, per_class: int) -> list[_Candidate]:
        """Domains of ``key`` whose free total covers ``demand``, tightest first, then by path;
        the first ``per_class`` members (in path order) of each class of alike nodes."""
        first = demand[0][0] if demand else 0
        fitting: list[tuple[int, _Candidate]] = []
        for dom in self.cap.domains(key, nodes):
            free = dom.free
            for r, need in demand:
                if free[r] < need:
                    break
            else:
                self._add_candidate(fitting, key, dom, free[first], per_class)
        fitting.sort(key=lambda c: (c[0], c[1].path))
        return [c for _, c in fitting]

    def _add_candidate(self, fitting: list[tuple[int, _Candidate]], key: str, dom: Domain, tight: int, per_class: int) -> None:
        if dom.fresh is None:
            fitting.append((tight, _Candidate(dom.path, dom, None)))
            return
        for j in islice(self.cap.fresh_in_lex_order(dom.fresh), per_class):
            path = self.cap.node_path(key, dom.fresh[0], j)
            if path is not None:
                fitting.append((tight, _Candidate(path, dom, j)))

    def _enter(self, candidate: _Candidate) -> tuple[Nodes, list[int]]:
        """The nodes and running free total of a candidate; a class member becomes explicit
        (logged, so the caller's undo forgets it)."""
        dom = candidate.domain
        if dom.fresh is None or candidate.index is None:
            return dom.members, dom.free
        g, j = dom.fresh[0], candidate.index
        return ((g, j, j + 1),), self.cap.take(g, j, (), 0)

    def _demand(self, scope: Scope) -> Vector:
        found = self._demands.get(id(scope))
        if found is None:
            vec = self.vector(scope.demand().items())
            found = tuple(sorted(((r, n) for r, n in vec if n > 0), key=lambda x: x[0]))
            self._demands[id(scope)] = found
        return found

    def _runs_demand(self, runs: Sequence[Run]) -> dict[int, int]:
        out: dict[int, int] = {}
        for run in runs:
            for r, need in self._run_vector(run):
                out[r] = out.get(r, 0) + need * run.count
        return out

    def place(
        self, scope: Scope, nodes: Nodes | None, where: str, placed: dict[str, str], agg: list[int] | None = None
    ) -> None:
        """Place ``scope``'s pods inside ``nodes`` (None: the whole cluster) or raise _Failure.

        ``agg`` is the running free total of a superset of ``nodes`` (the cluster's when None):
        a demand above it cannot fit, which spares the node-by-node search.
        """
        agg = self.cap.cluster_free if agg is None else agg
        if scope.required is None:
            self._inner(scope, nodes, where, placed, agg)
            return
        demand = self._demand(scope)
        first_failure: _Failure | None = None
        candidates = self._candidates(scope.required, nodes, demand, 1) if self._covers(agg, demand) else []
        for candidate in candidates:
            checkpoint = len(self.log)
            members, free = self._enter(candidate)
            try:
                self._inner(scope, members, self._name(scope.required, candidate.path), placed, free)
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
            tries = MAX_PREFERRED_TRIES
            candidates = self._candidates(scope.preferred, nodes, demand, tries) if self._covers(agg, demand) else []
            failed: set[int] = set()
            for candidate in candidates[:tries]:
                if id(candidate.domain) in failed:
                    continue  # a member of a class whose first member failed: it fails too
                checkpoint = len(self.log)
                members, free = self._enter(candidate)
                try:
                    self._content(scope, members, self._name(scope.preferred, candidate.path), placed, free, nodes)
                    return
                except _Failure:
                    self.undo(checkpoint)
                    failed.add(id(candidate.domain))
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
            if not fits_total or self.place_runs(scope.runs, self.cap.all_nodes if nodes is None else nodes):
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
        found = self._pod_keys.get(run.requests)
        if found is None:
            amounts = dict(self._run_vector(run))
            found = self._pod_keys[run.requests] = tuple(-amounts.get(r, 0) for r in range(len(self.resources)))
        return found

    def gang_size(self, gang: Gang) -> tuple[int, ...]:
        return self._size(gang.scope)

    def place_extras(self, scope: Scope) -> int:
        """Best-effort placement of the pods beyond ``minReplicas``, inside the domain their
        podgroup's required pods went to; returns how many found no room."""
        unplaced = 0
        for leaf in scope.leaves():
            if leaf.extra:
                bound = self._bounds.get(id(leaf))
                unplaced += self.place_runs(leaf.extra, self.cap.all_nodes if bound is None else bound)
        return unplaced

    # -- names and reasons ------------------------------------------------------------

    def _name(self, key: str, dom: tuple[str, ...]) -> str:
        return f"{self.inv.level_name(key)} {'/'.join(dom)}"

    def _allowed_any(self, scope: Scope) -> Mask:
        filters = {run.node_filter for leaf in scope.leaves() for run in leaf.runs} or {NodeFilter.of({})}
        key = tuple(sorted(f.text for f in filters))
        found = self._any_cache.get(key)
        if found is None:
            found = self.cap.union([self.cap.mask(f) for f in sorted(filters, key=lambda f: f.text)])
            self._any_cache[key] = found
        return found

    def _short(self, demand: Vector, have: list[int]) -> int | None:
        """The first resource (GPUs first) of ``demand`` above ``have``, by index."""
        for r, need in demand:
            if need > have[r]:
                return r
        return None

    def _level_room(self, key: str, nodes: Nodes | None, mask: Mask | None) -> list[tuple[list[int], list[int]]]:
        """(allocatable, free) of each domain of ``key`` in ``nodes``, counting the nodes
        ``mask`` allows (None: every node, as the running totals say); one entry stands for
        a class of alike nodes (the reasons want the largest and the most free)."""
        out: list[tuple[list[int], list[int]]] = []
        for dom in self.cap.domains(key, nodes):
            if dom.fresh is not None:
                g = dom.fresh[0]
                if mask is None or mask.generic[g]:
                    out.append((self.cap.alloc[g], self.cap.alloc[g]))
            elif mask is None:
                static = self.cap.dom_alloc[key].get(dom.path)
                out.append((static if static is not None else self.cap.alloc[dom.members[0][0]], dom.free))
            elif self.cap.any_allowed(mask, dom.members):
                out.append(self.cap.sums(dom.members, mask))
        return out

    def _required_reason(self, scope: Scope, nodes: Nodes | None, where: str, inner: _Failure | None) -> str:
        assert scope.required is not None
        level = self.inv.level_name(scope.required)
        demand = self._demand(scope)
        inside = "" if nodes is None else f" of {where}"
        every = self.allows_all(scope)
        if not every:
            inside += " on the nodes its pods may use (taints, nodeSelector or affinity rule out others)"
        exact = nodes is None and every  # the running totals say it all
        room = self._level_room(scope.required, nodes, None if exact else self._allowed_any(scope))
        if not room:
            return (
                f"{scope.label} must pack inside one {level}, but no node{inside} it may use has the label "
                f"{scope.required}"
            )
        for r, need in demand:
            name = self.resources[r]
            largest = max(a[r] for a, _ in room)
            if need > largest:
                return (
                    f"{scope.label} needs {fmt(name, need)} {name} inside one {level}; the largest {level}{inside} "
                    f"has {fmt(name, largest)} allocatable"
                )
        for r, need in demand:
            name = self.resources[r]
            most = max(f[r] for _, f in room)
            if need > most:
                return (
                    f"{scope.label} needs {fmt(name, need)} {name} inside one {level}; the most free in any {level}"
                    f"{inside} is {fmt(name, most)} once the gangs placed before it are counted"
                )
        detail = f": {inner}" if inner is not None else ""
        return f"{scope.label} fits in no single {level}{inside}{detail}"

    def _leaf_reason(self, scope: Scope, nodes: Nodes | None, where: str) -> str:
        members = self.cap.all_nodes if nodes is None else nodes
        for run in scope.runs:
            mask = self.cap.mask(run.node_filter)
            largest_of = self.cap.largest(mask)
            if largest_of is None:
                return f"{scope.label}: no node matches its pods' {run.node_filter.reasons()}"
            if nodes is not None and not self.cap.any_allowed(mask, members):
                return f"{scope.label}: no node in {where} matches its pods' {run.node_filter.reasons()}"
            for r, need in self.vector(run.requests):
                largest = largest_of[r]
                if need > largest:
                    name = self.resources[r]
                    return (
                        f"{scope.label}: a pod needs {fmt(name, need)} {name}; the largest node it may use has "
                        f"{fmt(name, largest)} allocatable"
                    )
        demand = self._demand(scope)
        if nodes is None and self.allows_all(scope):
            have, allocs = self.cap.cluster_free, self.cap.cluster_alloc
        else:
            allocs, have = self.cap.sums(members, self._allowed_any(scope))
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



def place_all(inventory: Inventory, gangs: list[Gang]) -> tuple[Placer, list[GangResult]]:
    """Base gangs, then scaled gangs (Grove releases a scaled gang only after its base gang),
    largest first within each phase; then every fitting gang's extra pods."""
    runs = [run for g in gangs for leaf in g.scope.leaves() for run in leaf.runs + leaf.extra]
    resources = {name for run in runs for name, _ in run.requests}
    placer = Placer(inventory, resources, {run.node_filter for run in runs})
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
