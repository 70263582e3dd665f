"""Server-side apply, OwnerReferencesPermissionEnforcement and foreground/orphan answers in the fake
(issue 32, fix 8 and point 6). The messages were taken from a real kube-apiserver 1.35, and
tests/controlplane/test_contract.py keeps checking the fake against it; these run in the fast tier."""

from __future__ import annotations

from typing import Any

import urllib3

from tests.fakeapi.fakeapi_helpers import raw
from tests.fakeserver import FakeApiServer

AP = "application/apply-patch+yaml"
MERGE = "application/merge-patch+json"
CM = "/api/v1/namespaces/default/configmaps"


def cm(name: str, data: dict[str, str] | None = None, **meta: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, **meta}}
    return obj | ({"data": data} if data is not None else {})


def managers(obj: dict[str, Any]) -> dict[tuple[str, str], Any]:
    return {(e["manager"], e["operation"]): e["fieldsV1"] for e in obj["metadata"]["managedFields"]}


def test_apply_creates_merges_conflicts_and_forces() -> None:
    with FakeApiServer() as server:
        c = f"{CM}/applied"
        status, created = raw(server, "PATCH", f"{c}?fieldManager=argocd-controller", cm("applied", {"a": "1", "b": "2"}), AP)
        assert status == 201 and created["data"] == {"a": "1", "b": "2"}
        assert managers(created) == {("argocd-controller", "Apply"): {"f:data": {"f:a": {}, "f:b": {}}}}
        status, refused = raw(server, "PATCH", f"{c}?fieldManager=kustomize-controller", cm("applied", {"a": "9", "b": "8"}), AP)
        assert status == 409 and refused["reason"] == "Conflict"
        assert refused["message"] == 'Apply failed with 2 conflicts: conflicts with "argocd-controller":\n- .data.a\n- .data.b'
        assert raw(server, "PATCH", f"{c}?fieldManager=kustomize-controller", cm("applied", {"a": "1"}), AP)[0] == 200  # shared
        assert raw(server, "PATCH", f"{c}?fieldManager=agent", {"data": {"b": "5"}}, MERGE)[0] == 200
        status, refused = raw(server, "PATCH", f"{c}?fieldManager=argocd-controller", cm("applied", {"a": "1", "b": "2"}), AP)
        assert (status, refused["message"]) == (409, 'Apply failed with 1 conflict: conflict with "agent" using v1: .data.b')
        assert refused["details"]["causes"] == [{"reason": "FieldManagerConflict", "message": 'conflict with "agent" using v1', "field": ".data.b"}]
        status, forced = raw(server, "PATCH", f"{c}?fieldManager=argocd-controller&force=true", cm("applied", {"a": "1", "b": "2"}), AP)
        assert status == 200 and forced["data"]["b"] == "2" and ("agent", "Update") not in managers(forced)
        status, dropped = raw(server, "PATCH", f"{c}?fieldManager=argocd-controller", cm("applied", {}), AP)
        assert status == 200 and dropped["data"] == {"a": "1"}  # b was argocd's alone; a is kustomize's too


def test_apply_option_and_body_errors_are_the_servers() -> None:
    with FakeApiServer() as server:
        status, body = raw(server, "PATCH", f"{CM}/x", cm("x"), AP)
        assert (status, body["message"]) == (422, 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch')
        status, body = raw(server, "PATCH", f"{CM}/x?fieldManager=m&force=true", {"data": {}}, MERGE)
        assert (status, body["message"]) == (422, 'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for non-apply patch')
        assert raw(server, "PATCH", f"{CM}/x?fieldManager=m", {"data": {}}, AP)[1]["message"] == "invalid object type: /, Kind="
        assert raw(server, "PATCH", f"{CM}/x?fieldManager=m", cm("y"), AP)[1]["message"] == (
            "the name of the object (y) does not match the name on the URL (x)"
        )


def test_a_restricted_caller_may_not_block_an_owners_deletion() -> None:
    with FakeApiServer() as server:
        server.restrict("t", [("create", "", "configmaps"), ("update", "", "configmaps")])
        owner = raw(server, "POST", CM, cm("owner"))[1]
        ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"], "blockOwnerDeletion": True}
        response = urllib3.request("POST", server.url + CM, json=cm("dep", ownerReferences=[ref]),
                                   headers={"Authorization": "Bearer t"}, retries=False, timeout=30)
        assert response.status == 403
        assert response.json()["message"] == (
            'configmaps "dep" is forbidden: cannot set blockOwnerDeletion if an ownerReference refers to a resource '
            "you can't set finalizers on: , <nil>"
        )
        assert raw(server, "POST", CM, cm("dep", ownerReferences=[ref]))[0] == 201  # the admin may


def test_a_foreground_delete_answers_with_the_marked_owner_and_leaves_nothing() -> None:
    with FakeApiServer() as server:
        owner = raw(server, "POST", CM, cm("owner"))[1]
        ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"], "blockOwnerDeletion": True}
        raw(server, "POST", CM, cm("dep", ownerReferences=[ref]))
        status, answer = raw(server, "DELETE", f"{CM}/owner", {"propagationPolicy": "Foreground"})
        assert status == 200 and answer["metadata"]["finalizers"] == ["foregroundDeletion"]
        assert answer["metadata"]["deletionTimestamp"]
        assert raw(server, "GET", f"{CM}/dep")[0] == 404 and raw(server, "GET", f"{CM}/owner")[0] == 404
