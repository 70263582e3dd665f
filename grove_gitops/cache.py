"""The render cache: in memory for long-running processes (the controller, ``watch``), and
on disk (:mod:`grove_gitops.cachestore`) for fresh ones (``controller --once``, ``render
--cache-dir``, ``diff``).

Rendering is a pure function of its inputs, so a PodCliqueSet whose source document and
global inputs (configuration, bindings, pass-through objects, renderer version) are
unchanged renders to the same bytes: the cache keeps those bytes, keyed by a digest of all
of it, and a large repository with one changed workload re-expands and re-serialises only
that workload. Parsed YAML is cached by file content too. Entries not used by the latest
render are dropped, so memory follows the repository, not its history; on disk they stay
until the size bound evicts them.

Owns the in-memory cache (:class:`RenderCache`) and the cache key (:func:`digest`); the entry
types are in :mod:`grove_gitops.cacheentry`, below both this module and the store on disk
(re-exported here: the store is the lower room, so it never imports this one).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from grove_gitops.cacheentry import CachedShard as CachedShard  # re-exported
from grove_gitops.cacheentry import ShardMeta as ShardMeta
from grove_gitops.errors import InputProblem
from grove_gitops.yamlfiles.yamlio import Document

if TYPE_CHECKING:
    from grove_gitops.cachestore import ShardStore


@dataclass
class RenderCache:
    parsed: dict[str, tuple[list[Document], list[InputProblem]]] = field(default_factory=dict)
    shards: dict[str, CachedShard] = field(default_factory=dict)
    #: Metas read from the store without their files (:meth:`peek_shard`).
    metas: dict[str, ShardMeta] = field(default_factory=dict)
    hits: int = 0
    misses: int = 0
    #: Where shards persist between processes (None: memory only).
    store: ShardStore | None = None
    _used_parsed: set[str] = field(default_factory=set)
    _used_shards: set[str] = field(default_factory=set)
    #: id(document) -> (the document, its digest), for one render (cleared by ``finish``).
    #: ``diff`` plans two sides whose unchanged files come from one parse, as the very same
    #: dicts: the second side's thousand digests are then lookups. The document is kept
    #: alongside, so its id cannot be reused while the entry exists.
    _doc_digests: dict[int, tuple[object, str]] = field(default_factory=dict)

    def doc_digest(self, doc: object) -> str:
        """:func:`digest` of a parsed source document, computed once per document object."""
        found = self._doc_digests.get(id(doc))
        if found is not None and found[0] is doc:
            return found[1]
        value = digest(doc)
        self._doc_digests[id(doc)] = (doc, value)
        return value

    @staticmethod
    def file_key(display: str, data: bytes) -> str:
        return hashlib.sha256(display.encode() + b"\0" + data).hexdigest()

    def get_parsed(self, key: str) -> tuple[list[Document], list[InputProblem]] | None:
        self._used_parsed.add(key)
        found = self.parsed.get(key)
        if found is None and self.store is not None:
            found = self.store.load_parsed(key)
            if found is not None:
                self.parsed[key] = found
        return found

    def put_parsed(self, key: str, value: tuple[list[Document], list[InputProblem]]) -> None:
        self._used_parsed.add(key)
        self.parsed[key] = value
        if self.store is not None:
            self.store.save_parsed(key, value)

    def get_shard(self, key: str) -> CachedShard | None:
        """The files of a shard planning found (:meth:`peek_shard` counts the hits); None when
        the store lost the entry meanwhile (another process evicted it, or its files are
        damaged): the caller renders the PodCliqueSet again."""
        self._used_shards.add(key)
        found = self.shards.get(key)
        if found is None and self.store is not None:
            found = self.store.load(key)
            if found is not None:
                self.shards[key] = found
            elif key in self.metas:  # counted as a hit by peek_shard: a miss after all
                self.hits -= 1
                self.misses += 1
            self.metas.pop(key, None)
        return found

    def peek_shard(self, key: str) -> ShardMeta | None:
        """Whether ``key`` is cached, and its meta, reading no files from the store: planning
        only needs this; the files are read when the tree is built (:meth:`get_shard`)."""
        self._used_shards.add(key)
        found = self.known_meta(key)
        if found is None and self.store is not None:
            found = self.store.load_meta(key)
            if found is not None:
                self.metas[key] = found
        if found is None:
            self.misses += 1
        else:
            self.hits += 1
        return found

    def known_meta(self, key: str) -> ShardMeta | None:
        """The meta of ``key`` if this process has read it (no store read, no hit counted)."""
        return self.shards.get(key) or self.metas.get(key)

    def put_shard(self, key: str, value: CachedShard) -> None:
        self._used_shards.add(key)
        self.shards[key] = value
        if self.store is not None:
            self.store.save(key, value)

    def start(self) -> None:
        self._used_parsed.clear()
        self._used_shards.clear()
        self.hits = self.misses = 0

    def finish(self) -> None:
        """Drop what the render that just finished did not use."""
        self._doc_digests.clear()
        self.parsed = {k: v for k, v in self.parsed.items() if k in self._used_parsed}
        self.shards = {k: v for k, v in self.shards.items() if k in self._used_shards}
        self.metas = {k: v for k, v in self.metas.items() if k in self._used_shards and k not in self.shards}
        if self.store is not None and self.store.written:
            self.store.evict()


def digest(*parts: Any) -> str:
    """A stable digest of JSON-shaped parts."""
    import json

    h = hashlib.sha256()
    for part in parts:
        h.update(json.dumps(part, sort_keys=True, separators=(",", ":"), default=str).encode())
        h.update(b"\0")
    return h.hexdigest()
