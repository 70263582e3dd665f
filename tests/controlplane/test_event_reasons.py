"""Issue 32: every Event reason the agent documents (docs/agent.md, docs/day2.md, docs/autoscaling.md)
seen through ``events.k8s.io`` on the real server at least once, with the right ``regarding``
object and note. On d3f038a the real server refused every Event the agent posted, and the tests
read them from the fake's store only.

One agent (its own process, under its overlay's ServiceAccount token) and one copy of the
default-scheduler example in a namespace of its own; each test provokes one reason as minimally as
it can (the day-2 scenarios themselves are tested elsewhere) and puts the world back when the next
test needs it. The tests run in file order; each waits on the Event, never on a fixed time.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes.client.exceptions import ApiException

from grove_gitops.agent.kube import Kube
from grove_gitops.expand import ownership
from tests.controlplane.plane import Obj, Plane, agent_process, apply_all, stop_process, wait_until
from tests.gatelifter.support import rendered_objects
from tests.support import PROJECT

NS = "cp-events"
MERGE = "application/merge-patch+json"
PODS = f"/api/v1/namespaces/{NS}/pods"
GANGS = f"/apis/scheduler.grove.io/v1alpha1/namespaces/{NS}/podgangs"
DAY2 = "gitops.grove.io/day2"
BASE = "llama-disagg-0"  # the replica's base PodGang (its day-2 record, RollingUpdate condition, Events)
TARGET = f"/apis/gitops.grove.io/v1alpha1/namespaces/{NS}/podcliquescalinggroups/llama-disagg-0-prefill"


def example(tmp: Path, router_image: str = "ghcr.io/example/llm-router:1.4.2") -> list[Obj]:
    """examples/ on the default scheduler (the real kube-scheduler binds its pods) in NS."""
    source = tmp / "examples"
    shutil.copytree(PROJECT / "examples", source, dirs_exist_ok=True)
    config = source / "config" / "operator-configuration.yaml"
    config.write_text(config.read_text().replace("defaultProfileName: kai-scheduler", "defaultProfileName: default-scheduler"))
    for path in (source / "workloads").rglob("*.yaml"):
        text = path.read_text().replace("namespace: inference", f"namespace: {NS}").replace("name: inference\n", f"name: {NS}\n")
        docs = [d for d in yaml.safe_load_all(text.replace("ghcr.io/example/llm-router:1.4.2", router_image)) if d]
        for doc in docs:  # no requests: the copy fits beside the other modules' GPU workloads
            for clique in (doc.get("spec") or {}).get("template", {}).get("cliques") or []:
                for container in clique["spec"]["podSpec"].get("containers") or []:
                    container.pop("resources", None)
        path.write_text(yaml.safe_dump_all(docs))
    return rendered_objects(source)


def in_namespace(objs: list[Obj]) -> list[Obj]:
    return [o for o in objs if o["metadata"].get("namespace") == NS or (o["kind"] == "Namespace" and o["metadata"]["name"] == NS)]


@pytest.fixture(scope="module")
def world(installed: Plane, agent_kubeconfig: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("event-reasons")
    kube = installed.kube()
    objs = in_namespace(example(tmp))
    apply_all(kube, objs)
    pods = [o for o in objs if o["kind"] == "Pod"]
    log = tmp / "agent.log"
    agent = agent_process(agent_kubeconfig, log, "--lease-namespace", "grove-gitops", "--grace", "2", "--drift-interval", "1")
    try:
        wait_until("every pod of the example to run", lambda: running(kube) >= len(pods), timeout=120)
        yield {"kube": kube, "objs": objs, "tmp": tmp, "log": log, "agent": agent}
    finally:
        stop_process(agent)
        kube.raw("DELETE", f"/api/v1/namespaces/{NS}")  # what the provocations left, out of later modules' way


def running(kube: Kube) -> int:
    return sum(p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp") for p in kube.raw("GET", PODS)["items"])


def events(kube: Kube, reason: str) -> list[Obj]:
    return [e for e in kube.raw("GET", "/apis/events.k8s.io/v1/events")["items"] if e.get("reason") == reason]


def seen(world: dict[str, Any], reason: str, kind: str, name: str, note: str, timeout: float = 60) -> Obj:
    """The agent's Event of ``reason`` about ``kind``/``name`` whose note holds ``note``."""
    kube: Kube = world["kube"]

    def matching() -> list[Obj]:
        return [e for e in events(kube, reason)
                if e["regarding"].get("kind") == kind and e["regarding"].get("name") == name and note in str(e.get("note"))]

    try:
        wait_until(f"a {reason} Event about {kind} {name}", lambda: bool(matching()), timeout=timeout)
    except AssertionError:
        others = [(e["regarding"].get("name"), e.get("note")) for e in events(kube, reason)]
        raise AssertionError(f"no {reason} Event about {kind} {name} with {note!r} (others: {others}); agent log:\n"
                             f"{world['log'].read_text()[-3000:]}") from None
    event = matching()[0]
    assert event["reportingController"] and event["regarding"].get("namespace", "") in (NS, "")
    return event


