"""Commit statuses on the source commits, the ``grove_gitops_source_renders`` gauge and the
idle heartbeat: the controller against real repositories, and fake GitHub / GitLab APIs
over real HTTP."""

from __future__ import annotations

import logging
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from grove_gitops.forge.statuses import (
    CONTEXT,
    StatusClient,
    StatusConfigError,
    StatusTarget,
    failure_description,
    status_target,
)
from grove_gitops.gitops.controller import Controller
from grove_gitops.gitops.service import run_controller
from grove_gitops.gitops.status import StatusReporter, reporter_from_options
from grove_gitops.metrics import HealthServer, Registry
from tests.gitops.test_controller import Remote, config
from tests.prcheck.fakegithub import FakeGitHub
from tests.prcheck.fakegitlab import FakeGitLab
from tests.prcheck.fakejson import running
from tests.support import pcs_yaml

TOKEN = "ghs_STATUS0123456789token"
BAD = pcs_yaml("alpha").replace("replicas: 2", "replicas: -2")


@pytest.fixture
def remote(tmp_path: Path) -> Remote:
    return Remote(tmp_path)


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with running(FakeGitHub(token=TOKEN).start()) as fake:
        yield fake


@pytest.fixture
def elsewhere() -> Iterator[FakeGitHub]:
    with running(FakeGitHub(token=TOKEN).start()) as fake:
        yield fake


@pytest.fixture
def gitlab() -> Iterator[FakeGitLab]:
    with running(FakeGitLab(token=TOKEN).start()) as fake:
        yield fake


def reporter(forge: str, api: str, repo: str, registry: Registry | None = None, attempts: int = 3) -> StatusReporter:
    client = StatusClient(StatusTarget(forge, api, repo), TOKEN, timeout=10)
    return StatusReporter(client, registry, attempts=attempts, backoff=0.0)


def states(statuses: list[dict[str, Any]], sha: str) -> list[str]:
    return [s["state"] for s in statuses if s["sha"] == sha]


def test_github_pending_then_success_then_failure_with_the_errors(remote: Remote, github: FakeGitHub) -> None:
    good = remote.push_source({"a.yaml": pcs_yaml("alpha")}, "good")
    statuses = reporter("github", github.url, github.repo)
    with Controller(config(remote), statuses=statuses) as ctl:
        ctl.run_once()
        assert statuses.flush(60)
        assert states(github.statuses, good) == ["pending", "success"]
        assert all(s["context"] == CONTEXT for s in github.statuses)
        assert github.statuses[-1]["description"] == "rendered and committed to rendered"
        bad = remote.push_source({"a.yaml": BAD}, "bad")  # two errors: replicas and minAvailable
        result = ctl.run_once()
        assert statuses.flush(60)
    failure = github.statuses[-1]
    assert states(github.statuses, bad) == ["pending", "failure"]
    assert failure["description"].startswith("2 errors: src/a.yaml:21:9: spec.template.cliques[1].spec.replicas: ")
    assert len(failure["description"]) <= 140
    assert failure["description"] == failure_description(result.failed[bad])
    assert all(auth == f"Bearer {TOKEN}" for _, _, auth in github.requests)
    statuses.close()


def test_gitlab_statuses_use_its_states_and_name(remote: Remote, gitlab: FakeGitLab) -> None:
    good = remote.push_source({"a.yaml": pcs_yaml("alpha")}, "good")
    statuses = reporter("gitlab", gitlab.api, gitlab.project)
    with Controller(config(remote), statuses=statuses) as ctl:
        ctl.run_once()
        bad = remote.push_source({"a.yaml": BAD}, "bad")
        ctl.run_once()
        assert statuses.flush(60)
    statuses.close()
    assert states(gitlab.statuses, good) == ["pending", "success"]
    assert states(gitlab.statuses, bad) == ["pending", "failed"]
    assert {s["name"] for s in gitlab.statuses} == {CONTEXT}
    assert gitlab.statuses[-1]["description"].startswith("2 errors: src/a.yaml:21:9: ")
    assert {r[1].split("/statuses/")[0] for r in gitlab.requests} == {"/api/v4/projects/acme%2Fworkloads"}
    assert all(r[2] == f"PRIVATE-TOKEN: {TOKEN}" for r in gitlab.requests)


def test_unchanged_output_is_a_success_too(remote: Remote, github: FakeGitHub) -> None:
    remote.push_source({"a.yaml": pcs_yaml("alpha")}, "v1")
    statuses = reporter("github", github.url, github.repo)
    with Controller(config(remote), statuses=statuses) as ctl:
        ctl.run_once()
        same = remote.push_source({"README.md": "docs only\n"}, "docs")
        assert ctl.run_once().unchanged == [same]
        assert statuses.flush(60)
    statuses.close()
    assert states(github.statuses, same) == ["pending", "success"]
    assert "did not change" in github.statuses[-1]["description"]


