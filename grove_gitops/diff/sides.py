"""Turn what the user pointed at (source trees, rendered trees, git refs) into diff sides.

Source trees are rendered in memory with the same pipeline as ``render``
(:func:`plan_source` then :func:`build_tree_from_plan`), so the diff shows exactly the bytes
``render`` would write — including file names, waves and GitOps annotations. Both sides go
through one render cache (issue 14): a PodCliqueSet equal on both sides is rendered once,
and with ``--cache-dir`` not at all when an earlier run rendered it.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from grove_gitops.cache import RenderCache
from grove_gitops.diff.errors import SideInvalidError
from grove_gitops.diff.gitrefs import Extracted, extract, open_repo
from grove_gitops.diff.model import ParseMemo, load_objects, read_tree
from grove_gitops.diff.report import Side
from grove_gitops.errors import InvalidInputError
from grove_gitops.output.layout import build_tree_from_plan
from grove_gitops.render import plan_source


def side_from_source(
    root: Path, label: str, side: str, cache: RenderCache | None = None, memo: ParseMemo | None = None
) -> Side:
    """Render ``root``; an invalid tree raises :class:`SideInvalidError` naming ``side``.

    ``cache`` (shared by both sides) reuses rendered PodCliqueSets; ``memo`` reuses the
    parsed objects of files whose bytes the other side already had.
    """
    try:
        plan = plan_source(root, cache)
        tree = build_tree_from_plan(plan, cache)
    except InvalidInputError as exc:
        raise SideInvalidError(side, label, exc) from exc
    return Side(
        label,
        load_objects(tree.files, memo),
        list(tree.warnings),
        list(plan.config.acknowledgedWarnings),
        {item.key: item.update_strategy for item in plan.items},
    )


def side_from_rendered(root: Path, label: str) -> Side:
    return Side(label, load_objects(read_tree(root)))


@contextmanager
def extracted_refs(
    repo_path: Path, base_ref: str, head_ref: str, source_path: str
) -> Iterator[tuple[Extracted, Extracted]]:
    """Both refs' source trees in a temporary directory that is removed afterwards."""
    repo = open_repo(repo_path)
    try:
        with tempfile.TemporaryDirectory(prefix="grove-gitops-diff-") as tmp:
            base = extract(repo, base_ref, source_path, Path(tmp) / "base")
            head = extract(repo, head_ref, source_path, Path(tmp) / "head")
            yield base, head
    finally:
        repo.close()
