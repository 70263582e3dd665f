"""A private working clone of the GitOps repository, driven through GitPython.

The clone is disposable: every iteration starts from ``git fetch`` and a hard reset to the
remote, so whatever a killed process left behind (a half-written tree, a local commit that
never got pushed, a stale ``index.lock``) is discarded. If the clone itself is damaged it is
deleted and cloned again. An exclusive ``flock`` on the working directory keeps two
controllers from sharing one clone.

Credentials: a token in ``GROVE_GITOPS_GIT_TOKEN`` is handed to git through
``GIT_ASKPASS`` (never written into a URL, a config file or a log line); otherwise git's own
credential helpers and SSH agent apply. Every git error is redacted before it is raised.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import git

from grove_gitops.errors import GitError, GitPushRejectedError
from grove_gitops.gitops import trailers
from grove_gitops.gitops.redact import redact, register_secret

TOKEN_ENV = "GROVE_GITOPS_GIT_TOKEN"
_REJECTED = ("rejected", "non-fast-forward", "fetch first", "failed to update ref", "cannot lock ref", "stale info")


@dataclass(frozen=True)
class SourceCommit:
    sha: str
    subject: str


def _askpass_script(directory: Path) -> Path:
    script = directory / "askpass.sh"
    script.write_text(
        f'#!/bin/sh\ncase "$1" in Username*) echo x-access-token ;; *) printf "%s\\n" "${TOKEN_ENV}" ;; esac\n'
    )
    script.chmod(stat.S_IRWXU)
    return script


class Workspace:
    """One working clone of ``url`` under ``workdir``."""

    def __init__(self, url: str, workdir: Path, author_name: str, author_email: str) -> None:
        self.url = url
        self.workdir = workdir
        self.author = git.Actor(author_name, author_email)
        self.author_email = author_email
        self._lock: IO[str] | None = None
        self._repo: git.Repo | None = None
        self._branch: str | None = None
        self._clean_head: str | None = None  # remote commit the work tree is known to equal
        self._pending_head: str | None = None
        self._written: dict[str, bytes] | None = None  # what the output path holds, if known
        self._env: dict[str, str] = {"GIT_TERMINAL_PROMPT": "0"}
        token = os.environ.get(TOKEN_ENV)
        if token:
            register_secret(token)
            helper_dir = Path(tempfile.mkdtemp(prefix="grove-gitops-askpass-"))
            self._env["GIT_ASKPASS"] = str(_askpass_script(helper_dir))

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
            self._repo = self._reuse() or self._clone()
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

    def _reuse(self) -> git.Repo | None:
        if not (self.workdir / ".git").is_dir():
            return None
        try:
            for stale in (self.workdir / ".git").rglob("*.lock"):
                stale.unlink()  # we hold the flock: any lock file is a leftover of a killed run
            repo = git.Repo(self.workdir)
            repo.git.update_environment(**self._env)
            if repo.remotes.origin.url != self.url:
                repo.close()
                raise ValueError("different remote")
            repo.git.rev_parse("--git-dir")
            return repo
        except (git.GitError, ValueError, OSError, AttributeError):
            shutil.rmtree(self.workdir, ignore_errors=True)
            return None

    def _clone(self) -> git.Repo:
        if self.workdir.exists():
            shutil.rmtree(self.workdir)
        repo = git.Repo.clone_from(self.url, self.workdir, env=self._env, no_checkout=True)
        repo.git.update_environment(**self._env)
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
        self._git("fetch", "--prune", "--no-tags", "origin", "+refs/heads/*:refs/remotes/origin/*")

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
        head = self.remote_head(output_branch)
        if head is None:
            return None
        for commit in self.repo.iter_commits(head, first_parent=True, max_count=limit):
            message = commit.message if isinstance(commit.message, str) else commit.message.decode()
            sha = trailers.dry_sha(message)
            if sha:
                return sha
        return None

    def source_commits(self, branch: str, since: str | None) -> list[SourceCommit]:
        """New source commits, oldest first, without our own commits.

        With no resume point (first run) or a resume point that is no longer in the
        branch's history (a force-push), only the head is rendered.
        """
        head = self.remote_head(branch)
        if head is None:
            raise GitError(f"source branch {branch!r} does not exist on the remote")
        if since is not None and self._is_ancestor(since, head):
            commits = list(self.repo.iter_commits(f"{since}..{head}", first_parent=True))
        else:
            commits = [self.repo.commit(head)]
        out = []
        for commit in reversed(commits):
            if self.is_own(commit):
                continue
            out.append(SourceCommit(commit.hexsha, str(commit.summary)))
        return out

    def _is_ancestor(self, ancestor: str, head: str) -> bool:
        try:
            self.repo.git.merge_base("--is-ancestor", ancestor, head)
            return True
        except git.GitCommandError:
            return False

    def export(self, sha: str, path: str, dest: Path, known: dict[str, str] | None = None) -> dict[str, str]:
        """Make ``dest`` hold exactly the files under ``path`` at commit ``sha`` (no checkout).

        ``known`` maps the files ``dest`` already holds to their blob ids (from the previous
        export into the same directory): only files whose blob changed are written, so a
        large repository with one changed file costs one ``ls-tree`` and one blob read.
        Returns the new map.
        """
        prefix = path.strip("/")
        listing = self._git("ls-tree", "-r", "-z", "--full-tree", sha, "--", prefix or ".")
        current: dict[str, str] = {}
        for entry in listing.split("\0"):
            if not entry:
                continue
            meta, _, name = entry.partition("\t")
            mode, kind, blob = meta.split(" ")
            if kind != "blob" or mode == "120000":
                continue
            rel = name[len(prefix) + 1 :] if prefix else name
            current[rel] = blob
        if prefix and not current and known is None:
            try:
                self.repo.commit(sha).tree / prefix
            except KeyError as exc:
                raise GitError(f"source path {path!r} does not exist in commit {sha[:12]}") from exc
        previous = known if known is not None else {}
        if known is None and dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True, exist_ok=True)
        for rel in previous.keys() - current.keys():
            with contextlib.suppress(FileNotFoundError):
                (dest / rel).unlink()
        for rel, blob in current.items():
            if previous.get(rel) == blob:
                continue
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(self.repo.odb.stream(bytes.fromhex(blob)).read())
        return current

    # -- writing ---------------------------------------------------------------------------
    def checkout_output(self, branch: str) -> None:
        """Reset the work tree to the remote output branch, or an empty orphan branch.

        Skipped when the work tree is known to hold exactly that commit already (our own
        last push): on a large output a reset and clean cost more than the change itself.
        """
        remote = self.remote_head(branch)
        if remote is not None and remote == self._clean_head and self._branch == branch:
            return
        if self.repo.head.is_valid():
            self._git("reset", "--hard", "--quiet")
        if remote is not None:
            self._git("checkout", "--quiet", "--force", "-B", branch, f"refs/remotes/origin/{branch}")
        else:
            self._git("checkout", "--quiet", "--force", "--orphan", branch)
            self._git("rm", "-r", "-q", "--cached", "--ignore-unmatch", ".")
        self._git("clean", "-fdxq")
        self._branch = branch
        self._clean_head = remote
        self._written = None

    def replace_path(self, path: str, files: dict[str, bytes]) -> bool:
        """Make everything below ``path`` equal ``files``; True if the index changed.

        Only files whose bytes differ from what the work tree holds are written, and only
        those are staged, so the cost follows the change, not the size of the output.
        """
        prefix = path.strip("/")
        root = self.workdir / prefix if prefix else self.workdir
        old = self._written if self._written is not None else self._read_tree(root)
        changed = [rel for rel, data in files.items() if old.get(rel) != data]
        removed = [rel for rel in old if rel not in files]
        for rel in removed:
            with contextlib.suppress(FileNotFoundError):
                (root / rel).unlink()
        for rel in changed:
            target = root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(files[rel])
        self._written = dict(files)
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

    @staticmethod
    def _read_tree(root: Path) -> dict[str, bytes]:
        if not root.exists():
            return {}
        return {
            str(p.relative_to(root)): p.read_bytes()
            for p in root.rglob("*")
            if p.is_file() and ".git" not in p.relative_to(root).parts
        }

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

    def push(self, branch: str) -> None:
        try:
            self.repo.git.execute(["git", "push", "--porcelain", "origin", f"HEAD:refs/heads/{branch}"])
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
