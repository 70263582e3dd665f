"""The agent as its own process under its overlay's ServiceAccount token, on the real control plane:
it releases the example's gangs for the real kube-scheduler, no pod is bound before its gang is
released, the scaled gang waits for its base, and its Events are accepted by the real server."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes.watch
import pytest
from kubernetes.client.exceptions import ApiException

from tests.controlplane.plane import (
    Obj,
    Plane,
    agent_process,
    apply_all,
    stop_process,
    wait_until,
)
from tests.gatelifter.support import rendered_objects
from tests.support import PROJECT

NS = "inference-ds"


def default_scheduler_example(tmp: Path) -> list[Obj]:
    """examples/ with the default-scheduler profile and gang scheduling (the real kube-scheduler
    places its pods, whole gangs through the Workload API) in a namespace of its own, so it runs
    beside the KAI example of test_cluster."""
    source = tmp / "examples"
    shutil.copytree(PROJECT / "examples", source)
    config = source / "config" / "operator-configuration.yaml"
    text = config.read_text().replace("defaultProfileName: kai-scheduler", "defaultProfileName: default-scheduler")
    # Gang scheduling through Kubernetes' Workload API (scheduling.k8s.io/v1alpha1 on 1.35).
    text = text.replace("    - name: default-scheduler\n", "    - name: default-scheduler\n      config:\n        gangScheduling: true\n")
    assert "gangScheduling: true" in text
    config.write_text(text)
    for path in (source / "workloads").rglob("*.yaml"):
        path.write_text(path.read_text().replace("namespace: inference", f"namespace: {NS}").replace("name: inference\n", f"name: {NS}\n"))
    objs = rendered_objects(source)
    assert any(o["kind"] == "Namespace" and o["metadata"]["name"] == NS for o in objs)
    assert any(o["kind"] == "Workload" for o in objs)
    return objs


class PodRecorder:
    """Every pod event of a namespace in server order (resourceVersion), from before the first apply."""

    def __init__(self, plane: Plane, namespace: str) -> None:
        self.core = kubernetes.client.CoreV1Api(plane.api_client())
        self.namespace = namespace
        self.events: list[tuple[int, str, bool, str | None]] = []  # rv, name, gated, node
        self.stop = threading.Event()
        listed = self.core.list_namespaced_pod(namespace)
        self.rv = listed.metadata.resource_version if listed.metadata else None
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        w = kubernetes.watch.Watch()  # type: ignore[no-untyped-call]
        while not self.stop.is_set():
            stream = w.stream(  # type: ignore[no-untyped-call]
                self.core.list_namespaced_pod, self.namespace, resource_version=self.rv, timeout_seconds=5
            )
            for event in stream:
                pod = event["object"]
                self.rv = pod.metadata.resource_version
                self.events.append((int(pod.metadata.resource_version), pod.metadata.name, bool(pod.spec.scheduling_gates), pod.spec.node_name))
                if self.stop.is_set():
                    break

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=10)


@pytest.fixture(scope="module")
def released(installed: Plane, agent_kubeconfig: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Apply the default-scheduler example, start the agent, wait until every pod runs."""
    tmp = tmp_path_factory.mktemp("released")
    kube = installed.kube()
    objs = default_scheduler_example(tmp)
    namespace = [o for o in objs if o["kind"] == "Namespace"]
    apply_all(kube, namespace)
    recorder = PodRecorder(installed, NS)
    apply_all(kube, [o for o in objs if o["kind"] != "Namespace"])
    pods = [o for o in objs if o["kind"] == "Pod"]
    path = f"/api/v1/namespaces/{NS}/pods"
    live = kube.raw("GET", path)["items"]
    assert len(live) == len(pods) and all(p["spec"].get("schedulingGates") for p in live)
    log = tmp / "agent.log"
    agent = agent_process(agent_kubeconfig, log, "--lease-namespace", "grove-gitops", "--grace", "2")
    try:
        wait_until(
            "every pod of the example to run",
            lambda: sum(p["status"].get("phase") == "Running" for p in kube.raw("GET", path)["items"]) >= len(pods),
            timeout=120,
        )
        yield {"objs": objs, "recorder": recorder, "agent": agent, "log": log, "kube": kube}
    finally:
        recorder.close()
        stop_process(agent)


