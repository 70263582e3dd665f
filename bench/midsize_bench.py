"""Render throughput on a mid-size tree (issue 35.4): whole ``grove-gitops render`` processes.

    python -m bench.midsize_bench [--copies 150] [--repeat 3] [--workdir /dev/shm]

The N=1000 render benchmark times the work with the imports off the clock; a tree of a few
thousand objects is where start-up (imports, the worker pool) is a visible share, so here the
command is timed the way a CI job runs it: spawn to exit of ``python -m grove_gitops.cli
render SRC --out OUT``. Source: ``bench.generate.generate_disaggregated`` (150 copies of one
disaggregated workload, 53 objects each, 7,953 objects with the cluster's own). Per repeat, in
fresh processes side by side (the order of the three renders rotates run by run):

* ``render`` with the default ``--jobs`` (the CPUs), ``--jobs 1`` and ``--jobs 2``: wall
  seconds and the CPU seconds of the process and its workers (``wait4``);
* ``grove-gitops --version``: the start-up alone;
* the in-process render (``render_bench full``, imports off the clock) at ``--jobs 1``;
* the CDumper floor (``render_bench floor``: PyYAML's C dumper writing the same objects into the
  same files) and the I/O floor (``render_bench io``: the same bytes into the same files).

With ``--before DIR`` (another checkout of the project, e.g. ``git worktree add DIR main``) its
default render and ``--version`` run in the same repeats: before/after ratios of one run.

Ratios per run: render / CDumper floor (goal <= 0.25), render / I/O floor (goal <= 5),
``--jobs 2`` / ``--jobs 1`` and default / ``--jobs 1`` (goal: never above 1, within noise).
One JSON line on stdout; progress on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parents[1]

#: The renders of one repeat: label -> extra arguments of ``grove-gitops render``.
RENDERS: dict[str, list[str]] = {"default": [], "jobs1": ["--jobs", "1"], "jobs2": ["--jobs", "2"]}


def log(message: str) -> None:
    print(f"[midsize {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def timed_cli(*args: str, project: Path = PROJECT) -> dict[str, float]:
    """Wall and CPU seconds (the process and every worker it waited for) of one
    ``python -m grove_gitops.cli ARGS`` from spawn to exit (which must be 0). ``project``: the
    checkout whose ``grove_gitops`` runs (``-m`` puts the working directory first on the path),
    with its own scheduler backends (its ``backends/`` ahead of the installed ones)."""
    env = dict(os.environ)
    if project != PROJECT:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(project / "backends"), env.get("PYTHONPATH")]))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "grove_gitops.cli", *args], cwd=project, capture_output=True, text=True, check=False,
        env=env,
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"grove-gitops {' '.join(args[:2])} exited {proc.returncode}: {proc.stderr.strip()[-1500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"seconds": wall, "cpu_s": cpu}


#: What ``grove-gitops render`` imports before it reads a file, timed in a fresh process.
IMPORTS = (
    "import time; t = time.perf_counter(); import grove_gitops.cli.main, grove_gitops.cli.render, "
    "grove_gitops.output.writer, grove_gitops.output.layout; print(time.perf_counter() - t)"
)


def import_seconds(project: Path = PROJECT) -> float:
    """The render path's own import time (the interpreter's start-up excluded)."""
    proc = subprocess.run([sys.executable, "-c", IMPORTS], cwd=project, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"imports exited {proc.returncode}: {proc.stderr.strip()[-1500:]}")
    return float(proc.stdout.strip().splitlines()[-1])


def bench_child(*args: str) -> dict[str, Any]:
    """One ``python -m bench.render_bench ARGS`` in a fresh interpreter: its JSON line."""
    proc = subprocess.run(
        [sys.executable, "-m", "bench.render_bench", *args], cwd=PROJECT, capture_output=True, text=True, check=False
    )
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"render_bench {args[0]} exited {proc.returncode}: {proc.stderr.strip()[-1500:]}")
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def _summary(values: list[float]) -> dict[str, Any]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "runs": values}


def one_run(source: Path, tmp: Path, r: int, before: Path | None = None) -> dict[str, Any]:
    """Every measurement of repeat ``r``, side by side; with ``before`` (another checkout, e.g.
    main's) also its default render and start-up, for before/after ratios in the same run."""
    entry: dict[str, Any] = {"version": timed_cli("--version"), "imports_s": import_seconds()}
    if before is not None:
        entry["before_imports_s"] = import_seconds(before)
    labels = [*RENDERS, *(["before"] if before is not None else [])]
    order = labels[r % len(labels) :] + labels[: r % len(labels)]
    kept = tmp / "out-default"
    for label in order:
        out = tmp / f"out-{label}"
        shutil.rmtree(out, ignore_errors=True)
        if label == "before":
            assert before is not None
            entry[label] = timed_cli("render", str(source), "--out", str(out), "--quiet", project=before)
        else:
            entry[label] = timed_cli("render", str(source), "--out", str(out), "--quiet", *RENDERS[label])
        if label != "default":
            shutil.rmtree(out, ignore_errors=True)
    if before is not None:
        entry["before_version"] = timed_cli("--version", project=before)
    inproc = tmp / "out-inprocess"
    shutil.rmtree(inproc, ignore_errors=True)
    entry["inprocess_jobs1"] = bench_child("full", "--source", str(source), "--out", str(inproc))
    shutil.rmtree(inproc, ignore_errors=True)
    floor = tmp / "floor"
    shutil.rmtree(floor, ignore_errors=True)
    entry["floor"] = bench_child("floor", "--rendered", str(kept), "--out", str(floor))
    shutil.rmtree(floor, ignore_errors=True)
    entry["io_floor"] = bench_child("io", "--rendered", str(kept), "--out", str(floor))
    shutil.rmtree(floor, ignore_errors=True)
    entry["objects"] = entry["inprocess_jobs1"]["objects"]
    entry["files"] = entry["inprocess_jobs1"]["files"]
    shutil.rmtree(kept, ignore_errors=True)
    return entry


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians and per-run ratios of the runs that completed."""
    ok = [r for r in runs if "error" not in r]
    if not ok:
        return {}

    def col(fn: Any) -> dict[str, Any]:
        return _summary([float(fn(r)) for r in ok])

    out: dict[str, Any] = {
        f"{label}_s": col(lambda r, label=label: r[label]["seconds"]) for label in (*RENDERS, "version")
    }
    out.update({f"{label}_cpu_s": col(lambda r, label=label: r[label]["cpu_s"]) for label in RENDERS})
    out["inprocess_jobs1_s"] = col(lambda r: r["inprocess_jobs1"]["seconds"])
    out["imports_s"] = col(lambda r: r["imports_s"])
    out["floor_s"] = col(lambda r: r["floor"]["seconds"])
    out["io_floor_s"] = col(lambda r: r["io_floor"]["seconds"])
    out["floor_cpu_s"] = col(lambda r: r["floor"]["cpu_s"])
    out["floor_ratio"] = col(lambda r: r["default"]["seconds"] / r["floor"]["seconds"])
    # CPU seconds of the whole render (start-up and workers included) / the CDumper floor's:
    # what a loaded machine cannot blur (wall time there depends on who else runs).
    out["floor_cpu_ratio"] = col(lambda r: r["default"]["cpu_s"] / r["floor"]["cpu_s"])
    out["io_floor_ratio"] = col(lambda r: r["default"]["seconds"] / r["io_floor"]["seconds"])
    out["jobs2_over_jobs1"] = col(lambda r: r["jobs2"]["seconds"] / r["jobs1"]["seconds"])
    out["default_over_jobs1"] = col(lambda r: r["default"]["seconds"] / r["jobs1"]["seconds"])
    if all("before" in r for r in ok):
        out["before_s"] = col(lambda r: r["before"]["seconds"])
        out["before_cpu_s"] = col(lambda r: r["before"]["cpu_s"])
        out["before_version_s"] = col(lambda r: r["before_version"]["seconds"])
        out["before_imports_s"] = col(lambda r: r["before_imports_s"])
        out["before_floor_ratio"] = col(lambda r: r["before"]["seconds"] / r["floor"]["seconds"])
        out["before_io_floor_ratio"] = col(lambda r: r["before"]["seconds"] / r["io_floor"]["seconds"])
        out["after_over_before"] = col(lambda r: r["default"]["seconds"] / r["before"]["seconds"])
        out["after_over_before_cpu"] = col(lambda r: r["default"]["cpu_s"] / r["before"]["cpu_s"])
    out["objects"] = ok[0]["objects"]
    out["files"] = ok[0]["files"]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.midsize_bench", description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=150, help="copies of the disaggregated workload")
    parser.add_argument("--repeat", type=int, default=3)
    default_workdir = Path("/dev/shm") if Path("/dev/shm").is_dir() else None
    parser.add_argument("--before", type=Path, help="another checkout (e.g. main's) rendered side by side")
    parser.add_argument("--workdir", type=Path, default=default_workdir, help="where the trees go (default tmpfs)")
    args = parser.parse_args(argv)
    if not 1 <= args.copies <= 100_000 or not 1 <= args.repeat <= 100:
        parser.error("--copies must be 1..100000 and --repeat 1..100")
    from bench.generate import generate_disaggregated

    tmp = Path(tempfile.mkdtemp(prefix="grove-midsize-", dir=args.workdir))
    runs: list[dict[str, Any]] = []
    try:
        source = generate_disaggregated(tmp / "source", args.copies)
        for r in range(args.repeat):
            try:
                entry = one_run(source, tmp, r, args.before)
            except RuntimeError as exc:
                entry = {"error": str(exc)}
                log(f"run {r + 1} FAILED: {exc}")
            else:
                log(
                    f"run {r + 1}/{args.repeat}: default {entry['default']['seconds']:.2f} s, --jobs 1 "
                    f"{entry['jobs1']['seconds']:.2f} s, --jobs 2 {entry['jobs2']['seconds']:.2f} s, CDumper "
                    f"{entry['floor']['seconds']:.2f} s, I/O {entry['io_floor']['seconds']:.2f} s, --version "
                    f"{entry['version']['seconds']:.2f} s"
                )
            runs.append(entry)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    result = {
        "copies": args.copies,
        "cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "loadavg": list(os.getloadavg()),
        "runs": runs,
        "summary": summarise(runs),
    }
    print(json.dumps(result, sort_keys=True), flush=True)
    return 0 if runs and all("error" not in r for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
