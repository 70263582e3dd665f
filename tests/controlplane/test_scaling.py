"""Autoscaling on the real control plane (issue 32.5): two autoscaled workloads in one namespace,
the agent as its own process under its ServiceAccount token, the real HPA controller, quota
admission and garbage collector.

- ``kubectl scale`` (a /scale write) grows and shrinks one workload, the other is untouched; writes
  outside the bounds get the CRD's messages (docs/autoscaling.md);
- the rendered HPA reports ``AbleToScale`` and, its bounds moved, scales the target out and in;
- a ResourceQuota refusing a pod, then one refusing the PodGang (issue 32.2), gives ``ScaleBlocked``
  with the server's message and leaves no part of the gang; lifted, the gang is created whole;
- the workload leaving Git (the applier prunes Git's objects, the agent stopped): the real garbage
  collector removes the agent's scale target, pods, PodGang and Workload through ownerReferences.

At every observed moment no pod is bound before its gang's minimum is released (GangInvariant).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from grove_gitops.agent.kube import Kube
from tests.controlplane.plane import Obj, Plane, agent_process, apply_all, path_of, stop_process, wait_until
from tests.controlplane.workloads import GangInvariant, default_scheduler_source, of_workload, render

NS = "cp-scaling"
A, B = "llama-a", "llama-b"
GITOPS = "/apis/gitops.grove.io/v1alpha1"
PODS = f"/api/v1/namespaces/{NS}/pods"


def target_path(workload: str) -> str:
    return f"{GITOPS}/namespaces/{NS}/podcliquescalinggroups/{workload}-0-prefill"


def running(kube: Kube, prefix: str) -> dict[str, str]:
    """name -> uid of the namespace's Running, released, not terminating pods starting with ``prefix``."""
    return {
        p["metadata"]["name"]: p["metadata"]["uid"]
        for p in kube.raw("GET", PODS)["items"]
        if p["metadata"]["name"].startswith(prefix) and p["status"].get("phase") == "Running"
        and not p["spec"].get("schedulingGates") and not p["metadata"].get("deletionTimestamp")
    }


def live_pods(kube: Kube, prefix: str) -> list[str]:
    return sorted(p["metadata"]["name"] for p in kube.raw("GET", PODS)["items"] if p["metadata"]["name"].startswith(prefix))


def condition(obj: Obj, kind: str) -> dict[str, Any]:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == kind), {})


def scale(kube: Kube, workload: str, replicas: int) -> None:
    kube.raw("PATCH", f"{target_path(workload)}/scale", {"spec": {"replicas": replicas}}, "application/merge-patch+json")


def wait_replicas(world: dict[str, Any], workload: str, replicas: int) -> None:
    """The prefill group of ``workload`` at ``replicas`` whole replicas (4 running pods each, no
    pod of a higher index left) and its target's status saying so."""
    kube = world["kube"]

    def done() -> bool:
        pods = running(kube, f"{workload}-0-prefill-")
        names = live_pods(kube, f"{workload}-0-prefill-")
        status = kube.raw("GET", target_path(workload)).get("status") or {}
        return (len(pods) == 4 * replicas and len(names) == 4 * replicas
                and status.get("replicas") == replicas and status.get("readyReplicas") == replicas)

    try:
        wait_until(f"{workload}'s prefill group at {replicas} replicas", done, timeout=90)
    except AssertionError:
        raise AssertionError(f"pods {live_pods(kube, workload)}; agent log tail:\n{world['log'].read_text()[-3000:]}") from None


