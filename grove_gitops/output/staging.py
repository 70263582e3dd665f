"""Files made in an output's staging tree, by the writer and by the render's worker processes.

Owns how one file is made there (created exclusively, mode 0644 whatever the umask) and how
a worker writes its PodCliqueSet's own directory straight into the staging tree of
:class:`~grove_gitops.output.writer.TreeWriter` (issue 35.4): the parent of a mid-size render
spent about 0.4 s of its output stage receiving every shard's files as bytes and writing
~8,000 files one by one, while the workers that made the bytes could write them.

What a worker may write: only ``<namespace>/<podcliqueset>/<name>`` of the PodCliqueSet it
rendered, a directory no one else writes into. The writer makes the namespace directories
before it publishes its staging root (:meth:`TreeWriter.open_for_workers`); the worker makes
the PodCliqueSet's directory with one ``mkdir`` (which fails on anything already there, a
symlink included) and its files with ``O_EXCL``, so it never follows what it did not make.
Everything else of the shard (a ``_cluster`` object) stays bytes for the parent. The staging
tree is swapped in, or removed, by the writer alone.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass
from pathlib import Path

from grove_gitops.cacheentry import CachedShard
from grove_gitops.errors import OutputError

#: Longest file name most filesystems (ext4, xfs, btrfs, APFS) accept, in bytes.
MAX_NAME_BYTES = 255
#: Modes of what the writer makes (readable by the GitOps tool's user, like a checkout).
FILE_MODE = 0o644
DIR_MODE = 0o755
#: Bound of a published staging description (paths are at most 4096 bytes on Linux).
MAX_PUBLISHED_BYTES = 16384


def plain_name(rel: str, name: str) -> bool:
    """``name``, the last component of ``rel``, is one plain file name, and ``rel`` is relative."""
    return (
        not rel.startswith("/")
        and name not in ("", ".", "..")
        and "/" not in name
        and "\\" not in name
        and "\0" not in name
        and len(name.encode("utf-8", "surrogateescape")) <= MAX_NAME_BYTES
    )


def write_new(target: str, data: bytes, chmod: bool, fsync: bool = False) -> None:
    """Create ``target`` (never an existing file or symlink) holding ``data``."""
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, FILE_MODE)
    try:
        if chmod:
            os.fchmod(fd, FILE_MODE)  # os.open's mode is filtered by the umask
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)


def fsync_path(path: str | Path, directory: bool = False) -> None:
    """fsync one file or directory by path (a directory's fsync makes its entries durable)."""
    fd = os.open(path, os.O_RDONLY | (getattr(os, "O_DIRECTORY", 0) if directory else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@dataclass(frozen=True)
class Published:
    """What a worker needs to write into a staging tree: its root, the output it becomes
    (for messages), whether to chmod (the umask strips bits) and whether to fsync each file
    and directory (durability without syncfs)."""

    root: str
    out: str
    chmod: bool
    fsync_each: bool

    def encode(self) -> bytes:
        data = json.dumps(dataclasses.asdict(self)).encode("utf-8", "surrogateescape")
        if len(data) > MAX_PUBLISHED_BYTES:
            raise OutputError(f"{self.out}: the output path is too long to hand to the render's workers")
        return data

    @classmethod
    def decode(cls, data: bytes) -> Published | None:
        return cls(**json.loads(data.decode("utf-8", "surrogateescape"))) if data else None


def spill_shard(shard: CachedShard, published: Published) -> CachedShard:
    """Write the files of ``shard``'s own directory into the staging tree; the shard comes back
    with the other files only and the written paths in :attr:`CachedShard.written`."""
    own = f"{shard.key[0]}/{shard.key[1]}"
    if not all(plain_name(part, part) for part in shard.key):
        raise OutputError(f"refusing to write into {own!r}: not <namespace>/<name>")
    folder = f"{published.root}/{own}"
    rest: dict[str, bytes] = {}
    written: list[str] = []
    try:
        os.mkdir(folder, DIR_MODE)  # the namespace's directory is the writer's; this one is new
        if published.chmod:
            os.chmod(folder, DIR_MODE)
        for rel, data in shard.files.items():
            parent, _, name = rel.rpartition("/")
            if parent != own or not plain_name(rel, name):
                rest[rel] = data
                continue
            write_new(f"{folder}/{name}", data, published.chmod, published.fsync_each)
            written.append(rel)
        if published.fsync_each:
            fsync_path(folder, directory=True)
    except OSError as exc:
        raise OutputError(f"{published.out}: cannot write the output: {exc}") from exc
    return dataclasses.replace(shard, files=rest, written=tuple(written))
