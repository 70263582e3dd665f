"""Turn what the user pointed at (source trees, rendered trees, git refs) into diff sides.

Source trees are rendered in memory with the same pipeline as ``render``
(:func:`render_source_tree`: one tree, or one per cluster of a fleet), so the diff shows
exactly the bytes ``render`` would write — including file names, waves and GitOps
annotations. Both sides go through one render cache (issue 14): a PodCliqueSet equal on both
sides is rendered once, and with ``--cache-dir`` not at all when an earlier run rendered it.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from grove_gitops.cache import CachedShard, RenderCache
from grove_gitops.diff.errors import SideInvalidError
from grove_gitops.diff.gitrefs import Extracted, extract, open_repo
from grove_gitops.diff.model import ParseMemo, is_object_file, load_objects, read_tree
from grove_gitops.diff.report import Side
from grove_gitops.errors import InvalidInputError
from grove_gitops.fleet.output import render_source_tree
from grove_gitops.render import RenderPlan


def side_from_source(
    root: Path, label: str, side: str, cache: RenderCache | None = None, memo: ParseMemo | None = None
) -> Side:
    """Render ``root``; an invalid tree raises :class:`SideInvalidError` naming ``side``.

    ``cache`` (shared by both sides) reuses rendered PodCliqueSets; ``memo`` reuses the
    parsed objects of files whose bytes the other side already had.
    """
    try:
        outcome = render_source_tree(root, None, 1, cache, feasibility=side == "head")
    except InvalidInputError as exc:
        raise SideInvalidError(side, label, exc) from exc
    tree = outcome.tree
    memo = memo if memo is not None else {}
    missing = [m for plan in outcome.plans for m in _prefill(cache, plan, memo)]
    objects = load_objects(tree.files, memo)
    _store_parsed(cache, missing, memo)
    return Side(
        label,
        objects,
        list(tree.warnings) + outcome.feasibility_warnings,
        list(outcome.acknowledged),
        outcome.update_strategies,
        [c.name for c in outcome.clusters],
    )


def _object_files(shard: CachedShard) -> list[str]:
    return [path for path in shard.files if is_object_file(path)]


def _prefill(cache: RenderCache | None, plan: RenderPlan, memo: ParseMemo) -> list[tuple[str, CachedShard]]:
    """Put the parsed objects a previous ``diff`` stored for each cached shard into ``memo``;
    returns the shards that have none stored (their parse is stored afterwards)."""
    store = cache.store if cache is not None else None
    if cache is None or store is None:
        return []
    missing: list[tuple[str, CachedShard]] = []
    for item in plan.items:
        shard = cache.shards.get(item.digest)
        if shard is None:
            continue
        paths = _object_files(shard)
        if all((path, shard.files[path]) in memo for path in paths):
            continue  # the other side had this shard: parsed already
        stored = store.load_json(item.digest)
        if not isinstance(stored, dict) or sorted(stored) != sorted(paths):
            missing.append((item.digest, shard))
            continue
        for path in paths:
            data = shard.files[path]
            memo.setdefault((path, data), (data.decode("utf-8"), stored[path]))
    return missing


def _store_parsed(cache: RenderCache | None, missing: list[tuple[str, CachedShard]], memo: ParseMemo) -> None:
    """Store the parsed objects of shards parsed in this run, when JSON holds them exactly
    (a YAML timestamp or a non-string key would not come back the same: those are not stored)."""
    store = cache.store if cache is not None else None
    if store is None:
        return
    for digest, shard in missing:
        value = {path: memo[(path, shard.files[path])][1] for path in _object_files(shard)}
        try:
            exact = json.loads(json.dumps(value)) == value
        except (TypeError, ValueError):
            exact = False
        if exact:
            store.save_json(digest, value)


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