@pytest.fixture(scope="module")
def world(installed: Plane, agent_kubeconfig: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("scaling")
    kube = installed.kube()
    objs = render(default_scheduler_source(tmp, NS, (A, B)))
    apply_all(kube, [o for o in objs if o["kind"] == "Namespace"])
    invariant = GangInvariant(installed, NS)
    apply_all(kube, [o for o in objs if o["kind"] != "Namespace"])
    log = tmp / "agent.log"
    agent = agent_process(agent_kubeconfig, log, "--lease-namespace", "grove-gitops", "--grace", "2")
    world = {"kube": kube, "objs": objs, "agent": agent, "log": log, "invariant": invariant}
    try:
        pods = sum(1 for o in objs if o["kind"] == "Pod")
        wait_until("every pod of both workloads to run", lambda: len(running(kube, "llama-")) == pods, timeout=120)
        for workload in (A, B):
            wait_replicas(world, workload, 2)
        yield world
    finally:
        invariant.close()
        stop_process(agent)
        # Free the nodes for later modules (the namespace controller finishes it).
        kube.raw("DELETE", f"/api/v1/namespaces/{NS}")


@pytest.fixture
def checked(world: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The invariants after each test: no partial gang placed, the agent alive."""
    yield world
    invariant: GangInvariant = world["invariant"]
    assert invariant.events > 0
    assert invariant.violations == [], invariant.violations


def test_kubectl_scale_out_refusals_and_scale_in_leave_the_other_workload_alone(checked: dict[str, Any]) -> None:
    kube = checked["kube"]
    bystander = running(kube, f"{A}-")
    scale(kube, B, 3)
    wait_replicas(checked, B, 3)
    # The documented refusals (docs/autoscaling.md, "Refusals"), the CRD's CEL messages.
    for replicas, message in ((5, "replicas must be less than or equal to maxReplicas"),
                              (1, "replicas must be greater than or equal to minReplicas (the floor rendered in Git)")):
        with pytest.raises(ApiException) as refused:
            scale(kube, B, replicas)
        assert refused.value.status == 422 and message in str(refused.value.body), refused.value.body
    assert kube.raw("GET", target_path(B))["spec"]["replicas"] == 3
    scale(kube, B, 2)  # scale-in: the third replica's gang goes, pods first
    wait_replicas(checked, B, 2)
    gangs = {g["metadata"]["name"] for g in kube.raw("GET", f"/apis/scheduler.grove.io/v1alpha1/namespaces/{NS}/podgangs")["items"]}
    wait_until("the scaled-in PodGang to go", lambda: f"{B}-0-prefill-2" not in {
        g["metadata"]["name"] for g in kube.raw("GET", f"/apis/scheduler.grove.io/v1alpha1/namespaces/{NS}/podgangs")["items"]})
    assert f"{A}-0-prefill-0" in gangs
    assert running(kube, f"{A}-") == bystander, "the other workload's pods were touched"
    assert checked["agent"].poll() is None


def test_the_real_hpa_controller_scales_the_target_out_and_in(checked: dict[str, Any]) -> None:
    """The rendered HPA (an External metric no adapter serves here) gets the target's /scale:
    ``AbleToScale`` True. Its bounds moved as a Git edit would, the real controller writes the
    count (out to 3, then in to 2) and the agent follows with whole gangs."""
    kube = checked["kube"]
    hpa_path = f"/apis/autoscaling/v2/namespaces/{NS}/horizontalpodautoscalers/{A}-0-prefill"

    def hpa_condition(kind: str) -> dict[str, Any]:
        return condition(kube.raw("GET", hpa_path), kind)

    wait_until("the HPA's AbleToScale", lambda: hpa_condition("AbleToScale").get("status") == "True", timeout=60)
    assert hpa_condition("AbleToScale")["reason"] in ("SucceededGetScale", "ReadyForNewScale", "SucceededRescale")
    bystander = running(kube, f"{B}-")
    kube.raw("PATCH", hpa_path, {"spec": {"minReplicas": 3}}, "application/merge-patch+json")
    wait_until("the HPA controller to write 3", lambda: kube.raw("GET", target_path(A))["spec"]["replicas"] == 3, timeout=60)
    wait_replicas(checked, A, 3)
    kube.raw("PATCH", hpa_path, {"spec": {"minReplicas": 2, "maxReplicas": 2}}, "application/merge-patch+json")
    wait_until("the HPA controller to write 2", lambda: kube.raw("GET", target_path(A))["spec"]["replicas"] == 2, timeout=60)
    wait_replicas(checked, A, 2)
    assert hpa_condition("AbleToScale").get("status") == "True"
    wait_until("the HPA to see 2 replicas", lambda: (kube.raw("GET", hpa_path).get("status") or {}).get("currentReplicas") == 2)
    assert kube.raw("GET", hpa_path)["status"]["desiredReplicas"] == 2
    apply_all(kube, [o for o in checked["objs"] if o["kind"] == "HorizontalPodAutoscaler" and o["metadata"]["name"] == f"{A}-0-prefill"])
    assert running(kube, f"{B}-") == bystander


def _quota(kube: Kube, hard: dict[str, str]) -> None:
    body = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "cap", "namespace": NS}, "spec": {"hard": hard}}
    kube.raw("POST", f"/api/v1/namespaces/{NS}/resourcequotas", body)
    path = f"/api/v1/namespaces/{NS}/resourcequotas/cap"
    # Admission charges against the quota controller's status: wait until it counted.
    wait_until("the quota's usage", lambda: set((kube.raw("GET", path).get("status") or {}).get("used") or {}) == set(hard))


@pytest.mark.parametrize("refused", ["pods", "count/podgangs.scheduler.grove.io"])
def test_a_quota_refusal_sets_scale_blocked_with_the_servers_message_and_leaves_no_part_of_the_gang(
        checked: dict[str, Any], refused: str) -> None:
    """``pods``: the third pod of the new gang is refused. ``count/podgangs``: every pod is created
    and the PodGang is refused (issue 32.2: on main the pass failed with a bare 403, the pods
    stayed and the target kept ``ScaleBlocked=False ... every gang of the count was created``)."""
    kube = checked["kube"]
    before = live_pods(kube, f"{B}-")
    gangs = kube.raw("GET", f"/apis/scheduler.grove.io/v1alpha1/namespaces/{NS}/podgangs")["items"]
    room = {"pods": str(len(live_pods(kube, "")) + 2), "count/podgangs.scheduler.grove.io": str(len(gangs))}
    _quota(kube, {refused: room[refused]})
    try:
        scale(kube, B, 3)

        def blocked() -> dict[str, Any]:
            return condition(kube.raw("GET", target_path(B)), "ScaleBlocked")

        try:
            wait_until("ScaleBlocked=True", lambda: blocked().get("status") == "True", timeout=60)
        except AssertionError:
            raise AssertionError(f"{blocked()}; agent log tail:\n{checked['log'].read_text()[-3000:]}") from None
        cond = blocked()
        assert cond["reason"] == "QuotaExceeded", cond
        assert "exceeded quota: cap" in cond["message"] and refused in cond["message"], cond
        record = kube.raw("GET", f"{GITOPS}/namespaces/{NS}/podcliquesets/{B}")
        assert condition(record, "ScaleBlocked").get("status") == "True"
        # Nothing of the refused gang stays (its created pods were deleted again).
        wait_until("the refused gang's pods to go", lambda: live_pods(kube, f"{B}-") == before, timeout=60)
    finally:
        kube.raw("DELETE", f"/api/v1/namespaces/{NS}/resourcequotas/cap")
    wait_replicas(checked, B, 3)  # lifted: the gang is created whole
    wait_until("ScaleBlocked=False", lambda: condition(kube.raw("GET", target_path(B)), "ScaleBlocked").get("status") == "False", timeout=60)
    scale(kube, B, 2)
    wait_replicas(checked, B, 2)


def test_a_workload_leaving_git_is_garbage_collected_by_the_real_gc(checked: dict[str, Any]) -> None:
    """B scaled to 3, then the agent stops (nothing of ours deletes anything from here on) and the
    applier prunes B's objects from Git: the garbage collector removes what the agent made for B
    (scale target, third replica's pods, PodGang, Workload) through their ownerReferences; A stays."""
    kube = checked["kube"]
    scale(kube, B, 3)
    wait_replicas(checked, B, 3)
    agent = checked["agent"]
    agent.terminate()
    agent.wait(timeout=30)
    bystander = running(kube, f"{A}-")
    made = [p for p in kube.raw("GET", PODS)["items"] if p["metadata"]["name"].startswith(f"{B}-0-prefill-2-")]
    assert len(made) == 4 and all(r["kind"] == "PodCliqueSet" for p in made for r in p["metadata"]["ownerReferences"])
    git = of_workload(checked["objs"], B)
    assert any(o["kind"] == "PodCliqueSet" for o in git)
    for obj in git:  # Argo CD's prune (Flux's garbage collection alike): DELETE of each Git object
        path = path_of(kube, obj)[0]
        try:
            kube.raw("DELETE", path, {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"})
        except ApiException as exc:
            assert exc.status == 404, exc.body

    def leftovers() -> list[str]:
        out = [p["metadata"]["name"] for p in kube.raw("GET", PODS)["items"] if p["metadata"]["name"].startswith(f"{B}-")]
        for plural, api in (("podgangs", "scheduler.grove.io/v1alpha1"), ("workloads", "scheduling.k8s.io/v1alpha1"),
                            ("podcliquescalinggroups", "gitops.grove.io/v1alpha1")):
            out += [f"{plural}/{o['metadata']['name']}" for o in kube.raw("GET", f"/apis/{api}/namespaces/{NS}/{plural}")["items"]
                    if o["metadata"]["name"].startswith(f"{B}-")]
        return out

    wait_until("the garbage collector to remove B's objects", lambda: leftovers() == [], timeout=90)
    assert running(kube, f"{A}-") == bystander
    assert kube.raw("GET", target_path(A))["spec"]["replicas"] == 2
