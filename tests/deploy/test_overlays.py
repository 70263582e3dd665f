"""Every overlay builds with ``kubectl kustomize`` and every object it yields is valid Kubernetes."""

from __future__ import annotations

import copy
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.schemas import builtin_errors

from .helpers import (
    COMPONENT_PERMISSIONS,
    CONTROLLER,
    DEFAULT_COMPONENTS,
    DRIFT_EVENTS,
    GATE_LIFTER,
    GATE_LIFTER_BASE,
    KUBE_VERSIONS,
    LIFTER_NAMESPACE,
    NAMESPACED,
    NAMESPACED_POLICIES,
    OVERLAY_DIRS,
    POLICIES,
    WATCHED_NAMESPACE,
    build,
    build_with,
    one,
    require_kubectl,
)

EXPECTED_KINDS = {
    "gate-lifter": Counter(
        {
            "CustomResourceDefinition": 3,  # overlays/crds: the agent needs them
            "Namespace": 1,
            "ServiceAccount": 1,
            "ClusterRole": 1,
            "ClusterRoleBinding": 1,
            "ValidatingAdmissionPolicy": 1,  # pod writes (issue 31.7)
            "ValidatingAdmissionPolicyBinding": 1,
            "Role": 1,
            "RoleBinding": 1,
            "Deployment": 1,
            "PodDisruptionBudget": 1,
            "Service": 1,
        }
    ),
    "gate-lifter/namespaced": Counter(
        {
            "CustomResourceDefinition": 3,
            "ServiceAccount": 1,  # no Namespace: the watched namespace is the user's
            "ClusterRole": 1,
            "ClusterRoleBinding": 1,
            "Role": 2,  # lease, watched namespace (Events in `default`: gate-lifter/drift-events)
            "RoleBinding": 2,
            "Deployment": 1,
            "PodDisruptionBudget": 1,
            "Service": 1,
        }
    ),
    "gate-lifter/drift-events": Counter({"Role": 1, "RoleBinding": 1}),
    "gate-lifter/policies": Counter({"ValidatingAdmissionPolicy": 1, "ValidatingAdmissionPolicyBinding": 1}),
    "gate-lifter/namespaced-policies": Counter({"ValidatingAdmissionPolicy": 1, "ValidatingAdmissionPolicyBinding": 1}),
    "controller": Counter({"ServiceAccount": 1, "Deployment": 1}),
    "crds": Counter({"CustomResourceDefinition": 3}),
    "scalers": Counter({"ClusterRole": 1, "RoleBinding": 1}),
}


@pytest.mark.parametrize("overlay", sorted(OVERLAY_DIRS))
def test_overlay_builds(overlay: str) -> None:
    objs = build(OVERLAY_DIRS[overlay])
    assert objs, f"{overlay} built nothing"
    ids = [(o["apiVersion"], o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in objs]
    assert len(ids) == len(set(ids)), f"duplicate objects in {overlay}: {ids}"
    if overlay in EXPECTED_KINDS:
        assert Counter(o["kind"] for o in objs) == EXPECTED_KINDS[overlay]


@pytest.mark.parametrize("version", KUBE_VERSIONS)
@pytest.mark.parametrize("overlay", sorted(OVERLAY_DIRS))
def test_every_object_is_valid(overlay: str, version: str) -> None:
    errors = [e for obj in build(OVERLAY_DIRS[overlay]) for e in builtin_errors(obj, version)]
    assert errors == []


def test_validation_is_not_vacuous() -> None:
    """The validator used above rejects a typo'd hardening field and a wrong type."""
    deployment = copy.deepcopy(one(build(GATE_LIFTER), "Deployment"))
    deployment["spec"]["template"]["spec"]["containers"][0]["securityContext"]["readOnlyRootFileSystem"] = True
    deployment["spec"]["replicas"] = "2"
    errors = builtin_errors(deployment, "1.35")
    assert any("readOnlyRootFileSystem: unknown field" in e for e in errors), errors
    assert any("spec.replicas" in e for e in errors), errors


def test_cluster_wide_overlay_is_the_base() -> None:
    """The cluster-wide overlay is the base plus the pod policies and the component of the
    examples' backend (kai-scheduler), nothing else changed."""

    def ident(o: dict[str, Any]) -> tuple[str, str]:
        return (o["kind"], o["metadata"]["name"])

    assert DEFAULT_COMPONENTS == ("backends/kai-scheduler",)
    expected = build_with([GATE_LIFTER_BASE, POLICIES], DEFAULT_COMPONENTS)
    assert sorted(build(GATE_LIFTER), key=ident) == sorted(expected, key=ident)
    plain = build(GATE_LIFTER_BASE) + build(POLICIES)
    assert [o for o in expected if o["kind"] != "ClusterRole"] == [o for o in plain if o["kind"] != "ClusterRole"]


@pytest.mark.parametrize("component", sorted(COMPONENT_PERMISSIONS))
@pytest.mark.parametrize("overlay", [GATE_LIFTER, NAMESPACED], ids=["cluster", "namespaced"])
def test_components_build_valid_objects(overlay: Path, component: str) -> None:
    """Every component on either overlay: the same objects (kinds and identities), all valid."""
    objs = build_with([overlay], [component])
    assert Counter(o["kind"] for o in objs) == Counter(o["kind"] for o in build(overlay))
    errors = [e for obj in objs for e in builtin_errors(obj, KUBE_VERSIONS[-1])]
    assert errors == []


def test_namespaced_objects_live_in_known_namespaces() -> None:
    """Each install keeps its namespaced objects in one namespace; only the drift-events grant
    reaches `default`."""
    for overlay, home in (
        (GATE_LIFTER, LIFTER_NAMESPACE),
        (CONTROLLER, LIFTER_NAMESPACE),
        (NAMESPACED, WATCHED_NAMESPACE),
        (DRIFT_EVENTS, "default"),
        (POLICIES, None),
        (NAMESPACED_POLICIES, None),
    ):
        for obj in build(overlay):
            ns = obj["metadata"].get("namespace")
            if obj["kind"] in (
                "Namespace",
                "ClusterRole",
                "ClusterRoleBinding",
                "CustomResourceDefinition",
                "ValidatingAdmissionPolicy",
                "ValidatingAdmissionPolicyBinding",
            ):
                assert ns is None, obj["metadata"]
            else:
                assert ns == home, (overlay.name, obj["kind"], obj["metadata"])


def _referenced(kustomization: Path) -> set[str]:
    data = yaml.safe_load(kustomization.read_text())
    refs = set(data.get("resources") or [])
    refs |= {p["path"] for p in data.get("patches") or [] if "path" in p}
    return refs


@pytest.mark.parametrize("overlay", sorted(OVERLAY_DIRS))
def test_no_orphan_manifests(overlay: str) -> None:
    """Every YAML file of an overlay is used, except the documented Secret example."""
    require_kubectl()
    directory = OVERLAY_DIRS[overlay]
    files = {p.name for p in directory.glob("*.yaml") if p.name != "kustomization.yaml"}
    unused = files - _referenced(directory / "kustomization.yaml")
    assert unused == ({"secret-example.yaml"} if directory == CONTROLLER else set())
