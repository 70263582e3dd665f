"""Process wiring for ``grove-gitops controller``: logging, signals, health server, exit codes."""

from __future__ import annotations

import hashlib
import logging
import signal
import sys
import threading
from pathlib import Path

from grove_gitops.errors import GroveGitopsError
from grove_gitops.forge.statuses import StatusConfigError
from grove_gitops.gitops.controller import Controller, ControllerConfig, ControllerUsageError
from grove_gitops.gitops.redact import redact
from grove_gitops.gitops.repo import WorkdirError
from grove_gitops.gitops.status import StatusReporter, reporter_from_options
from grove_gitops.metrics import HealthServer, Registry


class _RedactingFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


def _setup_logging() -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_RedactingFormatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    root = logging.getLogger("grove_gitops")
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    root.propagate = False


def _parse_author(author: str) -> tuple[str, str]:
    name, _, rest = author.partition("<")
    return name.strip() or "grove-gitops", rest.rstrip(">").strip() or "grove-gitops@users.noreply.local"


def default_workdir(repo: str) -> Path:
    digest = hashlib.sha256(repo.encode()).hexdigest()[:16]
    return Path.home() / ".cache" / "grove-gitops" / f"clone-{digest}"


def run_controller(
    *,
    repo: str,
    source_branch: str,
    source_path: str,
    output_branch: str,
    output_path: str,
    workdir: Path | None,
    once: bool,
    interval: float,
    metrics_address: str,
    author: str,
    jobs: int = 1,
    hydrator: bool = False,
    cache_max_mb: int = 1024,
    heartbeat_interval: float = 600.0,
    status_forge: str = "auto",
    status_api_url: str = "",
    status_repo: str = "",
    status_target_url: str = "",
) -> int:
    _setup_logging()
    log = logging.getLogger("grove_gitops.controller")
    name, email = _parse_author(author)
    config = ControllerConfig(
        repo=repo,
        workdir=workdir or default_workdir(repo),
        source_branch=source_branch,
        source_path=source_path,
        output_branch=output_branch,
        output_path=output_path,
        author_name=name,
        author_email=email,
        jobs=jobs,
        hydrator=hydrator,
        cache_max_mb=cache_max_mb,
        heartbeat_interval=heartbeat_interval,
    )
    registry = Registry()
    statuses: StatusReporter | None = None
    try:
        statuses = reporter_from_options(repo, status_forge, status_api_url, status_repo, status_target_url, registry)
        with Controller(config, registry, statuses=statuses) as ctl:
            if once:
                result = ctl.run_once()
                log.info(
                    "done: %d rendered, %d unchanged, %d failed",
                    len(result.rendered),
                    len(result.unchanged),
                    len(result.failed),
                )
                # Nothing new, but the head an earlier run examined does not render: a cron job
                # or a CI step re-running --once must keep failing until a commit fixes it.
                stuck = not result.failed and ctl.head_renders is False
                if stuck:
                    log.error(
                        "source head %s does not render (examined by an earlier run: its errors are in that run's "
                        "log and the commit status grove-gitops/render); exit 1 until a new commit renders",
                        (ctl.head or "?")[:12],
                    )
                return 1 if result.failed or stuck else 0
            stop = threading.Event()
            for sig in (signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, lambda *_: stop.set())
            server = None
            if metrics_address:
                host, _, port = metrics_address.rpartition(":")
                try:
                    server = HealthServer(registry, host or "0.0.0.0", int(port), lambda: ctl.healthy(interval)).start()
                except OSError as exc:  # the port is taken: one line and exit 1, not a traceback
                    log.error("cannot serve --metrics-address %s: %s", metrics_address, exc)
                    return 1
            try:
                ctl.run_forever(interval, stop)
            finally:
                if server is not None:
                    server.stop()
            return 0
    except (ControllerUsageError, WorkdirError, StatusConfigError) as exc:
        log.error("usage error: %s", redact(str(exc)))
        return 2
    except GroveGitopsError as exc:
        log.error("%s", redact(str(exc)))
        return 1
    finally:
        if statuses is not None:
            statuses.close()  # the last statuses go out before the process ends
