"""Gitignore-style patterns from untrusted files, matched in linear time.

Patterns reach us from the source repository (``.grove-gitops-ignore``) and from fleet
Cluster files (``spec.workloads.paths``); whoever opens a pull request writes them. pathspec's
default backend compiles each pattern to a Python regular expression, which backtracks:
``*a*a*a*a*a*ab`` against one 200-character file name ran for minutes. RE2 (google-re2,
pathspec's ``re2`` extra) matches in time linear in the path, whatever the pattern, so no
pattern needs to be refused for its shape. The backend is named explicitly: a missing RE2 is
an import error when the first patterns are read, never a silent fall back to the backtracking
engine. (Imported only then: a render without patterns starts without pathspec.)
"""

from __future__ import annotations

from collections.abc import Iterable

import pathspec

BACKEND = "re2"


def gitignore_spec(lines: Iterable[str]) -> pathspec.GitIgnoreSpec:
    """A :class:`pathspec.GitIgnoreSpec` of ``lines`` that matches without backtracking."""
    return pathspec.GitIgnoreSpec.from_lines(lines, backend=BACKEND)
