"""Read a source tree as it was at a git ref, without touching the work tree.

``diff --repo R BASE_REF HEAD_REF`` must not check anything out: it runs in CI on a PR
checkout and locally in someone's dirty clone, and either way the work tree, index and HEAD
belong to the user. The objects are read straight from the object database (tree traversal
with GitPython) into a temporary directory that :func:`grove_gitops.render.render_source`
then reads like any source tree.

Only what the renderer reads is extracted: ``*.yaml`` / ``*.yml`` files, plus
``render.meta`` markers (the loader skips directories holding an earlier rendered output,
and must see the marker to do so). Symlinks and submodules are skipped: a symlink's target
may lie outside the tree, and a submodule's content is not in this repository.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import git

from grove_gitops.diff.errors import GitRefError
from grove_gitops.load.source import IGNORE_FILE, OUTPUT_MARKER_FILE

_SYMLINK_MODE = 0o120000
_WANTED_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True)
class Extracted:
    """A source tree extracted from one ref."""

    ref: str
    sha: str
    root: Path
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


def extract(repo: git.Repo, ref: str, source_path: str, dest: Path) -> Extracted:
    """Write the source tree at ``ref`` (below ``source_path``) into the empty dir ``dest``."""
    commit = resolve(repo, ref)
    sub = normalize_source_path(source_path)
    dest.mkdir(parents=True, exist_ok=True)
    try:
        tree = commit.tree / sub if sub else commit.tree
    except KeyError:
        return Extracted(ref, commit.hexsha, dest, False, 0)
    if not isinstance(tree, git.Tree):
        raise GitRefError(f"{ref}: --source-path {sub!r} is not a directory")
    count = 0
    try:
        for item in tree.traverse():
            if not isinstance(item, git.Blob) or item.mode == _SYMLINK_MODE:
                continue
            name = PurePosixPath(item.path).name
            if not (name.endswith(_WANTED_SUFFIXES) or name in (OUTPUT_MARKER_FILE, IGNORE_FILE)):
                continue
            rel = PurePosixPath(item.path).relative_to(sub) if sub else PurePosixPath(item.path)
            if ".." in rel.parts or rel.is_absolute():
                continue
            target = dest.joinpath(*rel.parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(item.data_stream.read())
            count += 1
    except (OSError, ValueError, git.GitCommandError) as exc:
        raise GitRefError(f"{ref}: cannot read the tree: {exc}") from exc
    return Extracted(ref, commit.hexsha, dest, True, count)
