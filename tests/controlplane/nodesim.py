"""Simulated kubelets for the test control plane (scripts/control-plane.sh).

The real kube-scheduler binds pods; something must then play the kubelet, or every bound pod stays
Pending and no graceful deletion ever finishes. This does the kubelet's API side only, over the real
API with the admin credentials:

- registers the nodes of a NodeInventory (and lifts the not-ready taint, as the node lifecycle
  controller would) (examples/cluster/node-inventory.yaml by default: the same
  hostnames, topology labels and allocatable cpu / memory / nvidia.com/gpu the examples' feasibility
  check and ClusterTopologyBinding use) and keeps them Ready (status heartbeat + node Lease);
- turns every pod bound to one of them Running and Ready (status subresource, as a kubelet does);
- finishes graceful deletions of their pods (a delete with grace period 0 once deletionTimestamp is set);
- hands a namespace labelled ``grove-gitops.test/kubelet: external`` over to another simulator
  (the day-2 scenarios' in-process kubelet, tests/day2/kubelet.py, which can withhold, fail and
  crash pods on a test's command): none of its pods is touched here.

``--check-ready`` exits 0 when the nodes exist and are Ready (the script's wait), else 1.
"""

from __future__ import annotations

import argparse
import datetime
import logging
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import kubernetes.client
import kubernetes.config
import kubernetes.watch
import yaml
from kubernetes.client.exceptions import ApiException

from grove_gitops.agent.kube import Kube

LOG = logging.getLogger("nodesim")
MERGE = "application/merge-patch+json"
INVENTORY = Path(__file__).resolve().parents[2] / "examples" / "cluster" / "node-inventory.yaml"
MANAGED = "grove-gitops.test/simulated"  # label on our nodes; pods are matched by node name
HEARTBEAT_S = 10.0
#: Namespace label: ``external`` means another simulator plays the kubelet for its pods. Read
#: once per namespace; a namespace carries it from its creation on (before any pod).
HANDED_OFF = "grove-gitops.test/kubelet"
MAX_NODES = 200


def now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def now_micro() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def inventory_nodes(path: Path, limit: int | None) -> list[dict[str, Any]]:
    """Node objects of a NodeInventory, pool by pool; the first ``limit`` of them."""
    doc = yaml.safe_load(path.read_text())
    nodes: list[dict[str, Any]] = []
    for pool in doc.get("pools") or []:
        count = int(pool.get("count", 1))
        if not 0 <= count <= MAX_NODES:
            raise SystemExit(f"{path}: pool {pool.get('name')}: count {count} out of 0..{MAX_NODES}")
        allocatable = {k: str(v) for k, v in (pool.get("allocatable") or {}).items()}
        allocatable.setdefault("pods", "110")
        for i in range(count):
            name = f"{pool['name']}-{i}"
            labels = {str(k): str(v) for k, v in (pool.get("labels") or {}).items()}
            labels.update({"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", MANAGED: "true"})
            nodes.append({
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": labels},
                "spec": {},
                "status": {"capacity": allocatable, "allocatable": allocatable},
            })
            if len(nodes) >= MAX_NODES:
                break
    return nodes if limit is None else nodes[:limit]


def node_status(node: dict[str, Any]) -> dict[str, Any]:
    stamp = now()
    ready = {
        "type": "Ready",
        "status": "True",
        "reason": "KubeletReady",
        "message": "simulated kubelet is posting ready status",
        "lastHeartbeatTime": stamp,
        "lastTransitionTime": stamp,
    }
    pressure = [
        {"type": t, "status": "False", "reason": f"KubeletHas{r}", "lastHeartbeatTime": stamp, "lastTransitionTime": stamp}
        for t, r in (("MemoryPressure", "SufficientMemory"), ("DiskPressure", "NoDiskPressure"), ("PIDPressure", "SufficientPID"))
    ]
    return {
        "status": {
            "capacity": node["status"]["capacity"],
            "allocatable": node["status"]["allocatable"],
            "conditions": [ready, *pressure],
            "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}, {"type": "Hostname", "address": node["metadata"]["name"]}],
            "nodeInfo": {
                "architecture": "amd64", "operatingSystem": "linux", "kubeletVersion": "v1.35.4",
                "kubeProxyVersion": "", "containerRuntimeVersion": "simulated://1", "kernelVersion": "",
                "osImage": "simulated", "machineID": "", "systemUUID": "", "bootID": "",
            },
        }
    }


