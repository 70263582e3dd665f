"""Reading the repository's GitHub workflows and running the pinned actionlint over them."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support import PROJECT

WORKFLOWS = PROJECT / ".github" / "workflows"
RELEASE = WORKFLOWS / "release.yml"
ACTIONLINT_SCRIPT = PROJECT / "scripts" / "actionlint.sh"


def load(path: Path) -> dict[Any, Any]:
    """A workflow as YAML 1.1 reads it (``on:`` becomes the key ``True``, as PyYAML reads it)."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict), path
    return data


def release_step(step_id: str, job: str = "image") -> dict[str, Any]:
    """The step ``id: step_id`` of ``job`` in release.yml."""
    steps = load(RELEASE)["jobs"][job]["steps"]
    found = [s for s in steps if s.get("id") == step_id]
    assert len(found) == 1, f"release.yml: job {job} has {len(found)} steps with id {step_id}"
    step = found[0]
    assert isinstance(step, dict)
    return step


def actionlint() -> str:
    """The pinned actionlint (scripts/actionlint.sh builds it once into the cache): fail, never
    skip, when it cannot be built."""
    proc = subprocess.run(
        ["bash", str(ACTIONLINT_SCRIPT), "build"], capture_output=True, text=True, timeout=600, check=False
    )
    if proc.returncode != 0:
        pytest.fail(f"scripts/actionlint.sh build failed ({proc.returncode}):\n{proc.stderr[-4000:]}", pytrace=False)
    return proc.stdout.strip().splitlines()[-1]


def run_actionlint(*args: str, cwd: Path = PROJECT) -> subprocess.CompletedProcess[str]:
    """``scripts/actionlint.sh ARGS`` (no ARGS: every workflow of this repository)."""
    actionlint()
    return subprocess.run(
        ["bash", str(ACTIONLINT_SCRIPT), *args], cwd=cwd, capture_output=True, text=True, timeout=300, check=False
    )
