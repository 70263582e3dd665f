"""The render cache on disk: rendered PodCliqueSets that outlive the process (issue 14).

``controller --once`` from a CronJob or CI, ``render`` and ``diff`` start a fresh process
each time; with the cache only in memory they re-render every PodCliqueSet of the
repository for a one-line change. :class:`ShardStore` keeps each rendered PodCliqueSet in
one file named by its cache key: the digest of its source document, of every global input
(configuration, bindings, pass-through objects, backends) and of the grove-gitops version,
exactly the key of the in-memory cache (:func:`grove_gitops.render.plan_source`).

Rules:

* **Only data this program wrote.** An entry is a header line (format, grove-gitops
  version, key, SHA-256 and length of the body) and a body of plain JSON plus the files'
  bytes. Nothing is unpickled or evaluated; an entry whose header, checksum, key or version
  does not match is a miss. The directory is never inside the source tree (the CLI refuses
  that), so the source repository cannot plant an entry.
* **Safe under concurrent processes.** An entry is written to a temporary file in its own
  directory and renamed over the final name (``os.replace``, atomic on POSIX): a reader sees
  a whole old entry, a whole new one or none. Two processes writing the same key write the
  same bytes. A process killed mid-write leaves a ``.tmp-*`` file that no reader opens and
  that a later eviction pass removes.
* **A broken entry is a miss, never an error:** truncated, garbage, unreadable or from
  another version, it is logged (one line) and the PodCliqueSet is rendered again, which
  rewrites it. An unwritable cache directory is logged once and the render goes on.
* **Bounded.** After a render that wrote entries, the oldest entries (by modification time,
  refreshed on use: least recently used) are deleted until the directory holds at most
  ``max_bytes``.
* **diff's parsed rendered objects** of a shard (``objects/``, same key as the shard), so a
  warm ``diff`` does not parse tens of thousands of rendered files again.
* **Parsed source files too**, keyed by file name and bytes (``parsed/``): the documents
  are JSON values (the loader refuses anything else), stored as JSON.
* **Not fsynced.** A power loss can leave a torn entry; its checksum turns it into a miss.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from grove_gitops import __version__
from grove_gitops.cache import CachedShard, ShardMeta
from grove_gitops.errors import InputProblem
from grove_gitops.load.yamlio import Document

log = logging.getLogger("grove_gitops.cache")
T = TypeVar("T")

MAGIC = b"grove-gitops-render-cache"
#: 2: a shard entry's header also checksums its meta line on its own (``load_meta``).
FORMAT = 2
#: The longest header line :func:`ShardStore.load_meta` reads before giving up.
_MAX_HEADER = 4096
#: Default size bound: about ten 1,000-PodCliqueSet repositories of the bench generator.
DEFAULT_MAX_BYTES = 1024 * 1024 * 1024
#: An entry used again after this long gets its modification time refreshed (LRU order).
_TOUCH_AFTER_S = 3600.0
#: A temporary file older than this is a leftover of a killed writer.
_STALE_TMP_S = 600.0
_TMP_PREFIX = ".tmp-"
_KEY_CHARS = frozenset("0123456789abcdef")
#: Entry kind -> its directory under the cache root.
_KINDS = {"shard": "shards", "parsed": "parsed", "objects": "objects"}


class CorruptEntry(ValueError):
    """Why an entry on disk cannot be used (a miss, logged)."""


class StaleEntry(CorruptEntry):
    """An entry another cache format or grove-gitops version wrote: an ordinary miss after
    an upgrade (logged at debug level only: a warning per entry would bury the output)."""


def _frame(kind: str, key: str, body: bytes, meta_size: int | None = None) -> bytes:
    """Header line + body. ``meta_size``: the body starts with a meta part of that many
    bytes, checksummed on its own as well, so it can be read without the rest."""
    header: dict[str, Any] = {
        "format": FORMAT,
        "kind": kind,
        "version": __version__,
        "key": key,
        "size": len(body),
        "sha256": hashlib.sha256(body).hexdigest(),
    }
    if meta_size is not None:
        header["meta_size"] = meta_size
        header["meta_sha256"] = hashlib.sha256(body[:meta_size]).hexdigest()
    return MAGIC + b" " + json.dumps(header, sort_keys=True, separators=(",", ":")).encode() + b"\n" + body


def _header(kind: str, key: str, first: bytes) -> dict[str, Any]:
    """The checked header line of an entry (without its newline)."""
    if not first.startswith(MAGIC + b" "):
        raise CorruptEntry("not a render cache entry")
    try:
        header = json.loads(first[len(MAGIC) + 1 :])
    except ValueError as exc:
        raise CorruptEntry(f"unreadable header: {exc}") from exc
    if not isinstance(header, dict) or header.get("format") != FORMAT or header.get("kind") != kind:
        raise StaleEntry("another cache format")
    if header.get("version") != __version__:
        raise StaleEntry(f"written by grove-gitops {header.get('version')}, this is {__version__}")
    if header.get("key") != key:
        raise CorruptEntry("written for another key")
    return header


def _unframe(kind: str, key: str, data: bytes) -> bytes:
    """The body of an entry, or :class:`CorruptEntry` saying why it cannot be used."""
    first, sep, body = data.partition(b"\n")
    if not sep:
        raise CorruptEntry("not a render cache entry")
    header = _header(kind, key, first)
    if header.get("size") != len(body):
        raise CorruptEntry(f"truncated: {len(body)} of {header.get('size')} bytes")
    if header.get("sha256") != hashlib.sha256(body).hexdigest():
        raise CorruptEntry("checksum mismatch")
    return body


def encode(key: str, shard: CachedShard) -> bytes:
    """The bytes of one shard entry: header line, JSON meta line, then the files' bytes."""
    names = list(shard.files)
    meta: dict[str, Any] = {
        "key": list(shard.key),
        "source_file": shard.source_file,
        "kind_counts": shard.kind_counts,
        "gangs": [list(g) for g in shard.gangs],
        "warnings": shard.warnings,
        "pods": shard.pods,
        "update_strategy": shard.update_strategy,
        "kustomization": shard.kustomization.decode("utf-8"),
        "files": [[name, len(shard.files[name])] for name in names],
    }
    line = json.dumps(meta, separators=(",", ":")).encode()
    body = b"".join([line, b"\n", *(shard.files[n] for n in names)])
    return _frame("shard", key, body, meta_size=len(line))


