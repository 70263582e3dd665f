"""The ``scale`` subresource of custom resources, pinned to apiextensions-apiserver's behaviour.

Rules (kubernetes ``staging/src/k8s.io/apiextensions-apiserver``: ``pkg/registry/customresource/
etcd.go`` ``ScaleREST``, ``validator.go`` ``ValidateScaleSpec``/``ValidateScaleStatus``,
``pkg/apiserver/customresource_discovery_controller.go``; the ``CustomResourceSubresourceScale``
API doc):

- GET ``/scale`` is an ``autoscaling/v1`` Scale with the CR's name, namespace, uid,
  resourceVersion and creationTimestamp; ``spec.replicas`` from ``specReplicasPath`` (a missing
  value is an error), ``status.replicas`` from ``statusReplicasPath`` (missing → 0),
  ``status.selector`` from ``labelSelectorPath`` (missing → empty);
- PUT/PATCH change only the spec value; the resourceVersion in the Scale is a precondition
  (409), the write is an update of the CR (generation, watch event, CRD validation) and the
  spec value must be in [0, MaxInt32] ("should be a non-negative integer"), on every write;
- custom resources take JSON and merge patches only (strategic merge → 415), ``/scale`` too;
- a CRD without a scale subresource has no ``/scale`` (404), and discovery lists
  ``<plural>/scale`` as ``autoscaling/v1`` Scale with verbs get, patch, update.

Driven through the official client's ``*_custom_object_scale`` calls against the real Grove
CRDs (PodClique: selector at ``.status.hpaPodSelector``; PodCliqueScalingGroup: ``.status.selector``).
"""

from __future__ import annotations

import json
from typing import Any

import kubernetes.client
import kubernetes.watch
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kubernetes.client import ApiException

from tests.fakeapi.fakeapi_helpers import podgang_manifest, raw
from tests.fakeserver import FakeApiServer
from tests.fakeserver.resources import ScaleSubresource
from tests.fakeserver.scale import AccessorError, nested_int64, scale_of, set_nested

PCLQ = ("grove.io", "v1alpha1", "default", "podcliques")
PCSG = ("grove.io", "v1alpha1", "default", "podcliquescalinggroups")
PODGANG = ("scheduler.grove.io", "v1alpha1", "default", "podgangs")
SCALE_PATH = "/apis/grove.io/v1alpha1/namespaces/default/podcliques/{}/scale"
MAX_INT32 = 2**31 - 1
SELECTOR = "app.kubernetes.io/managed-by=grove-operator,app.kubernetes.io/part-of=p,grove.io/podclique=p-0-w"


def pclq_manifest(name: str, replicas: int = 2) -> dict[str, Any]:
    """A PodClique valid against Grove's CRD (``spec.replicas`` is required there)."""
    return {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodClique",
        "metadata": {"name": name, "labels": {"app": "demo"}},
        "spec": {
            "replicas": replicas,
            "roleName": "worker",
            "podSpec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}]},
        },
    }


def pclq_status(replicas: int, selector: str | None = SELECTOR) -> dict[str, Any]:
    status: dict[str, Any] = {
        "replicas": replicas,
        "readyReplicas": replicas,
        "scheduleGatedReplicas": 0,
        "scheduledReplicas": replicas,
        "updatedReplicas": replicas,
    }
    if selector is not None:
        status["hpaPodSelector"] = selector
    return {"status": status}


def _error(info: pytest.ExceptionInfo[ApiException]) -> tuple[int, dict[str, Any]]:
    return info.value.status, json.loads(info.value.body)


# ------------------------------------------------------------------------------------------ GET
def test_get_scale_mirrors_the_object_and_surfaces_status_and_selector(
    custom: kubernetes.client.CustomObjectsApi,
) -> None:
    created = custom.create_namespaced_custom_object(*PCLQ, pclq_manifest("pc", replicas=3))
    scale = custom.get_namespaced_custom_object_scale(*PCLQ, "pc")
    meta = created["metadata"]
    assert scale == {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            "name": "pc",
            "namespace": "default",
            "uid": meta["uid"],
            "resourceVersion": meta["resourceVersion"],
            "creationTimestamp": meta["creationTimestamp"],
        },
        "spec": {"replicas": 3},
        "status": {"replicas": 0},  # no status yet: 0, and no selector at all
    }
    custom.patch_namespaced_custom_object_status(*PCLQ, "pc", pclq_status(2))
    scale = custom.get_namespaced_custom_object_scale(*PCLQ, "pc")
    assert scale["status"] == {"replicas": 2, "selector": SELECTOR}
    assert scale["spec"] == {"replicas": 3}


