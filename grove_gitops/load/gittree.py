"""Read a source tree out of git's object database, checked and bounded before any content.

Every command that reads a git tree goes through here: the controller's export of a source
commit (``grove_gitops.gitops.repo``), its check of the output branch before a checkout, and
``diff --repo`` / ``plan --repo`` (``grove_gitops.diff.gitrefs``, and so the PR check). So
they refuse the same trees with the same message (issue 21, item 3):

* :func:`walk_tree` lists a tree with one streamed ``git ls-tree -r -t -z`` and refuses the
  whole tree at the first entry :func:`~grove_gitops.load.treepaths.path_problem` refuses, at
  a name holding ``/`` (its folder was never listed), at a name listed twice in one folder,
  and beyond :data:`MAX_TREE_ENTRIES` entries; memory stays bounded however large the tree.
* :func:`list_source` keeps the files the source walk can read (``*.yaml`` / ``*.yml``,
  ``render.meta``, the root ``.grove-gitops-ignore``; never below a hidden folder), refuses
  symbolic links the walk would refuse (:func:`~grove_gitops.load.treepaths.symlink_problem`)
  and bounds the count and the total size -- all from ``ls-tree -l``'s sizes, before a byte
  of content is read (issue 21, item 2: a 200 MB blob was read whole before the 2 MiB check).
* :func:`read_blobs` reads the kept files through one ``git cat-file --batch``; a file above
  the 2 MiB limit of every source file is never read: it becomes :func:`oversize`, which the
  loader reports as too large, exactly as for a file on disk.

Problems are :class:`~grove_gitops.errors.InvalidInputError` naming the entry (escaped, relative
to the listed tree): a refused tree is invalid input, skipped by the controller like any other
invalid commit and reported by ``diff`` as an error naming the ref.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import git

from grove_gitops.errors import InputProblem, InvalidInputError
from grove_gitops.load.memory import oversize
from grove_gitops.load.source import IGNORE_FILE, MAX_FILES, OUTPUT_MARKER_FILE
from grove_gitops.load.treepaths import MAX_PATH_BYTES, hidden, path_problem, shown, symlink_problem
from grove_gitops.yamlfiles.yamlio import MAX_FILE_BYTES

#: Entries (files, folders, links, submodules) one listing may hold; read as a stream, so
#: this bounds time, not memory. A source tree of 20,000 YAML files is far below it.
MAX_TREE_ENTRIES = 1_000_000
#: Files a source listing may keep: the loader refuses more than ``MAX_FILES`` YAML files
#: anyway; hidden, ignored and rendered ones it skips are counted here too, hence the margin.
MAX_TREE_FILES = 2 * MAX_FILES
#: Bytes of kept files (and symbolic link targets) a source listing may read in all.
MAX_TREE_BYTES = 256 * 1024 * 1024
SYMLINK_MODE = 0o120000
GITLINK_MODE = 0o160000
#: Longest ``ls-tree -l -z`` record: mode, type, object id (SHA-256 at most), size, path.
_MAX_RECORD = MAX_PATH_BYTES + 128
_WANTED_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True)
class TreeEntry:
    """One entry of a tree listing: ``path`` relative to the listed tree, decoded with
    :func:`os.fsdecode` (undecodable bytes kept as surrogates, as a file system listing
    would give them); ``size`` is -1 for folders and submodules, and when not asked for."""

    mode: int
    kind: str
    oid: str
    size: int
    path: str

    @property
    def is_link(self) -> bool:
        return self.kind == "blob" and self.mode == SYMLINK_MODE

    @property
    def is_file(self) -> bool:
        return self.kind == "blob" and self.mode != SYMLINK_MODE


class UnreadableTreeError(OSError):
    """Git read the objects but refused the tree: an entry names an object of another type
    (a blob recorded as a folder). The commit's fault, not the clone's: git's fetch brought
    every object, so it is refused like invalid input (a missing object, or git failing to
    start, stays a plain :class:`OSError`: the repository's fault, retried)."""


def refused(path: str, reason: str) -> InvalidInputError:
    """The error refusing a tree because of the entry ``path``."""
    return InvalidInputError([InputProblem(shown(path), "", f"tree entry {reason}; refusing the tree")])


def _git_exe() -> str:
    return str(git.Git.GIT_PYTHON_GIT_EXECUTABLE or "git")


def walk_tree(git_dir: Path, tree: str, *, sizes: bool = False) -> Iterator[TreeEntry]:
    """Every entry below the tree object ``tree``, folders before their contents, each one
    checked (see the module docstring); ``sizes`` asks git for blob sizes (``-l``)."""
    args = [_git_exe(), "--git-dir", str(git_dir), "ls-tree", "-r", "-t", "-z", *(["-l"] if sizes else []), tree]
    with tempfile.TemporaryFile() as errors:
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=errors, stdin=subprocess.DEVNULL)
        try:
            yield from _entries(proc)
            code = proc.wait()
            if code != 0:
                errors.seek(0)
                message = errors.read(4096).decode(errors="replace").strip()
                raise UnreadableTreeError(f"git ls-tree {tree}: {message or f'exit {code}'}")
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()


