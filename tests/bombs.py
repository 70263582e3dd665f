"""Test support for the memory and time bombs of issue 21 §2: source trees, a guard that
bounds what the planner may build in process, and the CLI run in a subprocess under resource
limits (so a regression ends in a failed test, never in a machine out of memory)."""

from __future__ import annotations

import dataclasses
import os
import resource
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from grove_gitops.expand import plan
from tests.support import PROJECT, write_source

#: The default-scheduler with gang scheduling: its validation plans the first replica's
#: PodGangs, so it is the backend that iterated over counts while validating (issue 21 §2).
GANG_OPCFG = """\
apiVersion: operator.config.grove.io/v1alpha1
kind: OperatorConfiguration
scheduler:
  defaultProfileName: default-scheduler
  profiles:
  - name: default-scheduler
    config: {gangScheduling: true}
"""

POD_SPEC: dict[str, Any] = {"containers": [{"name": "c", "image": "x"}]}


def clique(name: str, replicas: int = 1, **spec: Any) -> dict[str, Any]:
    return {"name": name, "spec": {"roleName": name, "replicas": replicas, "podSpec": POD_SPEC, **spec}}


def pcs_doc(
    cliques: list[dict[str, Any]],
    groups: list[dict[str, Any]] | None = None,
    startup: str = "CliqueStartupTypeExplicit",
    replicas: int = 1,
) -> dict[str, Any]:
    template: dict[str, Any] = {"cliqueStartupType": startup, "cliques": cliques}
    if groups is not None:
        template["podCliqueScalingGroups"] = groups
    return {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueSet",
        "metadata": {"name": "demo", "namespace": "ml"},
        "spec": {"replicas": replicas, "template": template},
    }


def gang_source(root: Path, doc: dict[str, Any], extra: dict[str, str] | None = None) -> Path:
    """``root`` holding ``doc`` as ``pcs.yaml`` and the gang-scheduling OperatorConfiguration."""
    return write_source(root, {"pcs.yaml": yaml.safe_dump(doc), "opcfg.yaml": GANG_OPCFG, **(extra or {})})


class TooMuchPlanned(BaseException):
    """Raised by :func:`bounded_planner`; a BaseException, so no ``except Exception`` in the
    code under test (the backend findings have one) can swallow it."""


@contextmanager
def bounded_planner(monkeypatch: pytest.MonkeyPatch, limit: int) -> Iterator[dict[str, int]]:
    """Count the PodClique instances and startup dependencies the planner builds in this
    process; building more than ``limit`` raises :class:`TooMuchPlanned` (the bound asserted,
    instead of letting an unbounded loop exhaust memory or time)."""
    counts = {"built": 0}

    def counting(original: type[Any]) -> Callable[..., Any]:
        def build(*args: Any, **kwargs: Any) -> Any:
            counts["built"] += 1
            if counts["built"] > limit:
                raise TooMuchPlanned(f"the planner built more than {limit} objects")
            return original(*args, **kwargs)

        return build

    for name in ("CliqueInstance", "Dependency"):
        original = getattr(plan, name)
        assert dataclasses.is_dataclass(original)
        monkeypatch.setattr(plan, name, counting(original))
    yield counts


def limit_resources(memory_bytes: int, cpu_seconds: int) -> Callable[[], None]:
    """A ``preexec_fn`` capping the child's address space and CPU time."""

    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds))

    return apply


def run_limited(
    args: list[str], memory_bytes: int = 1536 * 1024 * 1024, cpu_seconds: int = 120
) -> subprocess.CompletedProcess[str]:
    """``python -m grove_gitops ARGS`` in a child process under ``limit_resources``."""
    env = {**os.environ, "PYTHONPATH": str(PROJECT)}
    return subprocess.run(
        [sys.executable, "-m", "grove_gitops", *args],
        preexec_fn=limit_resources(memory_bytes, cpu_seconds),
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=PROJECT,
        check=False,
    )