def test_a_failing_or_unreachable_forge_never_stops_rendering(
    remote: Remote, github: FakeGitHub, caplog: pytest.LogCaptureFixture
) -> None:
    github.fail = 10_000  # every request: 500
    registry = Registry()
    flaky = reporter("github", github.url, github.repo, registry, attempts=3)
    sha = remote.push_source({"a.yaml": pcs_yaml("alpha")}, "v1")
    with caplog.at_level(logging.WARNING, logger="grove_gitops"), Controller(config(remote), registry, statuses=flaky) as ctl:
        result = ctl.run_once()
        assert flaky.flush(60)
    flaky.close()
    assert result.rendered == [sha] and result.pushed
    assert len(github.requests) == 6  # pending and success, 3 attempts each: bounded
    assert registry.get("grove_gitops_status_failures_total") == 2
    assert "commit status success on" in caplog.text and "500 Server Error" in caplog.text
    # Nothing listening at all: the same, and the loop goes on.
    gone = reporter("github", "http://127.0.0.1:9", "acme/workloads", attempts=2)
    second = remote.push_source({"b.yaml": pcs_yaml("beta")}, "v2")
    with Controller(config(remote), statuses=gone) as ctl:
        assert ctl.run_once().rendered == [second]
        assert gone.flush(60)
    gone.close()
    assert TOKEN not in caplog.text


def test_the_token_goes_only_to_the_forge(remote: Remote, github: FakeGitHub, elsewhere: FakeGitHub) -> None:
    github.redirect_to = elsewhere.url
    statuses = reporter("github", github.url, github.repo, attempts=1)
    remote.push_source({"a.yaml": pcs_yaml("alpha")}, "v1")
    with Controller(config(remote), statuses=statuses) as ctl:
        assert ctl.run_once().pushed
        assert statuses.flush(60)
    statuses.close()
    assert github.requests and elsewhere.requests == []
    # An API host that is not the repository's is refused before any request.
    with pytest.raises(StatusConfigError, match="is not the repository's"):
        status_target("https://github.com/acme/w.git", "auto", "https://evil.example/api")
    with pytest.raises(StatusConfigError, match="is not the repository's"):
        status_target("https://gitlab.corp.example/g/p.git", "gitlab", f"{github.url}/api/v4")
    with pytest.raises(StatusConfigError, match="plain http only to this machine"):
        status_target("http://git.example/acme/w.git", "github")


@pytest.mark.parametrize(
    ("url", "forge", "expected"),
    [
        ("https://github.com/acme/w.git", "auto", ("github", "https://api.github.com", "acme/w")),
        ("https://x-access-token:t0k@github.com/acme/w", "auto", ("github", "https://api.github.com", "acme/w")),
        ("git@github.com:acme/w.git", "auto", ("github", "https://api.github.com", "acme/w")),
        ("ssh://git@gitlab.com/g/sub/p.git", "auto", ("gitlab", "https://gitlab.com/api/v4", "g/sub/p")),
        ("https://ghe.corp.example/acme/w.git", "github", ("github", "https://ghe.corp.example/api/v3", "acme/w")),
        ("https://git.corp.example:8443/g/p.git", "gitlab", ("gitlab", "https://git.corp.example:8443/api/v4", "g/p")),
        ("https://ghe.corp.example/acme/w.git", "auto", None),
        ("/srv/git/w.git", "auto", None),
        ("file:///srv/git/w.git", "auto", None),
    ],
)
def test_forge_and_repository_from_the_source_url(url: str, forge: str, expected: tuple[str, str, str] | None) -> None:
    target = status_target(url, forge)
    assert (None if target is None else (target.forge, target.api_url, target.repo)) == expected


def test_options_without_a_token_or_a_target(monkeypatch: pytest.MonkeyPatch) -> None:
    assert reporter_from_options("/srv/git/w.git", "auto", "", "", environ={}) is None
    assert reporter_from_options("https://github.com/a/b", "auto", "", "", environ={}) is None  # warned, off
    assert reporter_from_options("https://github.com/a/b", "off", "", "", environ={"GITHUB_TOKEN": "t"}) is None
    with pytest.raises(StatusConfigError, match="no token: set GROVE_GITOPS_STATUS_TOKEN or GITLAB_TOKEN"):
        reporter_from_options("https://gitlab.com/g/p", "gitlab", "", "", environ={"GITHUB_TOKEN": "t"})
    with pytest.raises(StatusConfigError, match=r"--status-repo: .* is not owner/name"):
        status_target("/srv/x", "github", "http://127.0.0.1:9", "not-a-repo")
    with pytest.raises(StatusConfigError, match="--status-target-url"):
        StatusClient(StatusTarget("github", "http://127.0.0.1:9", "a/b"), "t", target_url="javascript:alert(1)")


