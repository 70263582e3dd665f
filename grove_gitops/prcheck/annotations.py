"""``validate --output json`` problems → check annotations on the source lines.

Each problem becomes ``::error file=<path in the repository>,line=<n>,title=...::<message>``
(``::warning`` for warnings), so GitHub shows it on the PR's *Files changed* tab next to the
line at fault. Paths in the JSON are relative to the source tree; the annotation needs them
relative to the repository root, hence ``source_path``. Lines are looked up in the tree the
problems came from (``source_root``: head's source tree as extracted from git), unless the
problem carries a ``line`` of its own.

GitHub shows at most 10 error and 10 warning annotations per step (50 per job); the rest are
still in the log, and every error is listed in the PR comment when head does not render.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from grove_gitops.prcheck.lines import line_in_documents, read_documents
from grove_gitops.prcheck.workflow import command

TITLE = "grove-gitops validate"


def _repo_path(file: str, source_path: str) -> str:
    prefix = source_path.strip().strip("/")
    return posixpath.normpath(posixpath.join(prefix, file)) if prefix not in ("", ".") else file


def _inside(file: str) -> bool:
    """A relative path that stays in the tree (the JSON names files relative to it)."""
    parts = PurePosixPath(file).parts
    return bool(parts) and not PurePosixPath(file).is_absolute() and ".." not in parts and "\0" not in file


def _given_line(problem: Mapping[str, Any]) -> int | None:
    given = problem.get("line")
    return given if isinstance(given, int) and not isinstance(given, bool) and given > 0 else None


def annotation(problem: Mapping[str, Any], source_root: Path, source_path: str, line: int | None = None) -> str:
    """The workflow command for one problem of the JSON document; ``line`` when the caller
    already looked it up (else the problem's own, else found in its file)."""
    severity = "warning" if problem.get("severity") == "warning" else "error"
    file = str(problem.get("file") or "")
    field = str(problem.get("field") or "")
    message = str(problem.get("message") or "")
    text = f"{field}: {message}" if field else message
    props: dict[str, str | int | None] = {"title": TITLE}
    if file:
        if line is None:
            line = _given_line(problem)
        if line is None:
            line = line_in_documents(read_documents(source_root / file), field) if _inside(file) else 1
        props = {
            "file": _repo_path(file, source_path),
            "line": line,
            "title": f"{TITLE}: {field}" if field else TITLE,
        }
    return command(severity, text, props)


def to_annotations(problems: Iterable[Mapping[str, Any]], source_root: Path, source_path: str) -> list[str]:
    """Every problem's command, in order. Each file is read and parsed once for all of its
    problems, and only one file's node tree is held at a time."""
    listed = list(problems)
    by_file: dict[str, list[int]] = {}
    for i, p in enumerate(listed):
        file = str(p.get("file") or "")
        if file and _given_line(p) is None:
            by_file.setdefault(file, []).append(i)
    lines: dict[int, int] = {}
    for file, indices in by_file.items():
        documents = read_documents(source_root / file) if _inside(file) else 1
        for i in indices:
            lines[i] = line_in_documents(documents, str(listed[i].get("field") or ""))
    return [annotation(p, source_root, source_path, lines.get(i)) for i, p in enumerate(listed)]