def test_scaling_group_scale_reads_its_own_selector_path(custom: kubernetes.client.CustomObjectsApi) -> None:
    group = {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueScalingGroup",
        "metadata": {"name": "p-0-sga"},
        "spec": {"replicas": 1, "cliqueNames": ["p-0-sga-0-pf"]},
    }
    custom.create_namespaced_custom_object(*PCSG, group)
    status = {"availableReplicas": 1, "scheduledReplicas": 1, "updatedReplicas": 1, "replicas": 1}
    status["selector"] = "grove.io/podcliquescalinggroup=p-0-sga"
    custom.patch_namespaced_custom_object_status(*PCSG, "p-0-sga", {"status": status})
    scale = custom.patch_namespaced_custom_object_scale(*PCSG, "p-0-sga", {"spec": {"replicas": 4}})
    assert scale["spec"] == {"replicas": 4}
    assert scale["status"] == {"replicas": 1, "selector": "grove.io/podcliquescalinggroup=p-0-sga"}
    assert custom.get_namespaced_custom_object(*PCSG, "p-0-sga")["spec"]["replicas"] == 4


def test_scale_of_zero_omits_spec_replicas_like_the_typed_scale(custom: kubernetes.client.CustomObjectsApi) -> None:
    custom.create_namespaced_custom_object(*PCLQ, pclq_manifest("pc", replicas=0))
    assert custom.get_namespaced_custom_object_scale(*PCLQ, "pc")["spec"] == {}  # int32 with omitempty


# ------------------------------------------------------------------------------------------ PUT
def test_replace_scale_changes_only_spec_replicas(custom: kubernetes.client.CustomObjectsApi) -> None:
    custom.create_namespaced_custom_object(*PCLQ, pclq_manifest("pc", replicas=2))
    custom.patch_namespaced_custom_object_status(*PCLQ, "pc", pclq_status(2))
    before = custom.get_namespaced_custom_object(*PCLQ, "pc")
    scale = custom.get_namespaced_custom_object_scale(*PCLQ, "pc")
    scale["spec"]["replicas"] = 5
    scale["status"] = {"replicas": 9, "selector": "app=other"}  # ignored: /scale never writes status
    scale["metadata"]["labels"] = {"ignored": "yes"}
    replaced = custom.replace_namespaced_custom_object_scale(*PCLQ, "pc", scale)
    after = custom.get_namespaced_custom_object(*PCLQ, "pc")
    assert replaced["spec"] == {"replicas": 5}
    assert replaced["status"] == {"replicas": 2, "selector": SELECTOR}
    assert replaced["metadata"]["resourceVersion"] == after["metadata"]["resourceVersion"]
    assert int(after["metadata"]["resourceVersion"]) > int(before["metadata"]["resourceVersion"])
    assert after["metadata"]["generation"] == before["metadata"]["generation"] + 1  # a spec change
    assert after["spec"] == {**before["spec"], "replicas": 5}
    assert after["status"] == before["status"]
    assert after["metadata"]["labels"] == before["metadata"]["labels"]


