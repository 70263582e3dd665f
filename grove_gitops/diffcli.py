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

This module only exposes :data:`diff_command`; ``cli.py`` registers it.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import click

from grove_gitops.cache import RenderCache
from grove_gitops.cliopts import cache_options, open_cache, output_option
from grove_gitops.diff.autoscaling import shard_dict
from grove_gitops.diff.errors import DiffError, SideInvalidError
from grove_gitops.diff.markdown import (
    DEFAULT_KEY,
    DEFAULT_MAX_CHARS,
    DEFAULT_TITLE,
    GITHUB_COMMENT_LIMIT,
    MARKER,
    PART_SEPARATOR,
    render_markdown,
)
from grove_gitops.diff.report import Report, Side, build_report
from grove_gitops.diff.sides import PlannedSource, extracted_refs, pair_sources, plan_side, side_from_rendered
from grove_gitops.diff.split import Block
from grove_gitops.diff.text import render_text
from grove_gitops.diff.unified import DEFAULT_CONTEXT
from grove_gitops.errors import GroveGitopsError
from grove_gitops.fleet.diff import build_fleet_plan, changes_per_cluster
from grove_gitops.load.memory import MemorySource
from grove_gitops.plan.formats import markdown_blocks, unavailable_block
from grove_gitops.plan.model import PlanError
from grove_gitops.problems import Problem, WarningSink, from_input_problem, from_warning, json_document

_KEY_RE = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


def part_path(out: Path, i: int) -> Path:
    """``diff.md`` → ``diff.1.md``; a name without ``.md`` gets ``.<i>.md`` appended."""
    stem = out.name[: -len(".md")] if out.name.endswith(".md") else out.name
    return out.with_name(f"{stem}.{i}.md")


