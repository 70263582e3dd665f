"""Extra CRD files and the issue 23 scale targets: ``/scale`` writes checked by the CRD's CEL rules.

Rules: the fake serves CRDs from extra files/directories (multi-document YAML, as the project's
``overlays/crds/``) besides the shared ones. Kubernetes docs ("Validation rules", "Transition
rules"; "Scale subresource"): a write through ``/scale`` is an update of the custom resource,
so the CRD's validation — transition rules included, with ``oldSelf`` the stored object — runs
on the resulting object; a failing rule answers 422 with the rule's message.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes.client
import pytest
from kubernetes.client import ApiException

from tests.fakeapi.crd_fixtures import (
    FLOOR_MESSAGE,
    MAX_MESSAGE,
    MIN_AVAILABLE_MESSAGE,
    SCALE_TARGET_CRDS,
    WIDGET_CRD,
    write_crds,
)
from tests.fakeapi.fakeapi_helpers import raw
from tests.fakeserver import FakeApiServer, project_crd_dir

GROUP, VERSION, NS = "gitops.grove.io", "v1alpha1", "default"
PCSG_PATH = f"/apis/{GROUP}/{VERSION}/namespaces/{NS}/podcliquescalinggroups"


def target(name: str = "pcs-0-sga", replicas: int = 3, kind: str = "PodCliqueScalingGroup") -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": kind,
        "metadata": {"name": name},
        "spec": {"replicas": replicas, "minAvailable": 2, "minReplicas": 2, "maxReplicas": 5},
    }


@pytest.fixture
def fake(tmp_path: Path) -> Iterator[FakeApiServer]:
    overlays = tmp_path / "overlays" / "crds"
    write_crds(overlays, SCALE_TARGET_CRDS, name="scale-targets.yaml")
    with FakeApiServer(extra_crds=[overlays]) as server:
        yield server
        assert server.internal_errors == []


@pytest.fixture
def custom(fake: FakeApiServer) -> kubernetes.client.CustomObjectsApi:
    return kubernetes.client.CustomObjectsApi(fake.api_client())


def _scale(custom: kubernetes.client.CustomObjectsApi, replicas: int, name: str = "pcs-0-sga") -> Any:
    return custom.patch_namespaced_custom_object_scale(
        GROUP, VERSION, NS, "podcliquescalinggroups", name, {"spec": {"replicas": replicas}}
    )


# ------------------------------------------------------------------------------ loading
def test_extra_crd_files_and_directories_are_served_besides_the_shared_ones(tmp_path: Path) -> None:
    """A directory of multi-document CRD YAML and a single file both register their kinds; the shared
    Grove CRDs stay served, and the same kind names in another group do not clash."""
    directory = tmp_path / "dir"
    write_crds(directory, SCALE_TARGET_CRDS)
    single = write_crds(tmp_path / "file", WIDGET_CRD)
    with FakeApiServer(extra_crds=[directory, single]) as server:
        kinds = {(rt.group, rt.kind) for rt in server.registry.all()}
    assert {
        ("gitops.grove.io", "PodCliqueScalingGroup"),
        ("gitops.grove.io", "PodClique"),
        ("test.grove.io", "Widget"),
        ("grove.io", "PodCliqueScalingGroup"),
    } <= kinds


def test_a_missing_extra_crd_path_fails_loudly(tmp_path: Path) -> None:
    """A typo in a CRD path must not silently serve nothing."""
    with pytest.raises(FileNotFoundError):
        FakeApiServer(extra_crds=[tmp_path / "nope"])


def test_project_crd_dir_points_at_overlays_crds() -> None:
    """``project_crd_dir()`` is ``<project>/overlays/crds`` when that directory exists."""
    found = project_crd_dir()
    assert found is None or (found.name == "crds" and found.parent.name == "overlays")


# ------------------------------------------------------------------------------ /scale and the rules
def test_scale_below_min_available_is_refused_with_the_rules_message(
    fake: FakeApiServer, custom: kubernetes.client.CustomObjectsApi
) -> None:
    """``patch_namespaced_custom_object_scale`` to 1 (< minAvailable 2, < minReplicas 2): 422
    Invalid, both rules' messages at ``spec``; the object keeps 3 replicas."""
    custom.create_namespaced_custom_object(GROUP, VERSION, NS, "podcliquescalinggroups", target())
    with pytest.raises(ApiException) as info:
        _scale(custom, 1)
    assert info.value.status == 422
    body = json.loads(info.value.body)
    assert body["reason"] == "Invalid"
    assert body["details"]["causes"] == [
        {"reason": "FieldValueInvalid", "field": "spec", "message": f"Invalid value: {MIN_AVAILABLE_MESSAGE}"},
        {"reason": "FieldValueInvalid", "field": "spec", "message": f"Invalid value: {FLOOR_MESSAGE}"},
    ]
    assert body["message"] == (
        f'PodCliqueScalingGroup.gitops.grove.io "pcs-0-sga" is invalid: [spec: Invalid value: '
        f"{MIN_AVAILABLE_MESSAGE}, spec: Invalid value: {FLOOR_MESSAGE}]"
    )
    assert fake.get_object("podcliquescalinggroups.gitops.grove.io", NS, "pcs-0-sga")["spec"]["replicas"] == 3


