"""The GitOps controller: render every new source commit and commit the output for Argo CD / Flux.

One iteration (``spec/gitops.md`` §6.2): fetch → find where the output branch left off (the
``Grove-Render-Dry-Sha`` trailer of its newest rendered commit) → for each new source commit,
oldest first: export its source path, render, replace the output path, commit only if the
output changed → push (fast-forward only). A rejected push means someone else moved the
branch: fetch, reset to the new remote head and redo the iteration (re-render rather than
rebase: rendered files would conflict textually, and rendering is idempotent), with bounded,
jittered backoff.

Guarantees: a source commit with invalid input never reaches the output (its errors are
logged with file and field, and the last good output stays); the controller ignores its own
commits (folder mode shares the branch); a process killed at any moment leaves at most local
state, which the next iteration discards, and since the resume point lives in the remote
branch, no source commit is skipped.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from grove_gitops import __version__
from grove_gitops.cache import RenderCache
from grove_gitops.cachestore import ShardStore
from grove_gitops.diff.errors import GitRefError
from grove_gitops.diff.gitrefs import normalize_source_path
from grove_gitops.errors import GitError, GitPushRejectedError, GroveGitopsError, InvalidInputError
from grove_gitops.forge.statuses import failure_description
from grove_gitops.gitops import hydrator, trailers
from grove_gitops.gitops.redact import redact
from grove_gitops.gitops.repo import SourceCommit, Workspace, split_credentials
from grove_gitops.gitops.status import StatusReporter
from grove_gitops.metrics import Registry
from grove_gitops.sourcetree import render_source_tree

log = logging.getLogger("grove_gitops.controller")

#: Test-only fault injection: ``<point>:<seconds>`` sleeps at that point so a test can kill
#: the process there (points: ``after-render``, ``before-push``).
PAUSE_ENV = "GROVE_GITOPS_TEST_PAUSE"


@dataclass(frozen=True)
class ControllerConfig:
    repo: str
    workdir: Path
    source_branch: str = "main"
    source_path: str = ""
    output_branch: str = "rendered"
    output_path: str = ""
    author_name: str = "grove-gitops"
    author_email: str = "grove-gitops@users.noreply.local"
    max_push_attempts: int = 6
    backoff_base: float = 0.2
    backoff_max: float = 5.0
    #: Worker processes for PodCliqueSets the cache does not have (``render --jobs``); the
    #: output does not depend on it, so it is not part of the output-shaping digest.
    jobs: int = 1
    #: Also write Argo CD Source Hydrator files (``hydrator.metadata``, README, ``.gitattributes``).
    hydrator: bool = False
    #: Size bound of the persistent render cache under the work directory (issue 14).
    cache_max_mb: int = 1024
    #: Seconds between "idle" log lines while no source commit arrives (0: never).
    heartbeat_interval: float = 600.0

    @property
    def folder_mode(self) -> bool:
        return self.output_branch == self.source_branch


@dataclass
class IterationResult:
    rendered: list[str] = field(default_factory=list)  # source SHAs that produced a commit
    unchanged: list[str] = field(default_factory=list)  # source SHAs whose output did not change
    failed: dict[str, list[str]] = field(default_factory=dict)  # source SHA -> error lines
    pushed: bool = False
    push_attempts: int = 0


def _pause(point: str) -> None:
    spec = os.environ.get(PAUSE_ENV, "")
    name, _, seconds = spec.partition(":")
    if name == point and seconds:
        time.sleep(float(seconds))


class ControllerUsageError(GroveGitopsError):
    """The controller was started with options that cannot work (exit 2, like a CLI usage error)."""


class Controller:
    def __init__(
        self,
        config: ControllerConfig,
        registry: Registry | None = None,
        before_push: Callable[[], None] | None = None,
        statuses: StatusReporter | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if config.folder_mode and not config.output_path.strip("/"):
            raise ControllerUsageError("folder mode (output branch = source branch) needs an --output-path")
        try:
            # ".", "./" and "" are the repository root, as in diff --repo and the PR check
            config = dataclasses.replace(config, source_path=normalize_source_path(config.source_path))
        except GitRefError as exc:
            raise ControllerUsageError(str(exc)) from exc
        self.config = config
        self.registry = registry or Registry()
        self.before_push = before_push
        #: Commit statuses on the source commits (``None``: off).
        self.statuses = statuses
        self.clock = clock
        #: The source head's state: its SHA, whether it renders (``None``: not known yet) and
        #: its errors; the gauge ``grove_gitops_source_renders`` and the heartbeat say it.
        self.head: str | None = None
        self.head_renders: bool | None = None
        self.head_errors = 0
        self._last_heartbeat = clock()
        self._idle_iterations = 0
        self.workspace = Workspace(config.repo, config.workdir, config.author_name, config.author_email)
        #: Rendered PodCliqueSets of earlier source commits: unchanged ones are not re-expanded,
        #: also by the next process (``--once`` from a CronJob): the cache persists in the workdir.
        self.cache = RenderCache(store=ShardStore(self.workspace.cache_dir, config.cache_max_mb * 1024 * 1024))
        #: A private export of the source path, updated file by file from commit to commit.
        self._source_dir = self.workspace.source_dir
        self._exported: dict[str, str] | None = None
        self.last_error: str | None = None
        self.last_success = time.monotonic()
        #: What shapes the output besides the source: a change re-renders the source head.
        shape = {
            "version": __version__,
            "source_path": config.source_path.strip("/"),
            "output_path": config.output_path.strip("/"),
        }
        if config.hydrator:  # absent when off: the digest of existing deployments stays
            shape["hydrator"] = "argocd"
        self.config_digest = hashlib.sha256(json.dumps(shape, sort_keys=True).encode()).hexdigest()[:16]

    def __enter__(self) -> Controller:
        self.workspace.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.workspace.close()

    # -- one iteration -----------------------------------------------------------------
    def run_once(self) -> IterationResult:
        cfg = self.config
        result = IterationResult()
        for attempt in range(1, cfg.max_push_attempts + 1):
            result = IterationResult(push_attempts=attempt)
            ws = self.workspace
            ws.fetch()
            pending = self._pending()
            ws.checkout_output(cfg.output_branch, cfg.output_path)
            for commit in pending:
                if self.statuses is not None:
                    self.statuses.pending(commit.sha)
                self._render_commit(commit, result)
            if not pending:
                self._head_from_record()
                self._record(result)
                return result
            head = pending[-1].sha
            self._set_head(head, head not in result.failed, len(result.failed.get(head, [])))
            examined = ws.record_examined_commit(
                trailers.examined_message(head, self.config_digest, head not in result.failed)
            )
            _pause("before-push")
            if self.before_push is not None:
                self.before_push()
            started = time.monotonic()
            try:
                ws.push(cfg.output_branch if result.rendered else None, examined, cfg.output_branch)
            except GitPushRejectedError as exc:
                self.registry.inc("grove_gitops_push_conflicts_total", "Pushes rejected because the branch moved")
                delay = min(cfg.backoff_max, cfg.backoff_base * 2 ** (attempt - 1)) * random.uniform(0.5, 1.0)
                log.warning(
                    "push rejected (attempt %d/%d), re-rendering on the new base: %s",
                    attempt,
                    cfg.max_push_attempts,
                    redact(str(exc)),
                )
                time.sleep(delay)
                continue
            if not result.rendered:
                self._post_successes(result)
                self._record(result)
                return result
            self.registry.observe(
                "grove_gitops_push_duration", "Time to push rendered commits", time.monotonic() - started
            )
            result.pushed = True
            ws.mark_pushed()
            self._post_successes(result)
            self._record(result)
            return result
        raise GitPushRejectedError(f"gave up after {cfg.max_push_attempts} rejected pushes to {cfg.output_branch!r}")

    def _pending(self) -> list[SourceCommit]:
        """Source commits to examine, oldest first.

        The resume point is the newer of two records on the remote: the newest rendered
        commit's ``Grove-Render-Dry-Sha``, and the examined record (a ref under
        ``refs/grove-gitops/examined/``) that also covers commits whose output did not change
        or which failed, so none of them is examined twice. A missing output branch (deleted
        on the remote) ignores the examined record, so the branch is re-created. When the
        configuration digest of the resume point differs from ours, the source head is
        rendered again even without a new source commit.
        """
        cfg = self.config
        ws = self.workspace
        rendered = ws.last_rendered_trailers(cfg.output_branch)
        point = rendered
        examined = ws.examined(cfg.output_branch) if rendered is not None else None
        if rendered is not None and examined is not None and examined.get(trailers.EXAMINED):
            seen = examined[trailers.EXAMINED]
            if ws.is_ancestor(rendered[trailers.DRY_SHA], seen):
                point = {trailers.DRY_SHA: seen, trailers.CONFIG: examined.get(trailers.CONFIG, "")}
        since = None if point is None else point[trailers.DRY_SHA]
        pending = ws.source_commits(cfg.source_branch, since)
        if not pending and point is not None and point.get(trailers.CONFIG, "") != self.config_digest:
            head = ws.newest_source(cfg.source_branch)
            if head is not None:
                log.info("render configuration changed: rendering source commit %s again", head.sha[:12])
                pending = [head]
        return pending

    def _render_commit(self, commit: SourceCommit, result: IterationResult) -> None:
        cfg = self.config
        started = time.monotonic()
        self.cache.start()
        try:
            ws = self.workspace
            if self._exported is None:
                self._exported = ws.saved_export()  # a previous process's export (``--once``)
            ws.forget_export()
            try:
                self._exported = ws.export(commit.sha, cfg.source_path, self._source_dir, self._exported)
            except BaseException:
                self._exported = None  # the export directory's content is unknown: start over next time
                raise
            ws.save_export(self._exported)
            # One commit for every cluster of a fleet; a plain source renders as before.
            tree = render_source_tree(self._source_dir, None, cfg.jobs, self.cache).tree
        except InvalidInputError as exc:
            source = cfg.source_path.strip("/")
            prefix = f"{source}/" if source else ""
            # No file: the whole source tree (its path missing, too many files, ...).
            self._fail(commit, result, [f"{prefix}{p}" if p.file else f"{source or '.'}: {p.message}" for p in exc.problems])
            return
        except GitError:
            raise  # the repository, not the commit: the iteration fails and is retried
        except Exception as exc:
            # Anything else is a bug met on this commit's content. Skipping it like an invalid
            # commit keeps a later fix (or revert) reachable; the traceback goes to the log.
            log.debug("source commit %s: render crashed", commit.sha[:12], exc_info=True)
            self.registry.inc("grove_gitops_render_crashes_total", "Source commits whose render raised unexpectedly")
            self._fail(commit, result, [f"cannot render: {type(exc).__name__}: {redact(str(exc))}"])
            return
        finally:
            self.cache.finish()
        self.registry.observe(
            "grove_gitops_render_duration", "Time to render one source commit", time.monotonic() - started
        )
        _pause("after-render")
        files = tree.files
        repo_url = redact(split_credentials(cfg.repo)[0])  # never a token in Git history
        if cfg.hydrator:
            dry = hydrator.DryCommit(commit.sha, repo_url, commit.author, commit.date, commit.message)
            command = f"grove-gitops render {cfg.source_path.strip('/') or '.'} --out {cfg.output_path.strip('/') or 'rendered'}"
            files = hydrator.hydrate(files, self.workspace.output_files(cfg.output_path), dry, [command])
        if self.workspace.replace_path(cfg.output_path, files):
            message = trailers.message(
                commit.sha,
                commit.subject,
                cfg.source_path,
                self.config_digest,
                author=commit.author,
                date=commit.date,
                repo_url=repo_url,
            )
            self.workspace.commit(message)
            result.rendered.append(commit.sha)
            log.info("rendered source commit %s (%d objects)", commit.sha[:12], tree.objects)
        else:
            result.unchanged.append(commit.sha)
            log.info("source commit %s: output unchanged, nothing to commit", commit.sha[:12])

    def _fail(self, commit: SourceCommit, result: IterationResult, lines: list[str]) -> None:
        result.failed[commit.sha] = lines
        self.registry.inc("grove_gitops_render_failures_total", "Source commits that failed to render")
        for line in lines:
            log.error("source commit %s: %s", commit.sha[:12], line)
        if self.statuses is not None:  # final: the same commit fails the same way next time
            self.statuses.failure(commit.sha, failure_description(lines))

    def _post_successes(self, result: IterationResult) -> None:
        """Success on the commits whose output is now on the remote (after the push)."""
        if self.statuses is None:
            return
        branch = self.config.output_branch
        for sha in result.rendered:
            self.statuses.success(sha, f"rendered and committed to {branch}")
        for sha in result.unchanged:
            self.statuses.success(sha, f"rendered; the output on {branch} did not change")

    # -- the source head's state: gauge and heartbeat --------------------------------------
    def _set_head(self, sha: str, renders: bool, errors: int = 0) -> None:
        self.head, self.head_renders, self.head_errors = sha, renders, errors
        self.registry.set(
            "grove_gitops_source_renders",
            "1 while the source head renders, 0 while it does not",
            1.0 if renders else 0.0,
        )

    def _head_from_record(self) -> None:
        """Nothing new: the head was examined before, by this process or an earlier one (its
        record on the remote says whether it rendered)."""
        head = self.workspace.newest_source(self.config.source_branch)
        if head is None or head.sha == self.head:
            return
        examined = self.workspace.examined(self.config.output_branch) or {}
        rendered = self.workspace.last_rendered_trailers(self.config.output_branch) or {}
        if examined.get(trailers.EXAMINED) == head.sha and examined.get(trailers.HEAD_RENDERS) in ("true", "false"):
            self._set_head(head.sha, examined[trailers.HEAD_RENDERS] == "true")
        elif rendered.get(trailers.DRY_SHA) == head.sha:
            self._set_head(head.sha, True)

    def _record(self, result: IterationResult) -> None:
        done = result.rendered + result.unchanged
        if done:
            self.registry.set(
                "grove_gitops_last_rendered_source", "Newest source commit rendered", 1.0, replace=True, sha=done[-1]
            )
        self.registry.inc("grove_gitops_rendered_commits_total", "Rendered commits pushed", float(len(result.rendered)))
        self.last_success = time.monotonic()

    # -- the loop ----------------------------------------------------------------------
    def run_forever(self, interval: float, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                result = self.run_once()
                self.last_error = None
                self._heartbeat(result)
            except GroveGitopsError as exc:
                self.last_error = redact(str(exc))
                self.registry.inc("grove_gitops_iteration_failures_total", "Controller iterations that failed")
                log.error("iteration failed: %s", self.last_error)
            except Exception as exc:  # the loop never exits; /healthz turns red if it persists
                self.last_error = redact(f"{type(exc).__name__}: {exc}")
                self.registry.inc("grove_gitops_iteration_failures_total", "Controller iterations that failed")
                log.error("iteration failed unexpectedly: %s", self.last_error)
                log.debug("iteration traceback", exc_info=True)
            stop.wait(interval)

    def _heartbeat(self, result: IterationResult) -> None:
        """While idle, one line every ``heartbeat_interval`` seconds: the process is alive and
        what state the source head is in (a failing head is logged once, when rendered)."""
        now = self.clock()
        if result.rendered or result.unchanged or result.failed:
            self._last_heartbeat, self._idle_iterations = now, 0
            return
        self._idle_iterations += 1
        every = self.config.heartbeat_interval
        if every <= 0 or now - self._last_heartbeat < every:
            return
        if self.head_renders is None:
            state = "not known yet"
        elif self.head_renders:
            state = "renders"
        else:
            state = f"does not render ({self.head_errors} error(s))"
        log.info(
            "idle: %d iteration(s) without a new source commit; source head %s %s",
            self._idle_iterations,
            (self.head or "?")[:12],
            state,
        )
        self._last_heartbeat, self._idle_iterations = now, 0

    def healthy(self, interval: float) -> bool:
        """Unhealthy when no iteration succeeded for a long time (a wedged process)."""
        return time.monotonic() - self.last_success < max(300.0, 10 * interval)
