"""Issue 31.7 on the real server: what the agent's ServiceAccount token may do to pods once the
gate-lifter overlay (RBAC + its ValidatingAdmissionPolicy) is installed. RBAC alone grants pod
create/patch/delete everywhere; every refusal below comes from the overlay's policy, every
allowed write is one the agent makes."""

from __future__ import annotations

from pathlib import Path

import pytest
from kubernetes.client.exceptions import ApiException

from grove_gitops.agent.kube import Kube
from tests.controlplane.plane import Obj, Plane, client_for, server_side_apply, wait_until
from tests.gatelifter.support import rendered_objects
from tests.support import PROJECT

NS = "cp-policy"
JSON_PATCH = "application/json-patch+json"
MERGE = "application/merge-patch+json"


def managed_pod(name: str, owner: Obj | None, **spec: object) -> Obj:
    """A pod as the agent creates one: grove-gitops labels, gated, owned by its gitops.grove.io record."""
    meta: Obj = {
        "name": name,
        "namespace": NS,
        "labels": {"app.kubernetes.io/managed-by": "grove-gitops", "app.kubernetes.io/part-of": "llama-disagg"},
    }
    if owner is not None:
        meta["ownerReferences"] = [
            {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"], "controller": True}
        ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {
            # Restricted Pod Security (the agent's own namespace enforces it): the refusals below
            # must come from the policy, not from PodSecurity.
            "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [
                {
                    "name": "c",
                    "image": "registry.example.com/app:1",
                    "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
                }
            ],
            "schedulingGates": [{"name": "grove.io/podgang-pending-creation"}],
            **spec,
        },
    }


def refused(agent: Kube, method: str, path: str, body: object = None, content_type: str = "application/json") -> str:
    with pytest.raises(ApiException) as info:
        agent.raw(method, path, body, content_type)
    assert info.value.status == 403, info.value.body
    return str(info.value.body)


@pytest.fixture(scope="module")
def setup(installed: Plane, agent_kubeconfig: Path) -> tuple[Kube, Kube, Obj]:
    """The agent's token, the admin, and a gitops.grove.io PodCliqueSet record to own the pods."""
    admin = installed.kube()
    server_side_apply(admin, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    # A powerful ServiceAccount a stolen agent token would like to run as (it exists: the
    # refusal below must come from the policy, not from the ServiceAccount admission plugin).
    server_side_apply(admin, {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "cluster-admin-sa", "namespace": NS}})
    record = next(o for o in rendered_objects(PROJECT / "examples") if o["apiVersion"].startswith("gitops.grove.io/") and o["kind"] == "PodCliqueSet")
    target = {**record, "metadata": {**record["metadata"], "namespace": NS}}
    owner = server_side_apply(admin, target)
    agent = client_for(agent_kubeconfig)
    probe = managed_pod("probe", owner)

    def policy_active() -> bool:
        """Policies take effect once the server has loaded them: wait for the first refusal."""
        try:
            agent.raw("POST", "/api/v1/namespaces/kube-system/pods", {**probe, "metadata": {**probe["metadata"], "namespace": "kube-system"}})
        except ApiException as exc:
            return exc.status == 403 and "system namespace" in str(exc.body)
        admin.raw("DELETE", "/api/v1/namespaces/kube-system/pods/probe")
        return False

    wait_until("the pod policy to be enforced", policy_active, timeout=60, interval=1.0)
    return agent, admin, owner


def test_allowed_writes_succeed(setup: tuple[Kube, Kube, Obj]) -> None:
    agent, _, owner = setup
    path = f"/api/v1/namespaces/{NS}/pods"
    agent.raw("POST", path, managed_pod("allowed", owner))
    # Release: remove the gate (the agent's JSON patch); an annotation of its own.
    agent.raw("PATCH", f"{path}/allowed", [{"op": "remove", "path": "/spec/schedulingGates/0"}], JSON_PATCH)
    agent.raw("PATCH", f"{path}/allowed", {"metadata": {"annotations": {"gitops.grove.io/note": "x"}}}, MERGE)
    agent.raw("DELETE", f"{path}/allowed")


def test_pod_writes_in_system_or_agent_namespaces_are_refused(setup: tuple[Kube, Kube, Obj]) -> None:
    agent, _, owner = setup
    for ns, message in (("kube-system", "system namespace kube-system"), ("grove-gitops", "own namespace grove-gitops")):
        pod = managed_pod("x", owner)
        pod["metadata"]["namespace"] = ns
        assert message in refused(agent, "POST", f"/api/v1/namespaces/{ns}/pods", pod)


def test_only_pods_of_a_podcliqueset_record_and_only_grove_gitops_pods(setup: tuple[Kube, Kube, Obj]) -> None:
    agent, _, owner = setup
    path = f"/api/v1/namespaces/{NS}/pods"
    assert "owned (controller) by a gitops.grove.io PodCliqueSet" in refused(agent, "POST", path, managed_pod("orphan", None))
    unmanaged = managed_pod("x", owner)
    unmanaged["metadata"]["labels"] = {"app": "other"}
    assert "managed-by=grove-gitops" in refused(agent, "POST", path, unmanaged)


def test_a_service_account_escalation_is_refused(setup: tuple[Kube, Kube, Obj]) -> None:
    agent, admin, owner = setup
    path = f"/api/v1/namespaces/{NS}/pods"
    pod = managed_pod("escalate", owner, serviceAccountName="cluster-admin-sa")
    assert "ServiceAccount cluster-admin-sa is not listed" in refused(agent, "POST", path, pod)
    # A namespace admin lists the ServiceAccounts its workloads run as: then it is allowed.
    admin.raw("PATCH", f"/api/v1/namespaces/{NS}", {"metadata": {"annotations": {"gitops.grove.io/agent-service-accounts": "llm, cluster-admin-sa"}}}, MERGE)
    wait_until("the annotation to count", lambda: _created(agent, path, pod), timeout=20, interval=0.5)


def _created(agent: Kube, path: str, pod: Obj) -> bool:
    try:
        agent.raw("POST", path, pod)
    except ApiException as exc:
        assert exc.status == 403, exc.body
        return False
    return True


def test_an_update_may_change_only_the_gates_and_the_agents_own_metadata(setup: tuple[Kube, Kube, Obj]) -> None:
    agent, admin, owner = setup
    path = f"/api/v1/namespaces/{NS}/pods"
    agent.raw("POST", path, managed_pod("target", owner))
    image = [{"op": "replace", "path": "/spec/containers/0/image", "value": "attacker.example.com/x:1"}]
    assert "only spec.schedulingGates" in refused(agent, "PATCH", f"{path}/target", image, JSON_PATCH)
    label = {"metadata": {"labels": {"team": "other"}}}
    assert "gitops.grove.io/ labels" in refused(agent, "PATCH", f"{path}/target", label, MERGE)
    # A pod grove-gitops did not render is not the agent's to delete.
    other = managed_pod("foreign", None)
    other["metadata"]["labels"] = {"app": "foreign"}
    admin.raw("POST", path, other)
    assert "managed-by=grove-gitops" in refused(agent, "DELETE", f"{path}/foreign")
