"""One Grove API oracle process per test module (``tests/oracle/client.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.oracle.client import Oracle, build


@pytest.fixture(scope="session")
def oracle_binary() -> Path:
    return build()


@pytest.fixture(scope="module")
def oracle(oracle_binary: Path) -> Iterator[Oracle]:
    running = Oracle(oracle_binary)
    yield running
    running.close()
