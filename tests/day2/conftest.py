"""Fixtures of the day-2 scenario tests (the machinery is in ``tests/day2/harness.py``)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.day2.harness import Day2Env, day2_env

_CALL_PASSED = pytest.StashKey[bool]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    """Remember whether the test body passed, so the fixture checks the invariants only then
    (after a failure they would only repeat it)."""
    report = yield
    if report.when == "call":
        item.stash[_CALL_PASSED] = report.passed
    return report


@pytest.fixture
def day2(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Callable[..., Day2Env]]:
    """``day2(**options) -> Day2Env``: a started world, torn down after the test.

    Options are those of :func:`tests.day2.harness.day2_env` (``mode``, ``ready_delay``,
    ``termination_delay``, ``edit``, ``agent``, ``bystander``, ...). One world per test. When
    the test passed, its world's invariants are asserted over the whole scenario
    (:meth:`~tests.day2.harness.Day2Env.assert_invariants`) unless the test's own check
    already covered every moment: a scenario that forgot to end with them is still checked.
    """
    envs: list[Day2Env] = []
    with contextlib.ExitStack() as stack:

        def make(**options: Any) -> Day2Env:
            env = stack.enter_context(day2_env(tmp_path, **options))
            envs.append(env)
            return env

        yield make
        if request.node.stash.get(_CALL_PASSED, False):
            for env in envs:
                if env.invariants_unchecked():
                    env.assert_invariants()
