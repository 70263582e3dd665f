"""Run every benchmark and write BENCHMARKS.md.

    python -m bench.run [--size N] [--repeat R] [--out BENCHMARKS.md] [--json FILE]

Generates N PodCliqueSets once, then runs each measurement in a fresh subprocess (so memory
and caches are isolated) that prints one JSON line: per repeat the full render, its floor and
``kubectl kustomize``; the incremental controller benchmark (its own worker processes); the fresh-process
benchmark (``controller --once``, ``diff`` with a cache, render with and without fsync, at
least 5 interleaved repeats); R
gate-lifter runs, each on a fresh fake API server; one cProfile of a full render. A failing
sub-benchmark is reported in the output and makes the exit code 1; the others still run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.metadata
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import report
from bench.render_bench import kustomize, largest_shard

PROJECT = Path(__file__).resolve().parents[1]
PACKAGES = (
    "grove-gitops",
    "PyYAML",
    "pydantic",
    "pydantic-core",
    "GitPython",
    "kubernetes",
    "urllib3",
    "click",
    "jsonschema",
    "kubernetes-validate",
)


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


class ChildError(RuntimeError):
    pass


def child(module: str, *args: str, tmpdir: Path, timeout: float | None = None) -> dict[str, Any]:
    """Run ``python -m module args`` in a fresh interpreter and parse its last stdout line as JSON.

    ``TMPDIR`` points into the run's own temporary directory, so whatever the child leaves
    behind (git setups, controller exports) goes away with it.
    """
    cmd = [sys.executable, "-m", module, *args]
    env = {**os.environ, "TMPDIR": str(tmpdir)}
    try:
        proc = subprocess.run(cmd, cwd=PROJECT, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        raise ChildError(f"{shlex.join(cmd[1:])}: no result within {timeout:.0f} s") from exc
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    if proc.returncode != 0 or not lines:
        tail = "\n".join(proc.stderr.strip().splitlines()[-15:])
        raise ChildError(f"{shlex.join(cmd[1:])} exited {proc.returncode}:\n{tail}")
    result: dict[str, Any] = json.loads(lines[-1])
    return result


# -- machine ------------------------------------------------------------------------------
def _run(*cmd: str) -> str:
    try:
        env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0"}
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False, env=env)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return proc.stdout.strip() if proc.returncode == 0 else ""


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory() -> str:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    except OSError:
        pass
    return "unknown"


def _loadavg() -> str:
    try:
        return " / ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def machine() -> dict[str, Any]:
    import yaml

    libyaml = "without LibYAML"
    if getattr(yaml, "__with_libyaml__", False):
        from yaml import _yaml  # type: ignore[attr-defined]

        libyaml = f"with LibYAML {_yaml.get_version_string()}"
    packages = {}
    for name in PACKAGES:
        try:
            packages[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            packages[name] = "not installed"
    kubectl = _run("kubectl", "version", "--client").splitlines()
    commit = _run("git", "-C", str(PROJECT), "rev-parse", "--short", "HEAD") or "unknown"
    dirty = _run("git", "-C", str(PROJECT), "status", "--porcelain", "--untracked-files=no")
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count() or 0
    return {
        "cpu": _cpu_model(),
        "cores": f"{os.cpu_count()} logical ({usable} usable by this process)",
        "memory": _memory(),
        "os": platform.platform(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "pyyaml": f"{yaml.__version__} {libyaml}",
        "git": _run("git", "--version") or "not found",
        "kubectl": ", ".join(kubectl[:2]) if kubectl else "not found",
        "packages": packages,
        "project_commit": f"{commit}{' + uncommitted changes' if dirty else ''}",
        "loadavg_start": _loadavg(),
    }


# -- the run ------------------------------------------------------------------------------
def run(args: argparse.Namespace, command: str) -> dict[str, Any]:
    from bench.generate import generate

    results: dict[str, Any] = {
        "params": {
            "size": args.size,
            "repeat": args.repeat,
            "lifter_gangs": args.lifter_gangs,
            "lifter_pods": args.lifter_pods,
            "feasibility_nodes": args.feasibility_nodes,
            "kustomize_timeout_s": args.kustomize_timeout,
            "command": command,
            "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        },
        "machine": machine(),
        "render": {"runs": []},
        "lifter": {"runs": []},
        "notes": [],
        "errors": [],
    }
    errors: list[str] = results["errors"]
    notes: list[str] = results["notes"]
    tmp = Path(tempfile.mkdtemp(prefix="grove-bench-", dir=args.workdir))
    (tmp / "scratch").mkdir()

    def sub(module: str, *child_args: str) -> dict[str, Any]:
        return child(module, *child_args, tmpdir=tmp / "scratch")

    def stage(name: str, module: str, *child_args: str) -> dict[str, Any] | None:
        """One sub-benchmark into ``results[name]``; a failure is recorded there and in the
        errors, and the run goes on with the next one."""
        try:
            results[name] = sub(module, *child_args)
        except ChildError as exc:
            results[name] = {"error": str(exc)}
            errors.append(f"{name}: {exc}")
            log(f"{name} FAILED: {exc}")
            return None
        return results[name]

    try:
        log(f"generating {args.size} PodCliqueSets in {tmp}")
        source = generate(tmp / "source", args.size)

        kustomize_gave_up = False
        for r in range(1, args.repeat + 1):
            out, floor_out = tmp / f"out-{r}", tmp / f"floor-{r}"
            entry: dict[str, Any] = {}
            results["render"]["runs"].append(entry)
            try:
                entry["full"] = sub("bench.render_bench", "full", "--source", str(source), "--out", str(out))
                log(
                    f"render {r}/{args.repeat}: {entry['full']['seconds']:.2f} s, peak RSS {entry['full']['peak_rss_mib']:.0f} MiB"
                )
                entry["floor"] = sub("bench.render_bench", "floor", "--rendered", str(out), "--out", str(floor_out))
                log(f"floor  {r}/{args.repeat}: {entry['floor']['seconds']:.2f} s")
                shutil.rmtree(floor_out, ignore_errors=True)
                entry["io_floor"] = sub("bench.render_bench", "io", "--rendered", str(out), "--out", str(floor_out))
                log(f"I/O floor {r}/{args.repeat}: {entry['io_floor']['seconds']:.2f} s")
                shutil.rmtree(floor_out, ignore_errors=True)
                entry["full_jobs2"] = sub(
                    "bench.render_bench", "full", "--source", str(source), "--out", str(floor_out), "--jobs", "2"
                )
                log(f"render --jobs 2 {r}/{args.repeat}: {entry['full_jobs2']['seconds']:.2f} s")
                if r == 1:  # serialisation alone: once, CDumper alone takes as long as a render did
                    entry["serialise"] = sub(
                        "bench.render_bench", "serialise", "--rendered", str(out), "--out", str(floor_out)
                    )
                    log(f"serialise: {entry['serialise']}")
            except ChildError as exc:
                entry["error"] = str(exc)
                errors.append(f"render run {r}: {exc}")
                log(f"render {r}/{args.repeat} FAILED: {exc}")
                continue
            finally:
                shutil.rmtree(floor_out, ignore_errors=True)
            if args.skip_kustomize:
                entry["kustomize"] = {"skipped": "--skip-kustomize"}
            elif kustomize_gave_up:
                entry["kustomize"] = {"skipped": "timed out in an earlier run"}
            else:
                entry["kustomize"] = kustomize(out, args.kustomize_timeout)
                kustomize_gave_up = bool(entry["kustomize"].get("timed_out"))
                log(f"kustomize {r}/{args.repeat}: {entry['kustomize']}")
            shard = largest_shard(out)
            if shard is not None and not args.skip_kustomize:
                entry["kustomize_shard"] = {
                    **kustomize(shard, args.kustomize_timeout),
                    "shard": shard.relative_to(out).as_posix(),
                }
            shutil.rmtree(out, ignore_errors=True)
        kz = [e.get("kustomize", {}) for e in results["render"]["runs"]]
        if any("skipped" in k and k["skipped"].startswith("kubectl") for k in kz):
            notes.append("kubectl is not installed: the `kubectl kustomize` figures were skipped.")
        if any(k.get("timed_out") for k in kz):
            notes.append(
                f"`kubectl kustomize OUT` did not finish within {args.kustomize_timeout:.0f} s "
                "(it is not retried in later repeats; raise --kustomize-timeout to wait longer)."
            )

        log("mid-size render: whole render processes vs the floors (issue 35.4)")
        copies = "150" if args.size >= 100 else "3"  # the size; the smoke run checks the harness only
        mid = stage("midsize", "bench.midsize_bench", "--copies", copies, "--repeat", str(args.repeat), "--workdir", str(tmp))
        if mid is not None and mid.get("summary"):
            top = mid["summary"]
            log(f"mid-size: render {top['default_s']['median']:.2f} s, / CDumper {top['floor_ratio']['median']:.2f}, "
                f"/ I/O floor {top['io_floor_ratio']['median']:.2f}, --jobs 2 / --jobs 1 {top['jobs2_over_jobs1']['median']:.2f}")

        log("incremental controller benchmark")
        inc = stage("incremental", "bench.incremental_bench", "--source", str(source), "--repeat", str(args.repeat))
        if inc is not None:
            log(f"incremental: {inc['change_s']['big']['median']:.2f} s vs {inc['change_s']['small']['median']:.2f} s")

        log("fresh-process benchmark (controller --once, diff, fsync)")
        fresh_args = ["--source", str(source), "--repeat", str(max(args.repeat, args.fresh_repeat)), "--workdir", str(tmp)]
        fr = stage("fresh", "bench.fresh_bench", *fresh_args)
        if fr is not None:
            log(
                f"fresh: controller {fr['controller']['ratio']['median']:.2f}x, diff {fr['diff']['ratio']['median']:.2f}x, "
                f"fsync {fr['fsync']['ratio']['median']:.2f}x"
            )

        for r in range(1, args.repeat + 1):
            try:
                lift = sub("bench.lifter_bench", "--gangs", str(args.lifter_gangs), "--pods", str(args.lifter_pods))
                log(f"lifter {r}/{args.repeat}: {lift['release_s']:.2f} s, {lift['pod_patches']} patches")
            except ChildError as exc:
                lift = {"error": str(exc)}
                errors.append(f"lifter run {r}: {exc}")
                log(f"lifter {r}/{args.repeat} FAILED: {exc}")
            results["lifter"]["runs"].append(lift)

        # Issue 35.3: the agent in its own process, last PodGang -> all released over the floor
        # of the same bare PATCHes, at each size (20 pods per gang), with its peak RSS.
        for pods in (int(p) for p in args.release_points.split(",") if p.strip()):
            rel = stage(f"release_{pods}", "bench.lifter_bench", "--agent", "process", "--pods", str(pods),
                        "--gangs", str(max(1, pods // 20)), "--timeout", "600")
            if rel is not None:
                log(f"release {pods} pods: {rel['release_after_last_s']:.2f} s after the last PodGang, "
                    f"{rel['release_after_last_over_floor']:.2f}x the floor, agent peak RSS {rel['agent_peak_rss_mib']} MiB")

        ro = stage("rollout", "bench.rollout_bench", "--gangs", str(args.rollout_gangs), "--pods", str(args.rollout_pods))
        if ro is not None:
            log(f"rollout: {ro['cpu_ms']} ms CPU/step, {ro['step_ms']} ms pass/step, {ro['pod_writes_per_pod']} pod writes/pod, "
                f"ready->next median {ro['ready_to_next_s_median']} s")

        for server in ("fake", "real") if args.server == "both" else (() if args.server == "none" else (args.server,)):
            log(f"release and rollout on the {server} API server")
            sv = stage(f"server_{server}", "bench.server_bench", "--server", server, "--gangs", str(args.server_gangs),
                       "--pods", str(args.server_pods))
            if sv is not None:
                log(f"{server}: release {sv['release_s']} s, rollout {sv['rollout_s']} s ({sv['step_s']} s/step)")

        log("autoscaling benchmark (one /scale write)")
        au = stage("autoscale", "bench.autoscale_bench", "--low", str(args.autoscale_low), "--high",
                   str(args.autoscale_high), "--repeat", str(args.repeat))
        if au is not None:
            top = au["summary"]
            log(f"autoscale: last new gang released {top['release_s']['median']} s after the write (worst "
                f"{top['release_s']['worst']} s), {top['writes_per_pod']['median']} writes/new pod, "
                f"{top['cpu_ms_per_gang']['median']} ms CPU/new gang")

        log("feasibility benchmark")
        fe = stage("feasibility", "bench.feasibility_bench", "--size", str(args.size), "--nodes", str(args.feasibility_nodes))
        if fe is not None:
            top = fe["runs"][-1]
            log(f"feasibility: {top['podcliquesets']} PCS on {top['nodes']} nodes in {top['total_s']:.2f} s")

        log("fleet benchmark (incremental per cluster)")
        fleet_size = args.fleet_size or max(1, args.size * 3 // 10)
        fl = stage("fleet", "bench.fleet_bench", "--size", str(fleet_size), "--repeat", str(args.repeat))
        if fl is not None:
            log(f"fleet: one cluster's OperatorConfiguration re-expanded {fl['operator_config_b']['expanded']}")

        log("unknown-fields benchmark (hostile inputs, issue 31.1)")
        big = args.size >= 100  # the sizes; the smoke run checks the harness only
        uf = stage("unknown_fields", "bench.unknown_fields_bench", "--keys", "50000" if big else "2000",
                   "--files", "300" if big else "10", "--pod-keys", "200")
        if uf is not None:
            log(f"unknown fields: template {uf['template']['seconds']} s, operator config "
                f"{uf['operator_config']['seconds']} s, {uf['files']} files {uf['many_pod_specs']['seconds']} s")

        log("profiling one render")
        stage("profile", "bench.render_bench", "profile", "--source", str(source), "--out", str(tmp / "profile-out"))
    finally:
        if args.keep:
            log(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    results["machine"]["loadavg_end"] = _loadavg()
    results["summary"] = report.summarise(results)
    results["targets"] = report.targets(results["summary"])
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1000, help="PodCliqueSets in the render / incremental source")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each measurement")
    parser.add_argument("--out", type=Path, default=PROJECT / "BENCHMARKS.md", help="Markdown report to write")
    parser.add_argument("--json", type=Path, help="also write the raw results as JSON here")
    parser.add_argument("--lifter-gangs", type=int, default=50)
    parser.add_argument("--lifter-pods", type=int, default=1000)
    parser.add_argument("--release-points", default="1000,10000",
                        help="pod counts of the release benchmark with the agent in its own process (issue 35.3; '' skips)")
    parser.add_argument("--rollout-gangs", type=int, default=50)
    parser.add_argument("--rollout-pods", type=int, default=1000)
    parser.add_argument("--server", choices=("fake", "real", "both", "none"), default="none",
                        help="the agent's release and rollout on the fake API server, on a real control plane "
                             "(scripts/control-plane.sh) or both side by side (make bench: both)")
    parser.add_argument("--server-gangs", type=int, default=6, help="PodCliqueSets of the fake/real comparison")
    parser.add_argument("--server-pods", type=int, default=48, help="pods of the fake/real comparison")
    parser.add_argument("--autoscale-low", type=int, default=2, help="floor of the autoscaling benchmark")
    parser.add_argument("--autoscale-high", type=int, default=50, help="count of its one /scale write")
    parser.add_argument("--feasibility-nodes", type=int, default=2000, help="nodes of the feasibility benchmark")
    parser.add_argument(
        "--fleet-size", type=int, default=0, help="PodCliqueSets of the two-cluster fleet benchmark (default: 30%% of --size)"
    )
    parser.add_argument(
        "--fresh-repeat", type=int, default=5, help="interleaved repeats of the fresh-process benchmark (at least --repeat)"
    )
    parser.add_argument("--kustomize-timeout", type=float, default=300.0, help="seconds (default 300)")
    parser.add_argument("--skip-kustomize", action="store_true")
    parser.add_argument("--workdir", type=Path, help="where the temporary trees go (default: the system temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary trees")
    args = parser.parse_args(argv)
    if args.size < 1 or args.repeat < 1:
        parser.error("--size and --repeat must be at least 1")
    command = shlex.join([".venv/bin/python", "-m", "bench.run", *(sys.argv[1:] if argv is None else argv)])
    results = run(args, command)
    args.out.write_text(report.markdown(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    log(f"wrote {args.out}")
    for t in results["targets"]:
        log(f"{t['label']}: {report.num(t['median'])} (target {t['target']}) {'met' if t['met'] else 'MISSED'}")
    for e in results["errors"]:
        log(f"error: {e.splitlines()[0]}")
    return 1 if results["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
