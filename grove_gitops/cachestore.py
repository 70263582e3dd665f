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
import errno
import hashlib
import json
import logging
import os
import secrets
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

from grove_gitops import __version__
from grove_gitops.cacheentry import CachedShard, ShardMeta
from grove_gitops.errors import InputProblem
from grove_gitops.yamlfiles.yamlio import Document

log = logging.getLogger("grove_gitops.cache")
T = TypeVar("T")

MAGIC = b"grove-gitops-render-cache"
#: 2: a shard entry's header also checksums its meta line on its own (``load_meta``).
FORMAT = 2
#: What the code that fills the cache does, within one ``__version__``: bumped whenever a
#: change alters the bytes a render writes or the checks a parse runs, so that a cache kept
#: across an upgrade of an unreleased build never serves what older code made. 2: pods carry
#: the ``gitops.grove.io/rendered-by`` proof the agent deletes by, and a parse refuses huge
#: integers and mistagged scalars (issue 21).
REVISION = 2
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
        "revision": REVISION,
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
    if header.get("revision") != REVISION:
        raise StaleEntry(f"written by code of revision {header.get('revision')}, this is {REVISION}")
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


class ForeignEntry(OSError):
    """Something this program did not make where the cache expects its own directory or
    entry file: a symbolic link, a FIFO, a device. Never followed, read, written or deleted."""


#: Every directory below the root is opened with these: a symbolic link is ELOOP, not followed.
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
#: An entry is opened without following a symbolic link and without blocking on a FIFO.
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
#: A new temporary file: created here, exclusively (never an existing name or a link's target).
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
#: Attempts at a fresh temporary name before giving up on one write.
_TMP_ATTEMPTS = 32


#: Opening a name below the root failed because it is not what the cache makes: a symbolic
#: link (``ELOOP`` under ``O_NOFOLLOW``; ``EMLINK`` on the BSDs) or a file where a directory
#: belongs (``ENOTDIR``).
_FOREIGN_ERRNOS = frozenset({errno.ELOOP, errno.ENOTDIR, errno.EMLINK})


def _open_dir(name: str, parent: int, create: bool) -> int:
    """``name`` inside the directory ``parent``, opened without following a symbolic link;
    created first (``create``) when missing."""
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent)
    except FileNotFoundError:
        if not create:
            raise
    with contextlib.suppress(FileExistsError):
        os.mkdir(name, dir_fd=parent)
    return os.open(name, _DIR_FLAGS, dir_fd=parent)


