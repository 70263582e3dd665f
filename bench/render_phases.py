"""Where one render's time goes, stage by stage (issue 35.4): a profile with timestamps, not a figure.

    python -m bench.render_phases stages SOURCE OUT      # CPU and wall per stage, one process
    python -m bench.render_phases timeline SOURCE OUT [--jobs N]   # the render command's own path

``stages`` runs the stages of ``--jobs 1`` one after the other, each timed alone: the imports of
the render path, load (read and parse), validate (the plan), and per PodCliqueSet its expansion,
serialisation and shard README summed, then writing the files and the durable swap. ``timeline``
runs what ``grove-gitops render --jobs N`` runs in this process and prints when each step began:
planning, the worker pool (``multiprocessing.pool.Pool`` created, wherever that happens), the
output stage, the end, with this process's CPU (workers not included: ``midsize_bench`` has
the whole). Run either with another checkout as the working directory to profile that one:
only interfaces both sides have are used. Lines on stderr; one JSON line on stdout.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

T0 = time.perf_counter()
MARKS: list[dict[str, Any]] = []


def mark(step: str) -> None:
    MARKS.append({"step": step, "at_s": round(time.perf_counter() - T0, 4), "cpu_s": round(time.process_time(), 4)})
    print(f"{MARKS[-1]['at_s']:7.3f} s  cpu {MARKS[-1]['cpu_s']:6.3f} s  {step}", file=sys.stderr, flush=True)


def _render_path_imports() -> None:
    import grove_gitops.cli.main
    import grove_gitops.cli.render
    import grove_gitops.output.layout
    import grove_gitops.output.writer  # noqa: F401


def stages(source: str, out: str) -> dict[str, float]:
    """CPU seconds of each stage of a one-process render (the stages run back to back)."""
    from pathlib import Path

    _render_path_imports()
    mark("imports")
    from grove_gitops import pipeline
    from grove_gitops.output import autoscaling_readme
    from grove_gitops.output import layout as L
    from grove_gitops.output.writer import TreeWriter
    from grove_gitops.render import plan_loaded

    cpu: dict[str, float] = {}
    c = time.process_time()
    loaded = pipeline.load(Path(source), None, 1)
    cpu["load"] = time.process_time() - c
    c = time.process_time()
    plan = plan_loaded(loaded)
    cpu["validate"] = time.process_time() - c
    cpu["expand"] = cpu["serialise"] = cpu["readme"] = 0.0
    shards = []
    for item in plan.items:
        c0 = time.process_time()
        floor: list[Any] | None = [] if autoscaling_readme.scalable(item) else None
        objects, _warnings = plan.expand(item, floor=floor)
        c1 = time.process_time()
        own = L._Summary(plan.config)
        files: dict[str, bytes] = {}
        L._add_objects(L.Tree(), own, objects, files, item.file, None)
        c2 = time.process_time()
        shard = f"{item.key[0]}/{item.key[1]}"
        picture = autoscaling_readme.agent_picture(plan, item, floor)
        files[f"{shard}/README.md"] = L._shard_readme(shard, item.file, own, picture).encode()
        cpu["expand"] += c1 - c0
        cpu["serialise"] += c2 - c1
        cpu["readme"] += time.process_time() - c2
        shards.append(files)
    mark("load, validate, expand, serialise, README")
    writer = TreeWriter(Path(out), fsync=True)
    c = time.process_time()
    for files in shards:
        writer.write(files)
    cpu["write"] = time.process_time() - c
    c = time.process_time()
    writer.commit()
    cpu["sync and swap"] = time.process_time() - c
    mark("written")
    cpu["imports"] = MARKS[0]["cpu_s"]
    return {k: round(v, 4) for k, v in cpu.items()}


def timeline(source: str, out: str, jobs: int) -> None:
    """``grove-gitops render SOURCE --out OUT --jobs N`` in this process, with its steps marked."""
    import multiprocessing.pool
    import shutil
    from pathlib import Path

    _render_path_imports()
    mark("imports")
    from grove_gitops import pipeline, render
    from grove_gitops.cli.check import check
    from grove_gitops.output import layout, writer

    real_pool_init = multiprocessing.pool.Pool.__init__

    def pool_init(self: Any, *args: Any, **kwargs: Any) -> None:
        mark(f"pool of {args[0] if args else kwargs.get('processes')} starts")
        real_pool_init(self, *args, **kwargs)

    def marked(name: str, func: Any) -> Any:
        def run(*args: Any, **kwargs: Any) -> Any:
            mark(f"{name} begins")
            try:
                return func(*args, **kwargs)
            finally:
                mark(f"{name} ends")

        return run

    multiprocessing.pool.Pool.__init__ = pool_init  # type: ignore[method-assign]
    pipeline.load = marked("load", pipeline.load)
    pipeline.plan_loaded = marked("validate", render.plan_loaded)  # type: ignore[attr-defined]
    setattr(writer, "build_tree_from_plan", marked("output stage", layout.build_tree_from_plan))  # noqa: B010
    shutil.rmtree(out, ignore_errors=True)
    check(Path(source), Path(out), True, "text", jobs)
    mark("end")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) < 3 or args[0] not in ("stages", "timeline"):
        print(__doc__, file=sys.stderr)
        return 2
    if args[0] == "stages":
        result: dict[str, Any] = {"cpu_s": stages(args[1], args[2])}
    else:
        jobs = int(args[4]) if len(args) >= 5 and args[3] == "--jobs" else 2
        timeline(args[1], args[2], max(1, min(jobs, 64)))
        result = {"jobs": jobs}
    result["marks"] = MARKS
    print(json.dumps(result, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
