"""The benchmark harness end to end at a tiny size (the real benchmark is `make bench`, never CI).

Checks that every sub-benchmark runs in its own process, reports its JSON fields, and that
the summary's ratios are computed from the runs they come from. No performance target is
asserted here: at this size the figures say nothing about them.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from typing import Any

import pytest

from tests.support import PROJECT

SMOKE = [
    "--size", "3", "--repeat", "1", "--lifter-gangs", "4", "--lifter-pods", "40", "--rollout-gangs", "2",
    "--rollout-pods", "10", "--feasibility-nodes", "16", "--fresh-repeat", "2", "--autoscale-high", "4",
    "--release-points", "40",
]


def positive(value: Any) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str]:
    tmp = tmp_path_factory.mktemp("bench")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.run",
            *SMOKE,
            "--out",
            str(tmp / "B.md"),
            "--json",
            str(tmp / "b.json"),
            "--workdir",
            str(tmp),
        ],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=360,  # one agent process more since issue 35 (the release point); a loaded machine
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    leftovers = [p.name for p in tmp.iterdir() if p.name.startswith("grove-bench-")]
    assert leftovers == [], "temporary trees must be removed"
    return json.loads((tmp / "b.json").read_text()), (tmp / "B.md").read_text()


@pytest.mark.timeout(420)
def test_every_figure_is_reported(smoke: tuple[dict[str, Any], str]) -> None:
    results, _ = smoke
    assert results["errors"] == []
    summary = results["summary"]
    for key in (
        "render_s",
        "render_source_s",
        "build_tree_s",
        "write_tree_s",
        "objects_per_s",
        "mb_per_s",
        "peak_rss_mib",
        "floor_s",
        "floor_ratio",
        "io_floor_s",
        "io_floor_ratio",
        "render_jobs2_s",
        "jobs_ratio",
        "peak_rss_jobs2_mib",
        "serialise_emit_s",
        "serialise_cdumper_s",
        "serialise_emit_ratio",
        "incremental_big_s",
        "incremental_small_s",
        "incremental_ratio",
        "lifter_release_s",
        "lifter_release_after_last_s",
        "lifter_cpu_s",
        "lifter_patch_ratio",
        "lifter_api_floor_s",
        "lifter_floor_ratio",
    ):
        stat = summary[key]
        assert len(stat["runs"]) == 1, key
        assert positive(stat["median"]) and stat["min"] <= stat["median"] <= stat["max"], (key, stat)
    for key in (
        "fresh_controller_big_s",
        "fresh_controller_small_s",
        "fresh_controller_ratio",
        "fresh_diff_s",
        "fresh_render_s",
        "fresh_diff_ratio",
        "fresh_fsync_s",
        "fresh_no_fsync_s",
        "fresh_fsync_ratio",
    ):
        stat = summary[key]
        assert len(stat["runs"]) == 2, key  # --fresh-repeat 2: interleaved pairs
        assert positive(stat["median"]) and stat["min"] <= stat["median"] <= stat["max"], (key, stat)
    assert {t["key"] for t in results["targets"]} == {
        "peak_rss_mib",
        "floor_ratio",
        "io_floor_ratio",
        "jobs_ratio",
        "peak_rss_jobs2_mib",
        "incremental_ratio",
        "fresh_controller_ratio",
        "fresh_diff_ratio",
        "fresh_fsync_ratio",
        "lifter_release_after_last_s",
        "lifter_patch_ratio",
    }
    assert all(isinstance(t["met"], bool) for t in results["targets"])
    machine = results["machine"]
    assert machine["cpu"] and machine["python"] and "LibYAML" in machine["pyyaml"] and machine["git"].startswith("git")


@pytest.mark.timeout(420)
def test_ratios_come_from_the_same_runs(smoke: tuple[dict[str, Any], str]) -> None:
    results, _ = smoke
    run = results["render"]["runs"][0]
    full, floor = run["full"], run["floor"]
    assert full["objects"] > full["pods"] > 0 and full["podcliquesets"] == 3
    assert floor["files"] == full["files"] and floor["yaml_files"] < floor["files"]
    assert math.isclose(results["summary"]["floor_ratio"]["median"], full["seconds"] / floor["seconds"])
    assert math.isclose(full["objects_per_s"], full["objects"] / full["seconds"])
    io, j2, ser = run["io_floor"], run["full_jobs2"], run["serialise"]
    assert io["files"] == full["files"] and io["bytes"] == full["bytes"]  # the same bytes, the same files
    assert math.isclose(results["summary"]["io_floor_ratio"]["median"], full["seconds"] / io["seconds"])
    assert j2["jobs"] == 2 and j2["files"] == full["files"] and j2["bytes"] == full["bytes"]
    assert math.isclose(results["summary"]["jobs_ratio"]["median"], j2["seconds"] / full["seconds"])
    assert ser["objects"] == floor["yaml_files"] and ser["emit_bytes"] > 0
    assert ("orjson_s" in ser) != (ser.get("orjson") == "not installed")
    if "seconds" in run["kustomize"]:  # kubectl installed
        assert math.isclose(
            results["summary"]["kustomize_ratio"]["median"], run["kustomize"]["seconds"] / full["seconds"]
        )
    else:
        assert "skipped" in run["kustomize"]

    inc = results["incremental"]
    big, small = inc["change_s"]["big"]["runs"][0], inc["change_s"]["small"]["runs"][0]
    assert math.isclose(inc["ratio"]["runs"][0], big / small)
    assert inc["podcliquesets"] == {"big": 3, "small": 1}
    assert inc["output_files"]["big"] > inc["output_files"]["small"] > 0
    assert positive(inc["warmup_s"]["big"]) and positive(inc["warmup_s"]["small"])

    fresh = results["fresh"]
    assert fresh["podcliquesets"] == 3 and fresh["repeat"] == 2
    for name, (a, b) in {"controller": ("big", "small"), "diff": ("diff_s", "render_s"), "fsync": ("fsync_s", "no_fsync_s")}.items():
        part = fresh[name]
        first, second = (part["change_s"][a], part["change_s"][b]) if name == "controller" else (part[a], part[b])
        for i in range(2):
            assert math.isclose(part["ratio"]["runs"][i], first["runs"][i] / second["runs"][i]), name
    assert fresh["controller"]["cache_mib"] > 0 and positive(fresh["controller"]["cold_s"]["big"])

    (lift,) = results["lifter"]["runs"]
    assert lift["pods"] == lift["released_pods"] == 40 and lift["gangs"] == 4
    assert lift["pod_patches"] >= 40
    assert math.isclose(lift["patches_per_released_pod"], lift["pod_patches"] / 40)
    assert lift["release_s"] >= lift["release_after_last_s"] > 0
    assert math.isclose(lift["release_over_api_floor"], lift["release_s"] / lift["api_floor_s"])


@pytest.mark.timeout(420)
def test_profile_and_report(smoke: tuple[dict[str, Any], str]) -> None:
    results, markdown = smoke
    profile = results["profile"]
    assert set(profile["groups_share"]) == {"load", "validate", "expand", "backend", "serialise", "write", "other"}
    assert math.isclose(sum(profile["groups_share"].values()), 1.0, rel_tol=1e-6)
    assert profile["groups_share"]["serialise"] > 0 and profile["groups_share"]["load"] > 0
    assert profile["top_cumulative"] and all(row["cumulative_s"] >= row["self_s"] for row in profile["top_cumulative"])
    for heading in (
        "## Summary",
        "## Machine",
        "## Render",
        "## Incremental controller",
        "## Fresh processes: controller --once, diff, fsync (issue 14)",
        "## Gate-lifter",
        "## What the remaining cost is made of",
        "## How to reproduce",
    ):
        assert heading in markdown
    summary_section = markdown.split("## Summary")[1].split("## Machine")[0]
    if "seconds" in results["render"]["runs"][0]["kustomize"]:
        assert "n/a" not in summary_section
    assert "N=3" in markdown and "40 pods / 4 gangs" in markdown


@pytest.mark.timeout(420)
def test_rollout_figures_are_reported(smoke: tuple[dict[str, Any], str]) -> None:
    """The rollout benchmark ran its agent as a process and read its figures back."""
    rollout = smoke[0]["rollout"]
    assert rollout["steps"] == rollout["pods"] == 10
    for key in ("cpu_ms", "step_ms", "decide_ms", "rollout_s"):
        assert positive(rollout[key]), (key, rollout)
    assert rollout["decide_ms"] <= rollout["step_ms"]
    # Every replaced pod took at least its delete and its gate patch.
    assert rollout["pod_writes_per_pod"] >= 2.0
    assert rollout["passes"] >= rollout["passes_over_50ms"] >= rollout["passes_over_1s"] >= 0
    assert "## Rollout (issue 13)" in smoke[1] and "agent time per step" in smoke[1]


@pytest.mark.timeout(420)
def test_feasibility_figures_are_reported(smoke: tuple[dict[str, Any], str]) -> None:
    """The feasibility benchmark ran at its three sizes and its table is in the report."""
    runs = smoke[0]["feasibility"]["runs"]
    assert [r["podcliquesets"] for r in runs] == [1, 2, 3]
    assert runs[-1]["nodes"] == 16 and runs[-1]["gangs"] >= 3
    for run in runs:
        assert positive(run["total_s"]) and run["total_s"] >= run["placement_s"] > 0
        assert 0 <= run["fitting_gangs"] <= run["gangs"]
    assert "## Feasibility (issue 11)" in smoke[1] and "3 PCS / 16 nodes" in smoke[1]


def test_fleet_figures_are_reported(smoke: tuple[dict[str, Any], str]) -> None:
    """The fleet benchmark ran inside ``bench.run``: one cluster's configuration change
    re-expands that cluster only, and the table is in the report."""
    fleet = smoke[0]["fleet"]
    n = fleet["podcliquesets"]
    assert fleet["cold"]["expanded"] == {"a": n, "b": n}
    assert fleet["operator_config_b"]["expanded"] == {"a": 0, "b": n}
    assert "## Fleet: incremental per cluster (issue 12)" in smoke[1]
    assert "b's OperatorConfiguration" in smoke[1]


@pytest.mark.timeout(420)
def test_release_point_runs_the_agent_as_a_process_and_reports_its_peak_rss(
        smoke: tuple[dict[str, Any], str]) -> None:
    """Issue 35.3: the release benchmark with the agent in its own process, at each point."""
    rel = smoke[0]["release_40"]
    assert rel["agent"] == "process" and rel["released_pods"] == 40 and rel["gangs"] == 2
    for key in ("agent_peak_rss_mib", "api_floor_s", "release_after_last_s", "release_after_last_over_floor"):
        assert positive(rel[key]), (key, rel)
    assert "## Release near the API floor (issue 35.3)" in smoke[1] and "| 40 |" in smoke[1]


def test_rollout_reports_the_step_tail_and_the_collector_pauses(smoke: tuple[dict[str, Any], str]) -> None:
    """Issue 35.1: the slow steps' distribution, and the agent's and the world's collector pauses."""
    rollout = smoke[0]["rollout"]
    assert 0 <= rollout["ready_to_next_s_median"] <= rollout["ready_to_next_s_p95"] <= rollout["ready_to_next_s_p99"] \
        <= rollout["ready_to_next_s_max"]
    assert rollout["ready_to_next_over_300ms"] >= rollout["ready_to_next_over_1s"] >= 0
    assert rollout["agent_gc_pause_ms_max"] >= 0, rollout  # the agent's own metric, read back (absent: -1)
    assert rollout["world_gc_pause_ms_max"] >= 0 and rollout["world_gc_pauses_over_100ms"] >= 0