def _entries(proc: subprocess.Popen[bytes]) -> Iterator[TreeEntry]:
    """Parse and check ``ls-tree -z`` records as they arrive."""
    assert proc.stdout is not None
    #: The folders enclosing the current entry, each with the names seen in it: ``ls-tree
    #: -r`` lists depth first, so the parent of an entry is always on this stack.
    stack: list[tuple[str, set[str]]] = [("", set())]
    count = 0
    pending = b""
    while True:
        chunk = os.read(proc.stdout.fileno(), 1 << 16)
        if not chunk:
            break
        records = (pending + chunk).split(b"\0")
        pending = records.pop()
        if len(pending) > _MAX_RECORD:
            path = pending.partition(b"\t")[2]
            raise refused(os.fsdecode(path[:200]) + "...", f"is longer than {MAX_PATH_BYTES} bytes")
        for record in records:
            count += 1
            if count > MAX_TREE_ENTRIES:
                raise InvalidInputError(
                    [InputProblem("", "", f"the tree holds more than {MAX_TREE_ENTRIES} entries; refusing the tree")]
                )
            entry = _parse(record)
            _check(entry, stack)
            yield entry
    if pending:
        raise OSError("git ls-tree: truncated output")


def _parse(record: bytes) -> TreeEntry:
    meta, tab, name = record.partition(b"\t")
    fields = meta.split()
    if not tab or len(fields) not in (3, 4):
        raise OSError(f"git ls-tree: unexpected record {record[:200]!r}")
    oid = fields[2].decode("ascii")
    size = -1
    if len(fields) == 4 and fields[3] != b"-":
        if not fields[3].isdigit():  # "BAD": git could not read the object
            raise OSError(f"object {oid}: missing")
        size = int(fields[3])
    return TreeEntry(int(fields[0], 8), fields[1].decode("ascii"), oid, size, os.fsdecode(name))


def _check(entry: TreeEntry, stack: list[tuple[str, set[str]]]) -> None:
    path = entry.path
    reason = path_problem(path)
    if reason is not None:
        raise refused(path, reason)
    parent, _, name = path.rpartition("/")
    while stack and stack[-1][0] != parent:
        stack.pop()
    if not stack:  # its folder was never listed: the name itself holds the "/"
        raise refused(path, "has a '/' inside a single name")
    names = stack[-1][1]
    if name in names:
        raise refused(path, "appears twice in its folder")
    names.add(name)
    if entry.kind == "tree":
        stack.append((path, set()))


def wanted(path: str) -> bool:
    """A file the source walk can read: never below a hidden folder; ``*.yaml`` / ``*.yml``,
    a ``render.meta`` marker, or the ignore file at the root."""
    if path == IGNORE_FILE:
        return True
    name = path.rpartition("/")[2]
    return not hidden(path) and (name.endswith(_WANTED_SUFFIXES) or name == OUTPUT_MARKER_FILE)


def list_source(git_dir: Path, tree: str) -> dict[str, TreeEntry]:
    """The files of the source tree ``tree`` the loader may read, by path (sizes known,
    nothing read), after every check of the module docstring."""
    files: dict[str, TreeEntry] = {}
    links: list[TreeEntry] = []
    total = 0
    for entry in walk_tree(git_dir, tree, sizes=True):
        if entry.is_link and not hidden(entry.path):
            if entry.size > MAX_PATH_BYTES:
                raise refused(entry.path, "is a symbolic link with a target longer than a path")
            links.append(entry)
            total += max(entry.size, 0)
        elif entry.is_file and wanted(entry.path):
            if entry.path == IGNORE_FILE and entry.size > MAX_FILE_BYTES:
                raise refused(entry.path, f"is larger than the {MAX_FILE_BYTES} byte limit of a source file")
            files[entry.path] = entry
            if len(files) > MAX_TREE_FILES:
                raise InvalidInputError([InputProblem("", "", f"more than {MAX_TREE_FILES} YAML files; refusing the tree")])
            total += entry.size if 0 <= entry.size <= MAX_FILE_BYTES else 0
        else:
            continue
        if total > MAX_TREE_BYTES:
            raise InvalidInputError(
                [InputProblem("", "", f"the YAML files hold more than {MAX_TREE_BYTES} bytes in all; refusing the tree")]
            )
    if links:
        targets = read_blobs(git_dir, links)
        for link in links:
            reason = symlink_problem(link.path, targets[link.oid])
            if reason is not None:
                raise refused(link.path, reason)
    return files


def read_blobs(git_dir: Path, entries: list[TreeEntry], known: dict[str, bytes] | None = None) -> dict[str, bytes]:
    """Object id -> contents of every entry, through one ``git cat-file --batch``; an entry
    above :data:`MAX_FILE_BYTES` is never read (:func:`oversize` stands for it), and a blob
    in ``known`` (filled in here) is not read again."""
    out = known if known is not None else {}
    todo: dict[str, int] = {}
    for entry in entries:
        if entry.size < 0:
            raise ValueError(f"{entry.path}: read_blobs needs a listing with sizes")
        if entry.oid in out:
            continue
        if entry.size > MAX_FILE_BYTES:
            out[entry.oid] = oversize()
        else:
            todo[entry.oid] = entry.size
    if not todo:
        return out
    proc = subprocess.run(
        [_git_exe(), "--git-dir", str(git_dir), "cat-file", "--batch"],
        input="".join(f"{oid}\n" for oid in todo).encode(),
        capture_output=True,
        check=False,
    )
    if proc.returncode != 0:
        raise OSError(f"git cat-file: {proc.stderr.decode(errors='replace').strip() or proc.returncode}")
    raw, pos = proc.stdout, 0
    for oid, size in todo.items():
        end = raw.find(b"\n", pos)
        header = raw[pos:end].split(b" ") if end >= 0 else []
        if len(header) != 3 or header[1] != b"blob" or int(header[2]) != size:
            shown_header = b" ".join(header[1:]).decode(errors="replace") or "unreadable"
            kind = UnreadableTreeError if len(header) == 3 else OSError  # "<oid> missing": the clone's
            raise kind(f"object {oid}: {shown_header}")
        length = int(header[2])
        out[oid] = raw[end + 1 : end + 1 + length]
        pos = end + 2 + length
    return out
