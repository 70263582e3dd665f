"""``grove-gitops plan``: the rollout the agent will perform, printed before the merge.

It takes the same inputs as ``diff`` (two source trees, two rendered trees with
``--rendered``, or two git refs with ``--repo``) through the same code
(:func:`grove_gitops.reviewsides.load_sides`), and prints per PodCliqueSet the update strategy,
the ordered steps, the most slots unavailable at once and the fields forcing the restart.

``--output text|markdown|json`` as every report command; ``json`` prints
``{"ok": true, "schemaVersion": 1, "problems": [...], "podcliquesets": [...]}``
(docs/schemas/plan-output.schema.json; the warnings are its problems, with their positions),
``markdown`` the plan section of the PR comment. ``--output-file`` writes it to a file. Exit codes as ``diff``: 0 when a plan was produced (an empty one included), 1 when
either side is invalid or unreadable (every problem listed, prefixed with its side; with
``--output json`` the usual ``{"ok": false, "problems": [...]}`` document), 2 for usage.

This module only exposes :data:`plan_command`; :mod:`grove_gitops.cli.main` registers it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from grove_gitops.cli.options import cache_options, output_file_option, output_option, write_output_file
from grove_gitops.cli.sides import check_modes, report_invalid, side_cache, side_options
from grove_gitops.errors import GroveGitopsError
from grove_gitops.plan.clusters import build_fleet_plan
from grove_gitops.plan.formats import plan_dict, plan_markdown, render_text
from grove_gitops.problems import Problem, WarningSink, from_input_problem, json_document, locate_warnings
from grove_gitops.reviewsides import InvalidSidesError, load_sides


@click.command("plan")
@side_options
@click.option("--base-label", help="How to name BASE in the plan (default: the ref or path).")
@click.option("--head-label", help="How to name HEAD in the plan (default: the ref or path).")
@click.option(
    "-q", "--quiet", is_flag=True, help="Print no warning listed in RenderConfiguration's acknowledgedWarnings."
)
@output_option('; with json, {"podcliquesets": [...]} too (docs/schemas/plan-output.schema.json)')
@output_file_option("the plan")
@cache_options
def plan_command(
    base: str,
    head: str,
    rendered: bool,
    repo: Path | None,
    source_path: str | None,
    base_label: str | None,
    head_label: str | None,
    quiet: bool,
    output: str,
    output_file: Path | None,
    cache_dir: Path | None,
    cache_max_mb: int,
) -> None:
    """Print the rollout the agent will perform from BASE to HEAD: per PodCliqueSet the
    strategy, the steps in order, the most pods unavailable at once and the fields that
    force the restart."""
    check_modes(rendered, repo, source_path)
    cache = side_cache(cache_dir, cache_max_mb, base, head, rendered, repo)
    as_json = output == "json"
    try:
        base_side, head_side, _ = load_sides(
            base, head, rendered, repo, source_path, (base_label, head_label), cache
        )
        plan = build_fleet_plan(base_side, head_side)
    except InvalidSidesError as exc:
        if as_json:
            problems = [from_input_problem(p, e.side) for e in exc.errors for p in e.error.problems]
            click.echo(json_document(False, problems))
        else:
            report_invalid(exc.errors)
        sys.exit(1)
    except GroveGitopsError as exc:
        if as_json:
            click.echo(json_document(False, [Problem("", "", str(exc), "error")]))
        else:
            click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    sink = WarningSink(quiet=quiet)
    if as_json:
        shown = sink.select(head_side.warnings, head_side.acknowledged, head_side.acknowledged_codes)
        located = locate_warnings(shown, head_side.files) + locate_warnings(
            sink.acknowledged, head_side.files, acknowledged=True
        )
        text = json_document(True, located, **plan_dict(plan)) + "\n"
    else:
        sink.emit(
            head_side.warnings, lambda line: click.echo(line, err=True), head_side.acknowledged, "head: ",
            head_side.acknowledged_codes,
        )
        if output == "markdown":
            text = plan_markdown(plan, base_side.label, head_side.label)
        else:
            text = render_text(plan, base_side.label, head_side.label)
    if output_file is not None:
        write_output_file(output_file, text)
    else:
        click.echo(text, nl=False)
    if not as_json:
        where = f" (written to {output_file})" if output_file is not None else ""
        click.echo(f"{len(plan.podcliquesets)} PodCliqueSet(s) to roll out, {plan.steps} step(s) in all{where}", err=True)
