"""Both sides of a review, loaded the way ``diff``, ``plan`` and the PR check name them.

Kept out of the CLI so the PR check's composer (:mod:`grove_gitops.prcheck.compose`) and the
commands share one implementation: two source trees rendered in memory, two rendered trees,
or two git refs of a repository read from its object database. It sits above both ``diff`` and
``plan`` (it asks each for its part), outside either package, so neither imports the other back.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from grove_gitops.cache import RenderCache
from grove_gitops.diff.errors import DiffError, SideInvalidError
from grove_gitops.diff.report import Report, Side
from grove_gitops.diff.sides import PlannedSource, extracted_refs, pair_sources, plan_side, side_from_rendered
from grove_gitops.diff.split import Block
from grove_gitops.load.memory import MemorySource
from grove_gitops.plan.clusters import build_fleet_plan
from grove_gitops.plan.formats import markdown_blocks, plan_dict, render_text, unavailable_block
from grove_gitops.plan.model import PlanError


class InvalidSidesError(DiffError):
    """One or both source trees are invalid; carries every side's problems so both are
    reported before the command exits."""

    def __init__(self, errors: list[SideInvalidError]) -> None:
        self.errors = errors
        super().__init__("\n".join(str(e) for e in errors))


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


def plan_blocks(report: Report) -> list[Block]:
    """The rollout plan for the Markdown report; a rendered side the plan cannot read (a
    malformed day-2 annotation) costs the section, not the diff."""
    try:
        return markdown_blocks(build_fleet_plan(report.base, report.head))
    except PlanError as exc:
        return [unavailable_block(str(exc))]


def plan_text(report: Report) -> str:
    """The rollout plan for ``diff --output text`` (``plan``'s text), or one line saying why
    there is none: the terminal view carries the plan as the Markdown does."""
    try:
        return render_text(build_fleet_plan(report.base, report.head), report.base.label, report.head.label)
    except PlanError as exc:
        return f"No rollout plan: {exc}\n"


def plan_document(report: Report) -> tuple[dict[str, Any] | None, str]:
    """The rollout plan for ``diff --output json`` (``plan --output json``'s document), or None
    and why it could not be computed."""
    try:
        return plan_dict(build_fleet_plan(report.base, report.head)), ""
    except PlanError as exc:
        return None, str(exc)


def risk_lines(report: Report) -> list[str]:
    """The rollout's risks in plain words (every OUTAGE and STRANDED gang of the plan, titled
    by PodCliqueSet) for the terminal view; none when the plan cannot be computed (the
    Markdown and JSON say why)."""
    try:
        plan = build_fleet_plan(report.base, report.head)
    except PlanError:
        return []
    return [f"{p.title}: {o.sentence()}" for p, o in plan.outages] + [
        f"{p.title}: {g.sentence()}" for p, g in plan.stranded
    ]