def test_the_agent_releases_every_gang_and_no_pod_is_bound_before_its_gang(released: dict[str, Any]) -> None:
    objs, recorder = released["objs"], released["recorder"]
    assert released["agent"].poll() is None, released["log"].read_text()[-3000:]
    gang_of = {o["metadata"]["name"]: o["metadata"]["labels"]["grove.io/podgang"] for o in objs if o["kind"] == "Pod"}
    events = sorted(recorder.events)
    ungated: dict[str, int] = {}  # pod -> rv at which it was first seen without gates
    bound: dict[str, int] = {}  # pod -> rv at which it was first seen bound
    for rv, name, gated, node in events:
        if not gated:
            ungated.setdefault(name, rv)
        if node:
            bound.setdefault(name, rv)
            assert not gated, f"{name} bound while gated"
    assert set(bound) == set(gang_of), "every pod of the example was bound by the real scheduler"
    # A gang is its PodGang's minimum (Σ minReplicas): pods above it may start later, as in Grove.
    minimum = {
        o["metadata"]["name"]: sum(int(g["minReplicas"]) for g in o["spec"]["podgroups"])
        for o in objs
        if o["kind"] == "PodGang"
    }
    gangs = sorted(set(gang_of.values()))
    assert len(gangs) >= 2 and set(gangs) <= set(minimum)

    def nth(times: list[int], n: int) -> int:
        return sorted(times)[n - 1]

    for gang in gangs:
        members = [p for p, g in gang_of.items() if g == gang]
        released_whole = nth([ungated[p] for p in members], minimum[gang])
        first_bind = min(bound[p] for p in members)
        assert first_bind > released_whole, f"gang {gang}: a pod was bound before the gang's minimum was released"
    # A scaled gang is released only after its base gang is scheduled (Grove's order).
    base = min(gangs, key=len)
    base_scheduled = nth([bound[p] for p, g in gang_of.items() if g == base], minimum[base])
    for gang in gangs:
        if gang != base:
            scaled_release = min(ungated[p] for p, g in gang_of.items() if g == gang)
            assert scaled_release > base_scheduled, f"scaled gang {gang} released before its base {base} was scheduled"


def test_the_agents_events_are_accepted_by_the_real_server(released: dict[str, Any]) -> None:
    """A pod fails (its status set Failed, as a kubelet does when it crashes); the agent deletes it
    and records a FailedPodDeleted Event, which the real server must accept (issue 32.1: on
    d3f038a it refuses every Event the agent posts with 422, and the agent swallows the error)."""
    kube = released["kube"]
    path = f"/api/v1/namespaces/{NS}/pods"
    victim = next(p for p in kube.raw("GET", path)["items"] if "router" in p["metadata"]["name"])
    name, uid = victim["metadata"]["name"], victim["metadata"]["uid"]
    kube.raw("PATCH", f"{path}/{name}/status", {"status": {"phase": "Failed", "reason": "Error"}}, "application/merge-patch+json")
    wait_until(
        "the agent to delete the failed pod",
        lambda: all(p["metadata"]["uid"] != uid for p in kube.raw("GET", path)["items"]),
        timeout=60,
    )

    def reasons() -> set[str]:
        items = kube.raw("GET", f"/apis/events.k8s.io/v1/namespaces/{NS}/events")["items"]
        return {str(e.get("reason")) for e in items}  # nothing else here records FailedPodDeleted

    try:
        wait_until("the agent's FailedPodDeleted Event", lambda: "FailedPodDeleted" in reasons(), timeout=20)
    except AssertionError:
        log = released["log"].read_text()
        raise AssertionError(f"no Event of the agent reached the server (seen: {reasons()}); agent log tail:\n{log[-2000:]}") from None


def test_a_scale_write_grows_the_workload_on_the_real_server(released: dict[str, Any]) -> None:
    """``kubectl scale`` of the prefill target 2 -> 3: the agent creates the third replica's pods,
    PodGang and gang objects and releases them for the real scheduler. Issue 32.2: every object the
    agent creates names its workload as owner with blockOwnerDeletion, which the
    OwnerReferencesPermissionEnforcement plugin this plane runs allows only to who may update the
    owner's finalizers; on d3f038a each create was refused 403 and the log said only ``403``."""
    kube = released["kube"]
    target = f"/apis/gitops.grove.io/v1alpha1/namespaces/{NS}/podcliquescalinggroups/llama-disagg-0-prefill"

    def exists() -> bool:
        try:
            kube.raw("GET", target)
        except ApiException:
            return False
        return True

    wait_until("the agent's scale target", exists, timeout=60)
    kube.raw("PATCH", f"{target}/scale", {"spec": {"replicas": 3}}, "application/merge-patch+json")
    path = f"/api/v1/namespaces/{NS}/pods"

    def third_replica_running() -> int:
        items = kube.raw("GET", path)["items"]
        return sum(
            "-prefill-2-" in p["metadata"]["name"] and p["status"].get("phase") == "Running"
            and not p["spec"].get("schedulingGates") for p in items
        )

    try:
        wait_until("the third prefill replica's 4 pods to run", lambda: third_replica_running() == 4, timeout=120)
    except AssertionError:
        raise AssertionError(f"agent log tail:\n{released['log'].read_text()[-3000:]}") from None
    log = released["log"].read_text()
    assert " 403" not in log and "Forbidden" not in log, log[-3000:]
