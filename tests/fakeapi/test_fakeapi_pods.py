"""Pod rules the gate-lifter depends on, pinned through the official client.

Real-server references: KEP-3521 (gates only removable), ValidatePodUpdate (spec immutability),
ValidatePodCreate (nodeName with gates), pod strategy PrepareForCreate (SchedulingGated condition).
"""

from __future__ import annotations

import json

import kubernetes.client
import pytest
from kubernetes.client import ApiException

from tests.fakeapi.fakeapi_helpers import GATE, pod_manifest, raw
from tests.fakeserver import FakeApiServer


def _error(info: pytest.ExceptionInfo[ApiException]) -> dict[str, object]:
    body: dict[str, object] = json.loads(info.value.body)
    return body


def test_gated_pod_gets_scheduling_gated_condition(core: kubernetes.client.CoreV1Api) -> None:
    pod = core.create_namespaced_pod("default", pod_manifest("p1"))
    assert [g.name for g in pod.spec.scheduling_gates] == [GATE]
    (condition,) = pod.status.conditions
    assert (condition.type, condition.status, condition.reason) == (
        "PodScheduled",
        "False",
        "SchedulingGated",
    )
    assert pod.spec.scheduler_name == "default-scheduler" and pod.status.qos_class == "BestEffort"


def test_gate_removal_with_guarded_json_patch(core: kubernetes.client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", pod_manifest("p1", gates=("other.io/admission", GATE)))
    guard = [
        {"op": "test", "path": "/spec/schedulingGates/1/name", "value": GATE},
        {"op": "remove", "path": "/spec/schedulingGates/1"},
    ]
    patched = core.patch_namespaced_pod("p1", "default", guard)
    assert [g.name for g in patched.spec.scheduling_gates] == ["other.io/admission"]
    # The same guarded patch again: the test op now fails (index 1 is gone) → 422, nothing changes.
    with pytest.raises(ApiException) as info:
        core.patch_namespaced_pod("p1", "default", guard)
    assert info.value.status == 422
    assert _error(info)["reason"] == "Invalid"
    last = core.patch_namespaced_pod(
        "p1",
        "default",
        [
            {"op": "test", "path": "/spec/schedulingGates/0/name", "value": "other.io/admission"},
            {"op": "remove", "path": "/spec/schedulingGates/0"},
        ],
    )
    assert last.spec.scheduling_gates is None  # omitempty: an emptied list disappears


def test_adding_or_renaming_a_gate_is_forbidden(core: kubernetes.client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", pod_manifest("p1"))
    with pytest.raises(ApiException) as info:
        core.patch_namespaced_pod(
            "p1", "default", [{"op": "add", "path": "/spec/schedulingGates/-", "value": {"name": "x.io/new"}}]
        )
    assert info.value.status == 422
    assert _error(info)["message"] == (
        'Pod "p1" is invalid: spec.schedulingGates[1].name: Forbidden: only '
        "deletion is allowed, but found new scheduling gate 'x.io/new'"
    )
    with pytest.raises(ApiException) as info:
        core.patch_namespaced_pod(
            "p1",
            "default",
            [{"op": "replace", "path": "/spec/schedulingGates/0/name", "value": "renamed.io/gate"}],
        )
    assert "found new scheduling gate 'renamed.io/gate'" in str(_error(info)["message"])
    core.patch_namespaced_pod("p1", "default", {"spec": {"schedulingGates": None}})
    with pytest.raises(ApiException) as info:  # re-adding after lifting, as a GitOps re-apply would
        core.patch_namespaced_pod("p1", "default", {"spec": {"schedulingGates": [{"name": GATE}]}})
    assert (
        f"spec.schedulingGates[0].name: Forbidden: only deletion is allowed, but found new scheduling gate "
        f"'{GATE}'" in str(_error(info)["message"])
    )


def test_strategic_merge_gate_directives(core: kubernetes.client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", pod_manifest("p1", gates=("a.io/one", GATE)))
    unchanged = core.patch_namespaced_pod("p1", "default", {"spec": {"schedulingGates": []}})
    assert len(unchanged.spec.scheduling_gates) == 2  # merging an empty list keeps everything
    lifted = core.patch_namespaced_pod(
        "p1", "default", {"spec": {"schedulingGates": [{"$patch": "delete", "name": GATE}]}}
    )
    assert [g.name for g in lifted.spec.scheduling_gates] == ["a.io/one"]


def test_node_name_with_gates_is_rejected_on_create(core: kubernetes.client.CoreV1Api) -> None:
    manifest = pod_manifest("p1")
    manifest["spec"]["nodeName"] = "node-a"
    with pytest.raises(ApiException) as info:
        core.create_namespaced_pod("default", manifest)
    assert _error(info)["message"] == (
        'Pod "p1" is invalid: spec.nodeName: Forbidden: cannot be set until all '
        "schedulingGates have been cleared"
    )


def test_pod_spec_is_immutable_except_images(core: kubernetes.client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", pod_manifest("p1", gates=()))
    updated = core.patch_namespaced_pod(
        "p1", "default", {"spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]}}
    )
    assert updated.spec.containers[0].image == "busybox:1.36"
    with pytest.raises(ApiException) as info:
        core.patch_namespaced_pod("p1", "default", {"spec": {"restartPolicy": "Never"}})
    message = str(_error(info)["message"])
    assert message.startswith(
        'Pod "p1" is invalid: spec: Forbidden: pod updates may not change fields other '
        "than `spec.containers[*].image`"
    )
    with pytest.raises(ApiException):
        core.patch_namespaced_pod("p1", "default", {"spec": {"nodeName": "node-a"}})


def test_gated_pod_may_gain_node_selector(core: kubernetes.client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", pod_manifest("p1"))
    narrowed = core.patch_namespaced_pod("p1", "default", {"spec": {"nodeSelector": {"zone": "a"}}})
    assert narrowed.spec.node_selector == {"zone": "a"}
    with pytest.raises(ApiException):
        core.patch_namespaced_pod("p1", "default", {"spec": {"nodeSelector": {"zone": "b"}}})


def test_pod_status_subresource(server: FakeApiServer, core: kubernetes.client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", pod_manifest("p1"))
    before = core.read_namespaced_pod("p1", "default")
    after = core.patch_namespaced_pod_status(
        "p1",
        "default",
        {
            "status": {"conditions": [{"type": "PodScheduled", "status": "True"}]},
            "spec": {"nodeName": "ignored"},
        },
    )
    assert after.spec.node_name is None  # /status ignores everything but status
    assert core.read_namespaced_pod_status("p1", "default").status.conditions[0].status == "True"
    assert [(c.type, c.status) for c in after.status.conditions] == [("PodScheduled", "True")]
    # A main-resource write cannot change status.
    relabelled = core.patch_namespaced_pod(
        "p1", "default", {"metadata": {"labels": {"x": "y"}}, "status": {"phase": "Running"}}
    )
    assert relabelled.status.phase == "Pending" and relabelled.metadata.labels["x"] == "y"
    assert relabelled.metadata.generation == before.metadata.generation  # metadata-only: no bump


def test_test_helpers_mark_pods_scheduled(server: FakeApiServer, core: kubernetes.client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", pod_manifest("p1"))
    with pytest.raises(ValueError, match="still gated"):
        server.schedule_pod("default", "p1")
    core.patch_namespaced_pod("p1", "default", [{"op": "remove", "path": "/spec/schedulingGates"}])
    server.schedule_pod("default", "p1", "node-7")
    pod = core.read_namespaced_pod("p1", "default")
    assert pod.spec.node_name == "node-7"
    assert [(c.type, c.status) for c in pod.status.conditions] == [("PodScheduled", "True")]
    server.set_pod_condition("default", "p1", "Ready", "True")
    assert server.get_object("pods", "default", "p1")["status"]["conditions"][1]["type"] == "Ready"


def test_kubernetes_version_selects_the_builtin_schema() -> None:
    """``spec.workloadRef`` exists in 1.35 only; the fake follows the configured release."""
    manifest = pod_manifest("p1")
    manifest["spec"]["workloadRef"] = {"name": "w", "podGroup": "g"}
    with FakeApiServer(crd_dir=None) as server:  # default: 1.35
        status, _ = raw(server, "POST", "/api/v1/namespaces/default/pods", manifest)
        assert status == 201
    with FakeApiServer(crd_dir=None, kubernetes_version="1.36") as server:
        status, body = raw(server, "POST", "/api/v1/namespaces/default/pods", manifest)
        assert status == 422 and 'unknown field "spec.workloadRef"' in body["message"]
    with pytest.raises(ValueError, match=r"no schemas for Kubernetes 1\.40"):
        FakeApiServer(kubernetes_version="1.40")