def decode(key: str, data: bytes) -> CachedShard:
    """The shard in ``data``, or :class:`CorruptEntry` saying why it cannot be used."""
    line, _, blobs = _unframe("shard", key, data).partition(b"\n")
    try:
        meta = json.loads(line)
        files: dict[str, bytes] = {}
        offset = 0
        for name, size in meta["files"]:
            files[str(name)] = blobs[offset : offset + int(size)]
            offset += int(size)
        if offset != len(blobs):
            raise CorruptEntry("file lengths do not add up")
        return CachedShard(files=files, **_meta_fields(meta))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise CorruptEntry(f"malformed body: {type(exc).__name__}: {exc}") from exc


def _meta_fields(meta: Any) -> dict[str, Any]:
    """:class:`ShardMeta`'s fields from an entry's meta line (KeyError etc. when malformed)."""
    ns, name = meta["key"]
    return {
        "key": (str(ns), str(name)),
        "source_file": str(meta["source_file"]),
        "kind_counts": {str(k): int(v) for k, v in meta["kind_counts"].items()},
        "gangs": [(str(a), str(b), str(c)) for a, b, c in meta["gangs"]],
        "warnings": [str(w) for w in meta["warnings"]],
        "pods": int(meta["pods"]),
        "update_strategy": str(meta["update_strategy"]),
        "kustomization": str(meta.get("kustomization", "")).encode("utf-8"),
    }