def pod_named(kube: Kube, part: str) -> Obj:
    return next(p for p in kube.raw("GET", PODS)["items"] if part in p["metadata"]["name"] and not p["metadata"].get("deletionTimestamp"))


def test_failed_pod_deleted(world: dict[str, Any]) -> None:
    kube: Kube = world["kube"]
    victim = pod_named(kube, "-router-")
    name = victim["metadata"]["name"]
    kube.raw("PATCH", f"{PODS}/{name}/status", {"status": {"phase": "Failed", "reason": "Error"}}, MERGE)
    seen(world, "FailedPodDeleted", "PodGang", victim["metadata"]["labels"]["grove.io/podgang"], f"pod {name}")
    # The GitOps tool re-creates it (selfHeal); the agent releases it into its running gang.
    wait_until("the failed pod gone", lambda: all(p["metadata"]["uid"] != victim["metadata"]["uid"] for p in kube.raw("GET", PODS)["items"]))
    apply_all(kube, [o for o in world["objs"] if o["kind"] == "Pod" and o["metadata"]["name"] == name])


def test_unwanted_pod_deleted(world: dict[str, Any]) -> None:
    """A released pod of the workload that no PodGang lists, at an index beyond the clique's
    replicas (what a scale-in leaves), goes after the grace."""
    kube: Kube = world["kube"]
    model = pod_named(kube, "-router-0-")
    labels = {**model["metadata"]["labels"], "grove.io/podclique-pod-index": "7"}
    name = model["metadata"]["name"].replace("-router-0-", "-router-7-")
    spec = {k: v for k, v in model["spec"].items() if k not in ("nodeName", "schedulingGates")}
    spec["hostname"] = spec["hostname"].replace("-router-0", "-router-7")
    stray = {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": name, "namespace": NS, "labels": labels,
        "annotations": {ownership.RENDERED_BY: ownership.proof(NS, name, labels)}}, "spec": spec}
    kube.raw("POST", PODS, stray)
    seen(world, "UnwantedPodDeleted", "PodGang", labels["grove.io/podgang"], f"pod {name}")


def test_malformed_podgang(world: dict[str, Any]) -> None:
    kube: Kube = world["kube"]
    gang = next(g for g in kube.raw("GET", GANGS)["items"] if DAY2 in (g["metadata"].get("annotations") or {}))
    name, original = gang["metadata"]["name"], gang["metadata"]["annotations"][DAY2]
    kube.raw("PATCH", f"{GANGS}/{name}", {"metadata": {"annotations": {DAY2: "not json"}}}, MERGE)
    try:
        seen(world, "MalformedPodGang", "PodGang", name, "cannot evaluate this PodGang")
    finally:
        kube.raw("PATCH", f"{GANGS}/{name}", {"metadata": {"annotations": {DAY2: original}}}, MERGE)


def test_invalid_workload(world: dict[str, Any]) -> None:
    """A workload record no render writes (another name, same inputs) is refused, not acted on."""
    kube: Kube = world["kube"]
    records = f"/apis/gitops.grove.io/v1alpha1/namespaces/{NS}/podcliquesets"
    record = kube.raw("GET", f"{records}/llama-disagg")
    bad = {"apiVersion": record["apiVersion"], "kind": record["kind"], "spec": json.loads(json.dumps(record["spec"])),
           "metadata": {"name": "evil", "namespace": NS, "labels": record["metadata"].get("labels") or {}}}
    for target in bad["spec"].get("scaleTargets") or []:
        target["name"] = target["name"].replace("llama-disagg", "evil")
    kube.raw("POST", records, bad)
    try:
        seen(world, "InvalidWorkload", "PodCliqueSet", "evil", "")
    finally:
        kube.raw("DELETE", f"{records}/evil")