def test_replace_without_resource_version_is_unconditional_and_a_stale_one_conflicts(
    custom: kubernetes.client.CustomObjectsApi,
) -> None:
    custom.create_namespaced_custom_object(*PCLQ, pclq_manifest("pc"))
    stale = custom.get_namespaced_custom_object_scale(*PCLQ, "pc")
    custom.patch_namespaced_custom_object(*PCLQ, "pc", {"metadata": {"labels": {"moved": "on"}}})
    stale["spec"]["replicas"] = 7
    with pytest.raises(ApiException) as info:
        custom.replace_namespaced_custom_object_scale(*PCLQ, "pc", stale)
    status, body = _error(info)
    assert status == 409 and body["reason"] == "Conflict"
    assert body["message"] == (
        'Operation cannot be fulfilled on podcliques.grove.io "pc": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )
    assert custom.get_namespaced_custom_object(*PCLQ, "pc")["spec"]["replicas"] == 2
    unconditional = {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "pc"}}
    unconditional["spec"] = {"replicas": 7}
    assert custom.replace_namespaced_custom_object_scale(*PCLQ, "pc", unconditional)["spec"] == {"replicas": 7}
    with pytest.raises(ApiException) as info:  # a stale version in a patch is a precondition too
        custom.patch_namespaced_custom_object_scale(
            *PCLQ,
            "pc",
            {"metadata": {"resourceVersion": stale["metadata"]["resourceVersion"]}, "spec": {"replicas": 1}},
        )
    assert info.value.status == 409


def test_uid_in_the_scale_is_a_precondition(custom: kubernetes.client.CustomObjectsApi) -> None:
    created = custom.create_namespaced_custom_object(*PCLQ, pclq_manifest("pc"))
    body = {"metadata": {"name": "pc", "uid": "00000000-0000-0000-0000-000000000000"}, "spec": {"replicas": 3}}
    with pytest.raises(ApiException) as info:
        custom.replace_namespaced_custom_object_scale(*PCLQ, "pc", body)
    status, error = _error(info)
    assert status == 409
    assert error["message"].endswith(
        "Precondition failed: UID in precondition: 00000000-0000-0000-0000-000000000000, "
        f"UID in object meta: {created['metadata']['uid']}"
    )


def test_scale_body_is_decoded_as_a_typed_scale(
    server: FakeApiServer, custom: kubernetes.client.CustomObjectsApi
) -> None:
    custom.create_namespaced_custom_object(*PCLQ, pclq_manifest("pc"))
    cases: list[tuple[Any, str]] = [
        ({"metadata": {"name": "other"}, "spec": {"replicas": 3}}, "does not match the name on the URL (pc)"),
        ({"spec": {"replicas": 3}}, "name must be provided"),
        ({"metadata": {"name": "pc", "namespace": "kube-system"}, "spec": {"replicas": 3}}, "namespace"),
        ({"apiVersion": "apps/v1", "kind": "Scale", "metadata": {"name": "pc"}}, "API version"),
        ({"kind": "Deployment", "metadata": {"name": "pc"}}, "kind"),
        ({"metadata": {"name": "pc"}, "spec": {"replicas": "3"}}, "cannot unmarshal string"),
        ({"metadata": {"name": "pc"}, "spec": {"replicas": 2.5}}, "cannot unmarshal number 2.5"),
        ({"metadata": {"name": "pc"}, "spec": {"replicas": MAX_INT32 + 1}}, "of type int32"),
        ({"metadata": {"name": "pc"}, "spec": {"replicas": 3, "replica": 3}}, 'unknown field "spec.replica"'),
        ([{"spec": {"replicas": 3}}], "cannot unmarshal array"),
    ]
    for body, needle in cases:
        status, error = raw(server, "PUT", SCALE_PATH.format("pc"), body)
        assert status == 400 and error["reason"] == "BadRequest", (body, error)
        assert needle in error["message"], (body, error["message"])
    assert custom.get_namespaced_custom_object(*PCLQ, "pc")["metadata"]["generation"] == 1


# ------------------------------------------------------------------------------------------ PATCH
def test_patch_scale_with_merge_and_json_patch_but_not_strategic(
    server: FakeApiServer, custom: kubernetes.client.CustomObjectsApi
) -> None:
    custom.create_namespaced_custom_object(*PCLQ, pclq_manifest("pc", replicas=2))
    merged = custom.patch_namespaced_custom_object_scale(*PCLQ, "pc", {"spec": {"replicas": 3}})
    assert merged["spec"] == {"replicas": 3}
    ops = [
        {"op": "test", "path": "/spec/replicas", "value": 3},
        {"op": "replace", "path": "/spec/replicas", "value": 6},
    ]
    patched = custom.patch_namespaced_custom_object_scale(*PCLQ, "pc", ops, _content_type="application/json-patch+json")
    assert patched["spec"] == {"replicas": 6}
    with pytest.raises(ApiException) as info:  # the guard no longer holds: nothing changes
        custom.patch_namespaced_custom_object_scale(*PCLQ, "pc", ops, _content_type="application/json-patch+json")
    assert info.value.status == 422
    for media in ("application/strategic-merge-patch+json", "application/apply-patch+yaml"):
        status, body = raw(server, "PATCH", SCALE_PATH.format("pc"), {"spec": {"replicas": 1}}, media)
        assert status == 415 and body["reason"] == "UnsupportedMediaType"
    obj = custom.get_namespaced_custom_object(*PCLQ, "pc")
    assert obj["spec"]["replicas"] == 6 and obj["metadata"]["generation"] == 3


