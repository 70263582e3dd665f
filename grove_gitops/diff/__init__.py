"""``grove-gitops diff``: the PR-review view of a source change (DESIGN.md, spec/gitops.md §4).

Pipeline: two sides (:mod:`.sides`: source trees rendered in memory, rendered trees, or
source trees read at git refs by :mod:`.gitrefs`) → objects keyed by shard and identity
(:mod:`.model`) → object changes with replaced pods paired → a per-shard semantic summary
driven by well-known field names (:mod:`.semantic`) and unified diffs (:mod:`.unified`) →
Markdown split into comment-sized parts (:mod:`.markdown`, :mod:`.split`) or plain text
(:mod:`.text`).
"""

from __future__ import annotations

from grove_gitops.diff.errors import DiffError, GitRefError, SideInvalidError
from grove_gitops.diff.markdown import MARKER, PART_SEPARATOR, render_markdown
from grove_gitops.diff.model import Change, ChangeType, ObjectKey, TreeObject, compare, load_objects, read_tree
from grove_gitops.diff.report import Report, Side, build_report
from grove_gitops.diff.text import render_text

__all__ = [
    "MARKER",
    "PART_SEPARATOR",
    "Change",
    "ChangeType",
    "DiffError",
    "GitRefError",
    "ObjectKey",
    "Report",
    "Side",
    "SideInvalidError",
    "TreeObject",
    "build_report",
    "compare",
    "load_objects",
    "read_tree",
    "render_markdown",
    "render_text",
]
