"""Small source trees for the feasibility tests: one topology, hand-built node pools."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner, Result

from grove_gitops.cli import main

ZONE, BLOCK, RACK, HOST = "topology.kubernetes.io/zone", "example.com/block", "example.com/rack", "kubernetes.io/hostname"
OPERATOR = {
    "apiVersion": "operator.config.grove.io/v1alpha1",
    "kind": "OperatorConfiguration",
    "topologyAwareScheduling": {"enabled": True},
    "scheduler": {"defaultProfileName": "kai-scheduler", "profiles": [{"name": "kai-scheduler"}]},
}
BINDING = {
    "apiVersion": "grove.io/v1alpha1",
    "kind": "ClusterTopologyBinding",
    "metadata": {"name": "fabric"},
    "spec": {
        "levels": [
            {"domain": "zone", "key": ZONE},
            {"domain": "block", "key": BLOCK},
            {"domain": "rack", "key": RACK},
            {"domain": "host", "key": HOST},
        ]
    },
}


def pack(required: str | None = None, preferred: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if required:
        out["required"] = required
    if preferred:
        out["preferred"] = preferred
    return {"pack": out}


def clique(
    name: str,
    replicas: int,
    gpus: int = 0,
    *,
    cpu: str = "1",
    min_available: int | None = None,
    topology: dict[str, Any] | None = None,
    pod: dict[str, Any] | None = None,
) -> dict[str, Any]:
    resources: dict[str, Any] = {"requests": {"cpu": cpu, "memory": "1Gi"}}
    if gpus:
        resources["limits"] = {"nvidia.com/gpu": str(gpus)}
    spec: dict[str, Any] = {
        "roleName": name,
        "replicas": replicas,
        "podSpec": {"containers": [{"name": "main", "image": "busybox:1.36", "resources": resources}], **(pod or {})},
    }
    if min_available is not None:
        spec["minAvailable"] = min_available
    out: dict[str, Any] = {"name": name, "spec": spec}
    if topology:
        out["topologyConstraint"] = topology
    return out


def pcs(
    name: str,
    cliques: list[dict[str, Any]],
    *,
    topology: dict[str, Any] | None = None,
    groups: list[dict[str, Any]] | None = None,
    replicas: int = 1,
) -> dict[str, Any]:
    template: dict[str, Any] = {"cliques": cliques}
    if topology:
        template["topologyConstraint"] = {"topologyName": "fabric", **topology}
    if groups:
        template["podCliqueScalingGroups"] = groups
    for part in [*cliques, *(groups or [])]:
        if "topologyConstraint" in part:
            part["topologyConstraint"] = {"topologyName": "fabric", **part["topologyConstraint"]}
    return {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueSet",
        "metadata": {"name": name, "namespace": "ml", "labels": {"kai.scheduler/queue": "default"}},
        "spec": {"replicas": replicas, "template": template},
    }


def pool(
    name: str,
    count: int,
    gpus: int = 8,
    *,
    zone: str = "z1",
    block: str = "b1",
    rack: str = "r1",
    cpu: str = "64",
    labels: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    allocatable: dict[str, Any] = {"cpu": cpu, "memory": "512Gi"}
    if gpus:
        allocatable["nvidia.com/gpu"] = gpus
    out: dict[str, Any] = {
        "name": name,
        "count": count,
        "labels": {ZONE: zone, BLOCK: block, RACK: rack, **(labels or {})},
        "allocatable": allocatable,
    }
    if taints:
        out["taints"] = taints
    return out


def inventory(*pools: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "gitops.grove.io/v1alpha1", "kind": "NodeInventory", "metadata": {"name": "lab"}, "pools": list(pools)}


def source(
    root: Path,
    workloads: list[dict[str, Any]],
    inv: dict[str, Any] | str | None,
    *,
    mode: str | None = None,
) -> Path:
    """A source tree: operator config, binding, the workloads and (when given) the inventory."""
    root.mkdir(parents=True, exist_ok=True)
    docs: list[dict[str, Any]] = [OPERATOR, BINDING]
    if mode is not None:
        docs.append({"apiVersion": "gitops.grove.io/v1alpha1", "kind": "RenderConfiguration", "feasibility": mode})
    (root / "config.yaml").write_text(yaml.safe_dump_all(docs, sort_keys=False))
    (root / "workloads.yaml").write_text(yaml.safe_dump_all(workloads, sort_keys=False))
    if isinstance(inv, str):
        (root / "inventory.yaml").write_text(inv)
    elif inv is not None:
        (root / "inventory.yaml").write_text(yaml.safe_dump(inv, sort_keys=False))
    return root


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def feasibility(root: Path) -> tuple[int, dict[str, Any]]:
    """Exit code and JSON answer of ``grove-gitops feasibility --output json``."""
    result = run("feasibility", str(root), "--output", "json")
    return result.exit_code, json.loads(result.stdout)


def gang(answer: dict[str, Any], name: str) -> dict[str, Any]:
    return next(g for g in answer["gangs"] if g["name"] == name)
