"""The image, built once per test session (tests/image/engine.py)."""

from __future__ import annotations

import pytest

from tests.image.engine import build_image


@pytest.fixture(scope="session")
def image() -> str:
    return build_image()