def test_json_patch_of_a_zero_scale_must_add_the_omitted_field(custom: kubernetes.client.CustomObjectsApi) -> None:
    """The Scale of a CR at 0 has no ``spec.replicas`` (omitempty), so "replace" has nothing to replace."""
    custom.create_namespaced_custom_object(*PCLQ, pclq_manifest("pc", replicas=0))
    replace = [{"op": "replace", "path": "/spec/replicas", "value": 2}]
    with pytest.raises(ApiException) as info:
        custom.patch_namespaced_custom_object_scale(*PCLQ, "pc", replace, _content_type="application/json-patch+json")
    assert info.value.status == 422
    add = [{"op": "add", "path": "/spec/replicas", "value": 2}]
    scale = custom.patch_namespaced_custom_object_scale(*PCLQ, "pc", add, _content_type="application/json-patch+json")
    assert scale["spec"] == {"replicas": 2}


def test_dry_run_scale_write_changes_nothing(custom: kubernetes.client.CustomObjectsApi) -> None:
    custom.create_namespaced_custom_object(*PCLQ, pclq_manifest("pc", replicas=2))
    before = custom.get_namespaced_custom_object(*PCLQ, "pc")
    answer = custom.patch_namespaced_custom_object_scale(*PCLQ, "pc", {"spec": {"replicas": 9}}, dry_run="All")
    assert answer["spec"] == {"replicas": 9}
    assert custom.get_namespaced_custom_object(*PCLQ, "pc") == before


# ------------------------------------------------------------------------------------------ validation
def test_negative_replicas_are_refused_with_the_upstream_message(custom: kubernetes.client.CustomObjectsApi) -> None:
    custom.create_namespaced_custom_object(*PCLQ, pclq_manifest("pc", replicas=2))
    before = custom.get_namespaced_custom_object(*PCLQ, "pc")
    expected = 'PodClique.grove.io "pc" is invalid: .spec.replicas: Invalid value: -1: should be a non-negative integer'
    with pytest.raises(ApiException) as info:
        custom.patch_namespaced_custom_object_scale(*PCLQ, "pc", {"spec": {"replicas": -1}})
    status, body = _error(info)
    assert (status, body["reason"], body["message"]) == (422, "Invalid", expected)
    assert body["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": "Invalid value: -1: should be a non-negative integer",
            "field": ".spec.replicas",
        }
    ]
    scale = custom.get_namespaced_custom_object_scale(*PCLQ, "pc")
    scale["spec"]["replicas"] = -1
    with pytest.raises(ApiException) as info:
        custom.replace_namespaced_custom_object_scale(*PCLQ, "pc", scale)
    assert _error(info)[1]["message"] == expected
    assert custom.get_namespaced_custom_object(*PCLQ, "pc") == before


