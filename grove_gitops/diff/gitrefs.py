"""Read a source tree as it was at a git ref, without touching the work tree.

``diff --repo R BASE_REF HEAD_REF`` must not check anything out: it runs in CI on a PR
checkout and locally in someone's dirty clone, and either way the work tree, index and HEAD
belong to the user. The objects are read straight from the object database (one ``git
ls-tree`` and one ``git cat-file --batch`` per ref) into a
:class:`~grove_gitops.load.memory.MemorySource`, which the loader reads like a source tree
on disk. Nothing is written: writing 2 x 1,000 files to a temporary directory and reading
them back cost more than the rest of a one-PodCliqueSet diff of a large repository (issue 14).

The tree is listed, checked and bounded by :mod:`grove_gitops.load.gittree` before any
content is read -- the same code the controller exports a source commit with, so a tree the
controller refuses (a ``..``, ``.git`` or backslash name, a symbolic link leaving the tree)
is refused here too, as an error naming the ref and the entry (issue 21). Only what the
loader reads is kept: ``*.yaml`` / ``*.yml`` files, ``render.meta`` markers (the loader skips
directories holding an earlier rendered output) and the ignore file. A file above the 2 MiB
limit is never read; the loader reports it as too large. Symbolic links inside the tree and
submodules are left out: git trees are read without following links, and a submodule's
content is not in this repository.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import git

from grove_gitops.diff.errors import GitRefError, RefusedTreeError
from grove_gitops.errors import InvalidInputError
from grove_gitops.load.gittree import list_source, read_blobs
from grove_gitops.load.memory import MemorySource, bad_path, oversize
from grove_gitops.load.treepaths import shown


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
    git_dir = Path(repo.git_dir)
    try:
        listed = list_source(git_dir, tree.hexsha)
        data = read_blobs(git_dir, list(listed.values()), known)
    except InvalidInputError as exc:
        raise RefusedTreeError(_refusal(ref, commit.hexsha, sub, exc)) from exc
    except (OSError, ValueError) as exc:
        raise GitRefError(f"{ref}: cannot read the tree: {exc}") from exc
    files = {rel: data[entry.oid] for rel, entry in listed.items()}
    return Extracted(ref, commit.hexsha, MemorySource(label, files), True, len(files))


def _refusal(ref: str, sha: str, sub: str, exc: InvalidInputError) -> str:
    """``REF (sha): path/in/repo: tree entry ...; refusing the tree``, the path escaped."""
    where = f"{shown(ref)} ({sha[:7]})"
    lines = []
    for problem in exc.problems:
        path = "/".join(p for p in (shown(sub), problem.file) if p) or "."
        lines.append(f"{where}: {path}: {problem.message}")
    return "\n".join(lines)


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
        if data is oversize():  # never read: a sparse file of the same (refused) size
            with open(target, "wb") as handle:
                handle.truncate(len(data))
        else:
            target.write_bytes(data)
