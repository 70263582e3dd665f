"""A private working clone of the GitOps repository, driven through GitPython.

The clone is disposable: every iteration starts from ``git fetch`` and a hard reset to the
remote, so whatever a killed process left behind (a half-written tree, a local commit that
never got pushed, a stale ``index.lock``) is discarded. If the clone itself is damaged it is
deleted and cloned again. An exclusive ``flock`` on the working directory keeps two
controllers from sharing one clone.

Credentials: a token in ``GROVE_GITOPS_GIT_TOKEN``, or a ``user:token@`` in the repository URL,
is handed to git through ``GIT_ASKPASS`` (never written into the clone's URL, a config file or
a log line); otherwise git's own credential helpers and SSH agent apply. Every git error is
redacted before it is raised.

Ownership: the controller only ever deletes a work directory it created itself. A directory
it creates (or finds empty) gets a marker inside ``.git``; any other non-empty directory, or
a clone of a different remote, is refused with :class:`WorkdirError` and left untouched.

Exports: a source commit is untrusted input. Its tree is listed and checked by
:mod:`grove_gitops.load.gittree` (the rule of :mod:`grove_gitops.load.treepaths`, the same
``diff --repo`` applies) before any entry becomes a path or any content is read, and every
written path must resolve inside the export directory; a commit that breaks this is refused
with :class:`InvalidInputError` before anything is written. The output branch's tree is
checked the same way before it is checked out, and HEAD is never reset to a tree nobody
checked (a fresh clone's HEAD is the remote's default branch).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO
from urllib.parse import unquote, urlsplit, urlunsplit

import git

from grove_gitops.errors import GitError, GitPushRejectedError, InputProblem, InvalidInputError
from grove_gitops.gitops import trailers
from grove_gitops.gitops.redact import redact, register_secret
from grove_gitops.load.gittree import UnreadableTreeError, list_source, read_blobs, walk_tree
from grove_gitops.load.memory import oversize
from grove_gitops.load.treepaths import shown

TOKEN_ENV = "GROVE_GITOPS_GIT_TOKEN"
_REJECTED = ("rejected", "non-fast-forward", "fetch first", "failed to update ref", "cannot lock ref", "stale info")


#: Written inside ``.git`` of a work directory the controller created (``git clean`` keeps it).
MARKER = "grove-gitops-workdir"
#: Remote refs recording, per output branch, the last source commit examined (see controller).
EXAMINED_REFS = "refs/grove-gitops/examined/"


class WorkdirError(GitError):
    """The work directory holds something the controller did not create: a usage error."""


def split_credentials(url: str) -> tuple[str, str | None, str | None]:
    """``https://user:token@host/x`` -> (``https://host/x``, user, token); other URLs unchanged.

    The credentials go to git through ``GIT_ASKPASS`` instead, so the clone's ``.git/config``
    (readable by anything that reads the work directory) never holds them.
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or "@" not in parts.netloc:
        return url, None, None
    userinfo, _, hostport = parts.netloc.rpartition("@")
    user, sep, password = userinfo.partition(":")
    if not sep:
        return url, None, None
    return urlunsplit(parts._replace(netloc=hostport)), unquote(user) or None, unquote(password)


#: Directories of ``.git`` that hold many files and no lock a killed run could strand: the
#: render cache, the source export, and the loose-object fan-out (``objects/ab/``).
_NO_LOCKS = frozenset({"grove-gitops-cache", "grove-gitops-source"})


def _lock_files(git_dir: Path) -> list[Path]:
    """The ``*.lock`` files under ``git_dir`` (index, refs, config, packed-refs, pack and
    commit-graph locks), without walking tens of thousands of loose objects."""
    found: list[Path] = []
    objects = str(git_dir / "objects")
    for dirpath, dirnames, filenames in os.walk(git_dir):
        if dirpath == str(git_dir):
            dirnames[:] = [d for d in dirnames if d not in _NO_LOCKS]
        elif dirpath == objects:
            dirnames[:] = [d for d in dirnames if not (len(d) == 2 and all(c in "0123456789abcdef" for c in d))]
        found += [Path(dirpath) / name for name in filenames if name.endswith(".lock")]
    return found