def test_the_cli_posts_statuses_and_exits_2_without_a_token(
    remote: Remote, github: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = remote.push_source({"a.yaml": BAD}, "bad")
    common: dict[str, Any] = {
        "repo": str(remote.bare),
        "source_branch": "main",
        "source_path": "src",
        "output_branch": "rendered",
        "output_path": "",
        "workdir": remote.root / "work" / "clone",
        "once": True,
        "interval": 1,
        "metrics_address": "",
        "author": "grove-gitops <grove-gitops@users.noreply.local>",
        "status_forge": "github",
        "status_api_url": github.url,
        "status_repo": github.repo,
    }
    monkeypatch.delenv("GROVE_GITOPS_STATUS_TOKEN", raising=False)
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    assert run_controller(**common) == 2
    assert github.requests == []
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    assert run_controller(**common) == 1  # the commit does not render
    assert states(github.statuses, bad) == ["pending", "failure"]  # posted before the process ended


def _scrape(registry: Registry) -> str:
    server = HealthServer(registry, "127.0.0.1", 0, lambda: True).start()
    try:
        return urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics", timeout=10).read().decode()
    finally:
        server.stop()


def test_the_gauge_is_0_while_the_source_head_does_not_render(remote: Remote) -> None:
    registry = Registry()
    remote.push_source({"a.yaml": pcs_yaml("alpha")}, "good")
    with Controller(config(remote), registry) as ctl:
        ctl.run_once()
        assert "grove_gitops_source_renders 1\n" in _scrape(registry)
        remote.push_source({"a.yaml": BAD}, "bad")
        ctl.run_once()
        text = _scrape(registry)
        assert "# TYPE grove_gitops_source_renders gauge" in text
        assert "grove_gitops_source_renders 0\n" in text
        ctl.run_once()  # nothing new: still 0
        assert "grove_gitops_source_renders 0\n" in _scrape(registry)
    # A restarted controller (fresh work dir) reads the head's state from the remote's record.
    restarted = Registry()
    with Controller(config(remote, workdir=remote.root / "work2" / "clone"), restarted) as ctl:
        assert ctl.run_once().failed == {}
        assert "grove_gitops_source_renders 0\n" in _scrape(restarted)
        remote.push_source({"a.yaml": pcs_yaml("alpha").replace("replicas: 2", "replicas: 3")}, "fixed")
        ctl.run_once()
        assert "grove_gitops_source_renders 1\n" in _scrape(restarted)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_heartbeat_once_per_interval_while_idle(remote: Remote, caplog: pytest.LogCaptureFixture) -> None:
    remote.push_source({"a.yaml": pcs_yaml("alpha")}, "good")
    clock = FakeClock()
    with Controller(config(remote, heartbeat_interval=10.0), clock=clock) as ctl:
        ctl.run_once()
        remote.push_source({"a.yaml": BAD}, "bad")
        stop = threading.Event()
        calls = 0
        original = ctl.run_once

        def tick() -> Any:  # one second per iteration; stop after 35
            nonlocal calls
            calls += 1
            clock.now += 1.0
            if calls >= 35:
                stop.set()
            return original()

        ctl.run_once = tick  # type: ignore[method-assign]
        with caplog.at_level(logging.INFO, logger="grove_gitops"):
            ctl.run_forever(0.0, stop)
    beats = [r.getMessage() for r in caplog.records if r.getMessage().startswith("idle:")]
    assert len(beats) == 3  # 34 idle seconds after the first (busy) iteration: at 10, 20 and 30
    assert "10 iteration(s) without a new source commit" in beats[0]
    assert "does not render (2 error(s))" in beats[0]


def test_heartbeat_with_a_short_interval_in_real_time(remote: Remote, caplog: pytest.LogCaptureFixture) -> None:
    sha = remote.push_source({"a.yaml": pcs_yaml("alpha")}, "good")
    with Controller(config(remote, heartbeat_interval=0.2)) as ctl:
        stop = threading.Event()
        thread = threading.Thread(target=ctl.run_forever, args=(0.05, stop), daemon=True)
        with caplog.at_level(logging.INFO, logger="grove_gitops"):
            thread.start()
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and sum(r.getMessage().startswith("idle:") for r in caplog.records) < 2:
                time.sleep(0.05)
            stop.set()
            thread.join(30)
    beats = [r.getMessage() for r in caplog.records if r.getMessage().startswith("idle:")]
    assert len(beats) >= 2 and f"source head {sha[:12]} renders" in beats[0]


def test_statuses_go_out_in_order_once_and_never_pending_after_the_outcome(github: FakeGitHub) -> None:
    statuses = reporter("github", github.url, github.repo)
    sha = "a" * 40
    statuses.pending(sha)
    statuses.failure(sha, "2 errors: x")
    statuses.pending(sha)  # a retried iteration renders it again: no flapping back to pending
    statuses.failure(sha, "2 errors: x")
    assert statuses.flush(60)
    statuses.failure(sha, "2 errors: x")  # already posted
    assert statuses.flush(60)
    statuses.close()
    assert [(s["state"], s["description"]) for s in github.statuses] == [
        ("pending", "rendering…"),
        ("failure", "2 errors: x"),
    ]
    with pytest.raises(ValueError, match="not a commit id"):
        StatusClient(StatusTarget("github", github.url, github.repo), TOKEN).post("../x", "pending", "")
