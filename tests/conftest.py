"""Shared fixtures (helpers live in ``tests/support.py``)."""

from __future__ import annotations

import pytest

from grove_gitops.testing.schemas import CRDRegistry
from tests.support import CRDS


@pytest.fixture(scope="session")
def crds() -> CRDRegistry:
    return CRDRegistry.from_dir(CRDS)
