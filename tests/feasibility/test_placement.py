"""Hand-built inventories whose answer is known: placement says fits / does not fit, and why."""

from __future__ import annotations

from pathlib import Path

from tests.feasibility.helpers import clique, feasibility, gang, inventory, pack, pcs, pool, source


def test_exact_fit(tmp_path: Path) -> None:
    # 4 pods of 8 GPUs packed in one rack of 4 nodes of 8 GPUs: nothing to spare.
    root = source(tmp_path, [pcs("llm", [clique("w", 4, 8)], topology=pack("rack"))], inventory(pool("r1", 4)))
    code, answer = feasibility(root)
    assert code == 0, answer
    assert answer["fits"] is True
    assert gang(answer, "llm-0") | {"placedIn": None} == gang(answer, "llm-0") | {
        "fits": True,
        "reason": None,
        "kind": "base",
        "podCliqueSet": "llm",
        "placedIn": None,
    }
    rack = next(d for d in answer["domains"] if d["level"] == "rack")
    assert rack["requested"]["nvidia.com/gpu"] == "32" and rack["allocatable"]["nvidia.com/gpu"] == "32"


def test_one_gpu_short(tmp_path: Path) -> None:
    # 3 pods of 8 GPUs and one of 7: the rack has 31, the gang needs 32 inside it.
    inv = inventory(pool("a", 3), pool("b", 1, 8))
    w = [clique("w", 4, 8)]
    root = source(tmp_path, [pcs("llm", w, topology=pack("rack"))], inventory(pool("a", 3), pool("b", 1, 7)))
    code, answer = feasibility(root)
    assert code == 3
    assert gang(answer, "llm-0")["reason"] == (
        "the gang needs 32 nvidia.com/gpu inside one rack; the largest rack has 31 allocatable"
    )
    root = source(tmp_path / "ok", [pcs("llm", w, topology=pack("rack"))], inv)
    assert feasibility(root)[0] == 0


def test_fragmentation_across_racks(tmp_path: Path) -> None:
    # 32 GPUs in the cluster, 16 per rack; 24 must sit in one rack.
    inv = inventory(pool("r1", 2, rack="r1"), pool("r2", 2, rack="r2"))
    w = [clique("pworker", 3, 8, topology=pack("rack"))]
    code, answer = feasibility(source(tmp_path, [pcs("llm", w)], inv))
    assert code == 3
    assert gang(answer, "llm-0")["reason"] == (
        "podgroup llm-0-pworker needs 24 nvidia.com/gpu inside one rack; the largest rack has 16 allocatable"
    )
    free = [clique("pworker", 3, 8)]
    assert feasibility(source(tmp_path / "free", [pcs("llm", free)], inv))[0] == 0


def test_preferred_never_fails_and_is_tried_first(tmp_path: Path) -> None:
    inv = inventory(pool("r1", 2, rack="r1"), pool("r2", 2, rack="r2"))
    w = [clique("pworker", 3, 8, topology=pack(preferred="rack"))]
    code, answer = feasibility(source(tmp_path, [pcs("llm", w)], inv))
    assert code == 0, answer
    assert gang(answer, "llm-0")["placedIn"] == {"podgroup llm-0-pworker": "the cluster"}
    # A small rack and a big one: the preferred rack is the one the podgroup fits in.
    inv = inventory(pool("r1", 1, rack="r1"), pool("r2", 2, rack="r2"))
    w = [clique("pworker", 2, 8, topology=pack(preferred="rack"))]
    code, answer = feasibility(source(tmp_path / "b", [pcs("llm", w)], inv))
    assert code == 0
    assert gang(answer, "llm-0")["placedIn"] == {"podgroup llm-0-pworker": "rack z1/b1/r2"}


def test_required_inside_required(tmp_path: Path) -> None:
    # The gang packs in a zone, its podgroup in a rack of that zone.
    inv = inventory(pool("z1r1", 1, zone="z1"), pool("z2r1", 2, zone="z2"), pool("z2r2", 1, zone="z2", rack="r2"))
    w = [clique("router", 1, 8), clique("pworker", 2, 8, topology=pack("rack"))]
    code, answer = feasibility(source(tmp_path, [pcs("llm", w, topology=pack("zone"))], inv))
    assert code == 0, answer
    placed = gang(answer, "llm-0")["placedIn"]
    assert placed["podgroup llm-0-pworker"] == "rack z2/b1/r1"
    assert placed["podgroup llm-0-router"] == "zone z2"


