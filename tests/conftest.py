"""Shared fixtures (helpers live in ``tests/support.py``)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings

from tests.schemas import CRDRegistry
from tests.support import CRDS, OUR_CRDS

# Fuzz tests (tests/test_fuzz.py): a fixed, bounded search in CI; ``--hypothesis-profile long``
# for a longer random one.
_FUZZ_HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]
settings.register_profile(
    "ci", derandomize=True, max_examples=200, deadline=None, suppress_health_check=_FUZZ_HEALTH, print_blob=True
)
settings.register_profile("long", max_examples=5000, deadline=None, suppress_health_check=_FUZZ_HEALTH)
settings.load_profile("ci")


@pytest.fixture(scope="session")
def crds() -> CRDRegistry:
    return CRDRegistry.from_dirs(CRDS, OUR_CRDS)
