"""The grouped placement gives exactly the answer of the per-node placement it replaced.

Issue 21: a pool is now one group with a count, never expanded. ``tests.feasibility.reference``
keeps the old search over every node listed one by one; hypothesis builds small inventories
(pools of up to 14 nodes, so host ``p-10`` sorts before ``p-2``; v1 Nodes; hostname levels
at any depth; hostnames shared between a Node and a pool's node) and gangs (nested required
and preferred constraints, node selectors naming single hosts, tolerations, extra pods), and
both searches must agree on every gang and on the room left in every domain.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grove_gitops.api.inventory import HOSTNAME
from grove_gitops.feasibility import placement
from grove_gitops.feasibility.capacity import lex_order
from grove_gitops.feasibility.demand import NodeFilter
from grove_gitops.feasibility.inventory import Inventory, Level, NodeGroup
from grove_gitops.feasibility.model import Gang, Run, Scope
from tests.feasibility import reference

ZONE, RACK, GPU = "zone", "rack", "nvidia.com/gpu"
KEYS = (ZONE, RACK, HOSTNAME)
TAINT = ("gpu", "yes", "NoSchedule")


@st.composite
def inventories(draw: st.DrawFn) -> Inventory:
    order = draw(st.permutations(KEYS))
    levels = draw(st.lists(st.sampled_from(order), min_size=1, max_size=3, unique=True))
    levels.sort(key=order.index)
    inv = Inventory(levels={k: Level(k, k.split("/")[-1], tuple(levels[:i])) for i, k in enumerate(levels)})
    for i in range(draw(st.integers(1, 4))):
        labels = {ZONE: draw(st.sampled_from("ab"))}
        if draw(st.booleans()):
            labels[RACK] = draw(st.sampled_from(["r1", "r2"]))
        count = draw(st.sampled_from([1, 2, 3, 12, 14]))
        if count == 1 and draw(st.booleans()):
            labels[HOSTNAME] = draw(st.sampled_from(["p0-3", "p1-1", "shared"]))
        alloc: dict[str, Any] = {"cpu": draw(st.integers(2, 16)), GPU: draw(st.sampled_from([0, 4, 8, 8]))}
        if draw(st.booleans()):
            alloc["pods"] = draw(st.integers(1, 3))
        taints = (TAINT,) if draw(st.integers(0, 4)) == 0 else ()
        inv.groups.append(NodeGroup(f"p{i}", count, labels, taints, alloc, True))
    for i in range(draw(st.integers(0, 3))):
        labels = {ZONE: draw(st.sampled_from("ab")), RACK: draw(st.sampled_from(["r1", "r2"]))}
        if draw(st.booleans()):
            labels[HOSTNAME] = draw(st.sampled_from([f"n{i}", "p0-2", "p1-10", "shared"]))
        alloc = {"cpu": draw(st.integers(1, 16)), GPU: draw(st.integers(0, 8))}
        inv.groups.append(NodeGroup(f"n{i}", 1, labels, (), alloc, False))
    return inv


FILTERS = st.sampled_from(
    [
        {},
        {},
        {},
        {"nodeSelector": {ZONE: "a"}},
        {"nodeSelector": {HOSTNAME: "p0-3"}},
        {"tolerations": [{"key": "gpu", "operator": "Exists"}]},
        {
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": HOSTNAME, "operator": "NotIn", "values": ["p0-1", "p1-2"]}]},
                            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["p2-0", "n0"]}]},
                        ]
                    }
                }
            }
        },
        {
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": ["p0-10", "p1-0", "shared"]}]}]
                    }
                }
            }
        },
    ]
)


@st.composite
def runs(draw: st.DrawFn) -> list[Run]:
    out = []
    for _ in range(draw(st.sampled_from([1, 1, 2]))):
        requests = {"pods": 1000, "cpu": draw(st.integers(1, 4)) * 1000}
        gpus = draw(st.sampled_from([0, 0, 1, 4, 8, 8]))
        if gpus:
            requests[GPU] = gpus * 1000
        out.append(Run(tuple(sorted(requests.items())), NodeFilter.of(draw(FILTERS)), draw(st.integers(1, 5))))
    return out


@st.composite
def gangs(draw: st.DrawFn, keys: list[str]) -> list[Gang]:
    """Gangs whose constraints are mostly levels of the inventory (``keys``)."""

    def constraint() -> str | None:
        return draw(st.sampled_from((None, None, None, *keys, *keys, *KEYS)))

    out = []
    for g in range(draw(st.integers(1, 5))):
        leaves = [
            Scope(f"podgroup {g}-{i}", constraint(), constraint(), runs=draw(runs()), extra=draw(runs()) if draw(st.booleans()) else [])
            for i in range(draw(st.integers(1, 3)))
        ]
        root = Scope(f"gang {g}", constraint(), constraint())
        if len(leaves) > 1 and draw(st.booleans()):
            root.children = [Scope(f"scaling group {g}", constraint(), constraint(), leaves[:2]), *leaves[2:]]
        else:
            root.children = leaves
        scaled = g > 0 and draw(st.integers(0, 3)) == 0
        out.append(Gang("ml", f"g{g}", "pcs", "scaled" if scaled else "base", "g0" if scaled else None, "w.yaml", root))
    return out


@st.composite
def cases(draw: st.DrawFn) -> tuple[Inventory, list[Gang]]:
    inv = draw(inventories())
    return inv, draw(gangs(list(inv.levels)))


def _rows(resources: list[str], index: dict[str, int], row: list[int]) -> dict[str, int]:
    return {name: row[index[name]] if name in index else 0 for name in resources}


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=cases())
def test_grouped_placement_is_the_per_node_placement(case: tuple[Inventory, list[Gang]]) -> None:
    inv, gang_list = case
    new, results = placement.place_all(inv, gang_list)
    old, expected = reference.place_all(reference.expand(inv), gang_list)
    got = [(r.gang.name, r.fits, r.reason, r.extra_unplaced, r.placed_in) for r in results]
    assert got == [(r.gang.name, r.fits, r.reason, r.extra_unplaced, r.placed_in) for r in expected]
    for key in inv.levels:
        rows = [(p, n, _rows(new.resources, new.index, a), _rows(new.resources, new.index, f)) for p, n, a, f in new.cap.domain_rows(key)]
        old_rows = [
            (dom, len(members), _rows(new.resources, old.index, old.domain_alloc[key][dom]), _rows(new.resources, old.index, old.domain_free[key][dom]))
            for dom, members in old.domain_nodes[key].items()
        ]
        assert rows == old_rows
        assert new.cap.domain_count(key) == len(old_rows)


@given(lo=st.integers(0, 2000), size=st.integers(0, 1500))
def test_lex_order_is_the_order_of_decimal_strings(lo: int, size: int) -> None:
    assert list(lex_order(lo, lo + size)) == sorted(range(lo, lo + size), key=str)


def _whole_node_gang(name: str, required: str | None) -> Gang:
    run = Run((("nvidia.com/gpu", 8000), ("pods", 1000)), NodeFilter.of({}), 1)
    leaf = Scope(f"podgroup {name}", required, None, runs=[run])
    return Gang("ml", name, "pcs", "base", None, "w.yaml", Scope(f"gang {name}", None, None, [leaf]))


def test_hosts_of_a_pool_are_tried_in_the_order_their_paths_sort() -> None:
    # Two whole-node pods take p-0 and p-1; the next host chosen is p-10 ("p-10" < "p-2"),
    # as it was when every node was listed: the class of fresh nodes starts where the paths do.
    inv = Inventory(levels={HOSTNAME: Level(HOSTNAME, "host", ())})
    inv.groups.append(NodeGroup("p", 12, {}, (), {GPU: 8}, True))
    gang_list = [_whole_node_gang("a", None), _whole_node_gang("b", None), _whole_node_gang("c", HOSTNAME)]
    _, results = placement.place_all(inv, gang_list)
    _, expected = reference.place_all(reference.expand(inv), gang_list)
    assert results[2].placed_in == {"podgroup c": "host p-10"} == expected[2].placed_in
