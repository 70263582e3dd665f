"""Build git trees no checkout would write, with git's plumbing, in a real repository.

``git mktree`` checks little, and ``git hash-object -t tree --literally`` nothing at all: a
tree can hold ``..``, ``.git``, a backslash, a ``/`` inside a name, a name twice, symbolic
links and submodules. A :class:`Tree` describes one (names as bytes or text); :func:`craft`
writes it into a repository's object database and :func:`commit` makes a commit of it.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "crafter",
    "GIT_AUTHOR_EMAIL": "crafter@example.com",
    "GIT_COMMITTER_NAME": "crafter",
    "GIT_COMMITTER_EMAIL": "crafter@example.com",
}


def git(git_dir: Path, *args: str, data: bytes | None = None) -> str:
    proc = subprocess.run(
        ["git", "--git-dir", str(git_dir), *args], input=data, capture_output=True, check=False, env=ENV
    )
    if proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {proc.stderr.decode(errors='replace')}")
    return proc.stdout.decode().strip()


@dataclass(frozen=True)
class Link:
    """A symbolic link (mode 120000) to ``target``."""

    target: bytes


@dataclass(frozen=True)
class Gitlink:
    """A submodule entry (mode 160000) naming ``sha``."""

    sha: str = "1" * 40


@dataclass(frozen=True)
class Blob:
    """An entry given by its object id (a large blob, a deep tree, written once and shared);
    ``mode`` 40000 for a tree."""

    oid: str
    mode: bytes = b"100644"




@dataclass
class Tree:
    """Entries in order; a name may repeat (``sort=False`` keeps the order as given)."""

    entries: list[tuple[bytes | str, bytes | Tree | Link | Gitlink | Blob]] = field(default_factory=list)
    sort: bool = True


def _name(name: bytes | str) -> bytes:
    return name if isinstance(name, bytes) else os.fsencode(name)


def blob(git_dir: Path, data: bytes) -> str:
    return git(git_dir, "hash-object", "-w", "--stdin", data=data)


def craft(git_dir: Path, tree: Tree) -> str:
    """The object id of ``tree`` (and everything below it), written into ``git_dir``."""
    rows: list[tuple[bytes, bytes, str]] = []
    for name, node in tree.entries:
        raw = _name(name)
        if isinstance(node, Tree):
            rows.append((b"40000", raw, craft(git_dir, node)))
        elif isinstance(node, Link):
            rows.append((b"120000", raw, blob(git_dir, node.target)))
        elif isinstance(node, Gitlink):
            rows.append((b"160000", raw, node.sha))
        elif isinstance(node, Blob):
            rows.append((node.mode, raw, node.oid))
        else:
            rows.append((b"100644", raw, blob(git_dir, node)))
    if tree.sort:
        rows.sort(key=lambda r: r[1] + b"/" if r[0] == b"40000" else r[1])
    body = b"".join(mode + b" " + name + b"\0" + bytes.fromhex(oid) for mode, name, oid in rows)
    return git(git_dir, "hash-object", "-t", "tree", "--literally", "-w", "--stdin", data=body)


def commit(git_dir: Path, tree: Tree | str, parent: str | None = None, message: str = "crafted") -> str:
    oid = tree if isinstance(tree, str) else craft(git_dir, tree)
    return git(git_dir, "commit-tree", oid, "-m", message, *(["-p", parent] if parent else []))


def push(git_dir: Path, sha: str, branch: str = "main") -> None:
    """Point ``branch`` of the bare repository ``git_dir`` at ``sha`` (made in it)."""
    git(git_dir, "update-ref", f"refs/heads/{branch}", sha)


def configmap(name: str) -> bytes:
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: default\ndata:\n  k: v\n".encode()
