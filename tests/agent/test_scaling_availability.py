"""The workload's and a scaling group's ``availableReplicas`` mean what Grove's do (spec
grove-desired-state.md §8): a PodClique is available at ``minAvailable`` Ready pods, a group
replica when every member clique is, a PodCliqueSet replica when every standalone clique is and
every group has ``minAvailable`` replicas available. Before, one pod of four down under
``minAvailable: 3`` made the replica unavailable.

The PodGangs here are laid out as the render lays them out (the base PodGang with the day-2
annotation and every podgroup's ``minReplicas``, a group's replicas from ``minAvailable`` up in
scaled gangs); ``tests/day2/test_autoscaling_status_writes.py`` checks the same on rendered
objects in the live world. A hypothesis test holds :func:`available_replicas` to Grove's rule
written out plainly.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from grove_gitops.agent.scaling import availability as A
from grove_gitops.agent.scaling import status as S


def _pod(name: str, ready: bool, terminating: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "resourceVersion": "1"}
    if terminating:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta, "spec": {"hostname": name},
            "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def _workload(replica: int, cliques: dict[str, tuple[int, int]], groups: dict[str, tuple[int, int, dict[str, tuple[int, int]]]],
              pcs: str = "w") -> list[dict[str, Any]]:
    """The PodGangs of replica ``replica`` of ``pcs``: standalone cliques name -> (pods,
    minAvailable); groups name -> (replicas, minAvailable, member clique -> (pods, minAvailable));
    group replicas from minAvailable up go to scaled gangs, as the render lays them out."""
    base = f"{pcs}-{replica}"
    day2 = {"replicaIndex": replica, "podCliqueSet": pcs,
            "cliques": [{"name": f"{base}-{c}", "minAvailable": m, "replicas": n} for c, (n, m) in cliques.items()],
            "scalingGroups": [{"name": f"{base}-{g}", "minAvailable": gm, "replicas": gn, "cliques": list(members)}
                              for g, (gn, gm, members) in groups.items()]}
    annotations = {S.DAY2: json.dumps(day2)}

    def podgroup(name: str, pods: int, floor: int) -> dict[str, Any]:
        return {"name": name, "minReplicas": floor, "podReferences": [{"name": f"{name}-{k}"} for k in range(pods)]}

    base_groups = [podgroup(f"{base}-{c}", n, m) for c, (n, m) in cliques.items()]
    gangs = []
    for g, (gn, gm, members) in groups.items():
        for j in range(gn):
            member_groups = [podgroup(f"{base}-{g}-{j}-{c}", n, m) for c, (n, m) in members.items()]
            if j < gm:
                base_groups += member_groups
            else:
                gangs.append({"metadata": {"name": f"{base}-{g}-{j - gm}", "annotations": annotations},
                              "spec": {"podgroups": member_groups}})
    return [{"metadata": {"name": base, "annotations": annotations}, "spec": {"podgroups": base_groups}}, *gangs]


def _pods(gangs: list[dict[str, Any]], down: set[str] = frozenset()) -> list[dict[str, Any]]:  # type: ignore[assignment]
    return [_pod(ref["name"], ref["name"] not in down)
            for g in gangs for pg in g["spec"]["podgroups"] for ref in pg["podReferences"]]


def _available(gangs: list[dict[str, Any]], pods: list[dict[str, Any]], replicas: int = 1) -> int:
    return A.available_replicas(gangs, "w", S.SlotIndex.of(pods), replicas)


def test_a_standalone_clique_is_available_at_its_min_available() -> None:
    gangs = _workload(0, {"router": (4, 3)}, {})
    assert _available(gangs, _pods(gangs)) == 1
    assert _available(gangs, _pods(gangs, {"w-0-router-3"})) == 1  # 3 of 4 Ready: Grove says available
    assert _available(gangs, _pods(gangs, {"w-0-router-3", "w-0-router-0"})) == 0
    # A terminating pod is not Ready for this, and a missing one neither.
    pods = [p if p["metadata"]["name"] != "w-0-router-1" else _pod("w-0-router-1", True, True) for p in _pods(gangs)]
    assert _available(gangs, [p for p in pods if p["metadata"]["name"] != "w-0-router-2"]) == 0


def test_a_group_needs_min_available_replicas_each_with_every_member_clique_available() -> None:
    gangs = _workload(0, {"router": (1, 1)}, {"g": (3, 2, {"prefill": (2, 2), "decode": (4, 1)})})
    assert _available(gangs, _pods(gangs)) == 1
    # Replica 2 of the group (a scaled gang) starting, and decode pods down to 1 of 4 in
    # replica 0: still two group replicas available.
    down = {"w-0-g-2-prefill-0", "w-0-g-0-decode-1", "w-0-g-0-decode-2", "w-0-g-0-decode-3"}
    assert _available(gangs, _pods(gangs, down)) == 1
    # One prefill pod of replica 1 down as well: only replica 0 of the group is available.
    assert _available(gangs, _pods(gangs, {*down, "w-0-g-1-prefill-1"})) == 0
    ready = A.ready_by_clique(S.SlotIndex.of(_pods(gangs, down)))
    assert A.group_available("w-0-g", ("prefill", "decode"), ready, A.clique_minimums(gangs)) == 2


def test_replicas_are_judged_each_by_their_own_layout_and_a_missing_one_is_unavailable() -> None:
    gangs = _workload(0, {"a": (2, 2)}, {}) + _workload(1, {"a": (2, 1)}, {})
    pods = _pods(gangs, {"w-1-a-0"})
    assert _available(gangs, pods, replicas=2) == 2
    assert _available(gangs, _pods(gangs, {"w-0-a-0"}), replicas=2) == 1
    assert _available(gangs, pods, replicas=3) == 2  # replica 2 has no PodGang yet


def test_group_target_units_are_available_at_their_cliques_min_available() -> None:
    gangs = _workload(0, {}, {"g": (2, 1, {"p": (3, 2)})})
    units = [[(f"w-0-g-{j}-p-{k}", f"w-0-g-{j}-p-{k}") for k in range(3)] for j in range(2)]
    minimums = A.clique_minimums(gangs)
    ready = A.ready_by_clique(S.SlotIndex.of(_pods(gangs, {"w-0-g-0-p-0", "w-0-g-1-p-0", "w-0-g-1-p-1"})))
    assert A.units_available(units, ready, minimums) == 1
    assert A.units_available(units, ready, {}) == 0  # without a known minAvailable: every slot


def test_hostile_layouts_count_as_unavailable_without_raising() -> None:
    gangs = _workload(0, {"a": (1, 1)}, {})
    pods = _pods(gangs)
    for day2 in ("not json", "[]", json.dumps({"replicaIndex": True}), json.dumps({"replicaIndex": -1}),
                 "{" * 5000, json.dumps({"replicaIndex": 0, "cliques": [{"name": "w-0-a", "minAvailable": 10**40}]}),
                 json.dumps({"replicaIndex": 0, "cliques": "x", "scalingGroups": [{"name": 3}, None]}),
                 # 5,000-digit integers (beyond the decoder's digit limit), names that look like paths
                 '{"replicaIndex": 0, "cliques": [{"name": "w-0-a", "minAvailable": ' + "9" * 5000 + "}]}",
                 '{"replicaIndex": ' + "1" * 5000 + "}",
                 json.dumps({"replicaIndex": 0, "cliques": [{"name": "..", "minAvailable": 1},
                                                            {"name": "/abs\u0000", "minAvailable": 1}]})):
        gangs[0]["metadata"]["annotations"][S.DAY2] = day2
        assert _available(gangs, pods) in (0, 1)
    gangs[0]["metadata"]["annotations"][S.DAY2] = json.dumps({"replicaIndex": 0, "cliques": [
        {"name": "w-0-a", "minAvailable": 10**40}]})
    assert _available(gangs, pods) == 0
    gangs[0]["spec"]["podgroups"][0]["minReplicas"] = "1"
    assert A.clique_minimums(gangs) == {}
    # A podgroup name of a million characters, mostly dashes, is no PodClique: skipped, at once.
    gangs[0]["spec"]["podgroups"].append({"name": "w-0-g" + "-" * 1_000_000, "minReplicas": 1})
    assert A.clique_minimums(gangs) == {}
    assert A.group_replicas({"w-0-g" + "-0" * 500_000: 1}, {"w-0-g": ("c",)}) == {"w-0-g": set()}


@settings(max_examples=150, deadline=None)
@given(
    cliques=st.lists(st.tuples(st.integers(1, 4), st.integers(0, 4)), min_size=0, max_size=2),
    groups=st.lists(st.tuples(st.integers(1, 3), st.integers(0, 3),
                              st.lists(st.tuples(st.integers(1, 3), st.integers(0, 3)), min_size=1, max_size=2)),
                    min_size=0, max_size=2),
    down_bits=st.integers(0, 2**40),
)
def test_available_replicas_is_grove_rule_written_plainly(
    cliques: list[tuple[int, int]], groups: list[tuple[int, int, list[tuple[int, int]]]], down_bits: int
) -> None:
    spec_cliques = {f"c{i}": (n, min(m, n)) for i, (n, m) in enumerate(cliques)}
    spec_groups = {f"g{i}": (gn, min(gm, gn), {f"m{k}": (n, min(m, n)) for k, (n, m) in enumerate(members)})
                   for i, (gn, gm, members) in enumerate(groups)}
    gangs = _workload(0, spec_cliques, spec_groups)
    names = [ref["name"] for g in gangs for pg in g["spec"]["podgroups"] for ref in pg["podReferences"]]
    down = {n for i, n in enumerate(sorted(names)) if down_bits >> i & 1}
    up = set(names) - down

    def clique_ok(fqn: str, pods: int, floor: int) -> bool:
        return sum(f"{fqn}-{k}" in up for k in range(pods)) >= floor

    expected = all(clique_ok(f"w-0-{c}", n, m) for c, (n, m) in spec_cliques.items()) and all(
        sum(all(clique_ok(f"w-0-{g}-{j}-{c}", n, m) for c, (n, m) in members.items()) for j in range(gn)) >= gm
        for g, (gn, gm, members) in spec_groups.items())
    assert _available(gangs, _pods(gangs, down)) == int(expected)
