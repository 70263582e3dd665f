"""Issue 32.4 on the real server: the scale targets' CEL rules (overlays/crds) judge creates and
combined writes on the written object, and still let a write that keeps replicas move the bounds
(the agent copying new bounds from Git). The same cases run against the fake in
tests/fakeapi/test_fakeapi_scale_targets.py, so both must answer alike."""

from __future__ import annotations

import json

import pytest
from kubernetes.client.exceptions import ApiException

from grove_gitops.agent.kube import Kube
from tests.controlplane.plane import Obj, Plane, server_side_apply
from tests.fakeapi.crd_fixtures import FLOOR_MESSAGE, MAX_MESSAGE, MIN_AVAILABLE_MESSAGE

NS = "cp-scale-rules"
MERGE = "application/merge-patch+json"
KINDS = {"PodCliqueScalingGroup": "podcliquescalinggroups", "PodClique": "podcliques"}


def target(kind: str, name: str, replicas: int) -> Obj:
    return {
        "apiVersion": "gitops.grove.io/v1alpha1",
        "kind": kind,
        "metadata": {"name": name, "namespace": NS},
        "spec": {"replicas": replicas, "minAvailable": 2, "minReplicas": 2, "maxReplicas": 5},
    }


def collection(kind: str) -> str:
    return f"/apis/gitops.grove.io/v1alpha1/namespaces/{NS}/{KINDS[kind]}"


def refusal(kube: Kube, method: str, path: str, body: object, content_type: str = "application/json") -> list[str]:
    """The causes' messages of a 422 (anything else fails the test)."""
    with pytest.raises(ApiException) as info:
        kube.raw(method, path, body, content_type)
    assert info.value.status == 422, info.value.body
    answer = json.loads(str(info.value.body))
    return [str(c["message"]) for c in answer["details"]["causes"]]


@pytest.fixture(scope="module")
def admin(installed: Plane) -> Kube:
    kube = installed.kube()
    server_side_apply(kube, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    return kube


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_create_above_max_or_below_the_floor_is_refused_with_the_rules_message(admin: Kube, kind: str) -> None:
    assert refusal(admin, "POST", collection(kind), target(kind, "over", 9)) == [f"Invalid value: {MAX_MESSAGE}"]
    assert refusal(admin, "POST", collection(kind), target(kind, "under", 1)) == [
        f"Invalid value: {MIN_AVAILABLE_MESSAGE}",
        f"Invalid value: {FLOOR_MESSAGE}",
    ]
    created = admin.raw("POST", collection(kind), target(kind, "inside", 5))
    assert created["spec"]["replicas"] == 5


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_combined_merge_patch_is_judged_on_the_result(admin: Kube, kind: str) -> None:
    admin.raw("POST", collection(kind), target(kind, "combined", 3))
    path = f"{collection(kind)}/combined"
    assert refusal(admin, "PATCH", path, {"spec": {"replicas": 50, "maxReplicas": 40}}, MERGE) == [
        f"Invalid value: {MAX_MESSAGE}"
    ]
    assert refusal(admin, "PATCH", path, {"spec": {"replicas": 4, "minReplicas": 6, "maxReplicas": 9}}, MERGE) == [
        f"Invalid value: {FLOOR_MESSAGE}"
    ]
    moved = admin.raw("PATCH", path, {"spec": {"replicas": 50, "maxReplicas": 100}}, MERGE)
    assert (moved["spec"]["replicas"], moved["spec"]["maxReplicas"]) == (50, 100)


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_write_that_keeps_replicas_may_move_the_bounds_past_it(admin: Kube, kind: str) -> None:
    """Git raised the floor above the live count: the agent's bounds-only patch is accepted; the
    next scale write must respect the new bounds."""
    admin.raw("POST", collection(kind), target(kind, "floor", 3))
    path = f"{collection(kind)}/floor"
    moved = admin.raw("PATCH", path, {"spec": {"minAvailable": 4, "minReplicas": 4}}, MERGE)
    assert (moved["spec"]["replicas"], moved["spec"]["minReplicas"]) == (3, 4)
    assert refusal(admin, "PATCH", f"{path}/scale", {"spec": {"replicas": 2}}, MERGE) == [
        f"Invalid value: {MIN_AVAILABLE_MESSAGE}",
        f"Invalid value: {FLOOR_MESSAGE}",
    ]
