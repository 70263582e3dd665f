"""Fixtures of the day-2 scenario tests (the machinery is in ``tests/day2/harness.py``)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.day2.harness import Day2Env, day2_env


@pytest.fixture
def day2(tmp_path: Path) -> Iterator[Callable[..., Day2Env]]:
    """``day2(**options) -> Day2Env``: a started world, torn down after the test.

    Options are those of :func:`tests.day2.harness.day2_env` (``mode``, ``ready_delay``,
    ``termination_delay``, ``edit``, ``agent``, ...). One world per test.
    """
    with contextlib.ExitStack() as stack:

        def make(**options: Any) -> Day2Env:
            return stack.enter_context(day2_env(tmp_path, **options))

        yield make
