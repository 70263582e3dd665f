"""``grove-gitops diff``: what a source change does to the rendered objects, for PR review.

Three ways to name the two sides:

* ``diff BASE HEAD`` — two source trees; both are rendered in memory (nothing written).
* ``diff --rendered BASE HEAD`` — two trees already written by ``render``.
* ``diff --repo R BASE_REF HEAD_REF [--source-path P]`` — the source tree at two git refs of
  repository R, read from the object database (the work tree is never touched).

Exit codes follow the other commands: 0 when the diff was produced (identical trees
included: "no changes" is an answer), 1 when either side is invalid or unreadable (every
problem listed, prefixed with the side), 2 for usage errors. The status line goes to stderr
so stdout can be piped or redirected as the diff itself.

This module only exposes :data:`diff_command`; :mod:`grove_gitops.cli.main` registers it.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import click

from grove_gitops.cache import RenderCache
from grove_gitops.cli.options import cache_options, deprecated_format_option, output_option, resolve_output
from grove_gitops.cli.sides import check_modes, report_invalid, side_cache, side_options
from grove_gitops.diff.jsonview import report_dict
from grove_gitops.diff.markdown import (
    DEFAULT_KEY,
    DEFAULT_MAX_CHARS,
    DEFAULT_TITLE,
    GITHUB_COMMENT_LIMIT,
    PART_SEPARATOR,
    render_markdown,
)
from grove_gitops.diff.parts import write_parts, write_text
from grove_gitops.diff.report import Report, build_report
from grove_gitops.diff.text import render_text
from grove_gitops.diff.unified import DEFAULT_CONTEXT
from grove_gitops.errors import GroveGitopsError
from grove_gitops.plan.clusters import changes_per_cluster
from grove_gitops.problems import Problem, WarningSink, from_input_problem, json_document, locate_warnings
from grove_gitops.reviewsides import (
    InvalidSidesError,
    load_sides,
    plan_blocks,
    plan_document,
    plan_text,
    risk_lines,
)

_KEY_RE = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


def _build(
    base: str,
    head: str,
    rendered: bool,
    repo: Path | None,
    source_path: str | None,
    labels: tuple[str | None, str | None],
    context: int,
    cache: RenderCache | None = None,
) -> tuple[Report, str]:
    """The report and the command a reader can run locally for the full, untruncated diff."""
    base_side, head_side, args = load_sides(base, head, rendered, repo, source_path, labels, cache)
    return build_report(base_side, head_side, context), f"grove-gitops diff {args} --output text"


@click.command("diff")
@side_options
@output_option(
    "; with json, the structured diff and the rollout plan (docs/schemas/diff-output.schema.json)", default="markdown"
)
@deprecated_format_option
@click.option(
    "--output-file",
    "out",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Write the report here instead of stdout; Markdown parts also go to FILE-stem.1.md, .2.md, ...",
)
@click.option("--out", "old_out", type=click.Path(path_type=Path, dir_okay=False), hidden=True,
              help="Deprecated: use --output-file.")
@click.option(
    "--max-chars",
    type=click.IntRange(2000, 10_000_000),
    default=DEFAULT_MAX_CHARS,
    show_default=True,
    help="Markdown: split into parts shorter than this (GitHub rejects comments over 65536).",
)
@click.option("--title", default=DEFAULT_TITLE, show_default=True, help="Heading of the report.")
@click.option(
    "--key",
    default=DEFAULT_KEY,
    show_default=True,
    help="Sticky-comment key in the hidden part marker (one per cluster / source path).",
)
@click.option("--base-label", help="How to name BASE in the report (default: the ref or path).")
@click.option("--head-label", help="How to name HEAD in the report (default: the ref or path).")
@click.option(
    "-U", "--context", type=click.IntRange(0, 1000), default=DEFAULT_CONTEXT, show_default=True, help="Diff context."
)
@click.option(
    "-q", "--quiet", is_flag=True, help="Print no warning listed in RenderConfiguration's acknowledgedWarnings."
)
@cache_options
def diff_command(
    base: str,
    head: str,
    rendered: bool,
    repo: Path | None,
    source_path: str | None,
    output: str,
    fmt: str | None,
    out: Path | None,
    old_out: Path | None,
    max_chars: int,
    title: str,
    key: str,
    base_label: str | None,
    head_label: str | None,
    context: int,
    quiet: bool,
    cache_dir: Path | None,
    cache_max_mb: int,
) -> None:
    """Show what changes between the rendered output of BASE and HEAD (PR review)."""
    check_modes(rendered, repo, source_path)
    cache = side_cache(cache_dir, cache_max_mb, base, head, rendered, repo)
    if not _KEY_RE.match(key):
        raise click.BadParameter("letters, digits, '.', '_' and '-' only (at most 64)", param_hint="--key")
    output = resolve_output(output, fmt, "diff")
    as_json = output == "json"
    # --output-file holds the report in the format asked, JSON included; the old --out held
    # the Markdown / text parts beside a JSON document on stdout, and still does
    json_file = out if as_json else None
    if json_file is not None:
        out = None
    if old_out is not None:
        click.echo("warning: `diff --out` is deprecated; use `--output-file`", err=True)
        out = out or old_out
    # the report JSON carries: markdown parts unless text was asked for by the old spelling
    fmt = "text" if output == "text" or (as_json and fmt == "text") else "markdown"
    problems: list[Problem] = []
    if fmt == "markdown" and max_chars > GITHUB_COMMENT_LIMIT:
        message = f"parts of up to {max_chars} characters exceed GitHub's comment limit"
        problems.append(Problem("", "--max-chars", message, "warning"))
        if not as_json:
            click.echo(f"warning: {message}", err=True)
    try:
        report, hint = _build(base, head, rendered, repo, source_path, (base_label, head_label), context, cache)
        sink = WarningSink(quiet=quiet)
        if as_json:
            shown = sink.select(report.head.warnings, report.head.acknowledged, report.head.acknowledged_codes)
            problems += locate_warnings(shown, report.head.files) + locate_warnings(
                sink.acknowledged, report.head.files, acknowledged=True
            )
        else:
            sink.emit(
                report.head.warnings,
                lambda line: click.echo(line, err=True),
                report.head.acknowledged,
                "head: ",
                report.head.acknowledged_codes,
            )
        if fmt == "text":
            text = render_text(report, title, risk_lines(report), plan_text(report))
            parts = [text]
            if out is not None:
                write_text(out, text)
            elif not as_json:
                click.echo(text, nl=False)
            parts_note = ""
        else:
            parts = render_markdown(
                report, title=title, key=key, max_chars=max_chars, rerun_hint=hint, plan_blocks=plan_blocks(report)
            )
            if out is not None:
                write_parts(out, parts)
            elif not as_json:
                click.echo(f"\n{PART_SEPARATOR}\n".join(parts), nl=False)
            parts_note = f" in {len(parts)} part{'s' if len(parts) != 1 else ''}"
    except InvalidSidesError as exc:
        if as_json:
            problems += [from_input_problem(p, e.side) for e in exc.errors for p in e.error.problems]
            click.echo(json_document(False, problems))
        else:
            report_invalid(exc.errors)
        sys.exit(1)
    except GroveGitopsError as exc:
        if as_json:
            click.echo(json_document(False, [*problems, Problem("", "", str(exc), "error")]))
        else:
            click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    grouped = changes_per_cluster(report)
    if as_json:
        extra = {"clusters": {name: [s.shard for s in shards] for name, shards in grouped.items()}} if grouped else {}
        # structured keys (docs/diff.md); "diff" keeps the Markdown / text parts for older scripts
        structured = report_dict(report, *plan_document(report))
        document = json_document(True, problems, **extra, **structured, diff=None if out is not None else parts)
        if json_file is not None:
            write_text(json_file, document + "\n")
        else:
            click.echo(document)
        return
    where = f" to {out}" if out is not None else ""
    if report.identical:
        click.echo(f"no changes: {report.base.label} and {report.head.label} render identically{where}", err=True)
    else:
        totals = report.totals()
        click.echo(
            f"{len(report.shards)} shard(s) changed: {totals.added} added, {totals.removed} removed, "
            f"{totals.modified} modified, {totals.replaced} replaced{parts_note}{where}",
            err=True,
        )
        for name, shards in grouped.items():
            click.echo(f"  cluster {name}: {len(shards)} shard(s) changed", err=True)
