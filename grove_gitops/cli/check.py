"""What ``render`` and ``validate`` share: every check of a render, the output written
only when asked, and one summary line (or the JSON document)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from grove_gitops.cache import RenderCache
from grove_gitops.cli.report import fail
from grove_gitops.errors import GroveGitopsError
from grove_gitops.output.parallel import default_jobs
from grove_gitops.output.writer import render_to
from grove_gitops.problems import WarningSink, json_document, locate_warnings
from grove_gitops.procs import batch_gc, free_cpus
from grove_gitops.sourcetree import render_source_tree


def check(
    source: Path,
    out: Path | None,
    quiet: bool,
    output: str,
    jobs: int | None,
    *,
    fsync: bool = True,
    cache: RenderCache | None = None,
) -> None:
    """What render and validate share: run every check, write OUT when given, report."""
    as_json = output == "json"
    title = f"grove-gitops {'render' if out is not None else 'validate'}"
    md_title = title if output == "markdown" else None
    # Without --jobs: the CPUs no other process is busy on (a pool on busy CPUs is slower than
    # one process), and the work decides how many of them pay (parallel.worker_count).
    n_jobs = min(default_jobs(), free_cpus()) if jobs is None else jobs
    if cache is not None:
        cache.start()
    try:
        with batch_gc():
            outcome = render_source_tree(
                source,
                out,
                n_jobs,
                cache,
                single=lambda plan: render_to(plan, out, n_jobs, fsync=fsync, cache=cache),
                feasibility=True,
                fsync=fsync,
            )
    except GroveGitopsError as exc:
        fail(exc, as_json, md_title)
    finally:
        if cache is not None:
            cache.finish()
    sink = WarningSink(quiet=quiet)
    tree, acks, n_pcs = outcome.tree, outcome.acknowledged, outcome.podcliquesets
    codes = outcome.acknowledged_codes
    tree.warnings = tree.warnings + outcome.feasibility_warnings  # reported, never in the output's README
    fleet = f" for {len(outcome.clusters)} cluster(s) ({', '.join(c.name for c in outcome.clusters)})" if outcome.clusters else ""
    if out is not None:
        line = f"rendered {n_pcs} PodCliqueSet(s){fleet} into {tree.objects} objects, {tree.file_count} files in {out}"
    else:
        line = f"{n_pcs} PodCliqueSet(s) valid{fleet}"
    if as_json or output == "markdown":
        shown = sink.select(tree.warnings, acks, codes)
        plans = [outcome.plan] if outcome.plan is not None else [c.plan for c in outcome.clusters]
        files = {name: data for plan in plans for name, data in plan.inputs.source.files.items()}
        problems = locate_warnings(shown, files) + locate_warnings(sink.acknowledged, files, acknowledged=True)
        if output == "markdown":
            # Imported here: the Markdown sections import the PR comment's (and diff's) modules,
            # which a plain render does not need at start-up (issue 35.4).
            from grove_gitops.cli.mdreport import problems_markdown

            click.echo(problems_markdown(title, f"✅ {line}", problems), nl=False)
            return
        summary: dict[str, Any] = {"podCliqueSets": n_pcs, "objects": tree.objects, "files": tree.file_count}
        if outcome.clusters:
            summary["clusters"] = {c.name: {"podCliqueSets": len(c.plan.items), "objects": c.tree.objects} for c in outcome.clusters}
        click.echo(json_document(True, problems, **summary))
        return
    sink.emit(tree.warnings, lambda line: click.echo(line, err=True), acks, codes=codes)
    if not quiet:
        click.echo(line)
