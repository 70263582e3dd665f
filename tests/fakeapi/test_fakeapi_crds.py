"""Custom resources from the real upstream CRDs: schema validation, scope, status subresource."""

from __future__ import annotations

import json
from typing import Any

import kubernetes.client
import pytest
from kubernetes.client import ApiException

from tests.fakeapi.fakeapi_helpers import podgang_manifest, raw
from tests.fakeserver import FakeApiServer

PODGANG = ("scheduler.grove.io", "v1alpha1", "default", "podgangs")


def test_podgang_valid_is_201_and_typo_is_422(
    server: FakeApiServer, custom: kubernetes.client.CustomObjectsApi
) -> None:
    created, status, _ = custom.create_namespaced_custom_object_with_http_info(
        *PODGANG, podgang_manifest("pg")
    )
    assert status == 201 and created["metadata"]["generation"] == 1
    typo = podgang_manifest("pg-typo")
    typo["spec"]["podgroups"][0]["minReplica"] = typo["spec"]["podgroups"][0].pop("minReplicas")
    with pytest.raises(ApiException) as info:
        custom.create_namespaced_custom_object(*PODGANG, typo)
    assert info.value.status == 422
    message = json.loads(info.value.body)["message"]
    assert message.startswith('PodGang.scheduler.grove.io "pg-typo" is invalid: [')
    assert "spec.podgroups[0].minReplicas: Required value" in message
    assert 'unknown field "spec.podgroups[0].minReplica"' in message
    wrong_type = podgang_manifest("pg-type")
    wrong_type["spec"]["podgroups"][0]["minReplicas"] = "two"
    with pytest.raises(ApiException) as info:
        custom.create_namespaced_custom_object(*PODGANG, wrong_type)
    assert (
        "spec.podgroups[0].minReplicas in body must be of type integer"
        in json.loads(info.value.body)["message"]
    )


def test_status_subresource_separates_spec_and_status(custom: kubernetes.client.CustomObjectsApi) -> None:
    manifest: dict[str, Any] = podgang_manifest("pg")
    manifest["status"] = {"phase": "Running"}
    created = custom.create_namespaced_custom_object(*PODGANG, manifest)
    assert "status" not in created  # dropped on create when status is a subresource
    created["status"] = {"phase": "Pending"}
    created["spec"]["podgroups"][0]["minReplicas"] = 5
    with_status = custom.replace_namespaced_custom_object_status(*PODGANG, "pg", created)
    assert with_status["status"] == {"phase": "Pending"}
    assert with_status["spec"]["podgroups"][0]["minReplicas"] == 1  # /status ignored the spec change
    assert with_status["metadata"]["generation"] == 1
    with_status["status"] = {"phase": "Failed"}
    with_status["spec"]["podgroups"][0]["minReplicas"] = 2
    main = custom.replace_namespaced_custom_object(*PODGANG, "pg", with_status)
    assert main["status"] == {"phase": "Pending"}  # the main resource ignored the status change
    assert main["spec"]["podgroups"][0]["minReplicas"] == 2 and main["metadata"]["generation"] == 2
    patched = custom.patch_namespaced_custom_object_status(*PODGANG, "pg", {"status": {"phase": "Running"}})
    assert patched["status"]["phase"] == "Running" and patched["metadata"]["generation"] == 2


def test_status_is_validated_too(custom: kubernetes.client.CustomObjectsApi) -> None:
    custom.create_namespaced_custom_object(*PODGANG, podgang_manifest("pg"))
    with pytest.raises(ApiException) as info:
        custom.patch_namespaced_custom_object_status(*PODGANG, "pg", {"status": {"placementScore": "high"}})
    message = json.loads(info.value.body)["message"]
    assert "status.phase: Required value" in message and "status.placementScore" in message


def test_custom_resource_replace_requires_resource_version(
    custom: kubernetes.client.CustomObjectsApi,
) -> None:
    created = custom.create_namespaced_custom_object(*PODGANG, podgang_manifest("pg"))
    del created["metadata"]["resourceVersion"]
    with pytest.raises(ApiException) as info:
        custom.replace_namespaced_custom_object(*PODGANG, "pg", created)
    assert info.value.status == 422
    assert (
        "metadata.resourceVersion: Invalid value: 0: must be specified for an update"
        in json.loads(info.value.body)["message"]
    )


def test_patch_media_types_for_custom_resources(
    server: FakeApiServer, custom: kubernetes.client.CustomObjectsApi
) -> None:
    custom.create_namespaced_custom_object(*PODGANG, podgang_manifest("pg"))
    merged = custom.patch_namespaced_custom_object(*PODGANG, "pg", {"metadata": {"labels": {"a": "b"}}})
    assert merged["metadata"]["labels"] == {"a": "b"}
    ops = [{"op": "replace", "path": "/spec/podgroups/0/minReplicas", "value": 3}]
    with pytest.raises(ApiException) as info:  # a list body goes out as merge-patch by default
        custom.patch_namespaced_custom_object(*PODGANG, "pg", ops)
    assert info.value.status == 400
    patched = custom.patch_namespaced_custom_object(
        *PODGANG, "pg", ops, _content_type="application/json-patch+json"
    )
    assert patched["spec"]["podgroups"][0]["minReplicas"] == 3
    status, body = raw(
        server,
        "PATCH",
        "/apis/scheduler.grove.io/v1alpha1/namespaces/default/podgangs/pg",
        {"metadata": {"labels": {"x": "y"}}},
        "application/strategic-merge-patch+json",
    )
    assert status == 415 and body["reason"] == "UnsupportedMediaType"


