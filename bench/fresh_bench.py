"""Fresh-process benchmark (issue 14): whole commands, start-up included, as CronJobs and CI run them.

    python -m bench.fresh_bench --source SRC --repeat R

Three measurements, each a ratio of two commands timed side by side in every repeat (the
order alternates repeat by repeat), every command a new ``python -m grove_gitops.cli``
process timed from spawn to exit:

* ``controller``: ``controller --once`` after one PodCliqueSet (``w00000``) changed, in an
  N-PodCliqueSet repository vs the same change in a 1-PodCliqueSet repository. Each setup
  is a bare remote, a developer clone and a controller work directory kept between runs
  (its render cache and clone), warmed by one untimed ``--once``. Target ≤ 3.
* ``diff``: ``diff --repo R BASE HEAD_k --cache-dir C`` where HEAD_k changes ``w00000``'s
  replicas to k + 2 (a new PodCliqueSet rendering in every repeat; the cache holds BASE, as
  a CI cache restored from the default branch would: one untimed ``diff main main``), vs a full cold ``render --no-fsync``
  of the same source without a cache. Target ≤ 0.2.
* ``fsync``: cold ``render`` (fsync, the default) vs ``render --no-fsync``, both into a new
  directory on the disk holding ``--workdir``. Target ≤ 1.3.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

# The same source layout, git identity and git wrapper as the long-lived incremental benchmark.
from bench.incremental_bench import CHANGED, _git

PROJECT = Path(__file__).resolve().parents[1]


def timed(*args: str) -> float:
    """Seconds from spawning ``python -m grove_gitops.cli ARGS`` to its exit (must be 0)."""
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "grove_gitops.cli", *args], cwd=PROJECT, capture_output=True, text=True, check=False
    )
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"grove-gitops {' '.join(args[:2])} exited {proc.returncode}: {proc.stderr.strip()[-1500:]}")
    return seconds


def set_replicas(path: Path, replicas: int) -> None:
    pcs = yaml.load(path.read_text(), Loader=yaml.CSafeLoader)
    pcs["spec"]["replicas"] = replicas
    path.write_text(yaml.dump(pcs, Dumper=yaml.CSafeDumper, sort_keys=False))


class Setup:
    """A bare remote, a developer clone pushing ``src/`` and a controller work directory."""

    def __init__(self, root: Path, source: Path) -> None:
        self.root = root
        self.bare = root / "remote.git"
        self.dev = root / "dev"
        self.workdir = root / "work" / "clone"
        root.mkdir(parents=True)
        _git(root, "init", "--quiet", "--bare", "--initial-branch=main", str(self.bare))
        _git(root, "clone", "--quiet", str(self.bare), str(self.dev))
        shutil.copytree(source, self.dev / "src")
        self.push("source")

    def push(self, message: str) -> str:
        _git(self.dev, "add", "-A")
        _git(self.dev, "commit", "--quiet", "-m", message)
        _git(self.dev, "push", "--quiet", "origin", "HEAD:refs/heads/main")
        return _git(self.dev, "rev-parse", "HEAD")

    def once(self) -> float:
        return timed(
            "controller",
            "--repo",
            str(self.bare),
            "--source-path",
            "src",
            "--output-branch",
            "rendered",
            "--workdir",
            str(self.workdir),
            "--once",
            "--jobs",
            "1",
        )

    def change(self, k: int) -> float:
        set_replicas(self.dev / "src" / CHANGED, k + 2)
        sha = self.push(f"w00000: replicas {k + 2}")
        seconds = self.once()
        rendered = _git(self.bare, "log", "-1", "--format=%B", "rendered")
        if sha not in rendered:
            raise RuntimeError(f"controller --once did not render {sha[:12]}")
        return seconds


def _summary(values: list[float]) -> dict[str, Any]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "runs": values}


def _pair(a: list[float], b: list[float]) -> dict[str, Any]:
    return _summary([x / y for x, y in zip(a, b, strict=True)])


def measure_controller(source: Path, repeat: int, root: Path) -> dict[str, Any]:
    from bench.generate import generate

    setups = {"big": Setup(root / "big", source), "small": Setup(root / "small", generate(root / "source-1", 1))}
    cold = {name: s.once() for name, s in setups.items()}
    series: dict[str, list[float]] = {"big": [], "small": []}
    for k in range(repeat):
        for name in ("big", "small") if k % 2 == 0 else ("small", "big"):
            series[name].append(setups[name].change(k))
    cache = setups["big"].workdir / ".git" / "grove-gitops-cache"
    return {
        "cold_s": cold,
        "change_s": {name: _summary(v) for name, v in series.items()},
        "ratio": _pair(series["big"], series["small"]),
        "cache_mib": sum(p.stat().st_size for p in cache.rglob("*") if p.is_file()) / 2**20,
    }


def measure_diff(source: Path, repeat: int, root: Path) -> dict[str, Any]:
    repo = root / "diff-repo"
    repo.mkdir()
    _git(repo, "init", "--quiet", "--initial-branch=main")
    shutil.copytree(source, repo / "src")
    _git(repo, "add", "-A")
    _git(repo, "commit", "--quiet", "-m", "base")
    heads = []
    for k in range(repeat):  # one branch per repeat, each a different one-PodCliqueSet change
        _git(repo, "checkout", "--quiet", "-B", f"head-{k}", "main")
        set_replicas(repo / "src" / CHANGED, k + 2)
        _git(repo, "commit", "--quiet", "-am", f"w00000: replicas {k + 2}")
        heads.append(f"head-{k}")
    _git(repo, "checkout", "--quiet", "main")
    cache = root / "diff-cache"
    # The cache a CI job restores: written by a diff on the default branch (main against itself).
    warm_s = timed("diff", "--repo", str(repo), "main", "main", "--source-path", "src", "--cache-dir", str(cache))
    diff_s: list[float] = []
    render_s: list[float] = []
    out = root / "diff.md"

    def diff(k: int) -> float:
        args = ["diff", "--repo", str(repo), "main", heads[k], "--source-path", "src", "--cache-dir", str(cache)]
        return timed(*args, "--out", str(out))

    def render() -> float:
        seconds = timed("render", str(repo / "src"), "--out", str(root / "diff-render"), "--no-fsync", "--jobs", "1")
        shutil.rmtree(root / "diff-render")
        return seconds

    for k in range(repeat):
        if k % 2 == 0:
            diff_s.append(diff(k))
            render_s.append(render())
        else:
            render_s.append(render())
            diff_s.append(diff(k))
    return {
        "warm_cache_render_s": warm_s,
        "diff_s": _summary(diff_s),
        "render_s": _summary(render_s),
        "ratio": _pair(diff_s, render_s),
    }


def measure_fsync(source: Path, repeat: int, root: Path) -> dict[str, Any]:
    series: dict[str, list[float]] = {"fsync": [], "no_fsync": []}
    for k in range(repeat):
        for name in ("fsync", "no_fsync") if k % 2 == 0 else ("no_fsync", "fsync"):
            out = root / f"fsync-{name}"
            flags = ["--no-fsync"] if name == "no_fsync" else []
            series[name].append(timed("render", str(source), "--out", str(out), "--jobs", "1", *flags))
            shutil.rmtree(out)
    return {
        "fsync_s": _summary(series["fsync"]),
        "no_fsync_s": _summary(series["no_fsync"]),
        "ratio": _pair(series["fsync"], series["no_fsync"]),
        "filesystem": _filesystem(root),
    }


def _filesystem(path: Path) -> str:
    best = ("", "unknown")
    try:
        for line in Path("/proc/mounts").read_text().splitlines():
            _dev, mount, fstype, *_ = line.split()
            if str(path.resolve()).startswith(mount.rstrip("/") + "/") and len(mount) > len(best[0]):
                best = (mount, fstype)
    except OSError:
        pass
    return best[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fresh_bench", description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, required=True, help="the N-PodCliqueSet source (bench.generate)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--only", choices=("controller", "diff", "fsync"), action="append")
    parser.add_argument("--workdir", type=Path, help="where the setups go (default: the system temp dir)")
    args = parser.parse_args(argv)
    source = args.source.resolve()
    root = Path(tempfile.mkdtemp(prefix="grove-bench-fresh-", dir=args.workdir)).resolve()
    result: dict[str, Any] = {"mode": "fresh", "repeat": args.repeat}
    result["podcliquesets"] = sum(1 for _ in (source / "workloads").rglob("*.yaml"))
    try:
        for name, fn in (("controller", measure_controller), ("diff", measure_diff), ("fsync", measure_fsync)):
            if args.only and name not in args.only:
                continue
            t0 = time.perf_counter()
            result[name] = fn(source, args.repeat, root)
            print(f"[fresh] {name}: {json.dumps(result[name]['ratio']['median'])} ({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    result["loadavg"] = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    print(json.dumps(result, sort_keys=True), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
