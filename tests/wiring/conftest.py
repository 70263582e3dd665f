"""Fixtures for the Argo CD / Flux wiring tests (``overlays/argocd``, ``overlays/flux``)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from .helpers import EXAMPLES, render_cli


@pytest.fixture(scope="session")
def rendered_examples(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``examples/`` rendered once with the project's CLI."""
    out = tmp_path_factory.mktemp("rendered") / "out"
    render_cli(EXAMPLES, out)
    return out


@pytest.fixture
def examples_copy(tmp_path: Path) -> Iterator[Path]:
    """A private copy of ``examples/`` (the CMP renders in place)."""
    target = tmp_path / "source"
    shutil.copytree(EXAMPLES, target)
    yield target
