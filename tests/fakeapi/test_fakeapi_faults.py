"""Fault injection and the request log: error paths a healthy server never exercises."""

from __future__ import annotations

import json
import time

import kubernetes.client
import pytest
from kubernetes.client import ApiException

from tests.fakeapi.fakeapi_helpers import GATE, pod_manifest
from tests.fakeserver import FakeApiServer

LIFT = [
    {"op": "test", "path": "/spec/schedulingGates/0/name", "value": GATE},
    {"op": "remove", "path": "/spec/schedulingGates/0"},
]


@pytest.mark.parametrize(("status", "reason"), [(409, "Conflict"), (500, "InternalError"), (404, "NotFound")])
def test_injected_status_once_then_success(
    server: FakeApiServer, core: kubernetes.client.CoreV1Api, status: int, reason: str
) -> None:
    core.create_namespaced_pod("default", pod_manifest("p1"))
    fault = server.faults.add(verb="patch", resource="pods", status=status, times=1)
    with pytest.raises(ApiException) as info:
        core.patch_namespaced_pod("p1", "default", LIFT)
    assert info.value.status == status
    body = json.loads(info.value.body)
    assert body["kind"] == "Status" and body["reason"] == reason and body["code"] == status
    if status == 409:
        assert body["message"].startswith('Operation cannot be fulfilled on pods "p1"')
    assert core.read_namespaced_pod("p1", "default").spec.scheduling_gates is not None  # nothing applied
    core.patch_namespaced_pod("p1", "default", LIFT)
    assert fault.hits == 1 and server.faults.pending == []
    assert server.requests_count(verb="patch", resource="pods", name="p1") == 2
    assert server.requests_count(verb="patch", resource="pods", name="p1", status=status) == 1


def test_faults_match_only_their_target(server: FakeApiServer, core: kubernetes.client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", pod_manifest("p1"))
    core.create_namespaced_pod("default", pod_manifest("p2"))
    server.faults.add(verb="get", resource="pods", name="p2", status=500, times=None)
    server.faults.add(verb="patch", resource="pods/status", status=503)
    core.read_namespaced_pod("p1", "default")
    for _ in range(2):
        with pytest.raises(ApiException):
            core.read_namespaced_pod("p2", "default")
    core.patch_namespaced_pod(
        "p1", "default", {"metadata": {"labels": {"a": "b"}}}
    )  # main resource: no fault
    with pytest.raises(ApiException) as info:
        core.patch_namespaced_pod_status("p1", "default", {"status": {"phase": "Pending"}})
    assert info.value.status == 503
    server.faults.clear()
    core.read_namespaced_pod("p2", "default")


def test_delay_slows_requests(server: FakeApiServer, core: kubernetes.client.CoreV1Api) -> None:
    server.faults.delay(0.3, verb="list", resource="pods", times=1)
    started = time.monotonic()
    core.list_namespaced_pod("default")
    assert time.monotonic() - started >= 0.3
    started = time.monotonic()
    core.list_namespaced_pod("default")
    assert time.monotonic() - started < 0.3


def test_request_log_records_verbs_and_subresources(
    server: FakeApiServer, core: kubernetes.client.CoreV1Api
) -> None:
    core.create_namespaced_pod("default", pod_manifest("p1"))
    core.patch_namespaced_pod_status("p1", "default", {"status": {"phase": "Pending"}})
    core.list_namespaced_pod("default")
    verbs = [(r.verb, r.resource, r.name, r.status) for r in server.requests]
    assert verbs == [
        ("create", "pods", None, 201),
        ("patch", "pods/status", "p1", 200),
        ("list", "pods", None, 200),
    ]
    assert server.requests[0].path == "/api/v1/namespaces/default/pods"
    server.clear_requests()
    assert server.requests == []


def test_unknown_fault_verb_is_refused(server: FakeApiServer) -> None:
    with pytest.raises(ValueError, match="unknown verb"):
        server.faults.add(verb="pach", resource="pods")
