"""Test helpers: where ../shared is, and small source trees to render."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Any

import yaml

from grove_gitops.render import RenderResult, render_source
from tests.schemas import CRDRegistry

PROJECT = Path(__file__).resolve().parents[1]
SHARED = PROJECT.parent / "shared"
SAMPLES = SHARED / "samples" / "grove"
CRDS = SHARED / "crds"
#: Our own CRDs (gitops.grove.io): the workload record and the scale targets.
OUR_CRDS = PROJECT / "overlays" / "crds"


_POSITION = re.compile(r"(\.ya?ml):\d+:\d+: ")


def plain(text: str) -> str:
    """``text`` without the ``:line:col`` that error lines carry after a file name
    (``w.yaml:7:3: spec.replicas: ...`` → ``w.yaml: spec.replicas: ...``), for tests about what
    is wrong rather than where."""
    return _POSITION.sub(r"\1: ", text)


#: The Namespace :func:`pcs_yaml` renders into: a source holding it renders without the
#: undeclared-namespace warning.
ML_NAMESPACE = "apiVersion: v1\nkind: Namespace\nmetadata: {name: ml}\n"


def without_namespace_warnings(warnings: list[str]) -> list[str]:
    """``warnings`` without those about undeclared namespaces (``validation.namespaces``): the
    small test sources render into ``ml`` without creating it, and most tests are about other
    warnings."""
    from grove_gitops.validation.namespaces import FIELD

    return [w for w in warnings if f": {FIELD}: " not in w]


def write_source(root: Path, files: dict[str, str]) -> Path:
    """Write ``{relative path: YAML text}`` below ``root`` and return ``root``."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def with_invalid_last_workload(source: Path, dest: Path) -> Path:
    """A copy under ``dest`` of bench.generate's tree ``source`` (its ``.yaml`` files) whose
    last workload, the last one planned, has ``replicas: -2``."""
    for path in source.rglob("*.yaml"):
        target = dest / path.relative_to(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(path.read_bytes())
    last = sorted((dest / "workloads").glob("llama-*.yaml"))[-1]
    last.write_text(last.read_text().replace("replicas: 2\n", "replicas: -2\n", 1))
    return dest


def render_files(tmp_path: Path, files: dict[str, str], at: str = "git") -> RenderResult:
    """Render ``files``; ``at="initial"`` gives Git's objects plus what the agent creates at
    the autoscaled counts' start values (``render_source``'s ``at``)."""
    return render_source(write_source(tmp_path / "src", files), at=at)


def objects_by_kind(result: RenderResult, kind: str) -> dict[str, dict[str, Any]]:
    return {o.obj["metadata"]["name"]: o.obj for o in result.objects if o.obj.get("kind") == kind}


def sample_text(rel: str) -> str:
    return (SAMPLES / rel).read_text()


def pcs_yaml(name: str = "demo", **spec_overrides: Any) -> str:
    """A small valid PodCliqueSet as YAML text; ``spec_overrides`` replace template keys."""
    template: dict[str, Any] = {
        "cliques": [
            {
                "name": "router",
                "spec": {
                    "roleName": "router",
                    "replicas": 1,
                    "podSpec": {"containers": [{"name": "r", "image": "nginx:1.27"}]},
                },
            },
            {
                "name": "worker",
                "spec": {
                    "roleName": "worker",
                    "replicas": 2,
                    "podSpec": {"containers": [{"name": "w", "image": "nginx:1.27"}]},
                },
            },
        ],
    }
    template.update(spec_overrides)
    doc = {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueSet",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {"replicas": 1, "template": template},
    }
    return yaml.safe_dump(doc, sort_keys=False)


KUBE_VERSIONS = ("1.35", "1.36", "1.37")


def problems_of(tmp_path: Path, files: dict[str, str]) -> list[str]:
    """The ``file: field: message`` lines of a source tree that must be rejected (without the
    ``:line:col`` the CLI adds: these tests are about what is wrong, not where)."""
    import dataclasses

    import pytest

    from grove_gitops.errors import InvalidInputError

    with pytest.raises(InvalidInputError) as info:
        render_files(tmp_path, files)
    return [str(dataclasses.replace(p, line=None, column=None)) for p in info.value.problems]


def assert_schema_valid(result: RenderResult, crds: CRDRegistry) -> None:
    """Every rendered object, custom or built-in (pods too), passes its schema for every
    Kubernetes version the project targets."""
    from tests.schemas import validate_any

    errors = [
        f"{item.obj['kind']} {item.obj['metadata'].get('name')}: {error}"
        for item in result.objects
        for version in KUBE_VERSIONS
        for error in validate_any(item.obj, crds, version)
    ]
    assert errors == []


# spec/grove-backends.md §8, the worked example several test modules share: a binding and a
# PodCliqueSet with a standalone router and a scaling group (replicas 2 > minAvailable 1).
GPU_FABRIC = """
apiVersion: grove.io/v1alpha1
kind: ClusterTopologyBinding
metadata: {name: gpu-fabric}
spec:
  levels:
  - {domain: zone, key: topology.kubernetes.io/zone}
  - {domain: rack, key: topology.kubernetes.io/rack}
  - {domain: host, key: kubernetes.io/hostname}
"""

INF = """
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata: {name: inf, namespace: ml, labels: {kai.scheduler/queue: team-a}}
spec:
  replicas: 1
  template:
    priorityClassName: high
    topologyConstraint: {topologyName: gpu-fabric, pack: {required: zone}}
    cliques:
    - {name: router, spec: {roleName: router, replicas: 1, minAvailable: 1, podSpec: {containers: [{name: c, image: x}]}}}
    - {name: pleader, spec: {roleName: pleader, replicas: 1, minAvailable: 1, podSpec: {containers: [{name: c, image: x}]}}}
    - name: pworker
      topologyConstraint: {pack: {preferred: host}}
      spec: {roleName: pworker, replicas: 2, minAvailable: 2, podSpec: {containers: [{name: c, image: x}]}}
    podCliqueScalingGroups:
    - {name: prefill, cliqueNames: [pleader, pworker], replicas: 2, minAvailable: 1, topologyConstraint: {pack: {required: rack}}}
"""


#: A small valid PodCliqueSet document (router + 2 workers) that tests deep-copy and break.
SMALL_PCS: dict[str, Any] = {
    "apiVersion": "grove.io/v1alpha1",
    "kind": "PodCliqueSet",
    "metadata": {"name": "demo", "namespace": "ml"},
    "spec": {
        "replicas": 1,
        "template": {
            "cliques": [
                {
                    "name": "router",
                    "spec": {"roleName": "router", "replicas": 1, "podSpec": {"containers": [{"name": "r", "image": "x"}]}},
                },
                {
                    "name": "worker",
                    "spec": {"roleName": "worker", "replicas": 2, "podSpec": {"containers": [{"name": "w", "image": "x"}]}},
                },
            ]
        },
    },
}
