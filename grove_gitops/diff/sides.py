"""Turn what the user pointed at (source trees, rendered trees, git refs) into diff sides.

Source trees are rendered in memory with the same pipeline as ``render``
(:func:`render_source_tree`: one tree, or one per cluster of a fleet), so the diff shows exactly the bytes
``render`` would write — including file names, waves and GitOps annotations.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from grove_gitops.diff.errors import SideInvalidError
from grove_gitops.diff.gitrefs import Extracted, extract, open_repo
from grove_gitops.diff.model import load_objects, read_tree
from grove_gitops.diff.report import Side
from grove_gitops.errors import InvalidInputError
from grove_gitops.fleet.output import render_source_tree


def side_from_source(root: Path, label: str, side: str) -> Side:
    """Render ``root``; an invalid tree raises :class:`SideInvalidError` naming ``side``."""
    try:
        outcome = render_source_tree(root, feasibility=side == "head")
    except InvalidInputError as exc:
        raise SideInvalidError(side, label, exc) from exc
    tree = outcome.tree
    return Side(
        label,
        load_objects(tree.files),
        list(tree.warnings) + outcome.feasibility_warnings,
        list(outcome.acknowledged),
        outcome.update_strategies,
        [c.name for c in outcome.clusters],
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