def test_scale_range_is_checked_on_every_write_of_the_custom_resource(
    custom: kubernetes.client.CustomObjectsApi,
) -> None:
    """``ValidateScaleSpec``/``ValidateScaleStatus`` belong to the CR's own validation (not to /scale)."""
    with pytest.raises(ApiException) as info:
        custom.create_namespaced_custom_object(*PCLQ, pclq_manifest("neg", replicas=-3))
    assert _error(info)[1]["message"].endswith(".spec.replicas: Invalid value: -3: should be a non-negative integer")
    custom.create_namespaced_custom_object(*PCLQ, pclq_manifest("pc", replicas=2))
    with pytest.raises(ApiException) as info:
        custom.patch_namespaced_custom_object(*PCLQ, "pc", {"spec": {"replicas": MAX_INT32 + 1}})
    assert _error(info)[1]["message"] == (
        f'PodClique.grove.io "pc" is invalid: .spec.replicas: Invalid value: {MAX_INT32 + 1}: '
        f"should be less than or equal to {MAX_INT32}"
    )
    assert (
        custom.patch_namespaced_custom_object(*PCLQ, "pc", {"spec": {"replicas": MAX_INT32}})["spec"]["replicas"]
        == MAX_INT32
    )
    with pytest.raises(ApiException) as info:
        custom.patch_namespaced_custom_object_status(*PCLQ, "pc", pclq_status(-1))
    assert _error(info)[1]["message"].endswith(".status.replicas: Invalid value: -1: should be a non-negative integer")
    with pytest.raises(ApiException) as info:  # the selector must be a string
        custom.patch_namespaced_custom_object_status(
            *PCLQ, "pc", {"status": {**pclq_status(1)["status"], "hpaPodSelector": 5}}
        )
    assert _error(info)[0] == 422


def test_int32_minimum_in_a_scale_reads_as_an_empty_spec_value(custom: kubernetes.client.CustomObjectsApi) -> None:
    """ScaleREST marks a missing spec value with MinInt32, so that exact value is "empty", a 400."""
    custom.create_namespaced_custom_object(*PCLQ, pclq_manifest("pc"))
    with pytest.raises(ApiException) as info:
        custom.patch_namespaced_custom_object_scale(*PCLQ, "pc", {"spec": {"replicas": -(2**31)}})
    status, body = _error(info)
    assert status == 400 and body["message"] == 'the spec replicas field ".spec.replicas" cannot be empty'


# ------------------------------------------------------------------------------------------ watch
def test_scale_write_is_a_modified_event_of_the_object(custom: kubernetes.client.CustomObjectsApi) -> None:
    custom.create_namespaced_custom_object(*PCLQ, pclq_manifest("pc", replicas=2))
    since = custom.list_namespaced_custom_object(*PCLQ)["metadata"]["resourceVersion"]
    custom.patch_namespaced_custom_object_scale(*PCLQ, "pc", {"spec": {"replicas": 4}})
    custom.patch_namespaced_custom_object_scale(*PCLQ, "pc", {"spec": {"replicas": 4}})  # no-op: no event
    custom.patch_namespaced_custom_object_scale(*PCLQ, "pc", {"spec": {"replicas": 1}})
    watch = kubernetes.watch.Watch()
    events = []
    for event in watch.stream(custom.list_namespaced_custom_object, *PCLQ, resource_version=since, timeout_seconds=10):
        obj = event["object"]
        events.append((event["type"], obj["metadata"]["name"], obj["spec"]["replicas"], obj["metadata"]["generation"]))
        if len(events) == 2:  # a no-op write with an event would make the second one (MODIFIED, 4, 2)
            watch.stop()
    assert events == [("MODIFIED", "pc", 4, 2), ("MODIFIED", "pc", 1, 3)]


# ------------------------------------------------------------------------------------------ 404 / 405
def test_scale_is_not_found_without_a_scale_subresource_or_an_object(
    server: FakeApiServer, custom: kubernetes.client.CustomObjectsApi
) -> None:
    custom.create_namespaced_custom_object(*PODGANG, podgang_manifest("pg"))
    with pytest.raises(ApiException) as info:  # PodGang's CRD declares status only
        custom.get_namespaced_custom_object_scale(*PODGANG, "pg")
    status, body = _error(info)
    assert (status, body["reason"], body["message"]) == (404, "NotFound", 'podgangs.scheduler.grove.io "pg" not found')
    with pytest.raises(ApiException) as info:
        custom.patch_namespaced_custom_object_scale(*PODGANG, "pg", {"spec": {"replicas": 2}})
    assert info.value.status == 404
    for call in (
        lambda: custom.get_namespaced_custom_object_scale(*PCLQ, "absent"),
        lambda: custom.patch_namespaced_custom_object_scale(*PCLQ, "absent", {"spec": {"replicas": 2}}),
        lambda: custom.replace_namespaced_custom_object_scale(
            *PCLQ, "absent", {"metadata": {"name": "absent"}, "spec": {"replicas": 2}}
        ),
    ):
        with pytest.raises(ApiException) as info:
            call()
        status, body = _error(info)
        assert (status, body["message"]) == (404, 'podcliques.grove.io "absent" not found')
    custom.create_namespaced_custom_object(*PCLQ, pclq_manifest("pc"))
    status, body = raw(server, "DELETE", SCALE_PATH.format("pc"))
    assert status == 405 and body["reason"] == "MethodNotAllowed"
    assert custom.get_namespaced_custom_object(*PODGANG, "pg")["metadata"]["generation"] == 1


