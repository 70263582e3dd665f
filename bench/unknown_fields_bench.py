"""Unknown-fields benchmark: hostile inputs validate in bounded time, memory and output (issue 31.1).

    python -m bench.unknown_fields_bench [--keys 50000] [--files 300] [--pod-keys 200] [--repeat R]

Each scenario is a source tree written once; ``grove-gitops validate`` runs on it in a fresh
``python -I -m grove_gitops`` process (start-up included), R times:

* ``template``: one PodCliqueSet whose ``spec.template`` holds ``--keys`` unknown keys;
* ``operator_config``: an OperatorConfiguration profile with ``--keys`` unknown keys;
* ``many_pod_specs``: ``--files`` PodCliqueSets with ``--pod-keys`` unknown podSpec fields each
  (distinct names per file, so no memo is shared between them);
* ``template_1x`` / ``template_4x``: ``--keys``/20 and 4x that, for the growth ratio (4 means
  linear, 16 quadratic).

For each: median seconds (wall, and CPU of the child: on a shared machine the wall time
mostly measures the neighbours), the child's peak RSS (``wait4``), its exit code and how many lines
the largest document got (at most 101: 100 problems and one ``and N more``). Issue 31's bar is
10 s and 1 GB per scenario at 50,000 keys on the reference machine. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import yaml


def pcs(name: str, template_keys: int = 0, pod_keys: int = 0) -> dict[str, Any]:
    pod: dict[str, Any] = {"containers": [{"name": "c", "image": "x"}]}
    pod.update({f"field{name}x{k}": 1 for k in range(pod_keys)})
    template: dict[str, Any] = {
        "terminationDelay": "30s",
        "cliques": [{"name": "a", "spec": {"roleName": "a", "replicas": 1, "podSpec": pod}}],
    }
    template.update({f"unknownKey{k}": 1 for k in range(template_keys)})
    return {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueSet",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"replicas": 1, "template": template},
    }


def _write(path: Path, doc: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))


def scenarios(root: Path, keys: int, files: int, pod_keys: int) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for name, count in (("template_1x", keys // 20), ("template_4x", keys // 5), ("template", keys)):
        _write(root / name / "pcs.yaml", pcs("w", template_keys=count))
        out[name] = root / name
    cfg = {
        "apiVersion": "operator.config.grove.io/v1alpha1",
        "kind": "OperatorConfiguration",
        "scheduler": {
            "defaultProfileName": "default-scheduler",
            "profiles": [{"name": "default-scheduler", **{f"unk{k}": 1 for k in range(keys)}}],
        },
    }
    _write(root / "operator_config" / "opcfg.yaml", cfg)
    _write(root / "operator_config" / "pcs.yaml", pcs("w"))
    out["operator_config"] = root / "operator_config"
    for i in range(files):
        _write(root / "many_pod_specs" / f"pcs{i:03d}.yaml", pcs(f"w{i:03d}", pod_keys=pod_keys))
    out["many_pod_specs"] = root / "many_pod_specs"
    return out


def validate_once(source: Path) -> dict[str, Any]:
    """One fresh process: seconds, peak RSS of that process, exit code, lines per file."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as stdout:
        proc = subprocess.Popen(
            [sys.executable, "-I", "-m", "grove_gitops", "validate", str(source)],
            stdout=stdout,
            stderr=subprocess.STDOUT,
        )
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        stdout.seek(0)
        lines = stdout.read().decode("utf-8", "replace").splitlines()
    per_file = Counter(line.split(":", 2)[1].strip() for line in lines if line.startswith("error: "))
    return {
        "seconds": round(seconds, 3),
        "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 3),  # the figure a loaded machine keeps
        "peak_rss_mib": round(usage.ru_maxrss / 1024, 1),
        "exit_code": proc.returncode,
        "lines_largest_file": max(per_file.values(), default=0),
        "lines": len(lines),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--keys", type=int, default=50_000)
    parser.add_argument("--files", type=int, default=300)
    parser.add_argument("--pod-keys", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args(argv)
    results: dict[str, Any] = {"keys": args.keys, "files": args.files, "pod_keys": args.pod_keys}
    with tempfile.TemporaryDirectory() as tmp:
        for name, source in scenarios(Path(tmp), args.keys, args.files, args.pod_keys).items():
            runs = [validate_once(source) for _ in range(args.repeat)]
            results[name] = {
                **runs[-1],
                "seconds": statistics.median(r["seconds"] for r in runs),
                "cpu_seconds": statistics.median(r["cpu_seconds"] for r in runs),
                "peak_rss_mib": max(r["peak_rss_mib"] for r in runs),
            }
            print(f"[unknown-fields] {name}: {results[name]}", file=sys.stderr, flush=True)
    small, large = results["template_1x"]["seconds"], results["template_4x"]["seconds"]
    results["growth_4x"] = round(large / small, 2) if small else None
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
