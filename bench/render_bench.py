"""Render benchmark: one measurement per process, one JSON line on stdout.

    python -m bench.render_bench full    --source SRC --out OUT     # render + build_tree + write_tree
    python -m bench.render_bench full    --source SRC --out OUT --jobs 2   # the same with 2 worker processes
    python -m bench.render_bench floor   --rendered OUT --out FLOOR # yaml.dump of the same objects + write
    python -m bench.render_bench io      --rendered OUT --out FLOOR # the same bytes written into the same files
    python -m bench.render_bench serialise --rendered OUT --out X   # emitter vs CDumper vs orjson, no writes
    python -m bench.render_bench profile --source SRC --out OUT     # cProfile of one full render, grouped

Each mode is meant to run in a fresh interpreter (``bench.run`` starts one per measurement),
so peak RSS (``ru_maxrss`` of this very process) and caches belong to that measurement only.
Imports happen before the clock starts; only the work itself is timed.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

#: Groups of the "what the remaining cost is made of" section, in pipeline order.
GROUPS = ("load", "validate", "expand", "backend", "serialise", "write", "other")


def _peak_rss_mib() -> float:
    """Peak resident set size of this process (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _render(source: Path, out: Path, jobs: int = 1) -> dict[str, Any]:
    """The measured unit, exactly what ``grove-gitops render`` does (``writer.render_to``):
    ``plan_source`` (load and validate) + ``build_tree_from_plan`` (expand, backends and
    serialise one PodCliqueSet at a time, in ``jobs`` processes, each PodCliqueSet's files
    written as soon as they are merged) + the rest of the files and the atomic swap."""
    from grove_gitops.output.layout import build_tree_from_plan
    from grove_gitops.output.writer import TreeWriter
    from grove_gitops.render import plan_source

    t0 = time.perf_counter()
    plan = plan_source(source, jobs=jobs)
    t1 = time.perf_counter()
    writer = TreeWriter(out)
    tree = build_tree_from_plan(plan, jobs=jobs, on_files=writer.write)
    t2 = time.perf_counter()
    writer.write(tree.files)
    writer.commit()
    t3 = time.perf_counter()
    pods = sum(1 for path in tree.files if "/30-pod--" in path)
    return {
        "seconds": t3 - t0,
        "render_source_s": t1 - t0,
        "build_tree_s": t2 - t1,
        "write_tree_s": t3 - t2,
        "objects": tree.objects,
        "pods": pods,
        "podcliquesets": len(plan.items),
        "jobs": jobs,
        "files": len(tree.files),
        "bytes": sum(len(data) for data in tree.files.values()),
    }


def full(source: Path, out: Path, jobs: int = 1) -> dict[str, Any]:
    import grove_gitops.output.layout
    import grove_gitops.output.writer
    import grove_gitops.render  # noqa: F401  (imports and entry-point discovery stay off the clock)

    rss_before = _peak_rss_mib()
    stats = _render(source, out, jobs)
    seconds = stats["seconds"]
    stats.update(
        objects_per_s=stats["objects"] / seconds,
        mb_per_s=stats["bytes"] / 1e6 / seconds,
        peak_rss_mib=_peak_rss_mib(),
        # The largest worker process (0 with --jobs 1): each one holds the plan and one shard.
        peak_rss_workers_mib=resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0,
        rss_after_imports_mib=rss_before,
    )
    return stats


def _output_files(rendered: Path) -> list[Path]:
    return sorted(p for p in rendered.rglob("*") if p.is_file())


def floor(rendered: Path, out: Path) -> dict[str, Any]:
    """The lower bound for producing the same bytes: PyYAML's C dumper plus the file writes.

    Every ``.yaml`` file of the rendered output is loaded (untimed) and dumped again with
    ``yaml.dump(obj, Dumper=yaml.CSafeDumper)`` into the same relative path of a fresh
    directory; the other files (README.md, render.meta) are written back as bytes, since the
    renderer has to write them too.
    """
    docs: list[tuple[str, Any, bytes | None]] = []
    for path in _output_files(rendered):
        rel = path.relative_to(rendered).as_posix()
        if path.suffix in (".yaml", ".yml"):
            docs.append((rel, yaml.load(path.read_bytes(), Loader=yaml.CSafeLoader), None))
        else:
            docs.append((rel, None, path.read_bytes()))
    if out.exists():
        shutil.rmtree(out)
    c0 = time.process_time()
    t0 = time.perf_counter()
    out.mkdir(parents=True)
    made: set[Path] = {out}
    written = 0
    for rel, obj, raw in docs:
        target = out / rel
        if target.parent not in made:
            target.parent.mkdir(parents=True, exist_ok=True)
            made.add(target.parent)
        data = raw if raw is not None else yaml.dump(obj, Dumper=yaml.CSafeDumper).encode()
        target.write_bytes(data)
        written += len(data)
    seconds = time.perf_counter() - t0
    return {
        "seconds": seconds,
        "cpu_s": time.process_time() - c0,
        "files": len(docs),
        "yaml_files": sum(1 for _, _, raw in docs if raw is None),
        "bytes": written,
        "peak_rss_mib": _peak_rss_mib(),
    }


def _write_all(out: Path, files: list[tuple[str, bytes]]) -> int:
    """Write ``files`` under ``out`` the way the floor does: one mkdir per directory, one
    ``write_bytes`` per file."""
    out.mkdir(parents=True)
    made: set[Path] = {out}
    written = 0
    for rel, data in files:
        target = out / rel
        if target.parent not in made:
            target.parent.mkdir(parents=True, exist_ok=True)
            made.add(target.parent)
        target.write_bytes(data)
        written += len(data)
    return written


def io_floor(rendered: Path, out: Path) -> dict[str, Any]:
    """The I/O floor (issue 10): the rendered bytes, read untimed, written into the same
    files of a fresh directory. No renderer can be faster than this on this disk."""
    files = [(path.relative_to(rendered).as_posix(), path.read_bytes()) for path in _output_files(rendered)]
    if out.exists():
        shutil.rmtree(out)
    c0 = time.process_time()
    t0 = time.perf_counter()
    written = _write_all(out, files)
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "cpu_s": time.process_time() - c0, "files": len(files), "bytes": written, "peak_rss_mib": _peak_rss_mib()}