def test_taints(tmp_path: Path) -> None:
    taint = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    inv = inventory(pool("gpu", 2, taints=taint))
    code, answer = feasibility(source(tmp_path, [pcs("llm", [clique("w", 2, 8)])], inv))
    assert code == 3
    assert gang(answer, "llm-0")["reason"] == (
        "podgroup llm-0-w: no node matches its pods' taints (it has no tolerations)"
    )
    tolerate = {"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}
    assert feasibility(source(tmp_path / "ok", [pcs("llm", [clique("w", 2, 8, pod=tolerate)])], inv))[0] == 0
    # A toleration of another effect does not help; PreferNoSchedule never blocks.
    wrong = {"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}]}
    assert feasibility(source(tmp_path / "wrong", [pcs("llm", [clique("w", 2, 8, pod=wrong)])], inv))[0] == 3
    soft = inventory(pool("gpu", 2, taints=[{"key": "x", "effect": "PreferNoSchedule"}]))
    assert feasibility(source(tmp_path / "soft", [pcs("llm", [clique("w", 2, 8)])], soft))[0] == 0


def _scaled(name: str = "llm") -> dict:
    return pcs(
        name,
        [clique("router", 1, 0), clique("worker", 2, 8)],
        groups=[{"name": "sg", "cliqueNames": ["worker"], "replicas": 2, "minAvailable": 1, "topologyConstraint": pack("rack")}],
    )


def test_scaled_gang_fits_only_after_the_base(tmp_path: Path) -> None:
    two_racks = inventory(pool("r1", 2, rack="r1"), pool("r2", 2, rack="r2"))
    code, answer = feasibility(source(tmp_path, [_scaled()], two_racks))
    assert code == 0, answer
    assert [(g["name"], g["kind"], g["fits"]) for g in answer["gangs"]] == [
        ("llm-0", "base", True),
        ("llm-0-sg-0", "scaled", True),
    ]
    # One rack: the base gang takes it, so the scaled gang (placed after) has no room.
    code, answer = feasibility(source(tmp_path / "one", [_scaled()], inventory(pool("r1", 2))))
    assert code == 3
    assert gang(answer, "llm-0")["fits"] is True
    assert gang(answer, "llm-0-sg-0")["reason"] == (
        "the gang needs 16 nvidia.com/gpu inside one rack; the most free in any rack is 0 "
        "once the gangs placed before it are counted"
    )
    # No room for the base: the scaled gang waits for it.
    code, answer = feasibility(source(tmp_path / "none", [_scaled()], inventory(pool("r1", 1))))
    assert gang(answer, "llm-0-sg-0")["reason"] == (
        "its base gang llm-0 does not fit, and Grove schedules a scaled gang only after it"
    )


def test_podcliquesets_share_the_cluster(tmp_path: Path) -> None:
    inv = inventory(pool("r1", 2))
    code, answer = feasibility(source(tmp_path, [pcs("a", [clique("w", 2, 8)]), pcs("b", [clique("w", 1, 8)])], inv))
    assert code == 3
    assert sorted(g["fits"] for g in answer["gangs"]) == [False, True]
    # The larger gang is placed first (first-fit decreasing).
    assert gang(answer, "a-0")["fits"] is True


def test_min_replicas_only_and_extras_noted(tmp_path: Path) -> None:
    # 4 replicas, 2 needed: 2 nodes are enough for the gang; the extras find no room.
    inv = inventory(pool("r1", 2))
    code, answer = feasibility(source(tmp_path, [pcs("llm", [clique("w", 4, 8, min_available=2)])], inv))
    assert code == 0, answer
    g = gang(answer, "llm-0")
    assert (g["pods"], g["extraPods"], g["extraPodsUnplaced"]) == (2, 2, 2)


def test_node_selector_and_affinity(tmp_path: Path) -> None:
    inv = inventory(pool("h100", 1, labels={"accel": "h100", "gen": "9"}), pool("a100", 2, labels={"accel": "a100", "gen": "8"}))
    select = {"nodeSelector": {"accel": "h100"}}
    code, answer = feasibility(source(tmp_path, [pcs("llm", [clique("w", 2, 8, pod=select)])], inv))
    assert code == 3
    assert gang(answer, "llm-0")["reason"] == (
        "podgroup llm-0-w needs 16 nvidia.com/gpu for 2 pod(s); the cluster has 8 free of 8 allocatable"
    )
    affinity = {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": "gen", "operator": "Lt", "values": ["9"]}]}]
                }
            }
        }
    }
    assert feasibility(source(tmp_path / "aff", [pcs("llm", [clique("w", 2, 8, pod=affinity)])], inv))[0] == 0
    nothing = {"nodeSelector": {"accel": "b200"}}
    code, answer = feasibility(source(tmp_path / "none", [pcs("llm", [clique("w", 1, 8, pod=nothing)])], inv))
    assert gang(answer, "llm-0")["reason"] == (
        "podgroup llm-0-w: no node matches its pods' nodeSelector, taints (it has no tolerations)"
    )


