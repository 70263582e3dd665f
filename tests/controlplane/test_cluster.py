"""The first tier on the real control plane (issue 32): the plane itself, every CRD, every example
and every overlay accepted by a real kube-apiserver, applied server-side as Argo CD does."""

from __future__ import annotations

import functools
import time

import kubernetes.client
import pytest
from kubernetes.client.exceptions import ApiException

from grove_gitops.agent.kube import Kube
from tests.controlplane.plane import (
    ARGOCD_MANAGER,
    FLUX_MANAGER,
    Obj,
    Plane,
    all_crds,
    apply_all,
    crd_established,
    kustomize,
    load_docs,
    server_side_apply,
    wait_until,
)
from tests.gatelifter.support import rendered_objects
from tests.support import PROJECT

GATE_LIFTER = PROJECT / "overlays" / "gate-lifter"


def test_the_plane_is_the_pinned_release_with_ready_nodes(plane: Plane) -> None:
    kube = plane.kube()
    version = kube.raw("GET", "/version")
    go_mod = (PROJECT / "tests" / "controlplane" / "go.mod").read_text()
    assert f"k8s.io/kubernetes {version['gitVersion']}\n" in go_mod
    nodes = kube.raw("GET", "/api/v1/nodes")["items"]
    inventory = load_docs(PROJECT / "examples" / "cluster" / "node-inventory.yaml")[0]
    assert len(nodes) == sum(p["count"] for p in inventory["pools"])
    for node in nodes:
        ready = {c["type"]: c["status"] for c in node["status"]["conditions"]}
        assert ready["Ready"] == "True", node["metadata"]["name"]
    # The examples' ClusterTopologyBinding levels are real node labels here.
    binding = load_docs(PROJECT / "examples" / "topology" / "gpu-fabric.yaml")[0]
    for level in binding["spec"]["levels"]:
        assert all(level["key"] in n["metadata"]["labels"] for n in nodes), level
    assert any(n["status"]["allocatable"].get("nvidia.com/gpu") == "8" for n in nodes)
    # Authentication and RBAC are on: a request without credentials is refused.
    config = kubernetes.client.Configuration()
    config.host = plane.server()
    ca = plane.dir / "pki" / "ca.crt"
    config.ssl_ca_cert = str(ca)
    anonymous = Kube(kubernetes.client.ApiClient(config))
    with pytest.raises(ApiException) as refused:
        anonymous.raw("GET", "/api/v1/nodes")
    assert refused.value.status in (401, 403)


def test_the_real_scheduler_holds_gated_pods(plane: Plane) -> None:
    """The property every gang test rests on: a pod with a scheduling gate is never bound, an
    ungated one is bound within seconds and turned Running by the node simulator."""
    kube = plane.kube()
    ns = "cp-scheduler"
    server_side_apply(kube, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})

    def pod(name: str, gated: bool) -> Obj:
        spec: Obj = {"containers": [{"name": "c", "image": "registry.example.com/app:1", "resources": {"requests": {"cpu": "1"}}}]}
        if gated:
            spec["schedulingGates"] = [{"name": "example.com/hold"}]
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns}, "spec": spec}

    apply_all(kube, [pod("held", True), pod("free", False)])
    path = f"/api/v1/namespaces/{ns}/pods"
    wait_until("the ungated pod to run", lambda: kube.raw("GET", f"{path}/free")["status"].get("phase") == "Running")
    held = kube.raw("GET", f"{path}/held")
    assert "nodeName" not in held["spec"]
    scheduled = {c["type"]: c for c in held["status"]["conditions"]}["PodScheduled"]
    assert (scheduled["status"], scheduled["reason"]) == ("False", "SchedulingGated")
    kube.raw("PATCH", f"{path}/held", [{"op": "remove", "path": "/spec/schedulingGates"}], "application/json-patch+json")
    wait_until("the released pod to run", lambda: kube.raw("GET", f"{path}/held")["status"].get("phase") == "Running")
    # Graceful deletion is finished by the simulated kubelet.
    kube.raw("DELETE", f"{path}/held")
    wait_until("the deleted pod to go", lambda: all(p["metadata"]["name"] != "held" for p in kube.raw("GET", path)["items"]))


