"""Incremental controller benchmark: one changed PodCliqueSet in a big repo vs in a tiny one.

    python -m bench.incremental_bench --source SRC --repeat R

Two real git setups under a temporary directory, each a bare remote plus a developer clone:
"big" holds the N-PodCliqueSet source SRC, "small" the first PodCliqueSet of the same
generator (``bench.generate``). Each setup is driven by its own long-lived worker process
(``python -m bench.incremental_bench worker ...``), so one controller's caches and heap never
slow the other down, and both keep ONE ``Controller`` for the whole run: a warm-up
``run_once()`` renders everything, then every repeat edits ``spec.replicas`` of PodCliqueSet
``w00000`` (present in both sources; the same change on both sides), pushes it, and times
``Controller.run_once()`` (fetch, render, commit, push). The parent interleaves the two
workers repeat by repeat and prints one JSON line with both series and their ratio.
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
from typing import IO, Any

import yaml

PROJECT = Path(__file__).resolve().parents[1]
CHANGED = "workloads/ns-00/w00000.yaml"  # bench.generate's first PodCliqueSet
PREFIX = "BENCH "
GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
}


def _git(cwd: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV}
    proc = subprocess.run(
        ["git", "-c", "commit.gpgsign=false", "-c", "core.hooksPath=/dev/null", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed in {cwd}: {proc.stderr.strip()}")
    return proc.stdout.strip()


class Setup:
    """A bare remote, a developer clone that pushes the source, and one controller on top."""

    def __init__(self, root: Path, source: Path) -> None:
        self.root = root
        self.bare = root / "remote.git"
        self.dev = root / "dev"
        root.mkdir(parents=True, exist_ok=True)
        _git(root, "init", "--quiet", "--bare", "--initial-branch=main", str(self.bare))
        _git(root, "clone", "--quiet", str(self.bare), str(self.dev))
        shutil.copytree(source, self.dev / "src")
        self.sha = self._push("source")
        self.controller: Any = None

    def _push(self, message: str) -> str:
        _git(self.dev, "add", "-A")
        _git(self.dev, "commit", "--quiet", "-m", message)
        _git(self.dev, "push", "--quiet", "origin", "HEAD:refs/heads/main")
        return _git(self.dev, "rev-parse", "HEAD")

    def start(self) -> dict[str, Any]:
        from grove_gitops.gitops.controller import Controller, ControllerConfig

        config = ControllerConfig(
            repo=str(self.bare), workdir=self.root / "work" / "clone", source_path="src", output_branch="rendered"
        )
        self.controller = Controller(config).__enter__()
        t0 = time.perf_counter()
        result = self.controller.run_once()
        seconds = time.perf_counter() - t0
        if result.rendered != [self.sha] or not result.pushed:
            raise RuntimeError(f"warm-up did not render {self.sha[:12]}: {result}")
        files = int(_git(self.bare, "ls-tree", "-r", "--name-only", "rendered").count("\n") + 1)
        return {"warmup_s": seconds, "output_files": files}

    def change(self, k: int) -> dict[str, Any]:
        """Repeat ``k``: set w00000's replicas to k + 2, push, time one controller iteration."""
        path = self.dev / "src" / CHANGED
        pcs = yaml.load(path.read_text(), Loader=yaml.CSafeLoader)
        pcs["spec"]["replicas"] = k + 2
        path.write_text(yaml.dump(pcs, Dumper=yaml.CSafeDumper, sort_keys=False))
        sha = self._push(f"w00000: replicas {k + 2}")
        t0 = time.perf_counter()
        result = self.controller.run_once()
        seconds = time.perf_counter() - t0
        if result.rendered != [sha] or not result.pushed:
            raise RuntimeError(f"change {k} did not render {sha[:12]}: {result}")
        return {"seconds": seconds, "replicas": k + 2}

    def close(self) -> None:
        if self.controller is not None:
            self.controller.__exit__(None, None, None)


def _reply(data: dict[str, Any]) -> None:
    print(PREFIX + json.dumps(data, sort_keys=True), flush=True)


