"""The Markdown form of the reports of ``validate``, ``render`` and ``feasibility``
(``--output markdown``): the same sections the PR comment shows, for a job summary or a
comment a workflow posts itself. ``diff`` and ``plan`` have their own Markdown views."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from grove_gitops.prcheck.sections import feasibility_blocks, problem_blocks
from grove_gitops.problems import Problem


def problems_markdown(title: str, summary: str, problems: Iterable[Problem]) -> str:
    """``## title``, the summary line, then the errors and the warnings as bullet lists, each
    with its ``file:line:col`` when known."""
    listed = list(problems)
    text = f"## {title}\n\n{summary}\n\n"
    for severity, heading in (("error", "### Errors"), ("warning", "### Warnings")):
        rows = [_row(p) for p in listed if p.severity == severity]
        if rows:
            text += "".join(b.text for b in problem_blocks(rows, heading))
    return text.rstrip("\n") + "\n"


def _row(p: Problem) -> dict[str, str]:
    where = p.file if p.line is None else f"{p.file}:{p.line}:{p.column or 1}"
    return {"file": where, "field": p.field, "message": p.message}


def feasibility_markdown(document: str, warnings: Sequence[Problem] = ()) -> str:
    """The gang-feasibility section of the PR comment, from ``feasibility --output json``'s document."""
    text = "".join(b.text for b in feasibility_blocks(json.loads(document)))
    if warnings:
        text += "".join(b.text for b in problem_blocks([_row(p) for p in warnings], "### Warnings"))
    return text.rstrip("\n") + "\n"
