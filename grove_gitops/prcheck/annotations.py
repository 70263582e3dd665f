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
from pathlib import Path
from typing import Any

from grove_gitops.prcheck.lines import line_in_file
from grove_gitops.prcheck.workflow import command

TITLE = "grove-gitops validate"


def annotation(problem: Mapping[str, Any], source_root: Path, source_path: str) -> str:
    """The workflow command for one problem of the JSON document."""
    severity = "warning" if problem.get("severity") == "warning" else "error"
    file = str(problem.get("file") or "")
    field = str(problem.get("field") or "")
    message = str(problem.get("message") or "")
    text = f"{field}: {message}" if field else message
    props: dict[str, str | int | None] = {"title": TITLE}
    if file:
        prefix = source_path.strip().strip("/")
        repo_path = posixpath.normpath(posixpath.join(prefix, file)) if prefix not in ("", ".") else file
        given = problem.get("line")
        line = given if isinstance(given, int) and given > 0 else line_in_file(source_root / file, field)
        props = {
            "file": repo_path,
            "line": line,
            "title": f"{TITLE}: {field}" if field else TITLE,
        }
    return command(severity, text, props)


def to_annotations(problems: Iterable[Mapping[str, Any]], source_root: Path, source_path: str) -> list[str]:
    return [annotation(p, source_root, source_path) for p in problems]
