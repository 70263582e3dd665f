from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.prcheck.fakegithub import FakeGitHub
from tests.prcheck.fakejson import running


@pytest.fixture
def fake_github() -> Iterator[FakeGitHub]:
    with running(FakeGitHub().start()) as fake:
        yield fake