def _write(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise DiffError(f"{path}: cannot write: {exc}") from exc


def write_parts(out: Path, parts: list[str]) -> list[Path]:
    """Write every part to its own file and all of them (separated) to ``out``.

    Part files left over from an earlier, longer run are deleted — but only files that
    start with our marker, so a user's unrelated ``notes.3.md`` survives.
    """
    _write(out, f"\n{PART_SEPARATOR}\n".join(parts))
    written = []
    for i, text in enumerate(parts, start=1):
        path = part_path(out, i)
        _write(path, text)
        written.append(path)
    stem = part_path(out, 0).name[: -len(".0.md")]
    numbered = re.compile(rf"^{re.escape(stem)}\.(\d+)\.md$")
    for stale in sorted(out.parent.iterdir()):
        match = numbered.match(stale.name)
        if match is None or int(match.group(1)) <= len(parts) or not stale.is_file():
            continue
        try:
            if stale.read_text(encoding="utf-8").startswith(MARKER):
                stale.unlink()
        except (OSError, UnicodeDecodeError) as exc:
            raise DiffError(f"{stale}: cannot remove the stale part: {exc}") from exc
    return written


class InvalidSidesError(DiffError):
    """One or both source trees are invalid; carries every side's problems so both are
    reported before the command exits."""

    def __init__(self, errors: list[SideInvalidError]) -> None:
        self.errors = errors
        super().__init__("\n".join(str(e) for e in errors))


def report_invalid(errors: list[SideInvalidError]) -> None:
    """Every problem of every invalid side, ``error: <side>: file: field: message``."""
    for err in errors:
        for problem in err.error.problems:
            click.echo(f"error: {err.side}: {problem}", err=True)
    for err in errors:
        n = len(err.error.problems)
        click.echo(f"{n} error{'s' if n != 1 else ''} in {err.side} ({err.label}); nothing was compared", err=True)


def _render_sides(
    base: Path | MemorySource,
    head: Path | MemorySource,
    base_label: str,
    head_label: str,
    cache: RenderCache | None = None,
) -> tuple[Side, Side]:
    """Render both source trees, collecting the problems of both before giving up.

    One render cache serves both sides, so a PodCliqueSet equal on both is rendered once (or
    comes from ``--cache-dir``), and a file equal on both is parsed once.
    """
    planned: list[PlannedSource] = []
    errors: list[SideInvalidError] = []
    cache = cache if cache is not None else RenderCache()
    cache.start()
    try:
        for path, label, name in ((base, base_label, "base"), (head, head_label, "head")):
            try:
                planned.append(plan_side(path, label, name, cache))
            except SideInvalidError as exc:
                errors.append(exc)
        if errors:
            raise InvalidSidesError(errors)
        return pair_sources(planned[0], planned[1], cache)
    finally:
        cache.finish()


def load_sides(
    base: str,
    head: str,
    rendered: bool,
    repo: Path | None,
    source_path: str | None,
    labels: tuple[str | None, str | None],
    cache: RenderCache | None = None,
) -> tuple[Side, Side, str]:
    """Both sides as ``diff`` and ``plan`` name them, and the arguments that name them again
    (for a re-run hint: short SHAs in ``--repo`` mode, so the hint stays valid after a push)."""
    if repo is not None:
        with extracted_refs(repo, base, head, source_path or ".") as (b, h):
            sides = _render_sides(b.source, h.source, labels[0] or b.label, labels[1] or h.label, cache)
            sp = f" --source-path {source_path}" if source_path else ""
            return sides[0], sides[1], f"--repo . {b.sha[:12]} {h.sha[:12]}{sp}"
    if rendered:
        return (
            side_from_rendered(Path(base), labels[0] or base),
            side_from_rendered(Path(head), labels[1] or head),
            f"--rendered {base} {head}",
        )
    sides = _render_sides(Path(base), Path(head), labels[0] or base, labels[1] or head, cache)
    return sides[0], sides[1], f"{base} {head}"


def side_cache(
    cache_dir: Path | None, cache_max_mb: int, base: str, head: str, rendered: bool, repo: Path | None
) -> RenderCache | None:
    """The cache ``--cache-dir`` names for ``diff`` and ``plan`` (never inside a source)."""
    if cache_dir is None or rendered:
        return None
    sources = [repo] if repo is not None else [Path(base), Path(head)]
    return open_cache(cache_dir, cache_max_mb, not_inside=sources)


def plan_blocks(report: Report) -> list[Block]:
    """The rollout plan for the Markdown report; a rendered side the plan cannot read (a
    malformed day-2 annotation) costs the section, not the diff."""
    try:
        return markdown_blocks(build_fleet_plan(report.base, report.head))
    except PlanError as exc:
        return [unavailable_block(str(exc))]


def check_modes(rendered: bool, repo: Path | None, source_path: str | None) -> None:
    """The usage rules of the side options, shared by ``diff`` and ``plan`` (exit 2)."""
    if rendered and repo is not None:
        raise click.UsageError("--rendered and --repo exclude each other")
    if source_path is not None and repo is None:
        raise click.UsageError("--source-path needs --repo")


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
    return build_report(base_side, head_side, context), f"grove-gitops diff {args} --format text"


@click.command("diff")
@click.argument("base")
@click.argument("head")
@click.option("--rendered", is_flag=True, help="BASE and HEAD are rendered output trees, not source trees.")
@click.option(
    "--repo",
    type=click.Path(path_type=Path, file_okay=False),
    help="Read the source trees at the git refs BASE and HEAD of this repository.",
)
@click.option("--source-path", help="With --repo: the source tree's path inside the repository (default: its root).")
@click.option(
    "--format", "fmt", type=click.Choice(["markdown", "text"]), default="markdown", show_default=True, help="Output."
)
@click.option(
    "--out",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Write here instead of stdout; Markdown parts also go to OUT-stem.1.md, .2.md, ...",
)
@click.option(
    "--max-chars",
    type=click.IntRange(min=2000),
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
@output_option(", and the diff")
@cache_options
def diff_command(
    base: str,
    head: str,
    rendered: bool,
    repo: Path | None,
    source_path: str | None,
    fmt: str,
    out: Path | None,
    max_chars: int,
    title: str,
    key: str,
    base_label: str | None,
    head_label: str | None,
    context: int,
    quiet: bool,
    output: str,
    cache_dir: Path | None,
    cache_max_mb: int,
) -> None:
    """Show what changes between the rendered output of BASE and HEAD (PR review)."""
    check_modes(rendered, repo, source_path)
    cache = side_cache(cache_dir, cache_max_mb, base, head, rendered, repo)
    if not _KEY_RE.match(key):
        raise click.BadParameter("letters, digits, '.', '_' and '-' only (at most 64)", param_hint="--key")
    as_json = output == "json"
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
            shown = sink.select(report.head.warnings, report.head.acknowledged)
            problems += [from_warning(w) for w in shown]
        else:
            sink.emit(report.head.warnings, lambda line: click.echo(line, err=True), report.head.acknowledged, "head: ")
        if fmt == "text":
            text = render_text(report, title)
            parts = [text]
            if out is not None:
                _write(out, text)
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
        totals = report.totals()
        extra = {"clusters": {name: [s.shard for s in shards] for name, shards in grouped.items()}} if grouped else {}
        click.echo(
            json_document(
                True,
                problems,
                **extra,
                identical=report.identical,
                totals={
                    "added": totals.added,
                    "removed": totals.removed,
                    "modified": totals.modified,
                    "replaced": totals.replaced,
                },
                autoscaling=[shard_dict(s.shard, s.autoscaling) for s in report.shards if s.autoscaling is not None],
                diff=None if out is not None else parts,
            )
        )
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