def test_gang_creation_refused(world: dict[str, Any]) -> None:
    """A quota that holds no further pod: the agent's scale-out gang is refused, said on the target."""
    kube: Kube = world["kube"]
    wait_until("the agent's scale target", lambda: _exists(kube, TARGET), timeout=60)
    live = len(kube.raw("GET", PODS)["items"])
    quota = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "full", "namespace": NS}, "spec": {"hard": {"pods": str(live)}}}
    kube.raw("POST", f"/api/v1/namespaces/{NS}/resourcequotas", quota)
    wait_until("the quota counted", lambda: "used" in (kube.raw("GET", f"/api/v1/namespaces/{NS}/resourcequotas/full").get("status") or {}))
    replicas = int(kube.raw("GET", f"{TARGET}/scale")["spec"]["replicas"])
    kube.raw("PATCH", f"{TARGET}/scale", {"spec": {"replicas": replicas + 1}}, MERGE)
    try:
        seen(world, "GangCreationRefused", "PodCliqueScalingGroup", "llama-disagg-0-prefill", "was not created")
    finally:
        kube.raw("PATCH", f"{TARGET}/scale", {"spec": {"replicas": replicas}}, MERGE)
        kube.raw("DELETE", f"/api/v1/namespaces/{NS}/resourcequotas/full")


def _exists(kube: Kube, path: str) -> bool:
    try:
        kube.raw("GET", path)
    except ApiException:
        return False
    return True


def test_rolling_update_started_replacement_missing_and_complete(world: dict[str, Any]) -> None:
    """A router image bump in Git. The PodGangs (wave 0) are applied and the new pods (wave 10)
    held back: the step waits for them (ReplacementPodMissing after 10 s); then they arrive and the
    rollout completes."""
    kube: Kube = world["kube"]
    new = in_namespace(example(world["tmp"] / "bumped", "ghcr.io/example/llm-router:1.4.3"))
    new_pods = [o for o in new if o["kind"] == "Pod" and "-router-" in o["metadata"]["name"]]
    old_names = {o["metadata"]["name"] for o in world["objs"] if o["kind"] == "Pod"}
    assert new_pods and not {o["metadata"]["name"] for o in new_pods} & old_names
    apply_all(kube, [o for o in new if o["kind"] != "Pod"])
    base = BASE
    seen(world, "RollingUpdateStarted", "PodGang", base, "")
    seen(world, "ReplacementPodMissing", "PodGang", base, "to be created by the GitOps tool", timeout=60)
    apply_all(kube, new_pods)
    seen(world, "RollingUpdateComplete", "PodGang", base, "updated", timeout=120)
    world["objs"] = new


def test_gang_terminated(world: dict[str, Any]) -> None:
    """The replica's base PodGang says a termination delay of 1 s; a router pod goes and no GitOps
    tool brings it back: the breach outlasts the delay and the gang is terminated."""
    kube: Kube = world["kube"]
    gang = kube.raw("GET", f"{GANGS}/{BASE}")
    day2 = json.loads(gang["metadata"]["annotations"][DAY2])
    day2["terminationDelaySeconds"] = 1
    name = gang["metadata"]["name"]
    kube.raw("PATCH", f"{GANGS}/{name}", {"metadata": {"annotations": {DAY2: json.dumps(day2)}}}, MERGE)
    routers = [p for p in kube.raw("GET", PODS)["items"] if "-router-" in p["metadata"]["name"]]
    for pod in routers:  # below the router's minAvailable
        kube.raw("DELETE", f"{PODS}/{pod['metadata']['name']}")
    seen(world, "GangTerminated", "PodGang", name, "minAvailable breached", timeout=90)


def test_topology_drift_detected(world: dict[str, Any]) -> None:
    kube: Kube = world["kube"]
    binding = {"apiVersion": "grove.io/v1alpha1", "kind": "ClusterTopologyBinding", "metadata": {"name": "cp-events-drift"},
               "spec": {"levels": [{"domain": "host", "key": "kubernetes.io/hostname"}],
                        "schedulerTopologyBindings": [{"schedulerName": "kai-scheduler", "topologyReference": "cp-events-missing"}]}}
    kube.raw("POST", "/apis/grove.io/v1alpha1/clustertopologybindings", binding)
    try:
        seen(world, "TopologyDriftDetected", "ClusterTopologyBinding", "cp-events-drift", 'KAI Topology "cp-events-missing" not found')
    finally:
        kube.raw("DELETE", "/apis/grove.io/v1alpha1/clustertopologybindings/cp-events-drift")