def test_requests_and_faults_name_the_scale_subresource(
    server: FakeApiServer, custom: kubernetes.client.CustomObjectsApi
) -> None:
    custom.create_namespaced_custom_object(*PCLQ, pclq_manifest("pc"))
    server.faults.add(verb="patch", resource="podcliques/scale", status=409, times=1)
    with pytest.raises(ApiException) as info:
        custom.patch_namespaced_custom_object_scale(*PCLQ, "pc", {"spec": {"replicas": 3}})
    assert info.value.status == 409
    custom.patch_namespaced_custom_object_scale(*PCLQ, "pc", {"spec": {"replicas": 3}})
    assert server.requests_count(verb="patch", resource="podcliques/scale") == 2
    assert server.requests_count(verb="patch", resource="podcliques/scale", status=200) == 1


# ------------------------------------------------------------------------------------------ discovery
def test_discovery_lists_the_scale_subresource(server: FakeApiServer, api: kubernetes.client.ApiClient) -> None:
    status, doc = raw(server, "GET", "/apis/grove.io/v1alpha1")
    assert status == 200
    entries = {r["name"]: r for r in doc["resources"]}
    for plural in ("podcliques", "podcliquescalinggroups", "podcliquesets"):
        assert entries[f"{plural}/scale"] == {
            "name": f"{plural}/scale",
            "singularName": "",
            "namespaced": True,
            "group": "autoscaling",
            "version": "v1",
            "kind": "Scale",
            "verbs": ["get", "patch", "update"],
        }
    assert "clustertopologybindings/scale" not in entries
    status, doc = raw(server, "GET", "/apis/scheduler.grove.io/v1alpha1")
    assert [r["name"] for r in doc["resources"]] == ["podgangs", "podgangs/status"]
    listed = kubernetes.client.CustomObjectsApi(api).get_api_resources("grove.io", "v1alpha1")
    assert "podcliques/scale" in [r.name for r in listed.resources]


