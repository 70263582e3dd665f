"""Workloads of the scaling tier: examples/ on the default-scheduler backend (Workload API gangs,
placed by the real kube-scheduler) in a namespace of its own, with GPU limits turned into small
CPU requests so the tier's workloads fit the simulated nodes beside every other module's."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes.client
import kubernetes.watch
from kubernetes.client.exceptions import ApiException

from tests.controlplane.plane import Obj, Plane, agent_process, stop_process
from tests.gatelifter.support import rendered_objects
from tests.support import PROJECT

EXAMPLE = "llama-disagg"


def default_scheduler_source(tmp: Path, namespace: str, names: tuple[str, ...] = (EXAMPLE,),
                             gpu: bool = False) -> Path:
    """A copy of examples/ rendering through the default-scheduler profile with gang scheduling,
    its PodCliqueSet once per name in ``names``, every object in ``namespace``."""
    source = tmp / f"examples-{namespace}"
    shutil.copytree(PROJECT / "examples", source)
    config = source / "config" / "operator-configuration.yaml"
    text = config.read_text().replace("defaultProfileName: kai-scheduler", "defaultProfileName: default-scheduler")
    text = text.replace("    - name: default-scheduler\n", "    - name: default-scheduler\n      config:\n        gangScheduling: true\n")
    assert "gangScheduling: true" in text
    config.write_text(text)
    workloads = source / "workloads" / "llm-inference"
    template = (workloads / f"{EXAMPLE}.yaml").read_text().replace("namespace: inference", f"namespace: {namespace}")
    if not gpu:
        template = template.replace('limits: {nvidia.com/gpu: "8"}', "requests: {cpu: 100m, memory: 64Mi}")
        template = template.replace("requests: {cpu: \"2\", memory: 4Gi}", "requests: {cpu: 100m, memory: 64Mi}")
        assert "nvidia.com/gpu" not in template
    (workloads / f"{EXAMPLE}.yaml").unlink()
    for name in names:
        (workloads / f"{name}.yaml").write_text(template.replace(f"name: {EXAMPLE}\n", f"name: {name}\n"))
    ns_file = workloads / "namespace.yaml"
    ns_file.write_text(ns_file.read_text().replace("name: inference", f"name: {namespace}"))
    return source


#: A PodCliqueSet of one clique; ``cpu_nodes`` pins its pods to the two 32-CPU nodes of the inventory.
PCS = """apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata:
  name: {name}
  namespace: {ns}
spec:
  replicas: 1
  template:
    cliques:
      - name: worker
        spec:
          roleName: worker
          replicas: {replicas}
          podSpec:{affinity}
            containers:
              - name: worker
                image: registry.example.com/worker:1
                resources:
                  requests: {{cpu: "{cpu}", memory: 1Gi}}
"""
CPU_NODES = """
            affinity:
              nodeAffinity:
                requiredDuringSchedulingIgnoredDuringExecution:
                  nodeSelectorTerms:
                    - matchExpressions:
                        - {key: kubernetes.io/hostname, operator: In, values: [cpu-0, cpu-1]}"""


def small_source(tmp: Path, namespace: str, workloads: dict[str, tuple[int, str, bool]]) -> Path:
    """A source tree on the default-scheduler profile with gang scheduling (a Workload API gang per
    PodGang): per name, a one-clique PodCliqueSet of (replicas, cpu request, on the CPU nodes)."""
    src = tmp / f"small-{namespace}"
    (src / "workloads").mkdir(parents=True)
    shutil.copytree(PROJECT / "examples" / "config", src / "config")
    config = src / "config" / "operator-configuration.yaml"
    text = config.read_text().replace("defaultProfileName: kai-scheduler", "defaultProfileName: default-scheduler")
    text = text.replace("    - name: default-scheduler\n", "    - name: default-scheduler\n      config:\n        gangScheduling: true\n")
    assert "gangScheduling: true" in text
    config.write_text(text)
    (src / "workloads" / "namespace.yaml").write_text(f"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {namespace}\n")
    for name, (replicas, cpu, pinned) in workloads.items():
        (src / "workloads" / f"{name}.yaml").write_text(
            PCS.format(name=name, ns=namespace, replicas=replicas, cpu=cpu, affinity=CPU_NODES if pinned else ""))
    return src


def of_workload(objs: list[Obj], name: str) -> list[Obj]:
    """Git's objects of one PodCliqueSet (everything labelled part-of it, and the record)."""
    return [o for o in objs if (o["metadata"].get("labels") or {}).get("app.kubernetes.io/part-of") == name
            or (o["kind"] == "PodCliqueSet" and o["metadata"]["name"] == name)]