def test_cluster_scoped_and_other_scheduler_crds(custom: kubernetes.client.CustomObjectsApi) -> None:
    binding = {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "ClusterTopologyBinding",
        "metadata": {"name": "default-topology"},
        "spec": {"levels": [{"domain": "rack", "key": "topology.kubernetes.io/rack"}]},
    }
    created = custom.create_cluster_custom_object("grove.io", "v1alpha1", "clustertopologybindings", binding)
    assert "namespace" not in created["metadata"]
    listed = custom.list_cluster_custom_object("grove.io", "v1alpha1", "clustertopologybindings")
    assert listed["kind"] == "ClusterTopologyBindingList"
    assert [i["metadata"]["name"] for i in listed["items"]] == ["default-topology"]
    binding["metadata"]["name"] = "bad"
    binding["spec"]["levels"][0]["domain"] = "Rack"  # violates the CRD's pattern
    with pytest.raises(ApiException) as info:
        custom.create_cluster_custom_object("grove.io", "v1alpha1", "clustertopologybindings", binding)
    assert "spec.levels[0].domain" in json.loads(info.value.body)["message"]
    kai = {
        "apiVersion": "scheduling.run.ai/v2alpha2",
        "kind": "PodGroup",
        "metadata": {"name": "pg"},
        "spec": {"minMember": 2, "queue": "default"},
    }
    created = custom.create_namespaced_custom_object(
        "scheduling.run.ai", "v2alpha2", "default", "podgroups", kai
    )
    assert created["spec"]["minMember"] == 2
    volcano = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "pg"},
        "spec": {"minMember": 2},
    }
    custom.create_namespaced_custom_object(
        "scheduling.volcano.sh", "v1beta1", "default", "podgroups", volcano
    )
    plugins = {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": "pg"},
        "spec": {"minMember": 2},
    }
    custom.create_namespaced_custom_object("scheduling.x-k8s.io", "v1alpha1", "default", "podgroups", plugins)
    with pytest.raises(ApiException) as info:  # namespaced path for a cluster-scoped type
        custom.list_namespaced_custom_object("kai.scheduler", "v1alpha1", "default", "topologies")
    assert info.value.status == 404


def test_pluggable_validators_and_extra_builtin_types() -> None:
    seen: list[str] = []

    def cr_validator(obj: dict[str, Any]) -> list[str]:
        seen.append(obj["kind"])
        return ['spec.podgroups: Invalid value: "x": rejected by the test\'s validator']

    with FakeApiServer(cr_validator=cr_validator) as server:
        custom = kubernetes.client.CustomObjectsApi(server.api_client())
        with pytest.raises(ApiException) as info:
            custom.create_namespaced_custom_object(*PODGANG, podgang_manifest("pg"))
        assert "rejected by the test's validator" in json.loads(info.value.body)["message"]
        assert seen == ["PodGang"]

        server.register_resource("scheduling.k8s.io", "v1alpha1", "workloads", "Workload")
        workload = {
            "apiVersion": "scheduling.k8s.io/v1alpha1",
            "kind": "Workload",
            "metadata": {"name": "w"},
            "spec": {"podGroups": [{"name": "g", "policy": {"gang": {"minCount": 2}}}]},
        }
        created = custom.create_namespaced_custom_object(
            "scheduling.k8s.io", "v1alpha1", "default", "workloads", workload
        )
        assert created["metadata"]["uid"]
        workload["metadata"]["name"] = "w2"
        workload["spec"]["podGroups"][0]["policy"]["gang"]["minCnt"] = 2  # 1.35 schema: unknown field
        with pytest.raises(ApiException) as info:
            custom.create_namespaced_custom_object(
                "scheduling.k8s.io", "v1alpha1", "default", "workloads", workload
            )
        assert info.value.status == 422


def test_crd_posted_over_http_is_served(server: FakeApiServer, api: kubernetes.client.ApiClient) -> None:
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}
                            },
                        }
                    },
                }
            ],
        },
    }
    kubernetes.client.ApiextensionsV1Api(api).create_custom_resource_definition(crd)
    custom = kubernetes.client.CustomObjectsApi(api)
    widget = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w"},
        "spec": {"size": 1},
    }
    custom.create_namespaced_custom_object("example.com", "v1", "default", "widgets", widget)
    widget["metadata"]["name"] = "bad"
    widget["spec"] = {"size": "big"}
    with pytest.raises(ApiException):
        custom.create_namespaced_custom_object("example.com", "v1", "default", "widgets", widget)
    kubernetes.client.ApiextensionsV1Api(api).delete_custom_resource_definition("widgets.example.com")
    with pytest.raises(ApiException) as info:
        custom.list_namespaced_custom_object("example.com", "v1", "default", "widgets")
    assert info.value.status == 404


def test_finalizers_delay_deletion(custom: kubernetes.client.CustomObjectsApi) -> None:
    manifest = podgang_manifest("pg")
    manifest["metadata"]["finalizers"] = ["example.com/cleanup"]
    custom.create_namespaced_custom_object(*PODGANG, manifest)
    pending = custom.delete_namespaced_custom_object(*PODGANG, "pg")
    assert pending["metadata"]["deletionTimestamp"]
    still = custom.get_namespaced_custom_object(*PODGANG, "pg")
    with pytest.raises(ApiException) as info:
        custom.patch_namespaced_custom_object(
            *PODGANG, "pg", {"metadata": {"finalizers": ["a/b", "example.com/cleanup"]}}
        )
    assert info.value.status == 422
    custom.patch_namespaced_custom_object(
        *PODGANG,
        "pg",
        {"metadata": {"finalizers": None, "resourceVersion": still["metadata"]["resourceVersion"]}},
    )
    with pytest.raises(ApiException) as info:
        custom.get_namespaced_custom_object(*PODGANG, "pg")
    assert info.value.status == 404