# ------------------------------------------------------------------------------------------ other CRDs
def _widget_crd(scale: dict[str, Any], scope: str = "Namespaced") -> dict[str, Any]:
    """A CRD whose schema lets objects omit the spec value (Grove's CRDs require it)."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": scope,
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}, "scale": scale},
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                                "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                            },
                        }
                    },
                }
            ],
        },
    }


CRDS_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
WIDGETS = ("example.com", "v1", "default", "widgets")


def test_missing_or_mistyped_spec_value_and_nested_paths(
    server: FakeApiServer, custom: kubernetes.client.CustomObjectsApi
) -> None:
    nested = {"specReplicasPath": ".spec.scaling.count", "statusReplicasPath": ".status.scaling.count"}
    assert raw(server, "POST", CRDS_PATH, _widget_crd(nested))[0] == 201
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 1}}
    custom.create_namespaced_custom_object(*WIDGETS, widget)
    with pytest.raises(ApiException) as info:  # the API doc: "/scale ... will return an error on GET"
        custom.get_namespaced_custom_object_scale(*WIDGETS, "w")
    assert (info.value.status, json.loads(info.value.body)["message"]) == (
        500,
        'Internal error occurred: the spec replicas field ".spec.scaling.count" does not exist',
    )
    with pytest.raises(ApiException) as info:  # a patch that sets no value cannot fill the gap
        custom.patch_namespaced_custom_object_scale(*WIDGETS, "w", {"metadata": {"labels": {"a": "b"}}})
    assert _error(info) == (
        400,
        {**_error(info)[1], "message": 'the spec replicas field ".spec.scaling.count" cannot be empty'},
    )
    scale = custom.patch_namespaced_custom_object_scale(*WIDGETS, "w", {"spec": {"replicas": 3}})
    assert scale["spec"] == {"replicas": 3} and scale["status"] == {"replicas": 0}  # no labelSelectorPath
    assert custom.get_namespaced_custom_object(*WIDGETS, "w")["spec"] == {"size": 1, "scaling": {"count": 3}}
    accessor = ".spec.scaling.count accessor error: three is of the type string, expected int64"
    with pytest.raises(ApiException) as info:  # the schema allows any value; the scale check does not
        custom.patch_namespaced_custom_object(*WIDGETS, "w", {"spec": {"scaling": {"count": "three"}}})
    assert _error(info)[1]["message"] == (
        f'Widget.example.com "w" is invalid: .spec.scaling.count: Invalid value: 0: {accessor}'
    )
    server.store.update("widgets.example.com", "default", "w", lambda o: o["spec"]["scaling"].update(count="three"))
    with pytest.raises(ApiException) as info:  # stored behind the API's back: GET reports the accessor error
        custom.get_namespaced_custom_object_scale(*WIDGETS, "w")
    assert _error(info)[0] == 500 and _error(info)[1]["message"] == accessor
    server.store.update("widgets.example.com", "default", "w", lambda o: o["spec"].update(scaling=7))
    with pytest.raises(ApiException) as info:  # a non-map on the way (unstructured names the full path)
        custom.patch_namespaced_custom_object_scale(*WIDGETS, "w", {"spec": {"replicas": 1}})
    assert _error(info)[1]["message"] == (
        ".spec.scaling.count accessor error: 7 is of the type int64, expected map[string]interface{}"
    )


def test_cluster_scoped_scale_has_no_namespace(
    server: FakeApiServer, custom: kubernetes.client.CustomObjectsApi
) -> None:
    paths = {
        "specReplicasPath": ".spec.replicas",
        "statusReplicasPath": ".status.replicas",
        "labelSelectorPath": ".spec.selector",
    }
    assert raw(server, "POST", CRDS_PATH, _widget_crd(paths, "Cluster"))[0] == 201
    widget = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w"},
        "spec": {"replicas": 1, "selector": "a=b"},
    }
    custom.create_cluster_custom_object("example.com", "v1", "widgets", widget)
    scale = custom.patch_cluster_custom_object_scale("example.com", "v1", "widgets", "w", {"spec": {"replicas": 2}})
    assert "namespace" not in scale["metadata"]
    assert scale["spec"] == {"replicas": 2} and scale["status"] == {"replicas": 0, "selector": "a=b"}


@pytest.mark.parametrize(
    ("scale", "message"),
    [
        (
            {"specReplicasPath": "foo,bar", "statusReplicasPath": ".status.replicas"},
            "must be a simple json path starting with .",
        ),
        (
            {"specReplicasPath": ".status.replicas", "statusReplicasPath": ".status.replicas"},
            "should be a json path under .spec",
        ),
        (
            {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".spec.replicas"},
            "should be a json path under .status",
        ),
        (
            {
                "specReplicasPath": ".spec.replicas",
                "statusReplicasPath": ".status.r",
                "labelSelectorPath": ".metadata.x",
            },
            "either .spec or .status",
        ),
        # reported by the CRD's own OpenAPI schema already (once, not twice)
        ({"statusReplicasPath": ".status.replicas"}, "specReplicasPath: Required value"),
    ],
)
def test_crd_with_an_invalid_scale_path_is_refused(server: FakeApiServer, scale: dict[str, Any], message: str) -> None:
    status, body = raw(server, "POST", CRDS_PATH, _widget_crd(scale))
    assert status == 422 and "spec.versions[0].subresources.scale." in body["message"]
    assert body["message"].count(message) == 1


# ------------------------------------------------------------------------------------------ property
REPLICAS = st.one_of(
    st.integers(0, 64),
    st.integers(-(2**40), 2**40),
    st.sampled_from([-1, 0, 1, MAX_INT32 - 1, MAX_INT32, MAX_INT32 + 1, -(2**31), -(2**31) + 1, 2**63, -(2**63)]),
)


def test_any_replica_value_round_trips_or_is_refused_leaving_the_object_untouched() -> None:
    """For every value and each write form: [0, MaxInt32] is stored exactly and read back by GET;
    anything else is a 400 (not an int32) or 422 (negative), and the object — resourceVersion,
    generation, spec, status — is exactly what it was."""
    with FakeApiServer() as server:
        custom = kubernetes.client.CustomObjectsApi(server.api_client())
        custom.create_namespaced_custom_object(*PCLQ, pclq_manifest("pc", replicas=1))
        custom.patch_namespaced_custom_object_status(*PCLQ, "pc", pclq_status(1))

        @settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
        @given(value=REPLICAS, form=st.sampled_from(["merge", "json", "put"]))
        def check(value: int, form: str) -> None:
            before = custom.get_namespaced_custom_object(*PCLQ, "pc")
            try:
                if form == "merge":
                    answer = custom.patch_namespaced_custom_object_scale(*PCLQ, "pc", {"spec": {"replicas": value}})
                elif form == "json":
                    ops = [{"op": "add", "path": "/spec/replicas", "value": value}]
                    answer = custom.patch_namespaced_custom_object_scale(
                        *PCLQ, "pc", ops, _content_type="application/json-patch+json"
                    )
                else:
                    body = {"metadata": {"name": "pc"}, "spec": {"replicas": value}}
                    answer = custom.replace_namespaced_custom_object_scale(*PCLQ, "pc", body)
            except ApiException as error:
                assert not 0 <= value <= MAX_INT32, (value, error.body)
                assert error.status == (422 if -(2**31) < value < 0 else 400), (value, error.body)
                assert custom.get_namespaced_custom_object(*PCLQ, "pc") == before
                return
            assert 0 <= value <= MAX_INT32
            after = custom.get_namespaced_custom_object(*PCLQ, "pc")
            assert after["spec"] == {**before["spec"], "replicas": value}
            assert after["status"] == before["status"]
            changed = value != before["spec"]["replicas"]
            assert after["metadata"]["generation"] == before["metadata"]["generation"] + changed
            assert answer == custom.get_namespaced_custom_object_scale(*PCLQ, "pc")
            assert answer["spec"] == ({"replicas": value} if value else {})
            assert answer["metadata"]["resourceVersion"] == after["metadata"]["resourceVersion"]

        check()
        assert server.internal_errors == []


def test_scale_mapping_follows_go_conversions() -> None:
    """The pure mapping: ``int32()`` wraps values stored behind the API's back, as the Go code does,
    and ``SetNestedField`` creates missing maps but refuses to cross a non-map."""
    paths = ScaleSubresource(".spec.replicas", ".status.replicas", ".status.selector")
    obj: dict[str, Any] = {"metadata": {"name": "x"}, "spec": {"replicas": 2**32 + 5}, "status": {"replicas": 2**32}}
    scale, found = scale_of(paths, obj)
    assert found and scale["spec"] == {"replicas": 5} and scale["status"] == {"replicas": 0}
    scale, found = scale_of(paths, {"metadata": {"name": "x"}, "spec": {"replicas": 2**32}})
    assert found and scale["spec"] == {}  # int32(2^32) == 0, omitted like any 0
    target: dict[str, Any] = {"spec": None}
    set_nested(target, ".spec.a.b", 3)
    assert target == {"spec": {"a": {"b": 3}}}
    with pytest.raises(AccessorError, match=r"value cannot be set because \.spec\.a is not a map"):
        set_nested({"spec": {"a": [1]}}, ".spec.a.b", 3)
    with pytest.raises(AccessorError, match=r"2\.5 is of the type float64, expected int64"):
        nested_int64({"spec": {"replicas": 2.5}}, ".spec.replicas")
    with pytest.raises(AccessorError, match=r"9223372036854775808 is of the type float64"):
        nested_int64({"spec": {"replicas": 2**63}}, ".spec.replicas")
    assert nested_int64({"spec": {}}, ".spec.replicas") == (0, False)