def _checked_meta(header: dict[str, Any], rest: bytes) -> ShardMeta:
    """The meta part at the start of ``rest`` (what follows a shard entry's header line),
    checked against the header's own checksum of that part."""
    size = header.get("meta_size")
    if not isinstance(size, int) or size < 0 or len(rest) < size:
        raise CorruptEntry("truncated meta")
    line = rest[:size]
    if header.get("meta_sha256") != hashlib.sha256(line).hexdigest():
        raise CorruptEntry("meta checksum mismatch")
    try:
        return ShardMeta(**_meta_fields(json.loads(line)))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise CorruptEntry(f"malformed meta: {type(exc).__name__}: {exc}") from exc


Parsed = tuple[list[Document], list[InputProblem]]


def encode_parsed(key: str, value: Parsed) -> bytes:
    """A parsed source file: its documents (JSON values, the loader guarantees it) and problems."""
    docs, problems = value
    body = {
        "docs": [[d.file, d.index, d.data] for d in docs],
        "problems": [[p.file, p.field, p.message] for p in problems],
    }
    return _frame("parsed", key, json.dumps(body, separators=(",", ":")).encode())


def decode_parsed(key: str, data: bytes) -> Parsed:
    raw = _unframe("parsed", key, data)
    try:
        body = json.loads(raw)
        docs = [Document(str(f), int(i), d) for f, i, d in body["docs"]]
        problems = [InputProblem(str(f), str(fld), str(m)) for f, fld, m in body["problems"]]
    except (KeyError, TypeError, ValueError) as exc:
        raise CorruptEntry(f"malformed body: {type(exc).__name__}: {exc}") from exc
    return docs, problems


