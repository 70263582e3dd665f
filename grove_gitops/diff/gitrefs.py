"""Read a source tree as it was at a git ref, without touching the work tree.

``diff --repo R BASE_REF HEAD_REF`` must not check anything out: it runs in CI on a PR
checkout and locally in someone's dirty clone, and either way the work tree, index and HEAD
belong to the user. The objects are read straight from the object database (one ``git
ls-tree`` and one ``git cat-file --batch`` per ref) into a
:class:`~grove_gitops.load.memory.MemorySource`, which the loader reads like a source tree
on disk. Nothing is written: writing 2 x 1,000 files to a temporary directory and reading
them back cost more than the rest of a one-PodCliqueSet diff of a large repository (issue 14).

Only what the renderer reads is kept: ``*.yaml`` / ``*.yml`` files, plus ``render.meta``
markers (the loader skips directories holding an earlier rendered output, and must see the
marker to do so) and the ignore file. Symlinks and submodules are skipped: a symlink's target
may lie outside the tree, and a submodule's content is not in this repository.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import git

from grove_gitops.diff.errors import GitRefError
from grove_gitops.load.memory import MemorySource, bad_path
from grove_gitops.load.source import IGNORE_FILE, OUTPUT_MARKER_FILE

_SYMLINK_MODE = 0o120000
_WANTED_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True)
class Extracted:
    """A source tree read from one ref, held in memory."""

    ref: str
    sha: str
    source: MemorySource
    #: False when ``source_path`` does not exist at this ref (e.g. a PR that adds it).
    present: bool
    files: int

    @property
    def label(self) -> str:
        short = self.sha[:7]
        name = self.ref if not self.sha.startswith(self.ref.lower()) else ""
        label = f"{name} ({short})" if name else short
        return label if self.present else f"{label}, source path absent"


def normalize_source_path(path: str) -> str:
    """``""`` for the repository root, else a clean relative posix path inside it."""
    p = PurePosixPath(path.strip() or ".")
    if p.is_absolute() or ".." in p.parts:
        raise GitRefError(f"--source-path {path!r} must be a relative path inside the repository")
    clean = p.as_posix()
    return "" if clean == "." else clean


def open_repo(path: Path) -> git.Repo:
    try:
        return git.Repo(path, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError) as exc:
        raise GitRefError(f"{path}: not a git repository") from exc


def resolve(repo: git.Repo, ref: str) -> git.Commit:
    try:
        obj = repo.rev_parse(ref)
        commit = obj if isinstance(obj, git.Commit) else repo.commit(ref)
    except (git.BadName, git.BadObject, ValueError, git.GitCommandError) as exc:
        raise GitRefError(f"{ref}: not a commit in {repo.working_dir or repo.git_dir}") from exc
    return commit


def extract(repo: git.Repo, ref: str, source_path: str, known: dict[str, bytes] | None = None) -> Extracted:
    """The source tree at ``ref`` (below ``source_path``), read into memory.

    ``known`` (blob id -> contents, filled in here) is shared by the two refs of a diff: a
    file the refs have in common is read once (a one-file change reads one blob for head).
    """
    commit = resolve(repo, ref)
    sub = normalize_source_path(source_path)
    label = sub or "."
    try:
        tree = commit.tree / sub if sub else commit.tree
    except KeyError:
        return Extracted(ref, commit.hexsha, MemorySource(label, {}), False, 0)
    if not isinstance(tree, git.Tree):
        raise GitRefError(f"{ref}: --source-path {sub!r} is not a directory")
    try:
        wanted = [(rel, blob) for rel, blob in _blobs(repo, tree.hexsha) if _wanted(rel)]
        data = known if known is not None else {}
        data.update(_read_blobs(repo, [blob for _, blob in wanted if blob not in data]))
    except (OSError, ValueError, GitRefError) as exc:
        raise GitRefError(f"{ref}: cannot read the tree: {exc}") from exc
    files = {rel: data[blob] for rel, blob in wanted}
    return Extracted(ref, commit.hexsha, MemorySource(label, files), True, len(files))


def _wanted(rel: str) -> bool:
    """A file the loader can read; never a path that could leave the tree (``..``, which git
    itself refuses to write, is checked all the same)."""
    name = rel.rpartition("/")[2]
    return (name.endswith(_WANTED_SUFFIXES) or name in (OUTPUT_MARKER_FILE, IGNORE_FILE)) and not bad_path(rel)


def _git(repo: git.Repo, args: list[str], stdin: bytes | None = None) -> bytes:
    """Run git on the repository's object database; its output, or :class:`GitRefError`."""
    exe = str(git.Git.GIT_PYTHON_GIT_EXECUTABLE or "git")
    proc = subprocess.run(
        [exe, "--git-dir", str(repo.git_dir), *args], input=stdin, capture_output=True, check=False
    )
    if proc.returncode != 0:
        raise GitRefError(f"git {args[0]}: {proc.stderr.decode(errors='replace').strip() or proc.returncode}")
    return proc.stdout


def _blobs(repo: git.Repo, tree: str) -> list[tuple[str, str]]:
    """(path relative to ``tree``, blob id) of every regular file below ``tree``: symlinks
    (mode 120000) and submodules (``commit`` entries) are left out. Names are decoded as the
    file system would (undecodable bytes kept as surrogates), as a file written to disk and
    listed again would be named."""
    out: list[tuple[str, str]] = []
    for record in _git(repo, ["ls-tree", "-r", "-z", "--full-tree", tree]).split(b"\0"):
        if not record:
            continue
        meta, _, name = record.partition(b"\t")
        mode, kind, blob = meta.split(b" ")
        if kind != b"blob" or int(mode, 8) == _SYMLINK_MODE:
            continue
        out.append((os.fsdecode(name), blob.decode("ascii")))
    return out


def _read_blobs(repo: git.Repo, blobs: list[str]) -> dict[str, bytes]:
    """Blob id -> contents, all read through one ``git cat-file --batch`` (one process and
    no round trip per blob)."""
    unique = list(dict.fromkeys(blobs))
    if not unique:
        return {}
    raw = _git(repo, ["cat-file", "--batch"], "".join(f"{b}\n" for b in unique).encode())
    out: dict[str, bytes] = {}
    pos = 0
    for blob in unique:
        end = raw.index(b"\n", pos)
        header = raw[pos:end].split(b" ")
        if len(header) != 3 or header[1] != b"blob":
            raise GitRefError(f"object {blob}: {b' '.join(header[1:]).decode(errors='replace') or 'unreadable'}")
        size = int(header[2])
        out[blob] = raw[end + 1 : end + 1 + size]
        pos = end + 2 + size
    return out


def write_source(source: MemorySource, dest: Path) -> None:
    """Write ``source`` into the folder ``dest`` (the PR check hands a ref's tree to
    ``grove-gitops validate`` as a folder). Every path stays inside ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    root = dest.resolve()
    for rel, data in source.files.items():
        target = root.joinpath(*PurePosixPath(rel).parts)
        if bad_path(rel) or not target.resolve().is_relative_to(root):
            raise GitRefError(f"{rel!r}: not a path inside the source tree")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