def test_scale_at_or_above_the_floor_and_below_max_succeeds(
    fake: FakeApiServer, custom: kubernetes.client.CustomObjectsApi
) -> None:
    """At minAvailable (2) and up to maxReplicas (5) the scale write is a 200 and lands in spec."""
    custom.create_namespaced_custom_object(GROUP, VERSION, NS, "podcliquescalinggroups", target())
    for replicas in (2, 5, 4):
        scale = _scale(custom, replicas)
        assert scale["spec"]["replicas"] == replicas
    assert fake.get_object("podcliquescalinggroups.gitops.grove.io", NS, "pcs-0-sga")["spec"]["replicas"] == 4


def test_scale_above_max_is_refused(custom: kubernetes.client.CustomObjectsApi) -> None:
    """Above maxReplicas the third rule answers 422 with its message."""
    custom.create_namespaced_custom_object(GROUP, VERSION, NS, "podcliquescalinggroups", target())
    with pytest.raises(ApiException) as info:
        _scale(custom, 6)
    assert info.value.status == 422
    assert json.loads(info.value.body)["details"]["causes"] == [
        {"reason": "FieldValueInvalid", "field": "spec", "message": f"Invalid value: {MAX_MESSAGE}"}
    ]


def test_scale_put_is_validated_like_patch(fake: FakeApiServer) -> None:
    """PUT ``/scale`` (``replace_namespaced_custom_object_scale``) goes through the same rules."""
    assert raw(fake, "POST", PCSG_PATH, target())[0] == 201
    scale = raw(fake, "GET", f"{PCSG_PATH}/pcs-0-sga/scale")[1]
    scale["spec"]["replicas"] = 1
    status, body = raw(fake, "PUT", f"{PCSG_PATH}/pcs-0-sga/scale", scale)
    assert status == 422
    assert body["details"]["causes"][0]["message"] == f"Invalid value: {MIN_AVAILABLE_MESSAGE}"
    scale["spec"]["replicas"] = 2
    assert raw(fake, "PUT", f"{PCSG_PATH}/pcs-0-sga/scale", scale)[0] == 200


def test_a_create_is_judged_against_the_objects_own_bounds(fake: FakeApiServer) -> None:
    """``optionalOldSelf``: the rules run on create too (issue 32.4: ``replicas: 9, maxReplicas: 5``
    was accepted), with kube's message."""
    body = target(replicas=9)
    status, answer = raw(fake, "POST", PCSG_PATH, body)
    assert status == 422
    assert answer["details"]["causes"][0]["message"] == f"Invalid value: {MAX_MESSAGE}"
    status, answer = raw(fake, "POST", PCSG_PATH, target(replicas=1))
    assert status == 422
    assert [c["message"] for c in answer["details"]["causes"]] == [
        f"Invalid value: {MIN_AVAILABLE_MESSAGE}",
        f"Invalid value: {FLOOR_MESSAGE}",
    ]
    assert raw(fake, "POST", PCSG_PATH, target(replicas=5))[0] == 201


def test_unchanged_replicas_may_move_the_bounds_past_it(fake: FakeApiServer) -> None:
    """An update that keeps replicas may move the bounds (the agent copying a new floor from Git);
    the status subresource writes pass too; a change of replicas is judged on the result."""
    assert raw(fake, "POST", PCSG_PATH, target(replicas=3))[0] == 201
    path = f"{PCSG_PATH}/pcs-0-sga"
    patch = {"spec": {"minAvailable": 4, "minReplicas": 4}}
    assert raw(fake, "PATCH", path, patch, "application/merge-patch+json")[0] == 200
    status_patch = {"status": {"replicas": 3, "selector": "a=b"}}
    assert raw(fake, "PATCH", f"{path}/status", status_patch, "application/merge-patch+json")[0] == 200
    status, _ = raw(fake, "PATCH", path, {"spec": {"replicas": 2}}, "application/merge-patch+json")
    assert status == 422  # a change of replicas through the main resource is checked too


def test_a_combined_merge_patch_is_judged_on_the_result(fake: FakeApiServer) -> None:
    """One merge-patch moving replicas and the bounds: the rules see the written object."""
    assert raw(fake, "POST", PCSG_PATH, target(replicas=3))[0] == 201
    path = f"{PCSG_PATH}/pcs-0-sga"
    merge = "application/merge-patch+json"
    status, answer = raw(fake, "PATCH", path, {"spec": {"replicas": 50, "maxReplicas": 40}}, merge)
    assert status == 422
    assert answer["details"]["causes"][0]["message"] == f"Invalid value: {MAX_MESSAGE}"
    status, answer = raw(fake, "PATCH", path, {"spec": {"replicas": 4, "minReplicas": 6, "maxReplicas": 9}}, merge)
    assert status == 422
    assert answer["details"]["causes"][0]["message"] == f"Invalid value: {FLOOR_MESSAGE}"
    status, answer = raw(fake, "PATCH", path, {"spec": {"replicas": 50, "maxReplicas": 100}}, merge)
    assert status == 200
    assert answer["spec"]["replicas"] == 50


def test_podclique_targets_have_the_same_rules(fake: FakeApiServer) -> None:
    """The PodClique scale target shares the schema and rules."""
    path = f"/apis/{GROUP}/{VERSION}/namespaces/{NS}/podcliques"
    assert raw(fake, "POST", path, target("pcs-0-w", kind="PodClique"))[0] == 201
    status, body = raw(
        fake, "PATCH", f"{path}/pcs-0-w/scale", {"spec": {"replicas": 0}}, "application/merge-patch+json"
    )
    assert status == 422
    assert body["message"].startswith('PodClique.gitops.grove.io "pcs-0-w" is invalid: [spec: Invalid value: ')