class ShardStore:
    """A directory of cache entries: ``<root>/shards/<2 hex>/<key>`` for rendered
    PodCliqueSets, ``<root>/parsed/<2 hex>/<key>`` for parsed source files (keyed by the
    file's name and bytes: a fresh process need not parse a thousand unchanged files)."""

    def __init__(self, root: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.root = root
        self._root = os.fspath(root)
        self.dir = root / "shards"
        self.max_bytes = max_bytes
        self.written = 0  # entries written since the last eviction pass
        self.corrupt = 0
        self._broken = False  # the directory cannot be written: said once, then silent

    def _path(self, key: str, kind: str = "shard") -> str:
        """``<root>/<kind dir>/<2 hex>/<key>``, as a string: a fresh ``diff`` of 1,000
        PodCliqueSets looks up 2,000 entries, and pathlib's joins were a tenth of it."""
        if len(key) < 16 or not set(key) <= _KEY_CHARS:
            raise ValueError(f"not a cache key: {key!r}")
        return f"{self._root}/{_KINDS[kind]}/{key[:2]}/{key}"

    def _read(self, key: str, kind: str) -> tuple[str, bytes] | None:
        path = self._path(key, kind)
        try:
            with open(path, "rb") as handle:
                data = handle.read()
                mtime = os.fstat(handle.fileno()).st_mtime
        except FileNotFoundError:
            return None
        except OSError as exc:
            log.warning("render cache: %s: cannot read (%s); rendering it again", path, exc)
            return None
        self._touch(path, mtime)
        return path, data

    @staticmethod
    def _touch(path: str, mtime: float) -> None:
        """Refresh the modification time of an entry in use (eviction is least recently used)."""
        if time.time() - mtime > _TOUCH_AFTER_S:
            with contextlib.suppress(OSError):
                os.utime(path)

    def _corrupt(self, path: str, exc: CorruptEntry) -> None:
        if isinstance(exc, StaleEntry):
            log.debug("render cache: %s: %s; rendering it again", path, exc)
            return
        self.corrupt += 1
        log.warning("render cache: %s: unusable entry (%s); rendering it again", path, exc)

    def _load(self, key: str, kind: str, decoder: Callable[[str, bytes], T]) -> T | None:
        """The decoded entry, or None when it is absent or unusable (logged by :meth:`_corrupt`)."""
        found = self._read(key, kind)
        if found is None:
            return None
        try:
            return decoder(key, found[1])
        except CorruptEntry as exc:
            self._corrupt(found[0], exc)
            return None

    def load(self, key: str) -> CachedShard | None:
        return self._load(key, "shard", decode)

    def load_meta(self, key: str) -> ShardMeta | None:
        """A shard entry's meta without reading (or checking) its files: what planning needs
        to know that a PodCliqueSet is cached (its key, pods, warnings, counts)."""
        path = self._path(key, "shard")
        try:
            with open(path, "rb") as handle:
                first = handle.readline(_MAX_HEADER)
                if not first.endswith(b"\n"):
                    raise CorruptEntry("not a render cache entry")
                header = _header("shard", key, first[:-1])
                size = header.get("meta_size")
                rest = handle.read(size if isinstance(size, int) and 0 <= size <= self.max_bytes else 0)
                mtime = os.fstat(handle.fileno()).st_mtime
            meta = _checked_meta(header, rest)
        except FileNotFoundError:
            return None
        except OSError as exc:
            log.warning("render cache: %s: cannot read (%s); rendering it again", path, exc)
            return None
        except CorruptEntry as exc:
            self._corrupt(path, exc)
            return None
        self._touch(path, mtime)
        return meta

    def load_parsed(self, key: str) -> Parsed | None:
        return self._load(key, "parsed", decode_parsed)

    def load_json(self, key: str, kind: str = "objects") -> Any:
        """A JSON entry (``diff``'s parsed rendered objects of a shard), or None."""

        def decoder(key: str, data: bytes) -> Any:
            try:
                return json.loads(_unframe(kind, key, data))
            except CorruptEntry:
                raise
            except ValueError as exc:
                raise CorruptEntry(str(exc)) from exc

        return self._load(key, kind, decoder)

    def save_json(self, key: str, value: Any, kind: str = "objects") -> None:
        self._write(self._path(key, kind), _frame(kind, key, json.dumps(value, separators=(",", ":")).encode()))

    def save(self, key: str, shard: CachedShard) -> None:
        self._write(self._path(key, "shard"), encode(key, shard))

    def save_parsed(self, key: str, value: Parsed) -> None:
        self._write(self._path(key, "parsed"), encode_parsed(key, value))

    def _write(self, path: str, data: bytes) -> None:
        tmp: str | None = None
        try:
            parent = os.path.dirname(path)
            os.makedirs(parent, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=_TMP_PREFIX, dir=parent)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
            finally:
                os.close(fd)
            os.replace(tmp, path)
            tmp = None
            self.written += 1
        except OSError as exc:
            if not self._broken:
                log.warning("render cache: %s: cannot write (%s); going on without storing", self.root, exc)
                self._broken = True
        finally:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)

    def evict(self) -> int:
        """Delete least recently used entries (and stale temporary files) until the
        directory holds at most ``max_bytes``; returns how many entries were deleted."""
        self.written = 0
        entries: list[tuple[float, int, str]] = []
        total = 0
        now = time.time()
        subdirs: list[os.DirEntry[str]] = []
        for name in _KINDS.values():
            with contextlib.suppress(OSError):
                subdirs += list(os.scandir(self.root / name))
        for sub in subdirs:
            if not sub.is_dir(follow_symlinks=False):
                continue
            try:
                listing = list(os.scandir(sub.path))
            except OSError:
                continue
            for entry in listing:
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if entry.name.startswith(_TMP_PREFIX):
                    if now - st.st_mtime > _STALE_TMP_S:
                        with contextlib.suppress(OSError):
                            os.unlink(entry.path)
                    continue
                entries.append((st.st_mtime, st.st_size, entry.path))
                total += st.st_size
        if total <= self.max_bytes:
            return 0
        deleted = 0
        for _mtime, size, path in sorted(entries):
            if total <= self.max_bytes:
                break
            with contextlib.suppress(OSError):
                os.unlink(path)
                deleted += 1
            total -= size
        log.info("render cache: evicted %d entries to stay under %d MiB", deleted, self.max_bytes // (1024 * 1024))
        return deleted
