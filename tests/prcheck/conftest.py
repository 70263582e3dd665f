from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.prcheck.fakegithub import FakeGitHub
from tests.prcheck.fakejson import running


@pytest.fixture
def fake_github() -> Iterator[FakeGitHub]:
    with running(FakeGitHub().start()) as fake:
        yield fake


@pytest.fixture(autouse=True)
def github_runner(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests play a GitHub Actions runner, which sets GITHUB_ACTIONS=true: pr-check prints
    its workflow commands (``::error``) only there (tests/prcheck/test_prcheck_ci.py checks
    the plain lines everywhere else)."""
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
