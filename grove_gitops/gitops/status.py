"""The controller's commit statuses, posted beside the loop so the forge never holds it up.

:class:`StatusReporter` queues ``(sha, state, description)`` and a worker thread posts them
with :class:`~grove_gitops.forge.statuses.StatusClient`: a few attempts each with a short,
growing pause and a request timeout, then a warning in the log and the
``grove_gitops_status_failures_total`` counter, never an exception in the loop. The queue is
bounded (the oldest entries go first), statuses go out in the order they were set, and a
status already queued or posted is not posted again, nor ``pending`` on a commit that has
its outcome (an iteration retried after a rejected push renders the same commits again).

The token: ``GROVE_GITOPS_STATUS_TOKEN``, else ``GITHUB_TOKEN`` or ``GITLAB_TOKEN`` for the
forge in use (:func:`status_token`). It is sent only to the forge of the source repository
and never logged.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from grove_gitops.forge.http import ForgeError
from grove_gitops.forge.statuses import StatusClient, StatusConfigError, StatusTarget, status_target
from grove_gitops.metrics import Registry

log = logging.getLogger("grove_gitops.controller")

TOKEN_ENV = "GROVE_GITOPS_STATUS_TOKEN"
FORGE_TOKEN_ENV = {"github": "GITHUB_TOKEN", "gitlab": "GITLAB_TOKEN"}
#: Commits whose newest state waits to be posted, at most (older ones are dropped first).
MAX_QUEUED = 1000
#: States remembered as posted (an LRU), so a repeat is not posted again.
MAX_REMEMBERED = 4096


def status_token(forge: str, environ: Mapping[str, str] | None = None) -> str:
    env = os.environ if environ is None else environ
    return env.get(TOKEN_ENV) or env.get(FORGE_TOKEN_ENV[forge], "")


class StatusReporter:
    """Posts the controller's statuses from a worker thread (see the module)."""

    def __init__(
        self,
        client: StatusClient,
        registry: Registry | None = None,
        attempts: int = 3,
        backoff: float = 1.0,
    ) -> None:
        self.client = client
        self.registry = registry or Registry()
        self.attempts = max(1, min(attempts, 10))
        self.backoff = max(0.0, min(backoff, 30.0))
        #: (sha, state) -> description, in the order set.
        self._queue: OrderedDict[tuple[str, str], str] = OrderedDict()
        #: (sha, state) -> description of what went out; and the commits with an outcome.
        self._posted: OrderedDict[tuple[str, str], str] = OrderedDict()
        self._decided: OrderedDict[str, None] = OrderedDict()
        self._busy = False
        self._closed = False
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._work, name="commit-status", daemon=True)
        self._thread.start()

    # -- what the controller calls ------------------------------------------------------
    def pending(self, sha: str) -> None:
        """Rendering starts; ignored once the commit has its outcome."""
        with self._cond:
            if sha in self._decided:
                return
        self._put(sha, "pending", "rendering…")

    def success(self, sha: str, text: str) -> None:
        self._put(sha, "success", text)

    def failure(self, sha: str, text: str) -> None:
        self._put(sha, "failure", text)

    def _put(self, sha: str, state: str, text: str) -> None:
        key = (sha, state)
        with self._cond:
            if self._closed or self._queue.get(key) == text or self._posted.get(key) == text:
                return
            if state != "pending":
                _remember(self._decided, sha, None)
            self._queue.pop(key, None)
            self._queue[key] = text
            while len(self._queue) > MAX_QUEUED:
                (dropped, _), _ = self._queue.popitem(last=False)
                log.warning("commit status for %s dropped: too many waiting", dropped[:12])
            self._cond.notify_all()

    def flush(self, timeout: float = 60.0) -> bool:
        """Wait until everything queued is posted (or given up); False on timeout."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._queue or self._busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def close(self, timeout: float = 30.0) -> None:
        """Post what is queued (up to ``timeout``), then stop the worker."""
        self.flush(timeout)
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join(timeout=5)

    # -- the worker ---------------------------------------------------------------------
    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closed:
                    self._cond.wait()
                if not self._queue:
                    return
                (sha, state), text = self._queue.popitem(last=False)
                self._busy = True
            try:
                if self._send(sha, state, text):
                    with self._cond:
                        _remember(self._posted, (sha, state), text)
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()

    def _send(self, sha: str, state: str, text: str) -> bool:
        for attempt in range(1, self.attempts + 1):
            try:
                self.client.post(sha, state, text)
                self.registry.inc("grove_gitops_statuses_posted_total", "Commit statuses posted", state=state)
                return True
            except ForgeError as exc:
                # 4xx other than rate limits will not change on a retry.
                final = attempt == self.attempts or (400 <= exc.status < 500 and exc.status not in (403, 429))
                if final:
                    self.registry.inc(
                        "grove_gitops_status_failures_total", "Commit statuses that could not be posted"
                    )
                    log.warning("commit status %s on %s not posted: %s", state, sha[:12], exc)
                    return False
            except Exception as exc:  # a bug must not end the worker: the loop would never know
                self.registry.inc("grove_gitops_status_failures_total", "Commit statuses that could not be posted")
                log.warning("commit status %s on %s not posted: %s: %s", state, sha[:12], type(exc).__name__, exc)
                return False
            time.sleep(self.backoff * 2 ** (attempt - 1))
        return False


def _remember(lru: OrderedDict[Any, Any], key: Any, value: Any) -> None:
    lru.pop(key, None)
    lru[key] = value
    while len(lru) > MAX_REMEMBERED:
        lru.popitem(last=False)


def reporter_from_options(
    repo_url: str,
    forge: str,
    api_url: str,
    repo: str,
    target_url: str = "",
    registry: Registry | None = None,
    environ: Mapping[str, str] | None = None,
) -> StatusReporter | None:
    """The reporter for the controller's options, or ``None`` when statuses are off.

    ``forge``: ``off``; ``auto`` (github.com / gitlab.com URLs, when a token is set); or
    ``github`` / ``gitlab`` (then a token is required). Raises :class:`StatusConfigError`.
    """
    if forge == "off":
        return None
    target: StatusTarget | None = status_target(repo_url, forge, api_url, repo)
    if target is None:
        log.info("commit statuses: off (the repository is not on github.com or gitlab.com; see --status-forge)")
        return None
    token = status_token(target.forge, environ)
    if not token:
        variables = f"{TOKEN_ENV} or {FORGE_TOKEN_ENV[target.forge]}"
        if forge == "auto":
            log.warning("commit statuses: off (no token: set %s)", variables)
            return None
        raise StatusConfigError(f"--status-forge {forge}: no token: set {variables}")
    client = StatusClient(target, token, target_url=target_url)
    log.info("commit statuses: %s %s at %s", target.forge, target.repo, target.api_url)
    return StatusReporter(client, registry)
