from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.prcheck.fakegithub import FakeGitHub


@pytest.fixture
def fake_github() -> Iterator[FakeGitHub]:
    fake = FakeGitHub().start()
    try:
        yield fake
    finally:
        fake.stop()
