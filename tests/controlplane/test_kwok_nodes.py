"""The plane's kubelets are KWOK's (issue 32 point 4): the inventory's nodes managed by it, bound
pods started and deletions finished by it, gated pods held, and the pods of a namespace handed
to the day-2 harness's kubelet left alone (the MutatingAdmissionPolicy marks them for KWOK's
stages, which see a pod's own fields only)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes.client.exceptions import ApiException

from grove_gitops.agent.kube import Kube
from tests.controlplane.nodesim import HANDED_OFF, INVENTORY, KWOK_NODE, inventory_nodes
from tests.controlplane.plane import Plane, wait_until

PLAIN, EXTERNAL = "kwok-plain", "kwok-external"


def pod(name: str, gated: bool = False, node: str | None = None) -> dict[str, object]:
    spec: dict[str, object] = {"containers": [{"name": "c", "image": "registry.example/c:1"}]}
    if gated:
        spec["schedulingGates"] = [{"name": "grove-gitops.test/held"}]
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def get(kube: Kube, namespace: str, name: str) -> dict[str, object] | None:
    try:
        found: dict[str, object] = kube.raw("GET", f"/api/v1/namespaces/{namespace}/pods/{name}")
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise
    return found


def phase(kube: Kube, namespace: str, name: str) -> str | None:
    found = get(kube, namespace, name)
    return None if found is None else found["status"].get("phase")  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def kube(plane: Plane) -> Iterator[Kube]:
    kube = plane.kube()
    for name, labels in ((PLAIN, {}), (EXTERNAL, {HANDED_OFF: "external"})):
        kube.raw("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}})
    yield kube
    for name in (PLAIN, EXTERNAL):
        kube.raw("DELETE", f"/api/v1/namespaces/{name}")


def test_the_inventory_nodes_are_kwoks_and_ready(kube: Kube) -> None:
    expected = {n["metadata"]["name"]: n for n in inventory_nodes(INVENTORY, None)}
    live = {n["metadata"]["name"]: n for n in kube.raw("GET", "/api/v1/nodes")["items"]}
    assert set(live) == set(expected)
    for name, node in live.items():
        assert node["metadata"]["annotations"][KWOK_NODE] == "fake", name
        assert node["status"]["nodeInfo"]["kubeletVersion"].startswith("kwok-"), name
        assert {c["type"]: c["status"] for c in node["status"]["conditions"]}["Ready"] == "True", name
        assert node["status"]["allocatable"] == expected[name]["status"]["allocatable"], name
        for key, value in expected[name]["metadata"]["labels"].items():
            assert node["metadata"]["labels"][key] == value, (name, key)
        assert not node["spec"].get("taints"), name
    lease = kube.raw("GET", f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{next(iter(live))}")
    assert lease["spec"]["leaseDurationSeconds"] == 40


def test_kwok_starts_bound_pods_finishes_deletions_and_gated_pods_stay_pending(kube: Kube) -> None:
    base = f"/api/v1/namespaces/{PLAIN}/pods"
    kube.raw("POST", base, pod("runs"))
    kube.raw("POST", base, pod("gated", gated=True))
    wait_until("the bound pod Running", lambda: phase(kube, PLAIN, "runs") == "Running")
    running = get(kube, PLAIN, "runs")
    assert running is not None
    assert {c["type"]: c["status"] for c in running["status"]["conditions"]}["Ready"] == "True"  # type: ignore[index]
    gated = get(kube, PLAIN, "gated")
    assert gated is not None and not gated["spec"].get("nodeName") and gated["status"]["phase"] == "Pending"  # type: ignore[attr-defined,index]
    kube.raw("DELETE", f"{base}/runs")  # graceful (30 s): KWOK, as the kubelet, finishes it
    wait_until("the deleted pod gone", lambda: get(kube, PLAIN, "runs") is None, timeout=20)


def test_kwok_leaves_a_handed_off_namespace_to_the_other_kubelet(kube: Kube) -> None:
    node = next(iter(inventory_nodes(INVENTORY, 1)))["metadata"]["name"]
    base = f"/api/v1/namespaces/{EXTERNAL}/pods"
    created = kube.raw("POST", base, pod("held", node=node))
    assert created["metadata"]["annotations"][HANDED_OFF] == "external"
    kube.raw("POST", f"/api/v1/namespaces/{PLAIN}/pods", pod("control", node=node))
    wait_until("the control pod Running", lambda: phase(kube, PLAIN, "control") == "Running")
    assert phase(kube, EXTERNAL, "held") == "Pending"  # KWOK saw both; it started only the control
    kube.raw("DELETE", f"{base}/held")
    kube.raw("DELETE", f"/api/v1/namespaces/{PLAIN}/pods/control")
    wait_until("KWOK finishing the control pod's deletion", lambda: get(kube, PLAIN, "control") is None, timeout=20)
    held = get(kube, EXTERNAL, "held")  # graceful: nobody here finishes it, KWOK least of all
    assert held is not None and held["metadata"].get("deletionTimestamp")  # type: ignore[attr-defined]
    kube.raw("DELETE", f"{base}/held", {"gracePeriodSeconds": 0})  # what the other kubelet does