class Simulator:
    def __init__(self, api: kubernetes.client.ApiClient, nodes: list[dict[str, Any]]) -> None:
        self.core = kubernetes.client.CoreV1Api(api)
        self.kube = Kube(api, field_manager="nodesim")  # raw JSON writes (the typed models refuse dicts)
        self.nodes = nodes
        self.names = {n["metadata"]["name"] for n in nodes}
        self.stop = threading.Event()
        self.handed_off: dict[str, bool] = {}  # namespace -> its pods are another simulator's

    # -- nodes -------------------------------------------------------------------------------
    def register(self) -> None:
        for node in self.nodes:
            try:
                self.kube.raw("POST", "/api/v1/nodes", node)
            except ApiException as exc:
                if exc.status != 409:
                    raise
            # The TaintNodesByCondition admission plugin taints every new node not-ready; the node
            # lifecycle controller (not run here) lifts it once the kubelet reports Ready.
            self.kube.raw("PATCH", f"/api/v1/nodes/{node['metadata']['name']}", {"spec": {"taints": None}}, MERGE)
        self.heartbeat()

    def heartbeat(self) -> None:
        for node in self.nodes:
            name = node["metadata"]["name"]
            self.kube.raw("PATCH", f"/api/v1/nodes/{name}/status", node_status(node), MERGE)
            self.renew_lease(name)

    def renew_lease(self, name: str) -> None:
        body = {
            "metadata": {"name": name, "namespace": "kube-node-lease"},
            "spec": {"holderIdentity": name, "leaseDurationSeconds": 40, "renewTime": now_micro()},
        }
        path = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
        try:
            self.kube.raw("PATCH", f"{path}/{name}", {"spec": body["spec"]}, MERGE)
        except ApiException as exc:
            if exc.status != 404:
                raise
            self.kube.raw("POST", path, body)

    def heartbeat_loop(self) -> None:
        while not self.stop.wait(HEARTBEAT_S):
            try:
                self.heartbeat()
            except (ApiException, OSError) as exc:
                LOG.warning("heartbeat failed: %s", getattr(exc, "body", exc))

    # -- pods --------------------------------------------------------------------------------
    def handle(self, pod: Any) -> None:
        meta, spec = pod.metadata, pod.spec
        if spec.node_name not in self.names or self.is_handed_off(meta.namespace):
            return
        if meta.deletion_timestamp is not None:
            # The kubelet's last word: containers stopped, remove the object now.
            try:
                body = {"gracePeriodSeconds": 0, "preconditions": {"uid": meta.uid}}
                self.kube.raw("DELETE", f"/api/v1/namespaces/{meta.namespace}/pods/{meta.name}", body)
            except ApiException as exc:
                if exc.status not in (404, 409):
                    LOG.warning("finishing deletion of %s/%s: %s", meta.namespace, meta.name, exc.body)
            return
        if pod.status is not None and pod.status.phase not in (None, "Pending"):
            return  # running, or finished (Failed/Succeeded): a kubelet never restarts those
        stamp = now()
        containers = [c.name for c in spec.containers]
        status = {
            "status": {
                "phase": "Running",
                "hostIP": "127.0.0.1",
                "podIP": "10.244.0.1",
                "startTime": stamp,
                "conditions": [
                    {"type": t, "status": "True", "lastTransitionTime": stamp}
                    for t in ("PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready", "PodScheduled")
                ],
                "containerStatuses": [
                    {
                        "name": c, "ready": True, "started": True, "restartCount": 0,
                        "image": next(x.image for x in spec.containers if x.name == c), "imageID": "",
                        "state": {"running": {"startedAt": stamp}},
                    }
                    for c in containers
                ],
            }
        }
        try:
            self.kube.raw("PATCH", f"/api/v1/namespaces/{meta.namespace}/pods/{meta.name}/status", status, MERGE)
        except ApiException as exc:
            if exc.status != 404:
                LOG.warning("starting %s/%s: %s", meta.namespace, meta.name, exc.body)

    def is_handed_off(self, namespace: str) -> bool:
        known = self.handed_off.get(namespace)
        if known is None:
            try:
                meta = self.core.read_namespace(namespace).metadata
            except ApiException as exc:
                LOG.warning("reading namespace %s: %s", namespace, exc.body)
                return False
            known = self.handed_off[namespace] = ((meta.labels if meta else None) or {}).get(HANDED_OFF) == "external"
        return known

    def pod_loop(self) -> None:
        watch_api = kubernetes.watch.Watch()  # type: ignore[no-untyped-call]
        while not self.stop.is_set():
            try:
                listed = self.core.list_pod_for_all_namespaces(field_selector="spec.nodeName!=")
                for pod in listed.items:
                    self.handle(pod)
                rv = listed.metadata.resource_version if listed.metadata else None
                for event in watch_api.stream(  # type: ignore[no-untyped-call]
                    self.core.list_pod_for_all_namespaces,
                    field_selector="spec.nodeName!=",
                    resource_version=rv,
                    timeout_seconds=60,
                ):
                    if self.stop.is_set():
                        break
                    if event["type"] in ("ADDED", "MODIFIED"):
                        self.handle(event["object"])
            except (ApiException, OSError, ValueError) as exc:
                LOG.warning("pod watch restarts: %s", getattr(exc, "body", exc))
                self.stop.wait(1.0)

    def check_ready(self) -> bool:
        for node in self.nodes:
            try:
                live = self.core.read_node(node["metadata"]["name"])
            except ApiException:
                return False
            conditions = {c.type: c.status for c in ((live.status.conditions if live.status else None) or [])}
            if conditions.get("Ready") != "True":
                return False
        return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="nodesim", description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--nodes", type=int, default=None, help="the first N nodes of the inventory (default: all)")
    parser.add_argument("--inventory", type=Path, default=INVENTORY)
    parser.add_argument("--check-ready", action="store_true")
    args = parser.parse_args(argv)
    if args.nodes is not None and not 1 <= args.nodes <= MAX_NODES:
        parser.error(f"--nodes must be 1..{MAX_NODES}")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s nodesim %(levelname)s %(message)s")
    api = kubernetes.config.new_client_from_config(config_file=args.kubeconfig)  # type: ignore[no-untyped-call]
    sim = Simulator(api, inventory_nodes(args.inventory, args.nodes))
    if args.check_ready:
        return 0 if sim.check_ready() else 1
    signal.signal(signal.SIGTERM, lambda *_: sim.stop.set())
    sim.register()
    LOG.info("registered %d nodes", len(sim.nodes))
    threads = [threading.Thread(target=sim.heartbeat_loop, daemon=True), threading.Thread(target=sim.pod_loop, daemon=True)]
    for t in threads:
        t.start()
    while not sim.stop.wait(1.0):
        if not all(t.is_alive() for t in threads):
            LOG.error("a simulator thread died")
            return 1
    return 0


if __name__ == "__main__":
    time.tzset()
    sys.exit(main())