def blob_id(data: bytes) -> str:
    """The id git gives a blob holding ``data`` (SHA-1 of ``blob <size>\\0`` + data)."""
    h = hashlib.sha1(b"blob %d\0" % len(data), usedforsecurity=False)
    h.update(data)
    return h.hexdigest()


@dataclass(frozen=True)
class SourceCommit:
    sha: str
    subject: str
    #: ``Name <email>``, ISO 8601 author date and the whole message: the provenance trailers
    #: and Argo CD hydrator metadata of the rendered commit.
    author: str = ""
    date: str = ""
    message: str = ""

    @classmethod
    def of(cls, commit: git.Commit) -> SourceCommit:
        message = commit.message if isinstance(commit.message, str) else commit.message.decode(errors="replace")
        author = f"{commit.author.name} <{commit.author.email}>"
        return cls(commit.hexsha, str(commit.summary), author, commit.authored_datetime.isoformat(), message)


_ASKPASS_USER = "GROVE_GITOPS_ASKPASS_USER"
_ASKPASS_TOKEN = "GROVE_GITOPS_ASKPASS_TOKEN"


def _askpass_script(directory: Path) -> Path:
    """A script that answers git's prompts from the git process's environment (never a file)."""
    script = directory / "askpass.sh"
    script.write_text(
        "#!/bin/sh\n"
        f'case "$1" in Username*) printf "%s\\n" "${{{_ASKPASS_USER}:-x-access-token}}" ;;'
        f' *) printf "%s\\n" "${_ASKPASS_TOKEN}" ;; esac\n'
    )
    script.chmod(stat.S_IRWXU)
    return script


