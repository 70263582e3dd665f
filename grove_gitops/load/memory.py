"""A source tree held in memory: the files of a git ref's tree, read from the object database.

``diff --repo`` and ``plan --repo`` read two refs' trees. Writing them to a temporary
directory first (one file per YAML blob, then a walk reading them back) cost more than the
rest of a one-PodCliqueSet diff in a 1,000-PodCliqueSet repository (issue 14), so the blobs
stay in memory. :func:`grove_gitops.load.source.scan_memory` lists the files to read with
exactly the rules of the walk of a directory, and :func:`grove_gitops.load.source.load_source`
parses them with the checks and cache keys of files on disk, so both give the same answer.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass

from grove_gitops.load.treepaths import path_problem
from grove_gitops.yamlfiles.yamlio import MAX_FILE_BYTES


def bad_path(path: str) -> bool:
    """True for a path the shared rule of every git tree reader refuses
    (:func:`grove_gitops.load.treepaths.path_problem`: ``..``, ``.``, empty parts, absolute,
    a NUL byte, a backslash, ``.git`` in any guise): such a path never becomes a file name
    or a name in a message."""
    return path_problem(path) is not None


@functools.cache
def oversize() -> bytes:
    """The contents that stand for a file above the loader's size limit whose bytes were
    never read (a git blob of 200 MB): one shared object of ``MAX_FILE_BYTES + 1`` zero bytes,
    which the loader refuses as too large without looking at it, exactly as it refuses the
    real file on disk. Compare with ``is``: it is never a real file's contents."""
    return bytes(MAX_FILE_BYTES + 1)


@dataclass(frozen=True, eq=False)
class MemorySource:
    """The files of a source tree: relative posix path -> bytes.

    ``label`` names the tree where a message has no file (the limit on the number of files).
    Only what a source walk can read need be held (``*.yaml``, ``*.yml``, ``render.meta`` and
    ``.grove-gitops-ignore``); other files are ignored like on disk. A file too large to
    read is held as :func:`oversize`.
    """

    label: str
    files: Mapping[str, bytes]

    def __post_init__(self) -> None:
        bad = [p for p in self.files if bad_path(p)]
        if bad:
            raise ValueError(f"{self.label}: not a relative path inside the tree: {bad[0]!r}")
