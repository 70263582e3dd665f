"""Turn what the user pointed at (source trees, rendered trees, git refs) into diff sides.

Source trees (folders, or git refs read into memory) are planned and built in memory with
the same pipeline as ``render`` (:func:`plan_source_tree`, :func:`build_source_tree`: one
tree, or one per cluster of a fleet), so the diff shows exactly the bytes ``render`` would
write — including file names, waves and GitOps annotations. Both sides go through one render
cache, and only what differs between them is built and parsed (:func:`pair_sources`, issue
14; docs/diff.md, "Speed").
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grove_gitops.cache import CachedShard, RenderCache
from grove_gitops.diff.errors import SideInvalidError
from grove_gitops.diff.gitrefs import Extracted, extract, open_repo
from grove_gitops.diff.model import ParseMemo, is_object_file, load_objects, read_tree
from grove_gitops.diff.report import Side
from grove_gitops.errors import InvalidInputError
from grove_gitops.load.memory import MemorySource
from grove_gitops.pipeline import Outcome
from grove_gitops.render import RenderPlan
from grove_gitops.sourcetree import SourcePlan, build_source_tree, plan_source_tree


@dataclass
class PlannedSource:
    """A source side loaded and validated, before anything is built or parsed."""

    label: str
    side: str
    planned: SourcePlan


def plan_side(root: Path | MemorySource, label: str, side: str, cache: RenderCache | None = None) -> PlannedSource:
    """Load and validate ``root``; an invalid tree raises :class:`SideInvalidError` naming
    ``side``. ``cache`` (shared by both sides) tells which PodCliqueSets are rendered already."""
    try:
        planned = plan_source_tree(root, cache, 1, feasibility=side == "head")
    except InvalidInputError as exc:
        raise SideInvalidError(side, label, exc) from exc
    return PlannedSource(label, side, planned)


def side_from_source(
    root: Path | MemorySource, label: str, side: str, cache: RenderCache | None = None, memo: ParseMemo | None = None
) -> Side:
    """One source side with every object parsed (no other side to compare with)."""
    source = plan_side(root, label, side, cache)
    outcome = _build(source, cache, set())
    return _side(source, outcome, None, cache, memo if memo is not None else {})


def pair_sources(
    base: PlannedSource, head: PlannedSource, cache: RenderCache | None = None, memo: ParseMemo | None = None
) -> tuple[Side, Side]:
    """Both sides, building and parsing only what differs between them.

    * A PodCliqueSet the cache holds under the same key on both sides (same document, same
      global inputs, same grove-gitops version: the same bytes) is not built at all; only
      its object counts are read (:class:`~grove_gitops.cache.ShardMeta`).
    * Of what is built, only the shards whose object files differ are parsed. A shard is a
      PodCliqueSet's directory (or ``_cluster``): the renderer puts every object of a
      PodCliqueSet in its own shard, so a shard byte-identical on both sides has no change,
      no pod to plan and nothing to draw.

    A one-PCS change of a 1,000-PCS repository with a warm ``--cache-dir`` so reads two
    PodCliqueSets' files instead of 2,000 and parses, keys, compares and plans a few hundred
    objects instead of ~67,000 (issue 14).
    """
    memo = memo if memo is not None else {}
    same = base.planned.digests & head.planned.digests
    b_out, h_out = _build(base, cache, same), _build(head, cache, same)
    b_shards, h_shards = shard_files(b_out.tree.files), shard_files(h_out.tree.files)
    differ = {s for s in b_shards.keys() | h_shards.keys() if b_shards.get(s) != h_shards.get(s)}
    return _side(base, b_out, differ, cache, memo, b_shards), _side(head, h_out, differ, cache, memo, h_shards)


def _build(source: PlannedSource, cache: RenderCache | None, skip: set[str]) -> Outcome:
    try:
        return build_source_tree(source.planned, cache, 1, skip=skip, keep_objects=True)
    except InvalidInputError as exc:  # a lost cache entry's document failed again: a bug
        raise SideInvalidError(source.side, source.label, exc) from exc


def shard_files(files: Mapping[str, bytes]) -> dict[str, dict[str, bytes]]:
    """Shard -> its object files (``path -> bytes``)."""
    out: dict[str, dict[str, bytes]] = {}
    for path, data in files.items():
        if is_object_file(path):
            shard = path.rpartition("/")[0]
            found = out.get(shard)
            if found is None:
                found = out[shard] = {}
            found[path] = data
    return out


def _side(
    source: PlannedSource,
    outcome: Outcome,
    only: set[str] | None,
    cache: RenderCache | None,
    memo: ParseMemo,
    shards: dict[str, dict[str, bytes]] | None = None,
) -> Side:
    """The side's objects: every shard's, or only those in ``only``."""
    shards = shards if shards is not None else shard_files(outcome.tree.files)
    files = {p: d for s, fs in shards.items() if only is None or s in only for p, d in fs.items()}
    plans = [("", outcome.plan)] if outcome.plan is not None else [(f"{c.name}/", c.plan) for c in outcome.clusters]
    missing = [m for prefix, plan in plans for m in _prefill(cache, plan, prefix, memo, files)]
    objects = load_objects(files, memo)
    _store_parsed(cache, missing, memo)
    counts = {s: len(fs) for s, fs in shards.items()}
    for shard, n in outcome.tree.skipped.items():
        counts[shard] = counts.get(shard, 0) + n
    return Side(
        source.label,
        objects,
        list(outcome.tree.warnings) + outcome.feasibility_warnings,
        list(outcome.acknowledged),
        outcome.update_strategies,
        [c.name for c in outcome.clusters],
        counts,
        dict(outcome.unfit_gangs),
        outcome.acknowledged_codes,
        {name: data for _, plan in plans for name, data in plan.inputs.source.files.items()},
        any(plan.config.review for _, plan in plans),
    )


def _object_files(shard: CachedShard) -> list[str]:
    return [path for path in shard.files if is_object_file(path)]


def _prefill(
    cache: RenderCache | None, plan: RenderPlan, prefix: str, memo: ParseMemo, wanted: Mapping[str, bytes]
) -> list[tuple[str, str, CachedShard]]:
    """Put the parsed objects of each shard whose files are ``wanted`` into ``memo`` when
    they are known without parsing: kept by the render that just produced them, or stored
    by a previous ``diff``. Returns the shards still to parse (their parse is stored
    afterwards). ``prefix`` is the cluster directory of a fleet's plan ('' otherwise): the
    tree's paths carry it, the cached shard's do not."""
    if cache is None:
        return []
    store = cache.store
    missing: list[tuple[str, str, CachedShard]] = []
    for item in plan.items:
        shard = cache.shards.get(item.digest)
        if shard is None:
            continue
        paths = _object_files(shard)
        if not paths or prefix + paths[0] not in wanted:
            continue  # a shard equal on both sides: never parsed
        if all((prefix + path, shard.files[path]) in memo for path in paths):
            continue  # the other side had this shard: parsed already
        stored = _kept(shard, paths)
        if stored is not None and store is not None:
            store.save_json(item.digest, stored)
        elif store is not None:
            stored = store.load_json(item.digest)
        if not isinstance(stored, dict) or sorted(stored) != sorted(paths):
            missing.append((item.digest, prefix, shard))
            continue
        for path in paths:
            data = shard.files[path]
            memo.setdefault((prefix + path, data), (data.decode("utf-8"), stored[path]))
    return missing


def _kept(shard: CachedShard, paths: list[str]) -> dict[str, list[Any]] | None:
    """``{path: [object]}`` of a shard rendered with ``keep_objects``, as plain JSON values in
    the files' key order: what parsing the files gives (the emitter's round-trip tests hold
    it to that, and ``test_objects_kept_from_rendering_report_what_parsing_...`` this), or None."""
    if shard.objects is None or any(path not in shard.objects for path in paths):
        return None
    try:
        # Keys sorted as the emitter writes them (by code point, every mapping): parsing the
        # file gives that order, and the summaries list fields in it.
        plain = json.loads(json.dumps({path: [shard.objects[path]] for path in paths}, sort_keys=True))
    except (TypeError, ValueError):
        return None
    return plain if isinstance(plain, dict) else None


def _store_parsed(cache: RenderCache | None, missing: list[tuple[str, str, CachedShard]], memo: ParseMemo) -> None:
    """Store the parsed objects of shards parsed in this run, when JSON holds them exactly
    (a YAML timestamp or a non-string key would not come back the same: those are not stored)."""
    store = cache.store if cache is not None else None
    if store is None:
        return
    for digest, prefix, shard in missing:
        value = {path: memo[(prefix + path, shard.files[path])][1] for path in _object_files(shard)}
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
    """Both refs' source trees, read into memory (nothing is written; a blob both refs hold
    is read once); the repository is closed afterwards."""
    repo = open_repo(repo_path)
    try:
        blobs: dict[str, bytes] = {}
        yield extract(repo, base_ref, source_path, blobs), extract(repo, head_ref, source_path, blobs)
    finally:
        repo.close()