def serialise(rendered: Path) -> dict[str, Any]:
    """Serialisation alone, on the objects of a rendered output (loaded untimed): our emitter,
    PyYAML's CDumper (as the floor calls it) and, when installed, orjson (JSON, for scale)."""
    from grove_gitops.output.emit import emit

    objects = [
        yaml.load(path.read_bytes(), Loader=yaml.CSafeLoader)
        for path in _output_files(rendered)
        if path.suffix in (".yaml", ".yml")
    ]
    result: dict[str, Any] = {"objects": len(objects)}
    t0 = time.perf_counter()
    emitted = sum(len(emit(obj).encode()) for obj in objects)
    result["emit_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    dumped = sum(len(yaml.dump(obj, Dumper=yaml.CSafeDumper).encode()) for obj in objects)
    result["cdumper_s"] = time.perf_counter() - t0
    result.update(emit_bytes=emitted, cdumper_bytes=dumped)
    try:
        import orjson  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        result["orjson"] = "not installed"
    else:
        t0 = time.perf_counter()
        result["orjson_bytes"] = sum(len(orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)) for obj in objects)
        result["orjson_s"] = time.perf_counter() - t0
    result["peak_rss_mib"] = _peak_rss_mib()
    return result


# -- kubectl kustomize ---------------------------------------------------------------------
def kustomize(target: Path, timeout: float) -> dict[str, Any]:
    """Wall time of ``kubectl kustomize target > /dev/null`` (a child process, so no Python here)."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        return {"skipped": "kubectl not found on PATH"}
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(
            [kubectl, "kustomize", str(target)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {"timed_out": True, "timeout_s": timeout, "seconds": time.perf_counter() - t0}
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        return {"error": proc.stderr.decode(errors="replace").strip()[-2000:], "seconds": seconds}
    return {"seconds": seconds}


def largest_shard(rendered: Path) -> Path | None:
    """The PodCliqueSet directory with the most files (what one Argo CD app would build)."""
    shards = [p.parent for p in rendered.glob("*/*/kustomization.yaml") if not p.parent.name.startswith("_")]
    return max(shards, key=lambda d: (sum(1 for _ in d.iterdir()), d.as_posix()), default=None)


# -- profile -------------------------------------------------------------------------------
def _group_of(func: tuple[str, int, str], root: str) -> str | None:
    """The pipeline stage a function belongs to, or None when its callers decide.

    Project code is grouped by package; PyYAML and pydantic are grouped by what they do;
    everything else (stdlib, builtins, copy.deepcopy, file I/O) is charged to whoever called it.
    """
    filename, _, name = func
    path = filename.replace(os.sep, "/")
    rel = path[len(root) :] if path.startswith(root) and "/site-packages/" not in path else ""
    if rel.startswith(("grove_gitops/", "backends/", "bench/")):
        if rel.startswith(("grove_gitops/load/", "grove_gitops/yamlfiles/")):
            return "load"
        if rel.startswith(("grove_gitops/validation/", "grove_gitops/api/", "grove_gitops/fields/")):
            return "validate"
        if rel == "grove_gitops/expand/hpacheck.py":  # the HPAs' schema check, a validation step
            return "validate"
        if rel.startswith("grove_gitops/expand/"):
            return "expand"
        if rel.startswith("backends/") or rel == "grove_gitops/backendapi.py":
            return "backend"
        if rel == "grove_gitops/output/writer.py":
            return "write"
        if rel.startswith("grove_gitops/output/"):
            return "serialise"
        if rel.startswith("grove_gitops/"):
            return "other"
        return None  # the benchmark's own code
    if "/pydantic" in path:
        return "validate"
    if "/yaml/" in path:
        if path.endswith(("/constructor.py", "/loader.py", "/reader.py", "/scanner.py", "/parser.py", "/composer.py")):
            return "load"
        if path.endswith(("/representer.py", "/dumper.py", "/emitter.py", "/serializer.py")):
            return "serialise"
        if "load" in name:
            return "load"
        if "dump" in name:
            return "serialise"
        return None
    if filename == "~" and "pydantic_core" in name:
        return "validate"
    if filename == "~" and "_yaml.CParser" in name:
        return "load"
    if filename == "~" and "_yaml.CEmitter" in name:
        return "serialise"
    return None


def group_profile(stats: dict[Any, Any], root: str) -> dict[str, float]:
    """Self time per stage; unclassified self time flows to callers (gprof-style, by call-edge time).

    ``stats`` is ``pstats.Stats.stats``: ``func -> (cc, nc, tt, ct, callers)`` where
    ``callers[caller] = (cc, nc, tt, ct)`` of that call edge. A function's own time is split
    over its callers exactly (edge ``tt``); further up, an unclassified caller passes its share
    on in proportion to its incoming edges' cumulative time (the usual approximation). The
    distribution of each unclassified function is solved by fixed-point iteration (recursion
    such as ``copy.deepcopy`` makes the call graph cyclic).
    """
    groups = {f: _group_of(f, root) for f in stats}
    unresolved = [f for f, g in groups.items() if g is None]
    index = {g: i for i, g in enumerate(GROUPS)}

    def onehot(group: str) -> list[float]:
        vec = [0.0] * len(GROUPS)
        vec[index[group]] = 1.0
        return vec

    def weights(func: Any, field: int) -> list[tuple[Any, float]]:
        callers = stats[func][4]
        pairs = [(c, float(edge[field])) for c, edge in callers.items() if c in stats]
        total = sum(w for _, w in pairs)
        if total <= 0:
            pairs = [(c, float(edge[1])) for c, edge in callers.items() if c in stats]
            total = sum(w for _, w in pairs)
        return [(c, w / total) for c, w in pairs] if total > 0 else []

    up = {f: weights(f, 3) for f in unresolved}
    dist: dict[Any, list[float]] = {f: [0.0] * len(GROUPS) for f in unresolved}
    for _ in range(200):
        changed = 0.0
        for f in unresolved:
            vec = [0.0] * len(GROUPS)
            edges = up[f]
            if not edges:
                vec = onehot("other")
            for caller, w in edges:
                src = onehot(groups[caller]) if groups[caller] else dist[caller]  # type: ignore[arg-type]
                for i, v in enumerate(src):
                    vec[i] += w * v
            changed = max(changed, max(abs(a - b) for a, b in zip(vec, dist[f], strict=True)))
            dist[f] = vec
        if changed < 1e-9:
            break

    totals = [0.0] * len(GROUPS)
    for f, (_, _, tt, _, _) in stats.items():
        group = groups[f]
        if group is not None:
            totals[index[group]] += tt
            continue
        edges = weights(f, 2)
        if not edges:
            totals[index["other"]] += tt
            continue
        for caller, w in edges:
            src = onehot(groups[caller]) if groups[caller] else dist[caller]  # type: ignore[arg-type]
            for i, v in enumerate(src):
                totals[i] += tt * w * v
    return dict(zip(GROUPS, totals, strict=True))


def _label(func: tuple[str, int, str], root: str) -> str:
    filename, line, name = func
    if filename == "~":
        return name
    path = filename.replace(os.sep, "/")
    if "/site-packages/" in path:
        path = path.split("/site-packages/", 1)[1]
    elif path.startswith(root):
        path = path[len(root) :]
    return f"{path}:{line}({name})"


def _listed(func: tuple[str, int, str], root: str) -> bool:
    """Functions worth naming in the top list: ours, PyYAML's entry points, pydantic's model API."""
    path = func[0].replace(os.sep, "/")
    return (
        (path.startswith(root) and "/site-packages/" not in path)
        or path.endswith(("/yaml/__init__.py", "/pydantic/main.py"))
        or (func[0] == "~" and ("_yaml." in func[2] or "pydantic_core" in func[2]))
    )


def profile(source: Path, out: Path, top: int = 20) -> dict[str, Any]:
    import grove_gitops.output.layout
    import grove_gitops.render  # noqa: F401

    root = str(Path(__file__).resolve().parents[1]).replace(os.sep, "/") + "/"
    profiler = cProfile.Profile()
    t0 = time.perf_counter()
    profiler.enable()
    stats = _render(source, out)
    profiler.disable()
    wall = time.perf_counter() - t0
    raw = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    groups = group_profile(raw, root)
    total = sum(groups.values()) or 1.0
    entry = next((f for f in raw if f[2] == "_render" and f[0].endswith("render_bench.py")), None)
    cumulative = []
    for func, (_, nc, tt, ct, _) in raw.items():
        group = _group_of(func, root)
        if func == entry or group is None or not _listed(func, root):
            continue
        cumulative.append(
            {"function": _label(func, root), "group": group, "calls": nc, "cumulative_s": ct, "self_s": tt}
        )
    cumulative.sort(key=lambda row: -float(row["cumulative_s"]))
    return {
        "profiled_seconds": wall,
        "objects": stats["objects"],
        "stages_s": {k: stats[k] for k in ("render_source_s", "build_tree_s", "write_tree_s")},
        "groups_s": groups,
        "groups_share": {k: v / total for k, v in groups.items()},
        "top_cumulative": cumulative[:top],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.render_bench", description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("full", "floor", "io", "serialise", "profile"))
    parser.add_argument("--source", type=Path, help="source tree (full, profile)")
    parser.add_argument("--rendered", type=Path, help="a rendered output tree (floor)")
    parser.add_argument("--out", type=Path, required=True, help="directory to write (must not exist)")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes of the render (full)")
    args = parser.parse_args(argv)
    run: Callable[[], dict[str, Any]]
    if args.mode in ("floor", "io", "serialise"):
        if args.rendered is None:
            parser.error(f"{args.mode} needs --rendered")
        modes: dict[str, Callable[[], dict[str, Any]]] = {
            "floor": lambda: floor(args.rendered, args.out),
            "io": lambda: io_floor(args.rendered, args.out),
            "serialise": lambda: serialise(args.rendered),
        }
        run = modes[args.mode]
    else:
        if args.source is None:
            parser.error(f"{args.mode} needs --source")
        run = (lambda: full(args.source, args.out, args.jobs)) if args.mode == "full" else (lambda: profile(args.source, args.out))
    result = run()
    result["mode"] = args.mode
    print(json.dumps(result, sort_keys=True), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
