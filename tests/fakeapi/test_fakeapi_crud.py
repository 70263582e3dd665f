"""Basic verbs through the official client: the shapes a controller parses must be the real ones."""

from __future__ import annotations

import json

import kubernetes.client
import pytest
from kubernetes.client import ApiException

from tests.fakeapi.fakeapi_helpers import pod_manifest, raw
from tests.fakeserver import FakeApiServer


def test_create_fills_server_metadata_and_returns_201(core: kubernetes.client.CoreV1Api) -> None:
    created, status, _ = core.create_namespaced_pod_with_http_info("default", pod_manifest("p1"))
    assert status == 201
    meta = created.metadata
    assert meta.uid and meta.creation_timestamp is not None and meta.generation == 1
    assert int(meta.resource_version) > 0
    assert created.status.phase == "Pending"


def test_get_list_delete_round_trip(core: kubernetes.client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", pod_manifest("p1", labels={"app": "a"}))
    core.create_namespaced_pod("default", pod_manifest("p2", labels={"app": "b"}))
    assert core.read_namespaced_pod("p1", "default").metadata.name == "p1"
    listed = core.list_namespaced_pod("default")
    assert [p.metadata.name for p in listed.items] == ["p1", "p2"]
    assert int(listed.metadata.resource_version) >= int(listed.items[1].metadata.resource_version)
    deleted = core.delete_namespaced_pod("p1", "default")
    assert deleted.metadata.name == "p1"  # pods answer DELETE with the object
    with pytest.raises(ApiException) as info:
        core.read_namespaced_pod("p1", "default")
    assert info.value.status == 404


def test_errors_are_kubernetes_status_objects(core: kubernetes.client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as info:
        core.read_namespaced_pod("missing", "default")
    body = json.loads(info.value.body)
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'pods "missing" not found',
        "reason": "NotFound",
        "details": {"name": "missing", "kind": "pods"},
        "code": 404,
    }
    core.create_namespaced_pod("default", pod_manifest("p1"))
    with pytest.raises(ApiException) as info:
        core.create_namespaced_pod("default", pod_manifest("p1"))
    assert info.value.status == 409
    assert json.loads(info.value.body)["reason"] == "AlreadyExists"


def test_create_into_missing_namespace_is_404(core: kubernetes.client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as info:
        core.create_namespaced_pod("nowhere", pod_manifest("p1"))
    assert info.value.status == 404
    assert json.loads(info.value.body)["message"] == 'namespaces "nowhere" not found'
    core.create_namespace({"metadata": {"name": "nowhere"}})
    core.create_namespaced_pod("nowhere", pod_manifest("p1"))


def test_label_and_field_selectors(core: kubernetes.client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", pod_manifest("a", labels={"app": "x", "tier": "web"}))
    core.create_namespaced_pod("default", pod_manifest("b", labels={"app": "y"}))
    core.create_namespaced_pod("default", pod_manifest("c", labels={"app": "x"}))

    def names(**kwargs: str) -> list[str]:
        return [p.metadata.name for p in core.list_namespaced_pod("default", **kwargs).items]

    assert names(label_selector="app=x") == ["a", "c"]
    assert names(label_selector="app!=x") == ["b"]
    assert names(label_selector="app in (x,y),tier") == ["a"]
    assert names(label_selector="!tier") == ["b", "c"]
    assert names(label_selector="app notin (x)") == ["b"]
    assert names(field_selector="metadata.name=b") == ["b"]
    assert names(field_selector="spec.nodeName=") == ["a", "b", "c"]
    for bad in ({"label_selector": "app=(x"}, {"field_selector": "spec.containers=x"}):
        with pytest.raises(ApiException) as info:
            core.list_namespaced_pod("default", **bad)
        assert info.value.status == 400


def test_list_pagination_with_continue(core: kubernetes.client.CoreV1Api) -> None:
    for i in range(5):
        core.create_namespaced_pod("default", pod_manifest(f"p{i}"))
    first = core.list_namespaced_pod("default", limit=2)
    assert [p.metadata.name for p in first.items] == ["p0", "p1"]
    assert first.metadata.remaining_item_count == 3
    rest = core.list_namespaced_pod("default", limit=10, _continue=first.metadata._continue)
    assert [p.metadata.name for p in rest.items] == ["p2", "p3", "p4"]


def test_generate_name_and_invalid_names(core: kubernetes.client.CoreV1Api) -> None:
    manifest = pod_manifest("x")
    manifest["metadata"] = {"generateName": "worker-"}
    created = core.create_namespaced_pod("default", manifest)
    assert created.metadata.name.startswith("worker-") and len(created.metadata.name) == len("worker-") + 5
    with pytest.raises(ApiException) as info:
        core.create_namespaced_pod("default", pod_manifest("Bad_Name"))
    assert info.value.status == 422
    assert (
        'metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain'
        in json.loads(info.value.body)["message"]
    )
    with pytest.raises(ApiException) as info:
        core.create_namespaced_pod("default", pod_manifest("p", labels={"app": "x" * 64}))
    assert "must be no more than 63 characters" in json.loads(info.value.body)["message"]


def test_builtin_schema_is_strict(server: FakeApiServer) -> None:
    """Unknown fields in a built-in are a 422 (kubernetes_validate, strict), not silently dropped.

    Sent raw: the typed client refuses unknown fields client-side before any request.
    """
    manifest = pod_manifest("p1")
    manifest["spec"]["containers"][0]["imagePullPolice"] = "Always"
    status, body = raw(server, "POST", "/api/v1/namespaces/default/pods", manifest)
    assert status == 422
    assert 'unknown field "spec.containers[0].imagePullPolice"' in body["message"]
    manifest["spec"]["containers"][0].pop("imagePullPolice")
    manifest["spec"]["containers"][0]["ports"] = [{"containerPort": "http"}]
    status, body = raw(server, "POST", "/api/v1/namespaces/default/pods", manifest)
    assert status == 422 and "spec.containers[0].ports[0].containerPort" in body["message"]


def test_services_namespaces_events_and_discovery(
    server: FakeApiServer, core: kubernetes.client.CoreV1Api, api: kubernetes.client.ApiClient
) -> None:
    svc = core.create_namespaced_service(
        "default",
        {
            "metadata": {"name": "web"},
            "spec": {"clusterIP": "None", "selector": {"app": "x"}, "ports": [{"port": 80}]},
        },
    )
    assert svc.spec.cluster_ip == "None" and svc.spec.ports[0].protocol == "TCP"
    core.create_namespaced_event(
        "default",
        {
            "metadata": {"name": "ev1"},
            "involvedObject": {"kind": "Pod", "name": "p1", "namespace": "default"},
            "reason": "Lifted",
            "message": "gate removed",
            "type": "Normal",
        },
    )
    assert [e.reason for e in core.list_namespaced_event("default").items] == ["Lifted"]
    groups = kubernetes.client.ApisApi(api).get_api_versions()
    names = {g.name for g in groups.groups}
    assert {
        "scheduler.grove.io",
        "grove.io",
        "scheduling.run.ai",
        "scheduling.volcano.sh",
        "scheduling.x-k8s.io",
        "scheduling.sigs.k8s.io",
        "kai.scheduler",
        "coordination.k8s.io",
    } <= names
    resources = core.get_api_resources()
    by_name = {r.name: r for r in resources.resources}
    assert by_name["pods"].namespaced and "pods/status" in by_name and not by_name["namespaces"].namespaced
    grove = kubernetes.client.CustomObjectsApi(api).get_api_resources("scheduler.grove.io", "v1alpha1")
    assert {r.name for r in grove.resources} == {"podgangs", "podgangs/status"}
    assert kubernetes.client.VersionApi(api).get_code().git_version == "v1.35.0"