def test_autoscale_figures_are_reported(smoke: tuple[dict[str, Any], str]) -> None:
    """The autoscaling benchmark scaled 2 -> 4 -> 2 with one /scale write each way and read
    the agent's writes and CPU back; its section is in the report."""
    au = smoke[0]["autoscale"]
    assert (au["low"], au["high"], au["repeat"]) == (2, 4, 1)
    (run,) = au["runs"]
    assert run["new_gangs"] == 2 and run["new_pods"] == 8 and run["invariant_problems"] == 0
    for key in ("release_s", "scale_in_s", "cpu_ms_per_gang", "writes_per_pod"):
        assert positive(run[key]) and au["summary"][key]["median"] == au["summary"][key]["worst"] == run[key], key
    # Every new pod was created once and released by one gate patch, by the agent.
    assert run["pod_creates_per_pod"] == run["gate_patches_per_pod"] == 1.0
    assert run["writes"]["create podgangs"] == 2 and "patch podcliquescalinggroups/scale" not in run["writes"]
    assert run["writes_per_pod"] >= run["pod_writes_per_pod"] == 2.0
    assert "## Autoscaling (issue 23)" in smoke[1] and "write → last new gang released" in smoke[1]


def test_unknown_fields_figures_are_reported(smoke: tuple[dict[str, Any], str]) -> None:
    """The hostile-input benchmark (issue 31.1) ran: every scenario failed validation as it must,
    with at most 101 lines for its largest document, and the report has its table."""
    found = smoke[0]["unknown_fields"]
    for key in ("template", "operator_config", "many_pod_specs", "template_1x", "template_4x"):
        assert found[key]["exit_code"] == 1, found[key]
        assert 0 < found[key]["lines_largest_file"] <= 101 and positive(found[key]["seconds"]), found[key]
    assert found["template"]["lines_largest_file"] == 101  # 2,000 keys: capped
    assert "## Unknown fields: bounded time, memory and output (issue 31.1)" in smoke[1]


def test_midsize_figures_are_reported(smoke: tuple[dict[str, Any], str]) -> None:
    # Issue 35.4: whole render processes beside the CDumper and I/O floors of the same output.
    mid = smoke[0]["midsize"]
    assert mid["copies"] == 3 and len(mid["runs"]) == 1
    run = mid["runs"][0]
    for key in ("default", "jobs1", "jobs2", "version"):
        assert positive(run[key]["seconds"]) and positive(run[key]["cpu_s"]), key
    assert run["objects"] == 3 * 53 + 3  # 53 per copy, the Namespace, binding and KAI Topology
    s = mid["summary"]
    assert s["floor_ratio"]["runs"] == [run["default"]["seconds"] / run["floor"]["seconds"]]
    assert s["jobs2_over_jobs1"]["runs"] == [run["jobs2"]["seconds"] / run["jobs1"]["seconds"]]
    assert "## Mid-size render (issue 35.4)" in smoke[1]