class Workspace:
    """One working clone of ``url`` under ``workdir``."""

    def __init__(self, url: str, workdir: Path, author_name: str, author_email: str) -> None:
        self.url, user, password = split_credentials(url)
        self.workdir = workdir
        self.author = git.Actor(author_name, author_email)
        self.author_email = author_email
        self._lock: IO[str] | None = None
        self._repo: git.Repo | None = None
        self._branch: str | None = None
        self._clean_head: str | None = None  # remote commit the work tree is known to equal
        self._pending_head: str | None = None
        self._written: dict[str, str] | None = None  # blob ids of what the output path holds, if known
        self._checked: set[tuple[str, str]] = set()  # (commit, output path) trees found safe to check out
        self._env: dict[str, str] = {"GIT_TERMINAL_PROMPT": "0"}
        token = password or os.environ.get(TOKEN_ENV)
        if token:
            register_secret(token)
            helper_dir = Path(tempfile.mkdtemp(prefix="grove-gitops-askpass-"))
            self._env["GIT_ASKPASS"] = str(_askpass_script(helper_dir))
            self._env[_ASKPASS_TOKEN] = token
            if password and user:
                self._env[_ASKPASS_USER] = user

    @property
    def source_dir(self) -> Path:
        """The controller's private export of source commits, inside the clone's ``.git``."""
        return self.workdir / ".git" / "grove-gitops-source"

    @property
    def cache_dir(self) -> Path:
        """The controller's persistent render cache, inside the clone's ``.git`` (the source
        export never writes there; ``git clean`` never touches it)."""
        return self.workdir / ".git" / "grove-gitops-cache"

    @property
    def _export_state(self) -> Path:
        return self.workdir / ".git" / "grove-gitops-source.json"

    def saved_export(self) -> dict[str, str] | None:
        """What a previous process's last complete export left in :attr:`source_dir`
        (``{path: blob id}``), so a fresh process (``--once``) writes only what changed."""
        try:
            data = json.loads(self._export_state.read_text())
        except (OSError, ValueError):
            return None
        if not self.source_dir.is_dir() or not isinstance(data, dict):
            return None
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
            return None
        return data

    def forget_export(self) -> None:
        """Called before an export starts: a process killed mid-export leaves no stale record."""
        with contextlib.suppress(FileNotFoundError):
            self._export_state.unlink()

    def save_export(self, exported: dict[str, str]) -> None:
        tmp = self._export_state.with_name(self._export_state.name + ".tmp")
        try:
            tmp.write_text(json.dumps(exported, sort_keys=True))
            os.replace(tmp, self._export_state)
        except OSError:
            pass  # only an optimisation: the next process exports everything

    # -- lifecycle -----------------------------------------------------------------------
    def open(self) -> None:
        self.workdir.parent.mkdir(parents=True, exist_ok=True)
        lock_path = self.workdir.parent / f".{self.workdir.name}.lock"
        self._lock = open(lock_path, "w")  # noqa: SIM115 - held for the workspace's lifetime
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            self.close()
            raise GitError(f"{self.workdir}: another grove-gitops controller is using this work directory") from exc
        try:
            self._check_ownership()
            self._repo = self._reuse() or self._clone()
        except WorkdirError:
            self.close()
            raise
        except git.GitCommandError as exc:
            self.close()
            raise GitError(redact(f"cannot clone {self.url}: {str(exc.stderr).strip() or exc}")) from exc

    def close(self) -> None:
        if self._repo is not None:
            self._repo.close()
            self._repo = None
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def _owned(self) -> bool:
        return (self.workdir / ".git" / MARKER).is_file()

    def _check_ownership(self) -> None:
        """Refuse a work directory that holds anything the controller did not put there."""
        if not self.workdir.exists():
            return
        if not self.workdir.is_dir():
            raise WorkdirError(f"{self.workdir}: --workdir exists and is not a directory; refusing to use it")
        if not self._owned() and any(self.workdir.iterdir()):
            raise WorkdirError(
                f"{self.workdir}: --workdir is not empty and was not created by grove-gitops;"
                " refusing to use it (give an empty or new directory)"
            )
        try:
            origin = git.Repo(self.workdir).remotes.origin.url
        except (git.GitError, ValueError, OSError, AttributeError):
            return  # a damaged clone of our own: re-cloned below
        if split_credentials(origin)[0] != self.url:
            raise WorkdirError(
                f"{self.workdir}: --workdir holds a clone of another repository"
                f" ({redact(split_credentials(origin)[0])}); refusing to replace it"
            )

    def _reuse(self) -> git.Repo | None:
        if not (self.workdir / ".git").is_dir():
            return None
        try:
            for stale in _lock_files(self.workdir / ".git"):
                stale.unlink()  # we hold the flock: any lock file is a leftover of a killed run
            repo = git.Repo(self.workdir)
            repo.git.update_environment(**self._env)
            if repo.remotes.origin.url != self.url:  # a URL with credentials from an older version
                repo.git.remote("set-url", "origin", self.url)
            repo.git.rev_parse("--git-dir")
            return repo
        except (git.GitError, ValueError, OSError, AttributeError):
            self._wipe()
            return None

    def _wipe(self) -> None:
        """Delete the work directory, only ever one the controller created (marker checked)."""
        if self._owned():
            shutil.rmtree(self.workdir, ignore_errors=True)
        elif self.workdir.exists() and any(self.workdir.iterdir()):
            raise WorkdirError(f"{self.workdir}: damaged clone not created by grove-gitops; refusing to delete it")

    def _clone(self) -> git.Repo:
        self._wipe()
        repo = git.Repo.clone_from(self.url, self.workdir, env=self._env, no_checkout=True)
        repo.git.update_environment(**self._env)
        (self.workdir / ".git" / MARKER).write_text("created by grove-gitops controller; safe to delete\n")
        return repo

    @property
    def repo(self) -> git.Repo:
        if self._repo is None:
            raise GitError("workspace is not open")
        return self._repo

    def _git(self, *args: str) -> str:
        try:
            return str(self.repo.git.execute(["git", *args]))
        except git.GitCommandError as exc:
            raise GitError(redact(f"git {args[0]} failed: {str(exc.stderr).strip() or exc}")) from exc

    # -- reading ---------------------------------------------------------------------------
    def fetch(self) -> None:
        self._git(
            "fetch",
            "--prune",
            "--no-tags",
            "origin",
            "+refs/heads/*:refs/remotes/origin/*",
            f"+{EXAMINED_REFS}*:refs/remotes/origin-examined/*",
        )

    def examined(self, output_branch: str) -> dict[str, str] | None:
        """Trailers of the remote's record of the last source commit examined, if any."""
        try:
            sha = str(self.repo.git.rev_parse("--verify", "--quiet", f"refs/remotes/origin-examined/{output_branch}"))
            return trailers.parse(str(self.repo.git.log("-1", "--format=%B", sha)))
        except git.GitCommandError:
            return None

    def record_examined_commit(self, message: str) -> str:
        """A commit (empty tree, no parent) holding ``message``: pushed with :meth:`push`."""
        empty_tree = self._git("hash-object", "-t", "tree", "-w", "/dev/null")
        env = {
            "GIT_AUTHOR_NAME": self.author.name or "grove-gitops",
            "GIT_AUTHOR_EMAIL": self.author_email,
            "GIT_COMMITTER_NAME": self.author.name or "grove-gitops",
            "GIT_COMMITTER_EMAIL": self.author_email,
        }
        return str(self.repo.git.execute(["git", "commit-tree", empty_tree, "-m", message], env=env)).strip()

    def newest_source(self, branch: str) -> SourceCommit | None:
        """The newest source commit on ``branch`` that is not one of our own."""
        head = self.remote_head(branch)
        if head is None:
            return None
        for commit in self.repo.iter_commits(head, first_parent=True, max_count=2000):
            if not self.is_own(commit):
                return SourceCommit.of(commit)
        return None

    def remote_head(self, branch: str) -> str | None:
        try:
            return str(self.repo.git.rev_parse("--verify", "--quiet", f"refs/remotes/origin/{branch}^{{commit}}"))
        except git.GitCommandError:
            return None

    def is_own(self, commit: git.Commit) -> bool:
        message = commit.message if isinstance(commit.message, str) else commit.message.decode()
        return commit.author.email == self.author_email and trailers.dry_sha(message) is not None

    def last_rendered(self, output_branch: str, limit: int = 2000) -> str | None:
        """The source SHA recorded by the newest rendered commit on the output branch."""
        found = self.last_rendered_trailers(output_branch, limit)
        return None if found is None else found[trailers.DRY_SHA]

    def last_rendered_trailers(self, output_branch: str, limit: int = 2000) -> dict[str, str] | None:
        """The trailers of the newest rendered commit on the output branch."""
        head = self.remote_head(output_branch)
        if head is None:
            return None
        for commit in self.repo.iter_commits(head, first_parent=True, max_count=limit):
            message = commit.message if isinstance(commit.message, str) else commit.message.decode()
            found = trailers.parse(message)
            if found.get(trailers.DRY_SHA):
                return found
        return None

    def source_commits(self, branch: str, since: str | None) -> list[SourceCommit]:
        """New source commits, oldest first, without our own commits.

        With no resume point (first run) or a resume point that is no longer in the
        branch's history (a force-push), only the head is rendered.
        """
        head = self.remote_head(branch)
        if head is None:
            raise GitError(f"source branch {branch!r} does not exist on the remote")
        if since is not None and self.is_ancestor(since, head):
            commits = list(self.repo.iter_commits(f"{since}..{head}", first_parent=True))
        else:
            commits = [self.repo.commit(head)]
        out = []
        for commit in reversed(commits):
            if self.is_own(commit):
                continue
            out.append(SourceCommit.of(commit))
        return out

    def is_ancestor(self, ancestor: str, head: str) -> bool:
        try:
            self.repo.git.merge_base("--is-ancestor", ancestor, head)
            return True
        except git.GitCommandError:
            return False

    def export(self, sha: str, path: str, dest: Path, known: dict[str, str] | None = None) -> dict[str, str]:
        """Make ``dest`` hold exactly the files the source walk reads below ``path`` at commit
        ``sha`` (no checkout).

        The tree is listed and checked by :func:`grove_gitops.load.gittree.list_source`, the
        code ``diff --repo`` reads a ref with, so both refuse the same trees (an
        :class:`InvalidInputError`: the commit is skipped like any invalid one) before
        anything is read or written. A file above the 2 MiB limit of a source file is never
        read: a sparse file of that size stands for it and the loader refuses it as too large.
        ``known`` maps the files ``dest`` already holds to their blob ids (from the previous
        export into the same directory): only files whose blob changed are written, so a
        large repository with one changed file costs one ``ls-tree`` and one blob read.
        Returns the new map.
        """
        prefix = path.strip("/")
        tree = self._subtree(sha, prefix)
        try:
            listed = list_source(Path(self.repo.git_dir), tree)
        except InvalidInputError as exc:
            raise InvalidInputError(
                [InputProblem(p.file, p.field, f"{p.message} (commit {sha[:12]})") for p in exc.problems]
            ) from exc
        except UnreadableTreeError as exc:
            raise InvalidInputError([InputProblem("", "", f"git cannot read the tree of commit {sha[:12]}: {exc}")]) from exc
        except OSError as exc:
            raise GitError(redact(f"cannot read commit {sha[:12]}: {exc}")) from exc
        current = {rel: entry.oid for rel, entry in listed.items()}
        previous = known if known is not None else {}
        if known is None and dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True, exist_ok=True)
        root = dest.resolve()
        for rel in previous.keys() - current.keys():
            with contextlib.suppress(FileNotFoundError):
                self._inside(root, rel).unlink()
        changed = [(rel, entry) for rel, entry in listed.items() if previous.get(rel) != entry.oid]
        try:
            data = read_blobs(Path(self.repo.git_dir), [entry for _, entry in changed])
        except UnreadableTreeError as exc:
            raise InvalidInputError([InputProblem("", "", f"git cannot read the tree of commit {sha[:12]}: {exc}")]) from exc
        except OSError as exc:
            raise GitError(redact(f"cannot read commit {sha[:12]}: {exc}")) from exc
        for rel, entry in changed:
            target = self._inside(root, rel)
            target.parent.mkdir(parents=True, exist_ok=True)
            content = data[entry.oid]
            if content is oversize():
                with open(target, "wb") as handle:
                    handle.truncate(len(content))  # sparse: the loader refuses it by its size
            else:
                target.write_bytes(content)
        return current

    def _subtree(self, sha: str, prefix: str) -> str:
        """The tree object of ``prefix`` at commit ``sha``; a commit without that folder is
        refused like invalid input (skipped and recorded), so it cannot stop the controller."""
        spec = f"{sha}:{prefix}" if prefix else f"{sha}^{{tree}}"
        try:
            found = str(self.repo.git.rev_parse("--verify", "--quiet", spec)).strip()
            kind = str(self.repo.git.cat_file("-t", found)).strip()
        except git.GitCommandError:
            found = kind = ""
        if kind != "tree":
            raise InvalidInputError(
                [InputProblem("", "", f"the source path is not a folder in commit {sha[:12]} (missing, a file or a link)")]
            )
        return found

    @staticmethod
    def _inside(root: Path, rel: str) -> Path:
        """``root / rel``, asserting it resolves inside ``root`` (defence in depth)."""
        target = (root / rel).resolve()
        if not target.is_relative_to(root) or target == root:
            raise InvalidInputError(
                [InputProblem(repr(rel)[1:-1], "", "tree entry resolves outside the export directory")]
            )
        return target

    # -- writing ---------------------------------------------------------------------------
    def checkout_output(self, branch: str, path: str = "") -> None:
        """Reset the work tree to the remote output branch, or an empty orphan branch.

        Skipped when the work tree is known to hold exactly that commit already (our own
        last push): on a large output a reset and clean cost more than the change itself.

        Never ``git reset --hard`` to whatever HEAD is: a fresh clone's HEAD is the remote's
        default branch, which may hold a tree git refuses to check out (``..``), and a reset
        to it failed at every run, even after a fix was pushed (issue 21). ``checkout
        --force`` discards local changes, staged files and local commits just as well, and
        only reads the target. The target is checked first (:meth:`_check_output_tree`).
        """
        remote = self.remote_head(branch)
        if remote is not None and remote == self._clean_head and self._branch == branch:
            return
        if remote is not None:
            self._check_output_tree(branch, remote, path)
            self._git("checkout", "--quiet", "--force", "-B", branch, f"refs/remotes/origin/{branch}")
        else:
            # The branch may still exist locally (deleted on the remote): start it afresh,
            # without reading the tree HEAD has now (``checkout --orphan`` would).
            self._git("update-ref", "-d", f"refs/heads/{branch}")
            self._git("symbolic-ref", "HEAD", f"refs/heads/{branch}")
            self._git("read-tree", "--empty")
        self._git("clean", "-fdxq")
        self._branch = branch
        self._clean_head = remote
        self._written = None

    def _check_output_tree(self, branch: str, sha: str, path: str) -> None:
        """Refuse to check out a tree any entry of which the shared rule refuses (``..``,
        ``.git`` in any guise, a backslash: :mod:`grove_gitops.load.treepaths`), or with a
        symbolic link or submodule at, above or below the output path, where the controller
        writes files (a link there would lead the writes out of the work tree). In folder
        mode that tree is the source branch's head: once a fixed commit is pushed, the next
        run checks it out; the refused commit itself is skipped when it is exported."""
        prefix = path.strip("/")
        if (sha, prefix) in self._checked:
            return
        try:
            for entry in walk_tree(Path(self.repo.git_dir), f"{sha}^{{tree}}"):
                writes_here = not prefix or entry.path == prefix or entry.path.startswith(prefix + "/")
                above = prefix.startswith(entry.path + "/")
                if (writes_here or above) and (entry.is_link or entry.kind == "commit"):
                    what = "a symbolic link" if entry.is_link else "a submodule"
                    raise GitError(
                        f"output branch {branch!r} at {sha[:12]}: {shown(entry.path)}: {what} where the output"
                        " is written; refusing to check it out"
                    )
        except InvalidInputError as exc:
            raise GitError(
                f"output branch {branch!r} at {sha[:12]}: {exc}; not checked out (push a commit that fixes it)"
            ) from exc
        except OSError as exc:
            raise GitError(redact(f"cannot read output branch {branch!r}: {exc}")) from exc
        if len(self._checked) > 1000:  # a bound: the set only saves repeated walks
            self._checked.clear()
        self._checked.add((sha, prefix))

    def replace_path(self, path: str, files: dict[str, bytes]) -> bool:
        """Make everything below ``path`` equal ``files``; True if the index changed.

        Compared by git blob id, never by reading the previous output (issue 14): the new
        files' blob ids against those this process last wrote, or, when it does not know them
        (a fresh process, after a reset), against the committed tree (``git ls-tree HEAD``).
        The work tree is private and is reset to that commit whenever the process does not
        know it holds exactly what it last wrote, so the two agree; a work-tree file changed
        behind the controller's back is never staged, and is rewritten as soon as its content
        changes in the output. Only files whose blob differs are written and staged, so the
        cost follows the change, not the size of the output.
        """
        prefix = path.strip("/")
        root = self.workdir / prefix if prefix else self.workdir
        old = self._written if self._written is not None else self._committed_blobs(prefix)
        new = {rel: blob_id(data) for rel, data in files.items()}
        changed = [rel for rel, blob in new.items() if old.get(rel) != blob]
        removed = [rel for rel in old if rel not in new]
        for rel in removed:
            with contextlib.suppress(FileNotFoundError):
                (root / rel).unlink()
        made: set[Path] = set()
        for rel in changed:
            target = root / rel
            if target.parent not in made:
                target.parent.mkdir(parents=True, exist_ok=True)
                made.add(target.parent)
            target.write_bytes(files[rel])
        self._written = new
        if not changed and not removed:
            return False
        paths = [f"{prefix}/{rel}" if prefix else rel for rel in [*changed, *removed]]
        proc = subprocess.run(
            ["git", "add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul"],
            input=b"".join(p.encode() + b"\0" for p in paths),
            cwd=self.workdir,
            env={**os.environ, **self._env},
            capture_output=True,
            check=False,
        )
        if proc.returncode != 0:
            raise GitError(redact(f"git add failed: {proc.stderr.decode(errors='replace').strip()}"))
        try:
            self.repo.git.diff("--cached", "--quiet")
            return False
        except git.GitCommandError:
            return True

    def output_files(self, path: str) -> Mapping[str, bytes]:
        """What is below ``path`` of the output work tree (as last written or checked out):
        the hydrator keeps the files of unchanged shards. Read only with ``--hydrator-files``."""
        prefix = path.strip("/")
        root = self.workdir / prefix if prefix else self.workdir
        if not root.exists():
            return {}
        return {
            str(p.relative_to(root)): p.read_bytes()
            for p in root.rglob("*")
            if p.is_file() and ".git" not in p.relative_to(root).parts
        }

    def _committed_blobs(self, prefix: str) -> dict[str, str]:
        """``{path below prefix: blob id}`` of the files HEAD holds there (nothing on an orphan)."""
        if not self.repo.head.is_valid():
            return {}
        return {
            name[len(prefix) + 1 :] if prefix else name: blob
            for _mode, kind, blob, name in self._ls_tree("HEAD", prefix)
            if kind == "blob"
        }

    def _ls_tree(self, ref: str, prefix: str) -> list[tuple[str, str, str, str]]:
        """``(mode, type, object id, path)`` of every entry below ``prefix`` at ``ref``, recursively."""
        out: list[tuple[str, str, str, str]] = []
        for entry in self._git("ls-tree", "-r", "-z", "--full-tree", ref, "--", prefix or ".").split("\0"):
            if entry:
                meta, _, name = entry.partition("\t")
                mode, kind, blob = meta.split(" ")
                out.append((mode, kind, blob, name))
        return out

    def commit(self, message: str) -> str:
        """Commit the index with git itself (GitPython's index handling is slow on large trees)."""
        env = {
            "GIT_AUTHOR_NAME": self.author.name or "grove-gitops",
            "GIT_AUTHOR_EMAIL": self.author_email,
            "GIT_COMMITTER_NAME": self.author.name or "grove-gitops",
            "GIT_COMMITTER_EMAIL": self.author_email,
        }
        with tempfile.NamedTemporaryFile("w", prefix="grove-gitops-msg-", delete=False) as handle:
            handle.write(message)
        try:
            self.repo.git.execute(["git", "commit", "-q", "--no-verify", "-F", handle.name], env=env)
        finally:
            os.unlink(handle.name)
        head = str(self.repo.git.rev_parse("HEAD"))
        self._clean_head = None  # becomes clean again once pushed
        self._pending_head = head
        return head

    def mark_pushed(self) -> None:
        """The remote branch now equals our HEAD: the next checkout may be skipped."""
        self._clean_head = self._pending_head

    def push(self, branch: str | None, examined: str | None = None, examined_for: str = "") -> None:
        """Push HEAD to ``branch`` (fast-forward only) and/or the examined record, atomically."""
        refspecs = [f"HEAD:refs/heads/{branch}"] if branch else []
        if examined:
            refspecs.append(f"+{examined}:{EXAMINED_REFS}{examined_for or branch}")
        try:
            self.repo.git.execute(["git", "push", "--porcelain", "--atomic", "origin", *refspecs])
        except git.GitCommandError as exc:
            text = redact(f"{exc.stderr or ''} {exc.stdout or ''}")
            if any(marker in text for marker in _REJECTED):
                raise GitPushRejectedError(f"push to {branch!r} was rejected: {text.strip()}") from exc
            raise GitError(f"push to {branch!r} failed: {text.strip()}") from exc


@contextlib.contextmanager
def temporary_dir(prefix: str) -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