def worker(root: Path, source: Path) -> int:
    """Serve ``setup`` / ``change K`` / ``quit`` lines from stdin, one JSON reply each."""
    setup: Setup | None = None
    for line in sys.stdin:
        cmd = line.split()
        if not cmd:
            continue
        try:
            if cmd[0] == "setup":
                setup = Setup(root, source)
                _reply(setup.start())
            elif cmd[0] == "change" and setup is not None:
                _reply(setup.change(int(cmd[1])))
            elif cmd[0] == "quit":
                if setup is not None:
                    setup.close()
                _reply({"peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0})
                return 0
            else:
                _reply({"error": f"unknown command {line.strip()!r}"})
        except Exception as exc:  # reported to the parent, which fails the benchmark
            _reply({"error": f"{type(exc).__name__}: {exc}"})
            return 1
    return 1


class Worker:
    def __init__(self, name: str, root: Path, source: Path) -> None:
        self.name = name
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.incremental_bench", "worker", "--root", str(root), "--source", str(source)],
            cwd=PROJECT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def ask(self, command: str) -> dict[str, Any]:
        stdin: IO[str] = self.proc.stdin  # type: ignore[assignment]
        stdout: IO[str] = self.proc.stdout  # type: ignore[assignment]
        stdin.write(command + "\n")
        stdin.flush()
        for line in stdout:
            if line.startswith(PREFIX):
                reply: dict[str, Any] = json.loads(line[len(PREFIX) :])
                if "error" in reply:
                    raise RuntimeError(f"{self.name} worker, {command!r}: {reply['error']}")
                return reply
        raise RuntimeError(f"{self.name} worker exited during {command!r} (code {self.proc.wait()})")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def _summary(values: list[float]) -> dict[str, Any]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "runs": values}


def measure(source: Path, repeat: int, workroot: Path) -> dict[str, Any]:
    from bench.generate import generate

    small_source = generate(workroot / "source-1", 1)
    big_pcs = sum(1 for _ in (source / "workloads").rglob("*.yaml"))
    workers = {
        "big": Worker("big", workroot / "big", source),
        "small": Worker("small", workroot / "small", small_source),
    }
    try:
        setup = {name: w.ask("setup") for name, w in workers.items()}  # one at a time: no CPU contention
        series: dict[str, list[float]] = {"big": [], "small": []}
        for k in range(repeat):
            order = ("big", "small") if k % 2 == 0 else ("small", "big")
            for name in order:
                series[name].append(workers[name].ask(f"change {k}")["seconds"])
        rss = {name: w.ask("quit")["peak_rss_mib"] for name, w in workers.items()}
    finally:
        for w in workers.values():
            w.stop()
    ratios = [b / s for b, s in zip(series["big"], series["small"], strict=True)]
    return {
        "podcliquesets": {"big": big_pcs, "small": 1},
        "change_s": {name: _summary(values) for name, values in series.items()},
        "ratio": _summary(ratios),
        "ratio_of_medians": statistics.median(series["big"]) / statistics.median(series["small"]),
        "warmup_s": {name: info["warmup_s"] for name, info in setup.items()},
        "output_files": {name: info["output_files"] for name, info in setup.items()},
        "worker_peak_rss_mib": rss,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.incremental_bench", description=__doc__.splitlines()[0])
    parser.add_argument("mode", nargs="?", default="measure", choices=("measure", "worker"))
    parser.add_argument("--source", type=Path, required=True, help="the N-PodCliqueSet source (bench.generate)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--root", type=Path, help="worker: directory for its git setup")
    args = parser.parse_args(argv)
    if args.mode == "worker":
        return worker(args.root, args.source)
    workroot = Path(tempfile.mkdtemp(prefix="grove-bench-incremental-"))
    try:
        result = measure(args.source.resolve(), args.repeat, workroot)
    finally:
        shutil.rmtree(workroot, ignore_errors=True)
    result["mode"] = "incremental"
    print(json.dumps(result, sort_keys=True), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
