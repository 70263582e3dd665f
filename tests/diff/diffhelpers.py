"""Source trees, runners and the golden-file check shared by the diff tests."""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner, Result

from grove_gitops.cli.diff import diff_command
from tests.support import write_source

GOLDEN = Path(__file__).resolve().parent / "golden"
UPDATE_ENV = "GROVE_GITOPS_UPDATE_GOLDEN"

LPX_PROFILES = """
apiVersion: operator.config.grove.io/v1alpha1
kind: OperatorConfiguration
scheduler:
  defaultProfileName: default-scheduler
  profiles:
  - name: default-scheduler
  - name: lpx-scheduler
"""

TAS_ON = """
apiVersion: operator.config.grove.io/v1alpha1
kind: OperatorConfiguration
topologyAwareScheduling: {enabled: true}
"""

TOPOLOGY = """
apiVersion: grove.io/v1alpha1
kind: ClusterTopologyBinding
metadata: {name: gpu-fabric}
spec:
  levels:
  - {domain: zone, key: topology.kubernetes.io/zone}
  - {domain: rack, key: topology.kubernetes.io/rack}
  - {domain: host, key: kubernetes.io/hostname}
"""


def clique(name: str, replicas: int, image: str = "nginx:1.27", **extra: Any) -> dict[str, Any]:
    pod: dict[str, Any] = {"containers": [{"name": "main", "image": image}]}
    pod.update(extra.pop("pod", {}))
    spec: dict[str, Any] = {"roleName": name, "replicas": replicas, "podSpec": pod}
    spec.update(extra)
    return {"name": name, "spec": spec}


def pcs(name: str, cliques: list[dict[str, Any]], namespace: str = "ml", **template: Any) -> str:
    doc = {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueSet",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"replicas": 1, "template": {"cliques": cliques, **template}},
    }
    return yaml.safe_dump(doc, sort_keys=False)


def source(tmp_path: Path, side: str, files: dict[str, str]) -> Path:
    return write_source(tmp_path / side, files)


def run_diff(args: list[str]) -> Result:
    return CliRunner().invoke(diff_command, args, catch_exceptions=False)


def check_golden(name: str, text: str) -> None:
    """Compare with ``golden/<name>``; ``GROVE_GITOPS_UPDATE_GOLDEN=1`` rewrites it instead.

    The committed file is the truth: regenerate only when a renderer change is intended,
    and review the golden diff like any other code change.
    """
    path = GOLDEN / name
    if os.environ.get(UPDATE_ENV) == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.is_file(), f"missing golden file {path}; run with {UPDATE_ENV}=1 to create it"
    expected = path.read_text(encoding="utf-8")
    if text != expected:
        delta = difflib.unified_diff(expected.splitlines(), text.splitlines(), f"golden/{name}", "actual", lineterm="")
        shown = "\n".join(list(delta)[:80])
        raise AssertionError(f"{name} differs from the golden file (run with {UPDATE_ENV}=1 to accept):\n{shown}")


def write_rendered(root: Path, objects: dict[str, dict[str, Any]]) -> Path:
    """A hand-made rendered tree: ``{relative file path: object}``."""
    for rel, obj in objects.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(obj, sort_keys=False))
    return root
