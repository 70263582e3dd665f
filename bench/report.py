"""Summarise the raw benchmark results and write BENCHMARKS.md.

``summarise(results)`` turns the per-run JSON that ``bench.run`` collected into figures
(median, min, max and the runs themselves) and target checks; ``markdown(results)`` renders
the report. Ratios are computed per run from measurements taken side by side, then summarised;
a ratio of two medians would mix runs that saw different machine load.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable
from typing import Any

Stat = dict[str, Any]

#: (key in summary, label, target description, predicate on the median)
TARGETS: list[tuple[str, str, str, Callable[[float], bool]]] = [
    ("peak_rss_mib", "peak RSS of the render process", "≤ 300 MiB", lambda v: v <= 300),
    ("floor_ratio", "render time / CDumper floor time", "≤ 0.25", lambda v: v <= 0.25),
    ("io_floor_ratio", "render time / I/O floor time", "≤ 5", lambda v: v <= 5),
    ("jobs_ratio", "render --jobs 2 / --jobs 1", "≤ 0.6", lambda v: v <= 0.6),
    ("peak_rss_jobs2_mib", "peak RSS with --jobs 2 (parent, largest worker)", "≤ 300 MiB", lambda v: v <= 300),
    ("incremental_ratio", "incremental run_once, N-PCS / 1-PCS repo", "≤ 3", lambda v: v <= 3),
    ("fresh_controller_ratio", "controller --once (fresh process), N-PCS / 1-PCS repo", "≤ 3", lambda v: v <= 3),
    ("fresh_diff_ratio", "diff of a one-PCS change (cache) / full render", "≤ 0.2", lambda v: v <= 0.2),
    ("fresh_fsync_ratio", "cold render with fsync / --no-fsync", "≤ 1.3", lambda v: v <= 1.3),
    # The target: "time from the last gang object's creation to all gates lifted".
    ("lifter_release_after_last_s", "gate-lifter: last PodGang created → all gates lifted", "≤ 2 s", lambda v: v <= 2),
    ("lifter_patch_ratio", "gate-lifter: pod PATCH requests / released pods", "≤ 1.05", lambda v: v <= 1.05),
]


def stat(values: Iterable[float]) -> Stat | None:
    vals = [float(v) for v in values]
    if not vals:
        return None
    return {"median": statistics.median(vals), "min": min(vals), "max": max(vals), "runs": vals}


def _ok(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in runs if "error" not in r]


def summarise(results: dict[str, Any]) -> dict[str, Any]:
    """Figures of every sub-benchmark that produced data (missing ones are left out)."""
    out: dict[str, Any] = {}
    renders = _ok(results.get("render", {}).get("runs", []))
    full = [r["full"] for r in renders if "full" in r]
    pairs = [r for r in renders if "full" in r and "floor" in r]
    out["render_s"] = stat(f["seconds"] for f in full)
    out["render_source_s"] = stat(f["render_source_s"] for f in full)
    out["build_tree_s"] = stat(f["build_tree_s"] for f in full)
    out["write_tree_s"] = stat(f["write_tree_s"] for f in full)
    out["objects_per_s"] = stat(f["objects_per_s"] for f in full)
    out["mb_per_s"] = stat(f["mb_per_s"] for f in full)
    out["peak_rss_mib"] = stat(f["peak_rss_mib"] for f in full)
    out["floor_s"] = stat(r["floor"]["seconds"] for r in pairs)
    out["floor_ratio"] = stat(r["full"]["seconds"] / r["floor"]["seconds"] for r in pairs)
    io = [r for r in renders if "full" in r and "io_floor" in r]
    out["io_floor_s"] = stat(r["io_floor"]["seconds"] for r in io)
    out["io_floor_ratio"] = stat(r["full"]["seconds"] / r["io_floor"]["seconds"] for r in io)
    j2 = [r for r in renders if "full" in r and "full_jobs2" in r]
    out["render_jobs2_s"] = stat(r["full_jobs2"]["seconds"] for r in j2)
    out["jobs_ratio"] = stat(r["full_jobs2"]["seconds"] / r["full"]["seconds"] for r in j2)
    out["peak_rss_jobs2_mib"] = stat(
        max(r["full_jobs2"]["peak_rss_mib"], r["full_jobs2"].get("peak_rss_workers_mib", 0.0)) for r in j2
    )
    ser = [r["serialise"] for r in renders if "serialise" in r]
    for key in ("emit_s", "cdumper_s", "orjson_s"):
        out[f"serialise_{key}"] = stat(x[key] for x in ser if key in x)
    out["serialise_emit_ratio"] = stat(x["emit_s"] / x["cdumper_s"] for x in ser)
    kz = [r for r in renders if "seconds" in r.get("kustomize", {}) and not r["kustomize"].get("timed_out")]
    out["kustomize_s"] = stat(r["kustomize"]["seconds"] for r in kz)
    out["kustomize_ratio"] = stat(r["kustomize"]["seconds"] / r["full"]["seconds"] for r in kz if "full" in r)
    shard = [r for r in renders if "seconds" in r.get("kustomize_shard", {})]
    out["kustomize_shard_s"] = stat(r["kustomize_shard"]["seconds"] for r in shard)

    inc = results.get("incremental") or {}
    if "change_s" in inc:
        out["incremental_big_s"] = stat(inc["change_s"]["big"]["runs"])
        out["incremental_small_s"] = stat(inc["change_s"]["small"]["runs"])
        out["incremental_ratio"] = stat(inc["ratio"]["runs"])

    fresh = results.get("fresh") or {}
    if "controller" in fresh:
        out["fresh_controller_big_s"] = stat(fresh["controller"]["change_s"]["big"]["runs"])
        out["fresh_controller_small_s"] = stat(fresh["controller"]["change_s"]["small"]["runs"])
        out["fresh_controller_ratio"] = stat(fresh["controller"]["ratio"]["runs"])
    if "diff" in fresh:
        out["fresh_diff_s"] = stat(fresh["diff"]["diff_s"]["runs"])
        out["fresh_render_s"] = stat(fresh["diff"]["render_s"]["runs"])
        out["fresh_diff_ratio"] = stat(fresh["diff"]["ratio"]["runs"])
    if "fsync" in fresh:
        out["fresh_fsync_s"] = stat(fresh["fsync"]["fsync_s"]["runs"])
        out["fresh_no_fsync_s"] = stat(fresh["fsync"]["no_fsync_s"]["runs"])
        out["fresh_fsync_ratio"] = stat(fresh["fsync"]["ratio"]["runs"])

    lifts = _ok(results.get("lifter", {}).get("runs", []))
    out["lifter_release_s"] = stat(r["release_s"] for r in lifts)
    out["lifter_release_after_last_s"] = stat(r["release_after_last_s"] for r in lifts)
    out["lifter_post_s"] = stat(r["post_podgangs_s"] for r in lifts)
    out["lifter_cpu_s"] = stat(r["cpu_s"] for r in lifts)
    out["lifter_patch_ratio"] = stat(r["patches_per_released_pod"] for r in lifts)
    out["lifter_api_floor_s"] = stat(r["api_floor_s"] for r in lifts)
    out["lifter_floor_ratio"] = stat(r["release_over_api_floor"] for r in lifts)
    return {k: v for k, v in out.items() if v is not None}


def targets(summary: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for key, label, target, ok in TARGETS:
        if key in summary:
            rows.append(
                {
                    "key": key,
                    "label": label,
                    "target": target,
                    "median": summary[key]["median"],
                    "met": ok(summary[key]["median"]),
                }
            )
    return rows


# -- formatting ----------------------------------------------------------------------------
def num(value: float, unit: str = "") -> str:
    if value != value or value in (float("inf"), float("-inf")):
        return "n/a"
    mag = abs(value)
    text = (
        f"{value:,.0f}"
        if mag >= 100
        else f"{value:.1f}"
        if mag >= 10
        else f"{value:.2f}"
        if mag >= 0.1
        else f"{value:.3f}"
    )
    return f"{text} {unit}".rstrip()


def cell(s: Stat | None, unit: str = "") -> tuple[str, str]:
    if not s:
        return "n/a", ""
    if len(s["runs"]) == 1:
        return num(s["median"], unit), "(1 run)"
    return num(s["median"], unit), f"{num(s['min'])}–{num(s['max'], unit)}"


def runs(s: Stat | None, unit: str = "") -> str:
    return ", ".join(num(v, unit) for v in s["runs"]) if s else "n/a"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    aligns = ["---"] + [
        "---:" if h in ("median", "min–max", "share", "seconds", "calls", "cumulative", "self") else "---"
        for h in header[1:]
    ]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(aligns) + " |"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return lines


def _rollout_section(ro: dict[str, Any]) -> list[str]:
    """The day-2 rollout benchmark (issue 13): one run, the agent in its own process."""
    L = ["", "## Rollout (issue 13)", ""]
    if "error" in ro or "steps" not in ro:
        return [*L, f"Not measured: {ro.get('error', 'no data')}"]
    L += [
        f"An image bump of {ro['pods']} pods in {ro['gangs']} single-gang PodCliqueSets (`bench/rollout_bench.py`),",
        "rolled by `grove-gitops agent` in its own process on the fake API server with the day-2 simulators",
        "(instant readiness); its figures come from its /metrics and /proc. One run.",
        "",
    ]
    return L + _table(
        ["measure", "measured", "target"],
        [
            ["agent time per step (its passes, API waits included)", num(ro["step_ms"], "ms"), "≤ 50 ms"],
            ["of which deriving state and deciding", num(ro["decide_ms"], "ms"), ""],
            ["agent process CPU per step", num(ro["cpu_ms"], "ms"), ""],
            ["passes longer than 50 ms / 1 s", f"{ro['passes_over_50ms']} / {ro['passes_over_1s']} of {ro['passes']}", ""],
            ["pod writes (DELETE + gate PATCH) per replaced pod", num(ro["pod_writes_per_pod"]), "≤ 2"],
            ["all writes per replaced pod (with progress conditions and Events)", num(ro["writes_per_pod"]), ""],
            [
                "replacement Ready → next step",
                f"median {num(ro['ready_to_next_s_median'], 's')}, p95 {num(ro['ready_to_next_s_p95'], 's')}, "
                f"p99 {num(ro.get('ready_to_next_s_p99', float('nan')), 's')}, max {num(ro['ready_to_next_s_max'], 's')}",
                "p99 ≤ 150 ms, max ≤ 300 ms",
            ],
            ["collector pauses, longest: agent / this benchmark's world",
             f"{num(ro.get('agent_gc_pause_ms_max', float('nan')), 'ms')} / {num(ro.get('world_gc_pause_ms_max', float('nan')), 'ms')}", ""],
            ["whole rollout", num(ro["rollout_s"], "s"), ""],
        ],
    )


def _release_points_section(results: dict[str, Any]) -> list[str]:
    """Issue 35.3: the release with the agent in its own process, at each point of ``--release-points``."""
    points = sorted((int(k.split("_", 1)[1]), v) for k, v in results.items()
                    if k.startswith("release_") and k.split("_", 1)[1].isdigit())
    if not points:
        return []
    L = ["", "## Release near the API floor (issue 35.3)", "",
         "`bench/lifter_bench.py --agent process`: the agent in its own process, 20 pods per gang; last PodGang",
         "created → every gate gone, over the floor of the same JSON patches sent one after the other by one client.",
         ""]
    rows = []
    for pods, r in points:
        if "error" in r:
            rows.append([f"{pods:,}", "failed", r["error"][:200], "", ""])
            continue
        rows.append([f"{pods:,}", num(r["release_after_last_s"], "s"), num(r["api_floor_s"], "s"),
                     num(r["release_after_last_over_floor"]), num(r.get("agent_peak_rss_mib") or float("nan"), "MiB")])
    return L + _table(["pods", "release", "floor", "× floor (goal ≤ 1.5)", "agent peak RSS"], rows)


_SERVER_ROWS = (
    ("release: first sync to every pod ungated", "release_s", "s"),
    ("first deploy: to every pod Running and Ready", "deploy_s", "s"),
    ("rollout: image bump to every pod replaced and Ready", "rollout_s", "s"),
    ("rollout time per step (PodCliqueSets in parallel)", "step_s", "s"),
    ("agent process CPU per replaced pod", "agent_cpu_ms_per_step", "ms"),
    ("agent pass time per replaced pod", "agent_pass_ms_per_step", "ms"),
)


def server_section(fake: dict[str, Any] | None, real: dict[str, Any] | None) -> list[str]:
    """Issue 32: the same release and rollout, measured the same way, on the fake and a real API server."""
    if fake is None and real is None:
        return []
    L = ["", "## The agent on the fake and on a real API server (issue 32)", ""]
    shown = {name: r for name, r in (("fake", fake), ("real", real)) if r is not None}
    for name, r in shown.items():
        if "error" in r:
            L += [f"{name}: not measured: {str(r['error'])[:500]}", ""]
    ok = {name: r for name, r in shown.items() if "error" not in r}
    if not ok:
        return L
    first = next(iter(ok.values()))
    L += [
        f"{first['pods']} pods in {first['gangs']} single-gang PodCliqueSets (`bench/server_bench.py`), synced by the",
        "day-2 GitOps applier (Argo CD mode) while `grove-gitops agent` runs in its own process; every figure is",
        "taken through the API, the same way on both. Fake: tests/fakeserver with the day-2 kubelet. Real:",
        "scripts/control-plane.sh (etcd, kube-apiserver, controller manager, kube-scheduler binding every pod)",
        "with the node simulator. One run each.",
        "",
    ]
    header = ["measure", *ok]
    if len(ok) == 2:
        header.append("real / fake")
    rows = []
    for label, key, unit in _SERVER_ROWS:
        row = [label, *(num(r[key], unit) for r in ok.values())]
        if len(ok) == 2:
            f, r = ok["fake"][key], ok["real"][key]
            row.append(f"{r / f:.1f}×" if f else "—")
        rows.append(row)
    return L + _table(header, rows)


#: Issue 23's target: one /scale write to the last new gang released.
AUTOSCALE_TARGET_S = 5.0


def autoscale_section(au: dict[str, Any]) -> list[str]:
    """The autoscaling benchmark (issue 23): one /scale write, median and worst of the runs."""
    L = ["", "## Autoscaling (issue 23)", ""]
    if "error" in au or not au.get("runs"):
        return [*L, f"Not measured: {au.get('error', 'no data')}"]
    s, low, high = au["summary"], au["low"], au["high"]
    L += [
        f"`bench/autoscale_bench.py`: one `/scale` write takes a scaling group of {au['pods_per_replica']} pods per",
        f"replica (leader 1 + workers 3, KAI backend) from {low} to {high} replicas ({high - low} new gangs) in the",
        "day-2 world (fake API server, GitOps applier re-syncing every second, instant readiness), the agent",
        "in its own process; then one write back to the floor. Its writes are the API server's requests",
        "minus the simulators'; its CPU is its process's (user + system, /proc) over the scale-out.",
        f"Median and worst of {au['repeat']} runs, each on a fresh world.",
        "",
    ]

    def row(label: str, key: str, unit: str = "", target: str = "") -> list[str]:
        return [label, num(s[key]["median"], unit), num(s[key]["worst"], unit), target]

    return L + _table(
        ["measure", "median", "worst", "target"],
        [
            row("write → last new gang released", "release_s", "s", f"≤ {AUTOSCALE_TARGET_S:g} s"),
            row("pod creates per new pod", "pod_creates_per_pod"),
            row("gate patches per new pod", "gate_patches_per_pod"),
            row("all agent writes per new pod (PodGangs, PodGroups, status, Events)", "writes_per_pod"),
            row("agent CPU per new gang", "cpu_ms_per_gang", "ms"),
            row(f"write back to {low} → last pod deleted", "scale_in_s", "s"),
        ],
    )


def midsize_section(mid: dict[str, Any]) -> list[str]:
    """The mid-size render (issue 35.4): whole ``grove-gitops render`` processes beside the floors."""
    L = ["", "## Mid-size render (issue 35.4)", ""]
    s = mid.get("summary") or {}
    if "error" in mid or not s:
        return [*L, f"Not measured: {mid.get('error', 'no data')}"]
    L += [
        f"`bench/midsize_bench.py`: {mid['copies']} copies of one disaggregated workload ({s['objects']:,} objects,",
        f"{s['files']:,} files), each measurement a fresh process, {len(mid['runs'])} run(s) side by side. Render times are",
        "whole `python -m grove_gitops.cli render` processes (start-up included); the floors time their writes only.",
        "CPU: the process and its workers (`wait4`).",
        "",
    ]

    def row(label: str, key: str, unit: str = "", target: str = "") -> list[str]:
        v = s.get(key)
        return [label, num(v["median"], unit), runs(v, unit), target] if v else [label, "n/a", "", target]

    return L + _table(
        ["measure", "median", "runs", "target"],
        [
            row("render (default --jobs)", "default_s", "s"),
            row("render --jobs 1", "jobs1_s", "s"),
            row("render --jobs 2", "jobs2_s", "s"),
            row("grove-gitops --version", "version_s", "s"),
            row("the render path's imports (python -c, interpreter start excluded)", "imports_s", "s"),
            row("render in process, imports off the clock, --jobs 1", "inprocess_jobs1_s", "s"),
            row("CDumper floor (dump + write of the same objects)", "floor_s", "s"),
            row("I/O floor (the same bytes into the same files)", "io_floor_s", "s"),
            row("render / CDumper floor", "floor_ratio", "", "≤ 0.25"),
            row("render CPU / CDumper floor CPU", "floor_cpu_ratio"),
            row("render / I/O floor", "io_floor_ratio", "", "≤ 5"),
            row("--jobs 2 / --jobs 1", "jobs2_over_jobs1", "", "≤ 1"),
            row("default / --jobs 1", "default_over_jobs1", "", "≤ 1"),
        ],
    )


#: Issue 11's target for 1,000 PodCliqueSets on 2,000 nodes.
FEASIBILITY_TARGET_S = 10.0


def _feasibility_section(fe: dict[str, Any]) -> list[str]:
    """``grove-gitops feasibility`` at a few sizes (issue 11): how it scales."""
    L = ["", "## Feasibility (issue 11)", ""]
    if "error" in fe or not fe.get("runs"):
        return [*L, f"Not measured: {fe.get('error', 'no data')}"]
    L += [
        "`bench/feasibility_bench.py`: the generated PodCliqueSets placed on a NodeInventory of 8-GPU nodes in",
        "4 topology levels (zone, block, rack, host; 8 nodes per rack, 25 racks per block), in one process,",
        "at a quarter, half and all of the size. Each cell is CPU time of the process, then wall clock in",
        "brackets (on a shared machine the wall clock includes waiting for a core). Target: ≤",
        f"{FEASIBILITY_TARGET_S:.0f} s for the whole check (CPU) at 1,000 PodCliqueSets on 2,000 nodes. One run per size.",
        "",
    ]
    rows = []
    for run in fe["runs"]:
        met = run["total_cpu_s"] <= FEASIBILITY_TARGET_S

        def both(key: str, run: dict[str, Any] = run) -> str:
            return f"{num(run[key + '_cpu_s'], 's')} ({num(run[key + '_s'], 's')})"

        rows.append(
            [
                f"{run['podcliquesets']} PCS / {run['nodes']} nodes",
                f"{run['gangs']} ({run['fitting_gangs']} fit)",
                str(run["pods"]),
                both("load_validate"),
                both("expand"),
                both("placement"),
                f"{both('total')} {'✅' if met else '❌'}",
                num(run["peak_rss_mib"], "MiB"),
            ]
        )
    return L + _table(
        ["size", "gangs", "pods", "load + validate", "expand", "placement", "total", "peak RSS"], rows
    )


def fresh_section(fresh: dict[str, Any], s: dict[str, Any], n: int) -> list[str]:
    """The fresh-process benchmark (issue 14): whole commands, start-up included."""
    L = ["", "## Fresh processes: controller --once, diff, fsync (issue 14)", ""]
    if "error" in fresh or not fresh:
        return [*L, f"Not measured: {fresh.get('error', 'no data')}"]
    L += [
        "`bench/fresh_bench.py`: every command is a new `python -m grove_gitops.cli` process timed from spawn to exit",
        f"(start-up included); the two commands of a ratio run side by side in each of {fresh['repeat']} repeats, their",
        "order alternating, and the ratio is taken per repeat. `controller --once --jobs 1` keeps its work directory",
        "(clone, render cache) between runs and is warmed by one untimed run; each repeat pushes a new `spec.replicas`",
        "of `w00000`. `diff --repo R main head-k --cache-dir C` compares against a different one-PCS change each",
        "repeat, with C warmed by one untimed `diff main main --cache-dir C` (a CI cache restored from the default",
        "branch); the full render is a cold `render --no-fsync --jobs 1` without cache. The fsync pair is a cold",
        f"`render --jobs 1` with and without `--no-fsync` on {fresh.get('fsync', {}).get('filesystem', '?')}.",
        f"Load average at the end of this benchmark: {fresh.get('loadavg', '?')}.",
        "",
    ]
    rows = [
        [f"`controller --once`, {n}-PCS repo", *cell(s.get("fresh_controller_big_s"), "s"), runs(s.get("fresh_controller_big_s"), "s")],
        ["`controller --once`, 1-PCS repo", *cell(s.get("fresh_controller_small_s"), "s"), runs(s.get("fresh_controller_small_s"), "s")],
        ["ratio (target ≤ 3)", *cell(s.get("fresh_controller_ratio")), runs(s.get("fresh_controller_ratio"))],
        ["`diff --cache-dir`, one PCS changed", *cell(s.get("fresh_diff_s"), "s"), runs(s.get("fresh_diff_s"), "s")],
        ["full `render --no-fsync`, no cache", *cell(s.get("fresh_render_s"), "s"), runs(s.get("fresh_render_s"), "s")],
        ["ratio (target ≤ 0.2)", *cell(s.get("fresh_diff_ratio")), runs(s.get("fresh_diff_ratio"))],
        ["cold `render`, fsync", *cell(s.get("fresh_fsync_s"), "s"), runs(s.get("fresh_fsync_s"), "s")],
        ["cold `render --no-fsync`", *cell(s.get("fresh_no_fsync_s"), "s"), runs(s.get("fresh_no_fsync_s"), "s")],
        ["ratio (target ≤ 1.3)", *cell(s.get("fresh_fsync_ratio")), runs(s.get("fresh_fsync_ratio"))],
    ]
    L += _table(["", "median", "min–max", "runs"], rows)
    ctl = fresh.get("controller") or {}
    if "cold_s" in ctl:
        L += [
            "",
            f"Cold first `--once` (empty work directory): {num(ctl['cold_s']['big'], 's')} for {n} PCS, "
            f"{num(ctl['cold_s']['small'], 's')} for 1; the {n}-PCS render cache holds {num(ctl['cache_mib'])} MiB.",
        ]
    return L


def _unknown_fields_section(uf: dict[str, Any]) -> list[str]:
    """Hostile inputs: thousands of unknown fields (issue 31.1)."""
    L = ["", "## Unknown fields: bounded time, memory and output (issue 31.1)", ""]
    if "error" in uf or "template" not in uf:
        return [*L, f"Not measured: {uf.get('error', 'no data')}"]
    L += [
        "`bench/unknown_fields_bench.py`: `grove-gitops validate` in a fresh process (start-up included) on crafted",
        "trees. Target (issue 31): at most 10 s and 1 GB each at 50,000 keys, at most 101 lines for one document.",
        "",
    ]
    labels = [
        ("template", f"spec.template with {uf['keys']} unknown keys"),
        ("operator_config", f"OperatorConfiguration profile with {uf['keys']} unknown keys"),
        ("many_pod_specs", f"{uf['files']} PodCliqueSets x {uf['pod_keys']} unknown podSpec fields"),
        ("template_1x", f"spec.template with {uf['keys'] // 20} unknown keys"),
        ("template_4x", f"spec.template with {uf['keys'] // 5} unknown keys"),
    ]
    rows = [
        [
            label,
            num(uf[key]["seconds"], "s"),
            num(uf[key].get("cpu_seconds", float("nan")), "s"),
            num(uf[key]["peak_rss_mib"], "MiB"),
            str(uf[key]["lines_largest_file"]),
        ]
        for key, label in labels
        if key in uf
    ]
    L += _table(["input", "seconds", "CPU seconds", "peak RSS", "lines, largest file"], rows)
    L += ["", f"4x the keys: {uf.get('growth_4x')}x the time (4 is linear, 16 quadratic; start-up included)."]
    return L


def _fleet_section(fl: dict[str, Any]) -> list[str]:
    """Incremental rendering per cluster of a fleet (issue 12)."""
    L = ["", "## Fleet: incremental per cluster (issue 12)", ""]
    if "error" in fl or "cold" not in fl:
        return [*L, f"Not measured: {fl.get('error', 'no data')}"]
    L += [
        f"`bench/fleet_bench.py`: {fl['podcliquesets']} PodCliqueSets and two Clusters that both run all of them (a: the",
        "generator's configuration; b: its own OperatorConfiguration), rendered in memory with one long-lived render",
        f"cache as the controller does ({fl['objects']} objects). Each change is rendered again; the counts of",
        "PodCliqueSets expanded again are exact, the seconds are medians.",
        "",
    ]
    names = [
        ("cold", "none (cold cache)"),
        ("unchanged", "none (warm)"),
        ("operator_config_b", "b's OperatorConfiguration"),
        ("one_workload", "one PodCliqueSet's spec.replicas"),
    ]
    rows = []
    for key, label in names:
        entry = fl.get(key) or {}
        expanded = entry.get("expanded") or {}
        seconds = entry.get("seconds", entry.get("median_seconds"))
        rows.append([label, " / ".join(str(expanded.get(c, "?")) for c in ("a", "b")), num(seconds, "s")])
    return L + _table(["change", "expanded again (a / b)", "seconds"], rows)


def markdown(results: dict[str, Any]) -> str:
    p = results["params"]
    m = results["machine"]
    s = results["summary"]
    checks = {t["key"]: t for t in results["targets"]}
    n, r = p["size"], p["repeat"]
    renders = _ok(results.get("render", {}).get("runs", []))
    first = renders[0]["full"] if renders and "full" in renders[0] else {}

    def row(label: str, key: str, unit: str = "") -> list[str]:
        median, spread = cell(s.get(key), unit)
        check = checks.get(key)
        verdict = "" if check is None else f"{check['target']} {'✅' if check['met'] else '❌'}"
        return [label, median, spread, verdict]

    timeouts = [
        (run["kustomize"]["timeout_s"], run["full"]["seconds"])
        for run in renders
        if run.get("kustomize", {}).get("timed_out") and "full" in run
    ]

    def kustomize_row(label: str, key: str, unit: str = "") -> list[str]:
        if key in s or not timeouts:
            return row(label, key, unit)
        limit, render_s = timeouts[0]
        bound = limit if key == "kustomize_s" else limit / render_s
        return [label, f"> {num(bound, unit)}", "timed out", ""]

    L: list[str] = [
        "# Benchmarks",
        "",
        f"Written by `{p['command']}` on {p['date']} (project commit {m['project_commit']}).",
        f"Every figure is the median and min–max over {r} run(s); each run is a fresh process. Ratios are taken",
        "per run between measurements made side by side, then summarised. The machine is shared: load average",
        f"{m['loadavg_start']} at the start, {m.get('loadavg_end', '?')} at the end.",
        "",
        "## Summary",
        "",
    ]
    workload = (
        f"{n} PodCliqueSets → {first.get('objects', '?'):,} objects ({first.get('pods', '?'):,} pods), "
        f"{first.get('files', '?'):,} files, {first.get('bytes', 0) / 1e6:.1f} MB"
        if first
        else f"{n} PodCliqueSets"
    )
    L += [f"Render workload: {workload}.", ""]
    rows = [
        row("full render, `render --jobs 1` (plan_source + build_tree_from_plan + writes)", "render_s", "s"),
        row("objects / s", "objects_per_s"),
        row("MB written / s", "mb_per_s"),
        row("peak RSS of the render process (MiB)", "peak_rss_mib"),
        row("floor: CSafeDumper dump + write of the same objects", "floor_s", "s"),
        row("render / floor", "floor_ratio"),
        row("I/O floor: the same bytes written into the same files", "io_floor_s", "s"),
        row("render / I/O floor", "io_floor_ratio"),
        row("full render with --jobs 2", "render_jobs2_s", "s"),
        row("render --jobs 2 / --jobs 1", "jobs_ratio"),
        row("peak RSS with --jobs 2: the larger of parent and any worker (MiB)", "peak_rss_jobs2_mib"),
        row("serialisation alone: grove-gitops emitter", "serialise_emit_s", "s"),
        row("serialisation alone: PyYAML CDumper", "serialise_cdumper_s", "s"),
        *([row("serialisation alone: orjson (JSON, for scale)", "serialise_orjson_s", "s")] if "serialise_orjson_s" in s else []),
        row("emitter / CDumper", "serialise_emit_ratio"),
        kustomize_row("`kubectl kustomize OUT`", "kustomize_s", "s"),
        kustomize_row("kustomize / render", "kustomize_ratio"),
        row("`kubectl kustomize` of the largest PodCliqueSet shard", "kustomize_shard_s", "s"),
        row(f"controller run_once, one PCS changed, {n}-PCS repo", "incremental_big_s", "s"),
        row("controller run_once, one PCS changed, 1-PCS repo", "incremental_small_s", "s"),
        row(f"incremental ratio {n}-PCS / 1-PCS", "incremental_ratio"),
        row(f"`controller --once`, fresh process, one PCS changed, {n}-PCS / 1-PCS repo", "fresh_controller_ratio"),
        row(f"`diff --cache-dir` of a one-PCS change / full `render`, {n} PCS", "fresh_diff_ratio"),
        row("cold `render` with fsync / `--no-fsync`", "fresh_fsync_ratio"),
        row(
            f"gate-lifter, {p['lifter_pods']} pods / {p['lifter_gangs']} gangs: first PodGang → all lifted",
            "lifter_release_s",
            "s",
        ),
        row("gate-lifter: last PodGang → all lifted", "lifter_release_after_last_s", "s"),
        row("gate-lifter: pod PATCH requests per released pod", "lifter_patch_ratio"),
        row("gate-lifter: API floor (same patches, one bare client)", "lifter_api_floor_s", "s"),
        row("gate-lifter: release / API floor", "lifter_floor_ratio"),
    ]
    L += _table(["", "median", "min–max", "target"], rows)
    notes = results.get("notes") or []
    errors = results.get("errors") or []
    if notes or errors:
        L += [""] + [f"- Note: {x}" for x in notes] + [f"- **Error**: {x}" for x in errors]

    # -- machine
    L += ["", "## Machine", ""]
    L += _table(
        ["", "value"],
        [
            ["CPU", m["cpu"]],
            ["cores", m["cores"]],
            ["memory", m["memory"]],
            ["OS", m["os"]],
            ["Python", m["python"]],
            ["PyYAML", m["pyyaml"]],
            ["git", m["git"]],
            ["kubectl", m["kubectl"]],
            ["packages", ", ".join(f"{k} {v}" for k, v in m["packages"].items())],
        ],
    )

    # -- render details
    L += ["", "## Render", ""]
    L += [
        f"Source: `bench.generate` with N={n} (one file per PodCliqueSet; shapes, schedulers and topologies rotate",
        "with the index). Per run, in separate fresh processes: the full render into a new directory, then the floor",
        "(every `.yaml` file of that output loaded untimed with CSafeLoader, then `yaml.dump(obj, Dumper=yaml.CSafeDumper)`",
        "written to the same relative path of a fresh directory, timed; README.md and render.meta written back as bytes),",
        "then the I/O floor (the rendered files read untimed, the same bytes written into the same files of a fresh",
        "directory, timed), the same render with `--jobs 2`, and (first run only) serialisation alone of the loaded",
        "objects: our emitter, `yaml.dump(obj, Dumper=yaml.CSafeDumper)`, and orjson when it is installed,",
        "then `kubectl kustomize OUT > /dev/null`. Peak RSS is `ru_maxrss` of the render process itself",
        f"(after imports, before rendering: {num(first.get('rss_after_imports_mib', float('nan')))} MiB).",
        "",
    ]
    L += _table(
        ["stage", "median", "min–max", "runs"],
        [
            ["plan_source (load, validate)", *cell(s.get("render_source_s"), "s"), runs(s.get("render_source_s"))],
            ["build_tree_from_plan (expand, backends, serialise, write each shard)", *cell(s.get("build_tree_s"), "s"), runs(s.get("build_tree_s"))],
            ["write the rest + atomic swap", *cell(s.get("write_tree_s"), "s"), runs(s.get("write_tree_s"))],
            ["total", *cell(s.get("render_s"), "s"), runs(s.get("render_s"))],
            ["floor", *cell(s.get("floor_s"), "s"), runs(s.get("floor_s"))],
            ["render / floor", *cell(s.get("floor_ratio")), runs(s.get("floor_ratio"))],
            ["I/O floor", *cell(s.get("io_floor_s"), "s"), runs(s.get("io_floor_s"))],
            ["render / I/O floor", *cell(s.get("io_floor_ratio")), runs(s.get("io_floor_ratio"))],
            ["render --jobs 2", *cell(s.get("render_jobs2_s"), "s"), runs(s.get("render_jobs2_s"))],
            ["--jobs 2 / --jobs 1", *cell(s.get("jobs_ratio")), runs(s.get("jobs_ratio"))],
        ],
    )
    for i, run in enumerate(results.get("render", {}).get("runs", []), 1):
        kz = run.get("kustomize", {})
        if kz.get("timed_out"):
            bound = f" (kustomize / render > {num(kz['timeout_s'] / run['full']['seconds'])})" if "full" in run else ""
            L += ["", f"Run {i}: `kubectl kustomize OUT` did not finish within {num(kz['timeout_s'])} s{bound}."]
        elif "skipped" in kz:
            L += ["", f"Run {i}: kustomize skipped: {kz['skipped']}."]
        elif "error" in kz:
            L += ["", f"Run {i}: `kubectl kustomize` failed: {kz['error'][:300]}"]

    # -- incremental
    inc = results.get("incremental") or {}
    L += ["", "## Incremental controller", ""]
    if "change_s" in inc:
        L += [
            "Two git setups under a temporary directory (bare remote + developer clone, source under `src/`, output",
            f"branch `rendered`): {inc['podcliquesets']['big']} PodCliqueSets vs the first one alone. One long-lived worker",
            "process per setup keeps ONE `Controller`; a warm-up `run_once()` renders everything, then each repeat sets",
            "`spec.replicas` of PodCliqueSet `w00000` (in both setups) to 2, 3, 4, …, pushes, and times `run_once()`",
            "(fetch + render + commit + push). The two workers take turns, repeat by repeat.",
            "",
        ]
        L += _table(
            ["", "median", "min–max", "runs"],
            [
                [f"{n}-PCS repo", *cell(s.get("incremental_big_s"), "s"), runs(s.get("incremental_big_s"))],
                ["1-PCS repo", *cell(s.get("incremental_small_s"), "s"), runs(s.get("incremental_small_s"))],
                ["ratio", *cell(s.get("incremental_ratio")), runs(s.get("incremental_ratio"))],
            ],
        )
        L += [
            "",
            f"Warm-up (full) iteration: {num(inc['warmup_s']['big'], 's')} ({inc['output_files']['big']:,} output files) for the "
            f"{n}-PCS repo, {num(inc['warmup_s']['small'], 's')} ({inc['output_files']['small']:,} files) for the 1-PCS repo. "
            f"Peak RSS of the controller processes: {num(inc['worker_peak_rss_mib']['big'])} MiB and "
            f"{num(inc['worker_peak_rss_mib']['small'])} MiB.",
        ]
    else:
        L += [f"Not measured: {inc.get('error', 'no data')}"]

    # -- lifter
    lifts = results.get("lifter", {}).get("runs", [])
    ok = _ok(lifts)
    L += ["", "## Gate-lifter", ""]
    if ok:
        one = ok[0]
        L += [
            f"{one['gangs']} single-gang PodCliqueSets of `bench.generate` (frontend + engine shape; schedulers "
            + ", ".join(f"{k} ×{v}" for k, v in sorted(one["schedulers"].items()))
            + f"), engine replicas adjusted to exactly {one['pods']} pods; rendered, then every object except the",
            f"PodGangs POSTed to a fresh `FakeApiServer` (real HTTP) with a `GateLifter` running ({num(one['apply_s'], 's')}",
            "untimed). Once the lifter's cache holds every pod, the PodGangs are POSTed back to back and the clock runs",
            "until every gate is gone. Server, lifter and client share one Python process (and its GIL). The API floor:",
            "before the lifter starts, copies of the pods that no lifter selects get the same JSON patch (test + remove",
            "of the gate) from one bare client, one request after the other, on the same server.",
            "",
        ]
        L += _table(
            ["", "median", "min–max", "runs"],
            [
                [
                    "first PodGang → all gates lifted",
                    *cell(s.get("lifter_release_s"), "s"),
                    runs(s.get("lifter_release_s")),
                ],
                [
                    "last PodGang → all gates lifted",
                    *cell(s.get("lifter_release_after_last_s"), "s"),
                    runs(s.get("lifter_release_after_last_s")),
                ],
                ["POSTing the PodGangs", *cell(s.get("lifter_post_s"), "s"), runs(s.get("lifter_post_s"))],
                [
                    "API floor: the same patches, one bare client, one by one",
                    *cell(s.get("lifter_api_floor_s"), "s"),
                    runs(s.get("lifter_api_floor_s")),
                ],
                ["release / API floor", *cell(s.get("lifter_floor_ratio")), runs(s.get("lifter_floor_ratio"))],
                ["process CPU time in that window", *cell(s.get("lifter_cpu_s"), "s"), runs(s.get("lifter_cpu_s"))],
                [
                    "pod PATCH requests / released pods",
                    *cell(s.get("lifter_patch_ratio")),
                    runs(s.get("lifter_patch_ratio")),
                ],
            ],
        )
    for i, run in enumerate(lifts, 1):
        if "error" in run:
            L += ["", f"Run {i} failed: {run['error'][:500]}"]

    L += midsize_section(results.get("midsize") or {})
    L += fresh_section(results.get("fresh") or {}, s, n)
    L += _release_points_section(results)
    L += _rollout_section(results.get("rollout") or {})
    L += server_section(results.get("server_fake"), results.get("server_real"))
    L += autoscale_section(results.get("autoscale") or {})
    L += _feasibility_section(results.get("feasibility") or {})
    L += _fleet_section(results.get("fleet") or {})
    L += _unknown_fields_section(results.get("unknown_fields") or {})

    # -- profile
    prof = results.get("profile") or {}
    L += ["", "## What the remaining cost is made of", ""]
    if "groups_s" in prof:
        shares = prof["groups_share"]
        unprofiled = s.get("render_s", {}).get("median")
        overhead = f", {prof['profiled_seconds'] / unprofiled:.1f}× the unprofiled median" if unprofiled else ""
        L += [
            f"One full render of the same N={n} source under cProfile ({num(prof['profiled_seconds'], 's')}{overhead}).",
            "Self time is charged to a stage by where the function lives: `grove_gitops/load`, `yamlfiles/` → load;",
            "`validation/`, `api/`, `fields/`, `expand/hpacheck.py`, pydantic → validate; `expand/` → expand; `backends/`, `backendapi.py` → backend;",
            "`output/` except the writer, and PyYAML's dumper → serialise; `output/writer.py` → write; the rest of",
            "`grove_gitops` (e.g. `render.py`'s orchestration) → other. Time in the stdlib, builtins and PyYAML's C",
            "calls (copy, file I/O, hashing, `yaml.dump`) is charged to the project function that called it, split",
            "over callers in proportion to call-edge time (gprof-style, approximate).",
            "",
        ]
        from bench.render_bench import GROUPS

        L += _table(
            ["stage", "share", "seconds"],
            [[g, f"{shares[g] * 100:.1f} %", num(prof["groups_s"][g])] for g in GROUPS if g in shares],
        )
        L += [
            "",
            "Top cumulative functions (project code and PyYAML / pydantic entry points; seconds under the profiler):",
            "",
        ]
        L += _table(
            ["function", "stage", "calls", "cumulative", "self"],
            [
                [
                    f"`{row['function']}`",
                    row["group"],
                    f"{row['calls']:,}",
                    num(row["cumulative_s"]),
                    num(row["self_s"]),
                ]
                for row in prof["top_cumulative"]
            ],
        )
        L += [
            "",
            "Unprofiled stage split (medians above): plan_source (load, validate) "
            f"{cell(s.get('render_source_s'), 's')[0]}, build_tree_from_plan (expand, backends, serialise, shard writes) {cell(s.get('build_tree_s'), 's')[0]}, "
            f"the remaining writes and the swap {cell(s.get('write_tree_s'), 's')[0]}.",
        ]
    else:
        L += [f"Not measured: {prof.get('error', 'no data')}"]

    # -- reproduce
    L += [
        "",
        "## How to reproduce",
        "",
        "```bash",
        "bash scripts/setup.sh            # .venv with the project and its dev tools",
        "make bench                       # = .venv/bin/python -m bench.run (N=1000, R=3) → BENCHMARKS.md",
        f"{p['command']}",
        "make bench-smoke                 # N=3, R=1, 40 pods / 4 gangs: checks the harness end to end",
        "```",
        "",
        "Sub-benchmarks can be run alone (each prints one JSON line): `python -m bench.render_bench full|floor|profile`,",
        "`python -m bench.incremental_bench --source SRC`, `python -m bench.lifter_bench --gangs G --pods P`;",
        "`python -m bench.generate DIR N` writes the source. See bench/README.md.",
        "",
    ]
    return "\n".join(L)
