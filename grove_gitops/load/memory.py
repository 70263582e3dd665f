"""A source tree held in memory: the files of a git ref's tree, read from the object database.

``diff --repo`` and ``plan --repo`` read two refs' trees. Writing them to a temporary
directory first (one file per YAML blob, then a walk reading them back) cost more than the
rest of a one-PodCliqueSet diff in a 1,000-PodCliqueSet repository (issue 14), so the blobs
stay in memory. :func:`grove_gitops.load.source.scan_memory` lists the files to read with
exactly the rules of the walk of a directory, and :func:`grove_gitops.load.source.load_source`
parses them with the checks and cache keys of files on disk, so both give the same answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


def bad_path(path: str) -> bool:
    """True for a path that is not a clean relative posix path (``..``, ``.``, empty parts,
    absolute, a NUL byte): such a path never becomes a file name or a name in a message."""
    return not path or "\0" in path or any(part in ("", ".", "..") for part in path.split("/"))


@dataclass(frozen=True, eq=False)
class MemorySource:
    """The files of a source tree: relative posix path -> bytes.

    ``label`` names the tree where a message has no file (the limit on the number of files).
    Only what a source walk can read need be held (``*.yaml``, ``*.yml``, ``render.meta`` and
    ``.grove-gitops-ignore``); other files are ignored like on disk.
    """

    label: str
    files: Mapping[str, bytes]

    def __post_init__(self) -> None:
        bad = [p for p in self.files if bad_path(p)]
        if bad:
            raise ValueError(f"{self.label}: not a relative path inside the tree: {bad[0]!r}")
