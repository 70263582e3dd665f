"""The plan laid out for a terminal (text), a PR comment (Markdown) and tools (JSON).

Every format prints the same facts from one :class:`~grove_gitops.plan.model.Plan`: per
PodCliqueSet the strategy, the steps in execution order, the most slots down at once, the
fields forcing the restart, and the scale-out / scale-in slots (which are not steps).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from grove_gitops.diff.markdown import code
from grove_gitops.diff.mdescape import md_text
from grove_gitops.diff.split import Block, shrink_lines
from grove_gitops.plan.model import Plan, PodCliqueSetPlan

PLAN_HEADING = "### Rollout plan"
#: Groups the plan's blocks, so a comment part that opens inside the plan says where it is.
PLAN_SECTION = "rollout plan"
PLAN_CONTINUATION = f"{PLAN_HEADING} (continued)\n\n"
#: Above this many steps a PodCliqueSet's step table is collapsed in the Markdown.
COLLAPSE_STEPS = 10
ADDED_NOTE = "scale-out; released as their gang allows"
REMOVED_NOTE = "scale-in; deleted by the agent after its grace period"
INTRO = (
    "The order in which the in-cluster agent replaces pods after the merge: one step at a time, "
    "the next when the step's replacements are Ready (every replica assumed healthy)."
)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def summary(p: PodCliqueSetPlan) -> str:
    """``RollingRecreate; 12 pods replaced in 7 steps; at most 4 unavailable at once``."""
    parts = [p.strategy]
    if p.change != "modified":
        parts.append(f"PodCliqueSet {p.change}")
    if p.changed:
        replaced = f"{_plural(len(p.changed), 'pod')} replaced"
        if p.steps:
            replaced += f" in {_plural(len(p.steps), 'step')}; at most {p.max_unavailable} unavailable at once"
        parts.append(replaced)
    if p.added:
        parts.append(f"{len(p.added)} added")
    if p.removed:
        parts.append(f"{len(p.removed)} removed")
    return "; ".join(parts)


def grouped_fields(p: PodCliqueSetPlan) -> list[tuple[tuple[str, ...], list[str]]]:
    """PodCliques sharing the same restart fields, so 12 cliques with one image bump read as one line."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for clique, paths in p.restart_fields.items():
        groups.setdefault(paths, []).append(clique)
    return sorted(groups.items())


# -- text -------------------------------------------------------------------------------


def _pcs_text(p: PodCliqueSetPlan) -> list[str]:
    lines = [f"{p.title}: {summary(p)}"]
    if p.restart_fields:
        lines.append("  Restart forced by:")
        for paths, cliques in grouped_fields(p):
            lines.append(f"    {', '.join(paths)}  (PodCliques: {', '.join(cliques)})")
    if p.steps:
        lines.append("  Steps:")
        width = len(str(len(p.steps)))
        for i, s in enumerate(p.steps, start=1):
            lines.append(f"    {i:>{width}}. replica {s.replica}, {s.unit}: {', '.join(s.hostnames)}")
    if p.added:
        lines.append(f"  Added ({ADDED_NOTE}): {', '.join(p.added)}")
    if p.removed:
        lines.append(f"  Removed ({REMOVED_NOTE}): {', '.join(p.removed)}")
    if p.message:
        lines.append(f"  Note: {p.message}")
    return lines


def render_text(plan: Plan, base_label: str, head_label: str) -> str:
    lines = [f"grove-gitops rollout plan: base {base_label} -> head {head_label}", ""]
    if not plan.podcliquesets:
        lines.append("No PodCliqueSet changes: nothing to roll out.")
    for p in plan.podcliquesets:
        lines += _pcs_text(p)
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


# -- JSON -------------------------------------------------------------------------------


