"""Autoscaled workloads are placed at the floor and at the maximum (issue 23 item 7)."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.feasibility.helpers import clique, feasibility, gang, inventory, pcs, pool, run, source
from tests.support import PROJECT

#: The address space of the subprocess that meets a maxReplicas of a million.
MEMORY_CAP = 1536 * 1024 * 1024


def standalone(maximum: int = 4) -> dict[str, Any]:
    """A clique of 2 pods of 8 GPUs, autoscaled from 2 (its replicas) to ``maximum``."""
    w = clique("w", 2, 8)
    w["spec"]["autoScalingConfig"] = {"maxReplicas": maximum}
    return pcs("solo", [w])


def grouped(maximum: int = 3) -> dict[str, Any]:
    """A scaling group of one 8-GPU pod per replica, autoscaled from 1 to ``maximum``."""
    group = {"name": "g", "cliqueNames": ["w"], "replicas": 1, "minAvailable": 1, "scaleConfig": {"maxReplicas": maximum}}
    return pcs("grp", [clique("w", 1, 8)], groups=[group])


def nodes(n: int) -> dict[str, Any]:
    return inventory(pool("gpu", n))


def verdict(answer: dict[str, Any], name: str) -> dict[str, Any]:
    return next(v for v in answer["autoscaling"] if v["podCliqueSet"] == name)


def test_the_floor_includes_the_base_gang_the_agent_makes_for_a_standalone_clique(tmp_path: Path) -> None:
    """Git holds no base PodGang for an autoscaled standalone clique: the floor's render does."""
    code, answer = feasibility(source(tmp_path / "fits", [standalone()], nodes(2)))
    assert code == 0
    base = gang(answer, "solo-0")
    assert base["kind"] == "base" and base["fits"] and base["pods"] == 2
    code, answer = feasibility(source(tmp_path / "tight", [standalone()], nodes(1)))
    assert code == 3  # the floor does not fit
    assert not gang(answer, "solo-0")["fits"]
    assert verdict(answer, "solo")["fitsAtFloor"] is False


def test_the_maximum_of_a_standalone_clique_needs_room_for_its_extra_pods(tmp_path: Path) -> None:
    code, answer = feasibility(source(tmp_path / "src", [standalone()], nodes(3)))
    assert code == 0  # only the floor decides the exit code
    v = verdict(answer, "solo")
    assert (v["fitsAtFloor"], v["fitsAtMaximum"], v["extraPodsUnplacedAtMaximum"]) == (True, False, 1)
    assert v["verdict"] == (
        "fits at the floor (2 pods of w), does not fit at the maximum (4 pods of w): "
        "1 pod(s) above minAvailable find no room"
    )
    assert answer["fitsAtMaximum"] is False and answer["fits"] is True
    _, roomy = feasibility(source(tmp_path / "roomy", [standalone()], nodes(4)))
    assert verdict(roomy, "solo")["verdict"] == "fits at the floor (2 pods of w), fits at the maximum (4 pods of w)"


def test_the_maximum_of_a_scaling_group_counts_the_scaled_gangs_that_place(tmp_path: Path) -> None:
    root = source(tmp_path / "src", [grouped()], nodes(2))
    code, answer = feasibility(root)
    assert code == 0
    assert [g["name"] for g in answer["gangs"]] == ["grp-0"]  # the floor: one replica, in the base gang
    v = verdict(answer, "grp")
    assert v["verdict"] == (
        "fits at the floor (1 replica of g), does not fit at the maximum (3 replicas of g): 1 of 2 scaled gangs place"
    )
    assert v["units"] == [{"name": "g", "kind": "PodCliqueScalingGroup", "minReplicas": 1, "maxReplicas": 3}]
    assert sorted((g["name"], g["fits"]) for g in v["gangsAtMaximum"]) == [
        ("grp-0", True), ("grp-0-g-0", True), ("grp-0-g-1", False),
    ]
    text = run("feasibility", str(root)).stdout
    assert "Autoscaled workloads (the gangs above have every autoscaled count at its floor):" in text
    assert f"  ml/grp: {v['verdict']}" in text
    assert "    at the maximum, DOES NOT FIT grp-0-g-1: " in text
    assert "Only the floor must fit (exit code, feasibility: enforce); the maximum is a warning." in text


def test_the_examples_prefill_fits_at_its_floor_not_at_its_maximum(tmp_path: Path) -> None:
    """The example with its inventory cut to three racks (it ships five: room at the maximum)."""
    import shutil

    root = tmp_path / "examples"
    shutil.copytree(PROJECT / "examples", root)
    inventory = root / "cluster" / "node-inventory.yaml"
    text = inventory.read_text()
    start, end = text.index("  - name: gpu-r4"), text.index("  # CPU nodes")
    inventory.write_text(text[:start] + text[end:])
    result = run("feasibility", str(root))
    assert result.exit_code == 0, result.output
    assert (
        "  inference/llama-disagg: fits at the floor (2 replicas of prefill), does not fit at the maximum "
        "(4 replicas of prefill): 1 of 3 scaled gangs place"
    ) in result.stdout
    shipped = run("feasibility", str(PROJECT / "examples"))
    assert "does not fit" not in shipped.stdout, shipped.stdout


def test_under_enforce_only_the_floor_must_fit(tmp_path: Path) -> None:
    root = source(tmp_path / "src", [grouped()], nodes(2), mode="enforce")
    result = run("validate", str(root))
    assert result.exit_code == 0, result.output
    assert (
        "warning: workloads.yaml: PodCliqueSet ml/grp fits at the floor (1 replica of g), does not fit at the "
        "maximum (3 replicas of g): 1 of 2 scaled gangs place (a warning under every feasibility mode: only the "
        "floor must fit"
    ) in result.stderr
    assert run("render", str(root), "--out", str(tmp_path / "out")).exit_code == 0
    tight = source(tmp_path / "tight", [standalone()], nodes(1), mode="enforce")
    result = run("validate", str(tight))
    assert result.exit_code == 1
    assert "error: workloads.yaml: PodGang ml/solo-0 does not fit the node inventory" in result.stderr


def test_a_workload_without_autoscaling_has_no_maximum(tmp_path: Path) -> None:
    _, answer = feasibility(source(tmp_path / "src", [pcs("plain", [clique("w", 1, 8)])], nodes(1)))
    assert answer["autoscaling"] == [] and answer["fitsAtMaximum"] is None


def test_a_maximum_beyond_the_render_limits_is_refused_before_anything_is_expanded(tmp_path: Path) -> None:
    """maxReplicas sizes what the agent creates, so it is bounded like every count: a million
    replicas are an input error naming the field, in bounded memory and time."""
    root = source(tmp_path / "src", [grouped(maximum=1_000_000)], nodes(2))

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))

    done = subprocess.run(
        [sys.executable, "-m", "grove_gitops", "feasibility", str(root), "--output", "json"],
        capture_output=True, text=True, preexec_fn=cap, timeout=600, check=False,
    )
    assert done.returncode == 1, done.stderr
    assert "scaleConfig.maxReplicas" in done.stdout + done.stderr
    assert "maxPodsPerPodCliqueSet" in done.stdout + done.stderr
    assert "Traceback" not in done.stderr