def test_init_container_peak_counts(tmp_path: Path) -> None:
    init = {"initContainers": [{"name": "warm", "image": "busybox:1.36", "resources": {"limits": {"nvidia.com/gpu": "16"}}}]}
    code, answer = feasibility(source(tmp_path, [pcs("llm", [clique("w", 1, 8, pod=init)])], inventory(pool("r1", 2))))
    assert code == 3
    assert gang(answer, "llm-0")["reason"] == (
        "podgroup llm-0-w: a pod needs 16 nvidia.com/gpu; the largest node it may use has 8 allocatable"
    )


def test_long_node_lists_skip_full_chunks_but_not_the_room_in_them(tmp_path: Path) -> None:
    # 130 nodes (chunks of 32 are tracked): GPUs only on node 127, and the first gang takes
    # one GPU node of rack r1's chunk; the second still finds the last one.
    inv = inventory(pool("cpu", 100, 0), pool("gpu", 30, 0, rack="r2"), pool("last", 2, 8, rack="r2"))
    workloads = [pcs("a", [clique("w", 1, 8)]), pcs("b", [clique("w", 1, 8)]), pcs("c", [clique("w", 1, 8)])]
    code, answer = feasibility(source(tmp_path, workloads, inv))
    assert code == 3
    assert [g["fits"] for g in answer["gangs"]] == [True, True, False]
    assert gang(answer, "c-0")["reason"] == (
        "podgroup c-0-w needs 8 nvidia.com/gpu for 1 pod(s); the cluster has 0 free of 16 allocatable"
    )


def test_extras_are_not_held_to_a_preferred_domain(tmp_path: Path) -> None:
    # The needed pod lands on its preferred host; the extras may use the other nodes.
    w = [clique("w", 3, 8, min_available=1, topology=pack(preferred="host"))]
    code, answer = feasibility(source(tmp_path, [pcs("llm", w)], inventory(pool("r1", 3))))
    assert code == 0, answer
    g = gang(answer, "llm-0")
    assert g["placedIn"] == {"podgroup llm-0-w": "host z1/b1/r1/r1-0"}
    assert (g["extraPods"], g["extraPodsUnplaced"]) == (2, 0)
    # A required rack does hold the extras: the second rack's room is not theirs.
    w = [clique("w", 3, 8, min_available=1, topology=pack("rack"))]
    inv = inventory(pool("r1", 1), pool("r2", 2, rack="r2"))
    code, answer = feasibility(source(tmp_path / "req", [pcs("llm", w)], inv))
    g = gang(answer, "llm-0")
    assert g["placedIn"] == {"podgroup llm-0-w": "rack z1/b1/r1"}
    assert (g["extraPods"], g["extraPodsUnplaced"]) == (2, 2)


def test_scaling_group_constraint_in_the_base_gang(tmp_path: Path) -> None:
    # The base gang's replica 0 of scaling group sg must pack 24 GPUs in one rack.
    group = {"name": "sg", "cliqueNames": ["worker"], "replicas": 1, "minAvailable": 1, "topologyConstraint": pack("rack")}
    workload = pcs("llm", [clique("router", 1, 0), clique("worker", 3, 8)], groups=[group])
    inv = inventory(pool("r1", 2), pool("r2", 2, rack="r2"))
    code, answer = feasibility(source(tmp_path, [workload], inv))
    assert code == 3
    assert gang(answer, "llm-0")["reason"] == (
        "scaling group llm-0-sg-0 needs 24 nvidia.com/gpu inside one rack; the largest rack has 16 allocatable"
    )
    inv = inventory(pool("r1", 2), pool("r2", 3, rack="r2"))
    code, answer = feasibility(source(tmp_path / "ok", [workload], inv))
    assert code == 0
    assert gang(answer, "llm-0")["placedIn"]["podgroup llm-0-sg-0-worker"] == "rack z1/b1/r2"


def test_a_topology_reason_says_when_taints_rule_nodes_out(tmp_path: Path) -> None:
    taint = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    inv = inventory(pool("tainted", 4, taints=taint), pool("open", 1))
    code, answer = feasibility(source(tmp_path, [pcs("llm", [clique("w", 2, 8)], topology=pack("rack"))], inv))
    assert code == 3
    assert gang(answer, "llm-0")["reason"] == (
        "the gang needs 16 nvidia.com/gpu inside one rack; the largest rack on the nodes its pods may use "
        "(taints, nodeSelector or affinity rule out others) has 8 allocatable"
    )