def render(source: Path) -> list[Obj]:
    return rendered_objects(source)


class GangInvariant:
    """Watches a namespace's pods from before the first apply and checks, at every observed
    moment (each watch event, in server order), that no pod is bound while fewer than its
    gang's minimum (Σ minReplicas of its PodGang) are released: no partial gang is ever placed."""

    def __init__(self, plane: Plane, namespace: str) -> None:
        self.core = kubernetes.client.CoreV1Api(plane.api_client())
        self.kube = plane.kube()
        self.namespace = namespace
        self.pods: dict[str, tuple[bool, str | None, str | None]] = {}  # name -> gated, node, gang
        self.minimum: dict[str, int] = {}
        self.violations: list[str] = []
        self.events = 0
        self.bound: set[str] = set()
        self.stop = threading.Event()
        listed = self.core.list_namespaced_pod(namespace)
        self.rv = listed.metadata.resource_version if listed.metadata else None
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def gang_minimum(self, gang: str) -> int | None:
        if gang not in self.minimum:
            try:
                obj = self.kube.raw("GET", f"/apis/scheduler.grove.io/v1alpha1/namespaces/{self.namespace}/podgangs/{gang}")
            except ApiException:
                return None
            self.minimum[gang] = sum(int(g.get("minReplicas", 0)) for g in obj["spec"]["podgroups"])
        return self.minimum[gang]

    def observe(self, kind: str, pod: Any) -> None:
        self.events += 1
        name = pod.metadata.name
        if kind == "DELETED":
            self.pods.pop(name, None)
            return
        gang = (pod.metadata.labels or {}).get("grove.io/podgang")
        node = pod.spec.node_name
        self.pods[name] = (bool(pod.spec.scheduling_gates), node, gang)
        if node and name not in self.bound:
            self.bound.add(name)
            if gang is None:
                return
            minimum = self.gang_minimum(gang)
            released = sum(1 for gated, _, g in self.pods.values() if g == gang and not gated)
            if minimum is None or released < minimum:
                self.violations.append(f"{name} bound with {released} of gang {gang}'s minimum {minimum} released")

    def run(self) -> None:
        w = kubernetes.watch.Watch()  # type: ignore[no-untyped-call]
        while not self.stop.is_set():
            try:
                for event in w.stream(  # type: ignore[no-untyped-call]
                    self.core.list_namespaced_pod, self.namespace, resource_version=self.rv, timeout_seconds=5
                ):
                    self.rv = event["object"].metadata.resource_version
                    self.observe(event["type"], event["object"])
                    if self.stop.is_set():
                        break
            except ApiException as exc:  # 410 Gone: continue from a fresh list
                if exc.status != 410:
                    raise
                self.rv = None

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=10)


@contextlib.contextmanager
def running_agent(kubeconfig: Path, log: Path, *args: str) -> Iterator[subprocess.Popen[bytes]]:
    """The agent as its own process for the duration of a ``with`` (stopped, killed if it hangs)."""
    agent = agent_process(kubeconfig, log, "--lease-namespace", "grove-gitops", "--grace", "2", *args)
    try:
        yield agent
    finally:
        stop_process(agent)
