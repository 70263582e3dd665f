"""Optimistic concurrency: resourceVersion preconditions, generation, no-op writes, Leases."""

from __future__ import annotations

import json
import threading

import kubernetes.client
import pytest
from kubernetes.client import ApiException

from tests.fakeapi.fakeapi_helpers import pod_manifest


def test_replace_with_stale_resource_version_is_409(core: kubernetes.client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", pod_manifest("p1"))
    stale = core.read_namespaced_pod("p1", "default")
    fresh = core.read_namespaced_pod("p1", "default")
    fresh.metadata.labels = {"app": "fresh"}
    core.replace_namespaced_pod("p1", "default", fresh)
    stale.metadata.labels = {"app": "stale"}
    with pytest.raises(ApiException) as info:
        core.replace_namespaced_pod("p1", "default", stale)
    assert info.value.status == 409
    body = json.loads(info.value.body)
    assert body["reason"] == "Conflict"
    assert body["message"] == (
        'Operation cannot be fulfilled on pods "p1": the object has been modified; please '
        "apply your changes to the latest version and try again"
    )
    assert core.read_namespaced_pod("p1", "default").metadata.labels == {"app": "fresh"}


def test_patch_carrying_a_stale_resource_version_is_409(core: kubernetes.client.CoreV1Api) -> None:
    created = core.create_namespaced_pod("default", pod_manifest("p1"))
    core.patch_namespaced_pod("p1", "default", {"metadata": {"labels": {"a": "1"}}})
    with pytest.raises(ApiException) as info:
        core.patch_namespaced_pod(
            "p1",
            "default",
            {"metadata": {"labels": {"a": "2"}, "resourceVersion": created.metadata.resource_version}},
        )
    assert info.value.status == 409


def test_no_op_write_keeps_resource_version(core: kubernetes.client.CoreV1Api) -> None:
    created = core.create_namespaced_pod("default", pod_manifest("p1"))
    same = core.patch_namespaced_pod("p1", "default", {"metadata": {"labels": {"app": "demo"}}})
    assert same.metadata.resource_version == created.metadata.resource_version


def test_resource_version_is_one_global_counter(core: kubernetes.client.CoreV1Api) -> None:
    a = core.create_namespaced_pod("default", pod_manifest("a"))
    b = core.create_namespaced_pod("default", pod_manifest("b"))
    c = core.patch_namespaced_pod("a", "default", {"metadata": {"labels": {"x": "y"}}})
    assert (
        int(a.metadata.resource_version) < int(b.metadata.resource_version) < int(c.metadata.resource_version)
    )


def test_concurrent_updates_with_same_version_one_wins(core: kubernetes.client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", pod_manifest("p1"))
    base = core.read_namespaced_pod("p1", "default")
    results: list[int] = []
    lock = threading.Lock()

    def writer(value: str) -> None:
        body = core.api_client.sanitize_for_serialization(base)
        body["metadata"]["labels"] = {"writer": value}
        try:
            core.replace_namespaced_pod("p1", "default", body)
            code = 200
        except ApiException as error:
            code = error.status
        with lock:
            results.append(code)

    threads = [threading.Thread(target=writer, args=(str(i),)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert sorted(results) == [200, 409, 409, 409, 409, 409]


def test_lease_create_and_stale_put(coordination: kubernetes.client.CoordinationV1Api) -> None:
    lease = coordination.create_namespaced_lease(
        "default",
        {"metadata": {"name": "gate-lifter"}, "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}},
    )
    first = coordination.read_namespaced_lease("gate-lifter", "default")
    first.spec.holder_identity = "b"
    renewed = coordination.replace_namespaced_lease("gate-lifter", "default", first)
    assert renewed.spec.holder_identity == "b"
    lease.spec.holder_identity = "c"  # still carries the creation resourceVersion
    with pytest.raises(ApiException) as info:
        coordination.replace_namespaced_lease("gate-lifter", "default", lease)
    assert info.value.status == 409
    assert coordination.read_namespaced_lease("gate-lifter", "default").spec.holder_identity == "b"
