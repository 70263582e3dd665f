"""How the commands report problems: each distinct warning once per run, acknowledged
warnings silenced by ``-q``, and ``--output json`` for editors and CI annotations.

Warnings travel through the pipeline as ``file: field: message`` strings (the same shape as
:class:`~grove_gitops.errors.InputProblem`); this module turns them back into structured
problems for JSON and decides which ones a run prints.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from grove_gitops.errors import InputProblem

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Problem:
    """One line of ``--output json``: ``{file, field, message, severity}``, plus ``line`` and
    ``column`` (1-based) when the problem's position in its file is known."""

    file: str
    field: str
    message: str
    severity: Severity
    line: int | None = None
    column: int | None = None

    def as_dict(self) -> dict[str, str | int]:
        return {k: v for k, v in asdict(self).items() if v is not None}


def from_input_problem(problem: InputProblem, prefix: str = "") -> Problem:
    """An error of an invalid source tree; ``prefix`` names a diff side (``base``/``head``)."""
    message = f"{prefix}: {problem.message}" if prefix else problem.message
    return Problem(problem.file, problem.field, message, "error", problem.line, problem.column)


def from_warning(text: str) -> Problem:
    """Split a ``file: field: message`` warning; a part without a file or field stays empty.

    A field path never holds a space, so a second part with one is the message's start.
    """
    file, sep, rest = text.partition(": ")
    if not sep or " " in file:
        return Problem("", "", text, "warning")
    field_, sep, message = rest.partition(": ")
    if not sep or " " in field_:
        return Problem(file, "", rest, "warning")
    return Problem(file, field_, message, "warning")


def dedup_key(warning: str) -> str:
    """What makes two warnings the same one.

    A finding about the object in a file (field ``spec...`` / ``metadata...``) is distinct per
    file. A finding about shared configuration (``scheduler.profiles[...]...``, attributed to
    whichever PodCliqueSet first needed it) is one warning, whatever file it names: a
    ``watch`` re-render may attribute it to another file, and it must not print again.
    """
    problem = from_warning(warning)
    if problem.field and not problem.field.startswith(("spec", "metadata")):
        return f"{problem.field}: {problem.message}"
    return warning


def acknowledged(warning: str, acknowledgements: Iterable[str]) -> bool:
    """Whether RenderConfiguration's ``acknowledgedWarnings`` names this warning (a substring)."""
    return any(ack and ack in warning for ack in acknowledgements)


@dataclass
class WarningSink:
    """Prints each distinct warning once per run (``watch`` renders many times in one run).

    With ``quiet``, warnings whose text contains one of the acknowledged substrings are
    dropped; the others still print, since the user has not seen them yet.
    """

    quiet: bool = False
    seen: set[str] = field(default_factory=set)

    def select(self, warnings: Iterable[str], acknowledgements: Sequence[str] = ()) -> list[str]:
        """The warnings to show now: new this run and not silenced."""
        shown: list[str] = []
        for warning in warnings:
            key = dedup_key(warning)
            if key in self.seen:
                continue
            self.seen.add(key)
            if self.quiet and acknowledged(warning, acknowledgements):
                continue
            shown.append(warning)
        return shown

    def emit(
        self,
        warnings: Iterable[str],
        echo: Callable[[str], None],
        acknowledgements: Sequence[str] = (),
        prefix: str = "",
    ) -> list[str]:
        shown = self.select(warnings, acknowledgements)
        for warning in shown:
            echo(f"warning: {prefix}{warning}")
        return shown


def json_document(ok: bool, problems: Iterable[Problem], **extra: Any) -> str:
    """The one JSON document a command prints on stdout with ``--output json``."""
    data: dict[str, Any] = {"ok": ok, "problems": [p.as_dict() for p in problems]}
    data.update(extra)
    return json.dumps(data, indent=2, sort_keys=False)