def test_every_crd_is_established(plane: Plane) -> None:
    kube = plane.kube()
    crds = all_crds()
    assert len(crds) >= 15
    apply_all(kube, crds)
    for crd in crds:
        wait_until(f"CRD {crd['metadata']['name']} established", functools.partial(crd_established, kube, crd["metadata"]["name"]))


def test_every_example_and_sample_applies_server_side(plane: Plane) -> None:
    """All rendered objects of examples/ in Argo CD's wave order (field manager argocd-controller),
    then the same objects once more as Flux applies them (kustomize-controller): both accepted."""
    kube = plane.kube()
    apply_all(kube, all_crds())
    for crd in all_crds():
        wait_until("CRDs established", functools.partial(crd_established, kube, crd["metadata"]["name"]))
    objs = rendered_objects(PROJECT / "examples")
    assert len(objs) > 20
    apply_all(kube, objs, ARGOCD_MANAGER)
    apply_all(kube, objs, FLUX_MANAGER)
    pods = kube.raw("GET", "/api/v1/namespaces/inference/pods")["items"]
    assert len(pods) == sum(1 for o in objs if o["kind"] == "Pod")
    managers = {m["manager"] for p in pods for m in p["metadata"]["managedFields"]}
    assert {ARGOCD_MANAGER, FLUX_MANAGER} <= managers


def test_overlays_apply_and_coexist(plane: Plane) -> None:
    """The cluster-wide overlay, then the namespaced one beside it (issue 32.7): the namespaced
    install must leave the cluster-wide ClusterRole, ClusterRoleBinding and policies as they were."""
    kube = plane.kube()
    wide = kustomize(GATE_LIFTER) + kustomize(GATE_LIFTER / "drift-events")
    apply_all(kube, wide)
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    before = {
        "role": kube.raw("GET", f"{rbac}/clusterroles/grove-gitops-gate-lifter")["rules"],
        "binding": kube.raw("GET", f"{rbac}/clusterrolebindings/grove-gitops-gate-lifter")["subjects"],
    }
    server_side_apply(kube, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "inference"}})
    apply_all(kube, kustomize(GATE_LIFTER / "namespaced") + kustomize(GATE_LIFTER / "namespaced-policies"))
    after = {
        "role": kube.raw("GET", f"{rbac}/clusterroles/grove-gitops-gate-lifter")["rules"],
        "binding": kube.raw("GET", f"{rbac}/clusterrolebindings/grove-gitops-gate-lifter")["subjects"],
    }
    assert after == before
    assert before["binding"] == [{"kind": "ServiceAccount", "name": "grove-gitops-gate-lifter", "namespace": "grove-gitops"}]
    policies = kube.raw("GET", "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies")["items"]
    names = {p["metadata"]["name"] for p in policies}
    assert {"grove-gitops-gate-lifter-pods", "grove-gitops-gate-lifter-namespaced-pods"} <= names
    bindings = kube.raw("GET", "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings")["items"]
    assert {"grove-gitops-gate-lifter-pods", "grove-gitops-gate-lifter-namespaced-pods"} <= {b["spec"]["policyName"] for b in bindings}
    # The real server (its policy status controller) type-checked every CEL expression: no warnings.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        policies = kube.raw("GET", "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies")["items"]
        ours = [p for p in policies if p["metadata"]["name"].startswith("grove-gitops-gate-lifter")]
        if all((p.get("status") or {}).get("observedGeneration") == p["metadata"]["generation"] for p in ours):
            break
        time.sleep(0.5)
    for policy in ours:
        assert (policy.get("status") or {}).get("observedGeneration") == policy["metadata"]["generation"], policy["metadata"]["name"]
        warnings = ((policy.get("status") or {}).get("typeChecking") or {}).get("expressionWarnings") or []
        assert warnings == [], (policy["metadata"]["name"], warnings)
