"""How the commands report problems: each distinct warning once per run, acknowledged
warnings silenced by ``-q``, and ``--output json`` for editors and CI annotations.

Warnings travel through the pipeline as ``file: field: message`` strings (the same shape as
:class:`~grove_gitops.errors.InputProblem`); this module turns them back into structured
problems for JSON and decides which ones a run prints.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from itertools import islice
from typing import Any, Literal

from grove_gitops.errors import InputProblem
from grove_gitops.warningcodes import UNCODED, code_of
from grove_gitops.yamlfiles.positions import FileData, locate

Severity = Literal["error", "warning"]

#: Problems reported for one document at most; the rest are counted in one closing line.
#: 50,000 unknown keys are not 50,000 things to fix, and listing them (each with its
#: position and a suggestion) made one crafted file cost minutes in every command that
#: validates, the controller's and agent's included.
MAX_PROBLEMS_PER_DOCUMENT = 100


def more_problems(file: str, count: int, document: str = "") -> InputProblem:
    """The line that stands for ``count`` problems of a document left unlisted; ``document``
    names it (``PodCliqueSet ns/name``, ``document 2``) so that two capped documents of one
    file give two lines."""
    where = document or "this document"
    return InputProblem(
        file, "", f"and {count} more problems in {where} (only the first {MAX_PROBLEMS_PER_DOCUMENT} are listed)"
    )


_MORE = re.compile(rf"^and ([0-9]+) more problems in .* \(only the first {MAX_PROBLEMS_PER_DOCUMENT} are listed\)$")


def unlisted(problem: InputProblem) -> int:
    """How many problems a :func:`more_problems` line stands for (0 for any other problem)."""
    match = _MORE.match(problem.message) if not problem.field else None
    return int(match.group(1)) if match else 0


def cap_document(file: str, problems: Iterable[InputProblem], document: str = "") -> list[InputProblem]:
    """The first :data:`MAX_PROBLEMS_PER_DOCUMENT` of one document's ``problems`` and, when
    there were more, one :func:`more_problems` line. Past the cap a problem is only counted:
    it is never kept, placed in its file (``yamlfiles.positions``) or printed."""
    it = iter(problems)
    kept = list(islice(it, MAX_PROBLEMS_PER_DOCUMENT))
    rest = sum(1 for _ in it)
    return [*kept, more_problems(file, rest, document)] if rest else kept


def document_name(data: object, index: int | None = None) -> str:
    """How a capped document is named: ``Kind namespace/name`` as far as the document says,
    else ``document N`` of its file (``index`` from 0), else nothing."""
    if isinstance(data, dict):
        kind, meta = data.get("kind"), data.get("metadata")
        name = meta.get("name") if isinstance(meta, dict) else None
        ns = meta.get("namespace") if isinstance(meta, dict) else None
        if isinstance(kind, str) and isinstance(name, str) and name:
            return f"{kind} {ns}/{name}" if isinstance(ns, str) and ns else f"{kind} {name}"
    return f"document {index + 1}" if index is not None else ""


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
    #: A warning's stable code (``grove_gitops.warningcodes``), and True when its workload
    #: acknowledges that code (``gitops.grove.io/acknowledge``): shown as acknowledged, not
    #: as a warning.
    code: str | None = None
    acknowledged: bool | None = None

    def as_dict(self) -> dict[str, str | int | bool]:
        return {k: v for k, v in asdict(self).items() if v is not None}


def from_input_problem(problem: InputProblem, prefix: str = "") -> Problem:
    """An error of an invalid source tree; ``prefix`` names a diff side (``base``/``head``)."""
    message = f"{prefix}: {problem.message}" if prefix else problem.message
    return Problem(problem.file, problem.field, message, "error", problem.line, problem.column)


def from_warning(text: str, acknowledged: bool = False) -> Problem:
    """Split a ``file: field: message`` warning; a part without a file or field stays empty.

    A field path never holds a space, so a second part with one is the message's start.
    """
    code, ack = code_of(text), (True if acknowledged else None)
    file, sep, rest = text.partition(": ")
    if not sep or " " in file:
        return Problem("", "", text, "warning", code=code, acknowledged=ack)
    field_, sep, message = rest.partition(": ")
    if not sep or " " in field_:
        return Problem(file, "", rest, "warning", code=code, acknowledged=ack)
    return Problem(file, field_, message, "warning", code=code, acknowledged=ack)


def workload_code(warning: str, codes: Mapping[str, frozenset[str]]) -> str | None:
    """The code of ``warning`` when the PodCliqueSets of its file acknowledge it (their
    ``gitops.grove.io/acknowledge`` annotation, ``validation.acknowledge``), else None."""
    if not codes:
        return None
    file = from_warning(warning).file
    acked = codes.get(file)
    if not acked:
        return None
    code = code_of(warning)
    return code if code in acked else None


def locate_warnings(warnings: Iterable[str], files: Mapping[str, FileData], acknowledged: bool = False) -> list[Problem]:
    """Warnings as JSON problems with their ``line`` and ``column``, found in ``files`` (the
    source's display name → file) by the lookup errors use (:mod:`grove_gitops.yamlfiles.positions`):
    an editor or a CI annotation places a warning as it places an error."""
    parsed = [from_warning(w, acknowledged) for w in warnings]
    located = locate([InputProblem(p.file, p.field, p.message) for p in parsed], files)
    return [replace(p, line=q.line, column=q.column) for p, q in zip(parsed, located, strict=True)]


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
    #: Warnings their workload acknowledges (by code), new this run: reported once as
    #: acknowledged, never as warnings.
    acknowledged: list[str] = field(default_factory=list)

    def select(
        self,
        warnings: Iterable[str],
        acknowledgements: Sequence[str] = (),
        codes: Mapping[str, frozenset[str]] | None = None,
    ) -> list[str]:
        """The warnings to show now: new this run and not silenced. ``codes`` (file -> codes
        its workloads acknowledge) moves a warning to :attr:`acknowledged` instead."""
        shown: list[str] = []
        for warning in warnings:
            key = dedup_key(warning)
            if key in self.seen:
                continue
            self.seen.add(key)
            if workload_code(warning, codes or {}) is not None:
                self.acknowledged.append(warning)
                continue
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
        codes: Mapping[str, frozenset[str]] | None = None,
    ) -> list[str]:
        """Print the new warnings (with their code, to acknowledge them by) and, but with
        ``quiet``, the newly acknowledged ones once, as acknowledged."""
        before = len(self.acknowledged)
        shown = self.select(warnings, acknowledgements, codes)
        for warning in shown:
            code = code_of(warning)
            echo(f"warning: {prefix}{warning}" + (f" [{code}]" if code != UNCODED else ""))
        if not self.quiet:
            for warning in self.acknowledged[before:]:
                echo(f"acknowledged [{code_of(warning)}]: {prefix}{warning}")
        return shown


#: The version of every ``--output json`` document (``schemaVersion``): it changes when a key
#: is removed or changes meaning, never when one is added (docs/schemas/, docs/cli.md).
SCHEMA_VERSION = 1


def json_document(ok: bool, problems: Iterable[Problem], **extra: Any) -> str:
    """The one JSON document a command prints on stdout with ``--output json``: ``ok``,
    ``schemaVersion`` and ``problems`` first, in every command's document."""
    data: dict[str, Any] = {"ok": ok, "schemaVersion": SCHEMA_VERSION, "problems": [p.as_dict() for p in problems]}
    data.update(extra)
    return json.dumps(data, indent=2, sort_keys=False)
