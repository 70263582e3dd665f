"""Warnings a workload's owner has read: ``gitops.grove.io/acknowledge: CODE[,CODE]`` on a
PodCliqueSet (issue 34.10).

RenderConfiguration's ``acknowledgedWarnings`` (substrings, for the whole source) silences a
warning everywhere, for every workload, including ones nobody has read yet. The annotation
acknowledges one kind of warning (its code, ``grove_gitops.warningcodes``) for one workload:
a warning of its file and code is then reported once as acknowledged instead of as a warning,
on every run and in every PR check. Warnings are attributed to files, so a file that holds
several PodCliqueSets has a code acknowledged only when each of them acknowledges it: one
workload's annotation never hides another's warning.

The annotation is untrusted input like the rest of the source: its value is bounded, each
entry must be a code, and an unknown code is warned about with the one it likely misspells.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from grove_gitops.fields.fielderrors import go_value
from grove_gitops.fields.suggest import did_you_mean
from grove_gitops.load.source import Sourced
from grove_gitops.warningcodes import known_codes, parse_codes

ANNOTATION = "gitops.grove.io/acknowledge"
FIELD = f"metadata.annotations[{ANNOTATION}]"
#: Codes one annotation lists at most (there are a few dozen codes in all).
MAX_CODES = 50
#: Characters of the annotation's value read at most.
MAX_VALUE = 4_096

#: file -> the codes every PodCliqueSet of that file acknowledges.
WorkloadAcks = Mapping[str, frozenset[str]]


def _annotation(obj: Mapping[str, Any]) -> object:
    meta = obj.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    return annotations.get(ANNOTATION) if isinstance(annotations, dict) else None


def _codes(file: str, value: object, known: list[str]) -> tuple[set[str], list[str]]:
    """The codes of one annotation value, and warnings for what in it is no known code."""
    if value is None:
        return set(), []
    if not isinstance(value, str):
        return set(), [f"{file}: {FIELD}: must be a comma-separated list of warning codes; ignored"]
    if len(value) > MAX_VALUE:
        return set(), [f"{file}: {FIELD}: longer than {MAX_VALUE} characters; ignored"]
    codes, bad = parse_codes(value)
    warnings = [f"{file}: {FIELD}: {go_value(b[:100])} is not a warning code; ignored" for b in bad[:MAX_CODES]]
    if len(codes) > MAX_CODES:
        warnings.append(f"{file}: {FIELD}: lists {len(codes)} codes, at most {MAX_CODES} are read")
        codes = codes[:MAX_CODES]
    for code in codes:
        if code not in known:
            warnings.append(
                f"{file}: {FIELD}: {go_value(code)} is no warning code (docs/authoring.md lists them); ignored"
                + did_you_mean(code, known)
            )
    return {c for c in codes if c in known}, warnings


def workload_acknowledgements(podcliquesets: Iterable[Sourced[dict[str, Any]]]) -> tuple[dict[str, frozenset[str]], list[str]]:
    """file -> codes acknowledged by every PodCliqueSet of the file, and warnings about the
    annotations themselves (never acknowledgeable: they are about acknowledging)."""
    known = known_codes()
    per_file: dict[str, list[set[str]]] = {}
    warnings: list[str] = []
    for item in podcliquesets:
        codes, bad = _codes(item.file, _annotation(item.obj), known)
        warnings += bad
        per_file.setdefault(item.file, []).append(codes)
    acks = {file: frozenset(set.intersection(*sets)) for file, sets in per_file.items() if sets}
    return {file: codes for file, codes in acks.items() if codes}, warnings
