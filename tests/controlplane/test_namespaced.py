"""The namespaced overlay's agent as its own process under ITS ServiceAccount token (issue 32.5):
installed the way overlays/gate-lifter/namespaced tells a user to (a kustomization of their own
with ``namespace:``, a ``nameSuffix:`` beside another namespaced install, the backend's component),
it releases a workload in its namespace; one in another namespace stays gated, and the token is
refused there by the real RBAC."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from tests.controlplane.plane import (
    Plane,
    apply_all,
    client_for,
    kustomize,
    service_account_kubeconfig,
    wait_until,
    whoami,
)
from tests.controlplane.workloads import (
    EXAMPLE,
    GangInvariant,
    default_scheduler_source,
    render,
    running_agent,
    small_source,
)
from tests.support import PROJECT

MINE, OTHER = "cp-ns-mine", "cp-ns-other"
SA = "grove-gitops-gate-lifter-namespaced-cpns"
GATE_LIFTER = PROJECT / "overlays" / "gate-lifter"


def install(tmp: Path, namespace: str = MINE, suffix: str = "-cpns") -> list[dict[str, Any]]:
    (tmp / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        f"namespace: {namespace}\nnameSuffix: {suffix}\nresources:\n  - {os.path.relpath(GATE_LIFTER / 'namespaced', tmp)}\n"
        f"components:\n  - {os.path.relpath(GATE_LIFTER / 'backends' / 'default-scheduler', tmp)}\n"
    )
    return kustomize(tmp)


@pytest.fixture(scope="module")
def namespaced(installed: Plane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("namespaced")
    kube = installed.kube()
    objs = [o for ns in (MINE, OTHER) for o in render(small_source(tmp, ns, {"solo": (2, "100m", False)}))]
    apply_all(kube, [o for o in objs if o["kind"] == "Namespace"])
    invariant = GangInvariant(installed, MINE)
    overlay = tmp / "overlay"
    overlay.mkdir()
    apply_all(kube, [o for o in install(overlay) if o["kind"] != "CustomResourceDefinition"])  # CRDs: the session's
    apply_all(kube, [o for o in objs if o["kind"] != "Namespace"])
    config = service_account_kubeconfig(installed, MINE, SA, tmp / "kubeconfig")
    log = tmp / "agent.log"
    with running_agent(config, log, "--namespace", MINE, "--lease-namespace", MINE) as agent:
        try:
            yield {"kube": kube, "config": config, "log": log, "agent": agent, "invariant": invariant}
        finally:
            invariant.close()
            for ns in (MINE, OTHER):
                kube.raw("DELETE", f"/api/v1/namespaces/{ns}")


def test_the_namespaced_agent_releases_its_namespace_and_cannot_touch_another(namespaced: dict[str, Any]) -> None:
    kube, config = namespaced["kube"], namespaced["config"]
    assert whoami(client_for(config)) == f"system:serviceaccount:{MINE}:{SA}"

    def pods(ns: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = kube.raw("GET", f"/api/v1/namespaces/{ns}/pods")["items"]
        return items

    try:
        wait_until("its namespace's gang to run", lambda: sum(p["status"].get("phase") == "Running" for p in pods(MINE)) == 2,
                   timeout=90)
    except AssertionError:
        raise AssertionError(f"agent log tail:\n{namespaced['log'].read_text()[-3000:]}") from None
    # Several of its resyncs later the other namespace's gang is still gated and unbound.
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        other = pods(OTHER)
        assert len(other) == 2 and all(p["spec"].get("schedulingGates") and not p["spec"].get("nodeName") for p in other)
        time.sleep(0.5)
    # Its token is refused there: no read, no gate removal.
    agent = client_for(config)
    victim = pods(OTHER)[0]["metadata"]["name"]
    for method, path, body in (("GET", f"/api/v1/namespaces/{OTHER}/pods", None),
                               ("PATCH", f"/api/v1/namespaces/{OTHER}/pods/{victim}", [{"op": "remove", "path": "/spec/schedulingGates"}])):
        with pytest.raises(ApiException) as refused:
            agent.raw(method, path, body, "application/json-patch+json") if body else agent.raw(method, path)
        assert refused.value.status == 403 and f"cannot {'list' if method == 'GET' else 'patch'} resource" in str(refused.value.body)
    assert namespaced["invariant"].violations == []
    assert namespaced["agent"].poll() is None
    log = namespaced["log"].read_text()
    assert "Forbidden" not in log, log[-3000:]


NOFIN = "cp-ns-nofin"


def test_without_the_finalizers_rule_the_workload_says_its_scale_target_was_refused(
        installed: Plane, tmp_path: Path) -> None:
    """Issue 32.2 on the real server: a namespaced install whose Role lacks ``update`` on
    ``podcliquesets/finalizers`` (an older overlay) under OwnerReferencesPermissionEnforcement.
    The agent still releases Git's gangs, but every object it creates names the workload as owner
    with blockOwnerDeletion and is refused 403; the workload record says so (ScaleBlocked=True,
    CreateRefused, the plugin's message) instead of nothing (on main: a bare failing pass)."""
    kube = installed.kube()
    objs = render(default_scheduler_source(tmp_path, NOFIN))
    apply_all(kube, [o for o in objs if o["kind"] == "Namespace"])
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    rbac = [o for o in install(overlay, NOFIN, "-nofin") if o["kind"] != "CustomResourceDefinition"]
    role = next(o for o in rbac if o["kind"] == "Role" and any("podcliquesets/finalizers" in r.get("resources", []) for r in o["rules"]))
    role["rules"] = [r for r in role["rules"] if "podcliquesets/finalizers" not in r.get("resources", [])]
    apply_all(kube, rbac)
    apply_all(kube, [o for o in objs if o["kind"] != "Namespace"])
    config = service_account_kubeconfig(installed, NOFIN, "grove-gitops-gate-lifter-namespaced-nofin", tmp_path / "kubeconfig")
    log = tmp_path / "agent.log"
    record = f"/apis/gitops.grove.io/v1alpha1/namespaces/{NOFIN}/podcliquesets/{EXAMPLE}"

    def blocked() -> dict[str, Any]:
        conditions = (kube.raw("GET", record).get("status") or {}).get("conditions") or []
        return next((c for c in conditions if c["type"] == "ScaleBlocked"), {})

    try:
        with running_agent(config, log, "--namespace", NOFIN, "--lease-namespace", NOFIN):
            pods = sum(1 for o in objs if o["kind"] == "Pod")
            try:
                wait_until("Git's pods to run", lambda: sum(p["status"].get("phase") == "Running" for p in
                                                             kube.raw("GET", f"/api/v1/namespaces/{NOFIN}/pods")["items"]) == pods,
                           timeout=90)
                wait_until("ScaleBlocked=True on the workload", lambda: blocked().get("status") == "True", timeout=30)
            except AssertionError:
                raise AssertionError(f"{blocked()}; agent log tail:\n{log.read_text()[-3000:]}") from None
        condition = blocked()
        assert condition["reason"] == "CreateRefused", condition
        assert f"scale target PodCliqueScalingGroup {NOFIN}/{EXAMPLE}-0-prefill was not created" in condition["message"]
        assert "cannot set blockOwnerDeletion" in condition["message"], condition
        assert "cannot set blockOwnerDeletion" in log.read_text()  # logged with the server's message
    finally:
        kube.raw("DELETE", f"/api/v1/namespaces/{NOFIN}")
