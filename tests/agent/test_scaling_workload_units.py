"""The workload's (``gitops.grove.io`` PodCliqueSet's) status counts each replica by the pods of
its base PodGang only (issue 35.2): Grove's PodCliqueSet replica is available while its
standalone cliques and each scaling group's ``minAvailable`` replicas are, so the scaled
gangs' pods starting in a scale-out never make the workload unavailable, and a base pod that
is not Ready still does."""

from __future__ import annotations

import json
from typing import Any

from grove_gitops.agent.scaling import status as S


def _gang(name: str, replica: int, pods: list[str]) -> dict[str, Any]:
    return {"metadata": {"name": name, "annotations": {S.DAY2: json.dumps({"replicaIndex": replica, "podCliqueSet": "w"})}},
            "spec": {"podgroups": [{"podReferences": [{"name": p} for p in pods]}]}}


def _pod(name: str, ready: bool) -> dict[str, Any]:
    return {"metadata": {"name": name, "resourceVersion": "1"}, "spec": {"hostname": name},
            "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


GANGS = [_gang("w-0", 0, ["w-0-g-0-a-0"]), _gang("w-0-g-0", 0, ["w-0-g-1-a-0"]),
         _gang("w-1", 1, ["w-1-g-0-a-0"]), _gang("w-1-g-0", 1, ["w-1-g-1-a-0"]),
         _gang("w-x", 0, ["stray"]), _gang("other-0", 0, ["o"])]


def _ready_replicas(ready: dict[str, bool]) -> int:
    pods = [_pod(n, r) for n, r in ready.items()]
    index = S.SlotIndex.of(pods)
    units = S.replica_units(S.base_gangs(GANGS, "w"), {p.name: p.slot for p in index.by_name.values()})
    return index.count([units.get(i, []) for i in range(2)]).ready


def test_only_base_podgangs_make_up_a_replica() -> None:
    assert [g["metadata"]["name"] for g in S.base_gangs(GANGS, "w")] == ["w-0", "w-1"]


def test_scaled_pods_starting_leave_the_replicas_available_and_a_base_pod_does_not() -> None:
    every = {"w-0-g-0-a-0": True, "w-0-g-1-a-0": True, "w-1-g-0-a-0": True, "w-1-g-1-a-0": True}
    assert _ready_replicas(every) == 2
    assert _ready_replicas({**every, "w-0-g-1-a-0": False, "w-1-g-1-a-0": False}) == 2  # scaled gangs starting
    assert _ready_replicas({**every, "w-1-g-0-a-0": False}) == 1  # replica 1's base pod is not Ready


def test_an_autoscaled_cliques_pods_above_its_floor_are_left_out_and_an_unreadable_replica_counts_none() -> None:
    cliques: list[object] = [
        {"name": "w-0-router", "minAvailable": 2, "replicas": 2, "scaleTarget": True},
        {"name": "w-0-fixed", "minAvailable": 1, "replicas": 3},  # not autoscaled: every pod counts
    ]
    members = ["w-0-router-0", "w-0-router-1", "w-0-router-2", "w-0-router-17", "w-0-fixed-0", "w-0-fixed-2",
               "w-0-router-x", "w-0-router-²"]

    def units(day2: dict[str, object]) -> dict[int, list[tuple[str, str]]]:
        gang = {"metadata": {"name": "w-0", "annotations": {S.DAY2: json.dumps(day2)}},
                "spec": {"podgroups": [{"podReferences": [{"name": p} for p in members]}]}}
        return S.base_units([gang], "w", {p: p for p in members})

    found = units({"replicaIndex": 0, "podCliqueSet": "w", "cliques": cliques})
    assert [slot for _, slot in found[0]] == ["w-0-router-0", "w-0-router-1", "w-0-fixed-0", "w-0-fixed-2",
                                              "w-0-router-x", "w-0-router-²"]
    # An annotation no render writes (the day-2 loop's parser refuses it: the PodGang is
    # malformed there) is read by no one: its replica has no units, so it is not available.
    for junk in ({"name": "w-0-odd", "minAvailable": True, "scaleTarget": True}, "junk"):
        assert units({"replicaIndex": 0, "podCliqueSet": "w", "cliques": [*cliques, junk]}) == {}


def test_hostile_floors_and_indexes_neither_raise_nor_count() -> None:
    """A 5,000-digit ``minAvailable`` (beyond Python's int-from-text limit), an annotation that is
    not JSON, a list where the object belongs, and a 300-digit pod index: no traceback, and
    nothing is read from any of them."""
    members = ["w-0-r-0", "w-0-r-" + "9" * 300]
    for raw in ('{"replicaIndex": 0, "cliques": [{"name": "w-0-r", "scaleTarget": true, "minAvailable": '
                + "9" * 5000 + "}]}", "nul\x00", "[1, 2]", '{"replicaIndex": 0, "cliques": "w-0-r"}'):
        gang = {"metadata": {"name": "w-0", "annotations": {S.DAY2: raw}},
                "spec": {"podgroups": [{"podReferences": [{"name": p} for p in members]}]}}
        units = S.base_units([gang], "w", {p: p for p in members})
        assert units == {}  # not a render's annotation: no replica read from it
    # A floor beyond what a render writes (20,000) is refused the same way; one within it is read.
    for floor, kept in ((10**9, None), (20_000, ["w-0-r-0"])):
        big = json.dumps({"replicaIndex": 0, "podCliqueSet": "w",
                          "cliques": [{"name": "w-0-r", "scaleTarget": True, "minAvailable": floor, "replicas": 1}]})
        gang = {"metadata": {"name": "w-0", "annotations": {S.DAY2: big}},
                "spec": {"podgroups": [{"podReferences": [{"name": p} for p in members]}]}}
        units = S.base_units([gang], "w", {p: p for p in members})
        assert (None if not units else [slot for _, slot in units[0]]) == kept