def pcs_dict(p: PodCliqueSetPlan) -> dict[str, Any]:
    """One entry of ``{"podcliquesets": [...]}``: the issue's keys first, then the details."""
    return {
        "namespace": p.namespace,
        "name": p.name,
        "strategy": p.strategy,
        "steps": [{"replica": s.replica, "pods": list(s.hostnames)} for s in p.steps],
        "change": p.change,
        "maxUnavailable": p.max_unavailable,
        "restartFields": {clique: list(paths) for clique, paths in p.restart_fields.items()},
        "changed": list(p.changed),
        "added": list(p.added),
        "removed": list(p.removed),
        "message": p.message,
    }


def render_json(plan: Plan) -> str:
    return json.dumps({"podcliquesets": [pcs_dict(p) for p in plan.podcliquesets]}, indent=2)


# -- Markdown ---------------------------------------------------------------------------


def _list(names: tuple[str, ...], fmt: Callable[[str], str]) -> str:
    return ", ".join(fmt(n) for n in names)


def _steps_table(p: PodCliqueSetPlan, shown: int | None = None) -> list[str]:
    """The steps as a table, collapsed above :data:`COLLAPSE_STEPS`; ``shown`` keeps only the
    first rows (a plan too long for one comment) and says how many were left out."""
    steps = p.steps if shown is None else p.steps[:shown]
    rows = ["| step | replica | unit | pods retired together |", "| --- | --- | --- | --- |"]
    for i, s in enumerate(steps, start=1):
        rows.append(f"| {i} | {s.replica} | {code(s.unit)} | {_list(s.hostnames, code)} |")
    if len(steps) < len(p.steps):
        rows += ["", f"⚠️ {len(p.steps) - len(steps)} more steps not shown: run {code('grove-gitops plan')} for all."]
    if len(p.steps) <= COLLAPSE_STEPS:
        return [*rows, ""]
    return [f"<details><summary>{len(p.steps)} steps</summary>", "", *rows, "", "</details>", ""]


def pcs_markdown(p: PodCliqueSetPlan, shown: int | None = None) -> str:
    """One PodCliqueSet's part of the plan (an indivisible block of the PR comment)."""
    lines = [f"**{code(p.title)}** · {summary(p)}", ""]
    for paths, cliques in grouped_fields(p):
        lines.append(f"- **Restart forced by** {_list(paths, code)} in {_list(tuple(cliques), code)}")
    if p.added:
        lines.append(f"- **Added** ({ADDED_NOTE}): {_list(p.added, code)}")
    if p.removed:
        lines.append(f"- **Removed** ({REMOVED_NOTE}): {_list(p.removed, code)}")
    if p.message:
        lines.append(f"- {p.message}")  # our own words and counts
    if lines[-1]:
        lines.append("")
    if p.steps:
        lines += _steps_table(p, shown)
    return "\n".join(lines) + "\n"


def _block(p: PodCliqueSetPlan) -> Block:
    def shrink(budget: int) -> str:
        """The most step rows that fit, the table still closed (never half a ``<details>``)."""
        lo, hi = 0, len(p.steps)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if len(pcs_markdown(p, mid)) <= budget:
                lo = mid
            else:
                hi = mid - 1
        text = pcs_markdown(p, lo)
        return text if len(text) <= budget else shrink_lines(text, budget)

    return Block(pcs_markdown(p), PLAN_SECTION, PLAN_CONTINUATION, shrink)


def markdown_blocks(plan: Plan) -> list[Block]:
    """The plan as blocks of ``diff``'s PR comment: the heading with the intro, then one per
    PodCliqueSet (a long plan may span parts). Empty when no PodCliqueSet changes, so an
    unchanged diff gets no section."""
    if not plan.podcliquesets:
        return []
    head = Block(f"{PLAN_HEADING}\n\n{INTRO}\n\n", PLAN_SECTION, PLAN_CONTINUATION)
    return [head, *(_block(p) for p in plan.podcliquesets)]


def unavailable_block(reason: str) -> Block:
    """What the section says when a side cannot be planned (the diff itself still runs)."""
    # the reason can quote the PR's hostnames and annotations: inert text (diff.mdescape)
    return Block(f"{PLAN_HEADING}\n\n⚠️ No rollout plan: {md_text(reason)}\n\n", PLAN_SECTION, PLAN_CONTINUATION)