class ShardStore:
    """A directory of cache entries: ``<root>/shards/<2 hex>/<key>`` for rendered
    PodCliqueSets, ``<root>/parsed/<2 hex>/<key>`` for parsed source files (keyed by the
    file's name and bytes: a fresh process need not parse a thousand unchanged files).

    **No symbolic link below the root is ever followed.** The root is the user's choice
    (``--cache-dir``, the controller's work directory) and may itself be a link; every
    directory below it is opened relative to its parent's descriptor with ``O_NOFOLLOW``,
    every entry too, and renames and deletions name an entry inside such a descriptor. So a
    kind folder, a shard folder, an entry or a temporary file that is a symbolic link (or a
    FIFO, a device) is foreign: a miss when read, skipped by eviction, replaced (the link
    itself, never its target) by a write of its entry, with one warning per path. A link
    swapped in between a check and a use changes nothing: the descriptor is the directory
    that was checked, and ``unlinkat``/``renameat`` never follow the last component.
    """

    def __init__(self, root: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.root = root
        self._root = os.fspath(root)
        self.dir = root / "shards"
        self.max_bytes = max_bytes
        self.written = 0  # entries written since the last eviction pass
        self.corrupt = 0
        self._broken = False  # the directory cannot be written: said once, then silent
        self._foreign_seen: set[str] = set()  # foreign paths already warned about

    def _path(self, key: str, kind: str = "shard") -> str:
        """``<root>/<kind dir>/<2 hex>/<key>``, as a string, for messages (and the tests):
        the files themselves are reached through directory descriptors (:meth:`_entry_dir`)."""
        if len(key) < 16 or not set(key) <= _KEY_CHARS:
            raise ValueError(f"not a cache key: {key!r}")
        return f"{self._root}/{_KINDS[kind]}/{key[:2]}/{key}"

    @contextlib.contextmanager
    def _entry_dir(self, kind: str, key: str, create: bool = False) -> Iterator[int]:
        """The descriptor of ``<root>/<kind dir>/<2 hex>`` (see the class docstring)."""
        self._path(key, kind)  # checks the key
        if create:
            os.makedirs(self._root, exist_ok=True)
        fds: list[int] = []
        try:
            fds.append(os.open(self._root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC))
            where = self._root
            for name in (_KINDS[kind], key[:2]):
                where = f"{where}/{name}"
                try:
                    fds.append(_open_dir(name, fds[-1], create))
                except OSError as exc:
                    if exc.errno in _FOREIGN_ERRNOS:
                        raise ForeignEntry(exc.errno, "not a directory the cache made", where) from exc
                    raise
            yield fds[-1]
        finally:
            for fd in reversed(fds):
                os.close(fd)

    def _warn_foreign(self, path: object) -> None:
        """One warning per foreign path (a kind folder that is a link would otherwise warn
        for every PodCliqueSet)."""
        if str(path) not in self._foreign_seen:
            self._foreign_seen.add(str(path))
            log.warning(
                "render cache: %s: not a file or directory the cache made (a symbolic link?); not followed, not used",
                path,
            )

    @contextlib.contextmanager
    def _opened(self, key: str, kind: str) -> Iterator[BinaryIO | None]:
        """The entry, open for reading (never through a symbolic link), or None when it is
        absent, foreign (warned once) or unreadable (warned). Reading it refreshes its
        modification time when due (least recently used eviction)."""
        path = self._path(key, kind)
        handle: BinaryIO | None = None
        try:
            with self._entry_dir(kind, key) as parent:
                try:
                    fd = os.open(key, _READ_FLAGS, dir_fd=parent)
                except OSError as exc:
                    if exc.errno in _FOREIGN_ERRNOS:
                        raise ForeignEntry(exc.errno, "a symbolic link", path) from exc
                    raise
            handle = os.fdopen(fd, "rb")
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise ForeignEntry(errno.EINVAL, "not a regular file", path)
            if st.st_size > self.max_bytes:
                raise OSError(errno.EFBIG, f"{st.st_size} bytes, more than the cache's bound")
        except FileNotFoundError:
            pass
        except OSError as exc:
            if handle is not None:
                handle.close()
                handle = None
            if isinstance(exc, ForeignEntry):
                self._warn_foreign(exc.filename)
            else:
                log.warning("render cache: %s: cannot read (%s); rendering it again", path, exc)
        if handle is None:
            yield None
            return
        with handle:
            yield handle
            if time.time() - st.st_mtime > _TOUCH_AFTER_S:
                try:
                    os.utime(handle.fileno())
                except OSError as exc:  # the age is a hint for eviction only: the hit still counts
                    log.debug("render cache: %s: cannot touch (%s)", path, exc)

    def _corrupt(self, path: str, exc: CorruptEntry) -> None:
        if isinstance(exc, StaleEntry):
            log.debug("render cache: %s: %s; rendering it again", path, exc)
            return
        self.corrupt += 1
        log.warning("render cache: %s: unusable entry (%s); rendering it again", path, exc)

    def _load(self, key: str, kind: str, decoder: Callable[[str, bytes], T]) -> T | None:
        """The decoded entry, or None when it is absent or unusable (logged by :meth:`_corrupt`)."""
        with self._opened(key, kind) as handle:
            if handle is None:
                return None
            try:
                data = handle.read()
            except OSError as exc:
                log.warning("render cache: %s: cannot read (%s); rendering it again", self._path(key, kind), exc)
                return None
        try:
            return decoder(key, data)
        except CorruptEntry as exc:
            self._corrupt(self._path(key, kind), exc)
            return None

    def load(self, key: str) -> CachedShard | None:
        return self._load(key, "shard", decode)

    def load_meta(self, key: str) -> ShardMeta | None:
        """A shard entry's meta without reading (or checking) its files: what planning needs
        to know that a PodCliqueSet is cached (its key, pods, warnings, counts)."""
        path = self._path(key, "shard")
        with self._opened(key, "shard") as handle:
            if handle is None:
                return None
            try:
                first = handle.readline(_MAX_HEADER)
                if not first.endswith(b"\n"):
                    raise CorruptEntry("not a render cache entry")
                header = _header("shard", key, first[:-1])
                size = header.get("meta_size")
                rest = handle.read(size if isinstance(size, int) and 0 <= size <= self.max_bytes else 0)
                return _checked_meta(header, rest)
            except OSError as exc:
                log.warning("render cache: %s: cannot read (%s); rendering it again", path, exc)
            except CorruptEntry as exc:
                self._corrupt(path, exc)
        return None

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
        self._write(key, kind, _frame(kind, key, json.dumps(value, separators=(",", ":")).encode()))

    def save(self, key: str, shard: CachedShard) -> None:
        self._write(key, "shard", encode(key, shard))

    def save_parsed(self, key: str, value: Parsed) -> None:
        self._write(key, "parsed", encode_parsed(key, value))

    def _write(self, key: str, kind: str, data: bytes) -> None:
        """Write a temporary file in the entry's directory and rename it over the entry: a
        reader sees a whole entry or none. An entry name that is a symbolic link is replaced
        (the link, not its target); a foreign directory on the way is warned about once."""
        try:
            with self._entry_dir(kind, key, create=True) as parent:
                tmp, fd = _create_tmp(parent)
                try:
                    try:
                        view = memoryview(data)
                        while view:
                            view = view[os.write(fd, view) :]
                    finally:
                        os.close(fd)
                    os.replace(tmp, key, src_dir_fd=parent, dst_dir_fd=parent)
                except BaseException:
                    try:
                        os.unlink(tmp, dir_fd=parent)
                    except OSError as cleanup:  # the write's own error is the one raised and reported
                        log.debug("render cache: %s: temporary file left (%s)", tmp, cleanup)
                    raise
            self.written += 1
        except OSError as exc:
            if isinstance(exc, ForeignEntry):
                self._warn_foreign(exc.filename)
            elif not self._broken:
                log.warning("render cache: %s: cannot write (%s); going on without storing", self.root, exc)
                self._broken = True

    def evict(self) -> int:
        """Delete least recently used entries (and stale temporary files) until the
        directory holds at most ``max_bytes``; returns how many entries were deleted.

        Only regular files in real directories count and go: a symbolic link (or anything
        else) anywhere below the root is left alone, and so is whatever it points to."""
        self.written = 0
        entries: list[tuple[float, int, str, str, str]] = []
        total = 0
        now = time.time()
        try:
            root = os.open(self._root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            return 0
        try:
            kinds = self._open_kinds(root)
            try:
                for kind_dir, kind_fd in kinds.items():
                    total += self._scan_kind(kind_dir, kind_fd, now, entries)
                if total <= self.max_bytes:
                    return 0
                deleted = 0
                for _mtime, size, kind_dir, sub, name in sorted(entries):
                    if total <= self.max_bytes:
                        break
                    try:
                        sub_fd = os.open(sub, _DIR_FLAGS, dir_fd=kinds[kind_dir])
                        try:
                            os.unlink(name, dir_fd=sub_fd)  # unlinkat: never follows ``name``
                        finally:
                            os.close(sub_fd)
                        deleted += 1
                    except OSError as exc:  # gone already, or another process's: the next eviction retries
                        log.debug("render cache: %s/%s: not evicted (%s)", sub, name, exc)
                    total -= size
            finally:
                for fd in kinds.values():
                    os.close(fd)
        finally:
            os.close(root)
        log.info("render cache: evicted %d entries to stay under %d MiB", deleted, self.max_bytes // (1024 * 1024))
        return deleted

    def _open_kinds(self, root: int) -> dict[str, int]:
        """The kind folders that are real directories (a link is warned about and skipped)."""
        kinds: dict[str, int] = {}
        for kind_dir in _KINDS.values():
            try:
                kinds[kind_dir] = os.open(kind_dir, _DIR_FLAGS, dir_fd=root)
            except FileNotFoundError:
                continue
            except OSError as exc:
                if exc.errno in _FOREIGN_ERRNOS:
                    self._warn_foreign(f"{self._root}/{kind_dir}")
        return kinds

    def _scan_kind(self, kind_dir: str, kind_fd: int, now: float, entries: list[tuple[float, int, str, str, str]]) -> int:
        """Collect the entries of one kind folder (deleting stale temporary files); their size."""
        total = 0
        try:
            with os.scandir(kind_fd) as listing:
                subs = [sub.name for sub in listing if sub.is_dir(follow_symlinks=False)]
        except OSError:
            return 0
        for sub in subs:
            try:
                sub_fd = os.open(sub, _DIR_FLAGS, dir_fd=kind_fd)
            except OSError:
                continue  # replaced by a link since the listing: foreign, left alone
            try:
                with os.scandir(sub_fd) as listing:
                    found = list(listing)
                for entry in found:
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if not stat.S_ISREG(st.st_mode):
                        continue
                    if entry.name.startswith(_TMP_PREFIX):
                        if now - st.st_mtime > _STALE_TMP_S:
                            try:
                                os.unlink(entry.name, dir_fd=sub_fd)
                            except OSError as exc:  # a crashed writer's leftover: tried again next scan
                                log.debug("render cache: %s/%s: stale temporary file left (%s)", sub, entry.name, exc)
                        continue
                    entries.append((st.st_mtime, st.st_size, kind_dir, sub, entry.name))
                    total += st.st_size
            except OSError:
                continue
            finally:
                os.close(sub_fd)
        return total


def _create_tmp(parent: int) -> tuple[str, int]:
    """A new temporary file in the directory ``parent``: its name and a descriptor open for
    writing. ``O_EXCL``: an existing name (a link planted there included) is never opened."""
    for _ in range(_TMP_ATTEMPTS):
        name = f"{_TMP_PREFIX}{secrets.token_hex(8)}"
        try:
            return name, os.open(name, _CREATE_FLAGS, 0o600, dir_fd=parent)
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary file name")
