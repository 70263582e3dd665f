"""The nodes of the test control plane (scripts/control-plane.sh), and what KWOK cannot do itself.

KWOK (sigs.k8s.io/kwok, tests/controlplane/kwok/) plays the kubelets: it keeps the nodes Ready
(status and Lease), turns bound pods Running and Ready and finishes graceful deletions. KWOK's
binary creates no nodes and selects pods by their own fields only, so this module does the rest,
once, with the admin credentials:

- registers the nodes of a NodeInventory (examples/cluster/node-inventory.yaml by default: the same
  hostnames, topology labels and allocatable cpu / memory / nvidia.com/gpu the examples'
  feasibility check and ClusterTopologyBinding use), annotated ``kwok.x-k8s.io/node: fake`` (the
  annotation KWOK manages), and lifts the not-ready taint, as the node lifecycle controller would;
- hands a namespace labelled ``grove-gitops.test/kubelet: external`` over to another kubelet (the
  day-2 scenarios' in-process one, tests/day2/kubelet.py, which can withhold, fail and crash pods on
  a test's command): a MutatingAdmissionPolicy annotates every pod created there
  ``grove-gitops.test/kubelet: external``, and KWOK's stages (kwok/stages.yaml) skip such pods.

``--check-ready`` exits 0 when the nodes exist and are Ready (the script's wait), else 1.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any

import kubernetes.client
import kubernetes.config
import yaml
from kubernetes.client.exceptions import ApiException

from grove_gitops.agent.kube import Kube

LOG = logging.getLogger("nodesim")
MERGE = "application/merge-patch+json"
INVENTORY = Path(__file__).resolve().parents[2] / "examples" / "cluster" / "node-inventory.yaml"
MANAGED = "grove-gitops.test/simulated"  # label on our nodes
#: The annotation KWOK is told to manage nodes by (``--manage-nodes-with-annotation-selector``).
KWOK_NODE = "kwok.x-k8s.io/node"
#: Namespace label: ``external`` means another simulator plays the kubelet for its pods; the
#: policy below copies it onto each pod as an annotation of the same name, which KWOK's stages
#: read. A namespace carries it from its creation on (before any pod).
HANDED_OFF = "grove-gitops.test/kubelet"
POLICY = "grove-gitops-test-kubelet-external"
MAX_NODES = 200


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
                "metadata": {"name": name, "labels": labels, "annotations": {KWOK_NODE: "fake"}},
                "spec": {},
                "status": {"capacity": allocatable, "allocatable": allocatable},
            })
            if len(nodes) >= MAX_NODES:
                break
    return nodes if limit is None else nodes[:limit]


def handoff_policy() -> list[dict[str, Any]]:
    """A MutatingAdmissionPolicy (and its binding) annotating pods of handed-off namespaces."""
    api = "admissionregistration.k8s.io/v1beta1"
    expression = f'Object{{metadata: Object.metadata{{annotations: {{"{HANDED_OFF}": "external"}}}}}}'
    return [
        {
            "apiVersion": api, "kind": "MutatingAdmissionPolicy", "metadata": {"name": POLICY},
            "spec": {
                "failurePolicy": "Fail",
                "reinvocationPolicy": "Never",
                "matchConstraints": {
                    "resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}],
                    "namespaceSelector": {"matchLabels": {HANDED_OFF: "external"}},
                },
                "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": expression}}],
            },
        },
        {"apiVersion": api, "kind": "MutatingAdmissionPolicyBinding", "metadata": {"name": POLICY}, "spec": {"policyName": POLICY}},
    ]


class Nodes:
    def __init__(self, api: kubernetes.client.ApiClient, nodes: list[dict[str, Any]]) -> None:
        self.core = kubernetes.client.CoreV1Api(api)
        self.kube = Kube(api, field_manager="nodesim")  # raw JSON writes (the typed models refuse dicts)
        self.nodes = nodes

    def register(self) -> None:
        base = "/apis/admissionregistration.k8s.io/v1beta1"
        for obj, plural in zip(handoff_policy(), ("mutatingadmissionpolicies", "mutatingadmissionpolicybindings"), strict=True):
            self.create(f"{base}/{plural}", obj)
        for node in self.nodes:
            self.create("/api/v1/nodes", node)
            # The TaintNodesByCondition admission plugin taints every new node not-ready; the node
            # lifecycle controller (not run here) lifts it once the kubelet reports Ready.
            self.kube.raw("PATCH", f"/api/v1/nodes/{node['metadata']['name']}", {"spec": {"taints": None}}, MERGE)

    def create(self, path: str, obj: dict[str, Any]) -> None:
        try:
            self.kube.raw("POST", path, obj)
        except ApiException as exc:
            if exc.status != 409:
                raise

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
    nodes = Nodes(api, inventory_nodes(args.inventory, args.nodes))
    if args.check_ready:
        return 0 if nodes.check_ready() else 1
    nodes.register()
    LOG.info("registered %d nodes for KWOK", len(nodes.nodes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
