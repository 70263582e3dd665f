"""The two inventory forms, their errors (``file: field: message``), and the pod arithmetic."""

from __future__ import annotations

from pathlib import Path

import pytest

from grove_gitops.feasibility.demand import NodeFilter, pod_requests
from grove_gitops.feasibility.inventory import ClusterNode
from grove_gitops.render import render_source
from tests.feasibility.helpers import clique, feasibility, gang, inventory, pcs, pool, run, source
from tests.support import plain

NODE_LIST = """\
apiVersion: v1
kind: List
metadata: {{resourceVersion: ""}}
items:
{items}
"""
NODE = """\
- apiVersion: v1
  kind: Node
  metadata:
    name: {name}
    uid: 0b6c3c1e-1111-2222-3333-444455556666
    labels: {{kubernetes.io/hostname: {name}, topology.kubernetes.io/zone: z1, example.com/block: b1, example.com/rack: {rack}}}
  spec:
    podCIDR: 10.0.0.0/24
    taints: {taints}
    unschedulable: {unschedulable}
  status:
    capacity: {{cpu: "64", memory: 528Gi, nvidia.com/gpu: "8", pods: "110"}}
    allocatable: {{cpu: 63500m, memory: 520Gi, nvidia.com/gpu: "{gpus}", pods: "110"}}
    conditions: [{{type: Ready, status: "True"}}]
"""


def _nodes(*nodes: dict[str, object]) -> str:
    defaults = {"rack": "r1", "taints": "[]", "unschedulable": "false", "gpus": 8}
    return NODE_LIST.format(items="".join(NODE.format(**{**defaults, **n}) for n in nodes))


def test_kubectl_node_list(tmp_path: Path) -> None:
    taint = '[{key: nvidia.com/gpu, value: present, effect: NoSchedule, timeAdded: "2026-01-01T00:00:00Z"}]'
    inv = _nodes({"name": "n1"}, {"name": "n2", "taints": taint}, {"name": "n3", "unschedulable": "true"})
    root = source(tmp_path, [pcs("llm", [clique("w", 2, 8)])], inv)
    code, answer = feasibility(root)
    # n2 is tainted, n3 cordoned: one node of 8 GPUs for two pods of 8.
    assert code == 3
    assert gang(answer, "llm-0")["reason"] == (
        "podgroup llm-0-w needs 16 nvidia.com/gpu for 2 pod(s); the cluster has 8 free of 8 allocatable"
    )
    assert answer["nodes"] == 3
    root = source(tmp_path / "ok", [pcs("llm", [clique("w", 2, 8)])], _nodes({"name": "n1"}, {"name": "n2"}))
    assert feasibility(root)[0] == 0
    # Nodes are inventory, never output objects.
    result = render_source(root)
    assert not [o for o in result.objects if o.obj.get("kind") == "Node"]


def test_pods_allocatable_is_counted(tmp_path: Path) -> None:
    inv = _nodes({"name": "n1"}).replace('pods: "110"}\n    conditions', 'pods: "1"}\n    conditions')
    root = source(tmp_path, [pcs("llm", [clique("w", 2, 0)])], inv)
    code, answer = feasibility(root)
    assert code == 3
    assert "needs 2 pods for 2 pod(s)" in gang(answer, "llm-0")["reason"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "apiVersion: gitops.grove.io/v1alpha1\nkind: NodeInventory\npools:\n- {name: a, count: 2, allocatable: {cpu: lots}}\n",
            "inventory.yaml: pools[0].allocatable.cpu: Invalid value: \"lots\": Value error, 'lots' is not a "
            "Kubernetes quantity (e.g. 96, 500m, 1Ti)",
        ),
        (
            "apiVersion: gitops.grove.io/v1alpha1\nkind: NodeInventory\npools:\n- {name: a, allocatable: {cpu: 1}}\n",
            "inventory.yaml: pools[0].count: Required value",
        ),
        (
            "apiVersion: gitops.grove.io/v1alpha1\nkind: NodeInventory\npools:\n"
            "- {name: a, count: 1, allocatable: {}, taints: [{key: k, effect: NoScheduled}]}\n",
            "inventory.yaml: pools[0].taints[0].effect: Unsupported value: \"NoScheduled\"",
        ),
        (
            "apiVersion: gitops.grove.io/v1alpha1\nkind: NodeInventory\npools:\n"
            "- {name: a, count: 2, labels: {kubernetes.io/hostname: h}, allocatable: {}}\n",
            "inventory.yaml: pools[0].labels.kubernetes.io/hostname: 2 nodes cannot share one hostname",
        ),
        (
            "apiVersion: gitops.grove.io/v1alpha1\nkind: NodeInventory\npools:\n"
            "- {name: a, count: 1, allocatable: {}}\n- {name: a, count: 1, allocatable: {}}\n",
            "inventory.yaml: pools[1].name: node a-0 is also defined in inventory.yaml",
        ),
        (
            "apiVersion: gitops.grove.io/v1alpha1\nkind: NodeInventory\npools:\n- {name: a, count: 1, allocatable: {cpu: -1}}\n",
            "inventory.yaml: pools[0].allocatable.cpu: Invalid value: -1: Value error, must be greater than or equal to 0",
        ),
        (
            "apiVersion: gitops.grove.io/v1alpha1\nkind: NodeInventorry\npools: []\n",
            "inventory.yaml: kind: Unsupported value: \"NodeInventorry\": gitops.grove.io has no kind NodeInventorry; "
            "did you mean NodeInventory?",
        ),
        (
            _nodes({"name": "n1", "gpus": "eight"}),
            "inventory.yaml: items[0].status.allocatable.nvidia.com/gpu: Invalid value: \"eight\"",
        ),
        (
            _nodes({"name": "n1"}, {"name": "n1"}),
            "inventory.yaml: items[1].metadata.name: node n1 is also defined in inventory.yaml",
        ),
    ],
    ids=["quantity", "count", "effect", "hostname", "duplicate", "negative", "kind-typo", "node-quantity", "node-dup"],
)
def test_bad_inventory_is_an_input_error(tmp_path: Path, text: str, expected: str) -> None:
    root = source(tmp_path, [pcs("llm", [clique("w", 1, 8)])], text)
    for command in ("feasibility", "validate"):
        result = run(command, str(root))
        assert result.exit_code == 1, result.output
        assert f"error: {expected}" in plain(result.output)
        assert "Traceback" not in result.output


def test_pod_requests_follow_the_scheduler() -> None:
    spec = {
        "containers": [
            {"name": "a", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}},
            {"name": "b", "resources": {"limits": {"cpu": "2", "nvidia.com/gpu": "1"}}},
        ],
        "initContainers": [
            {"name": "big", "resources": {"requests": {"cpu": "5"}}},
            {"name": "side", "restartPolicy": "Always", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}},
            {"name": "after", "resources": {"requests": {"cpu": "4"}}},
        ],
        "overhead": {"cpu": "100m"},
    }
    # containers 3 cpu + sidecar 0.5 = 3.5; init peak max(5, 4 + 0.5) = 5; plus overhead 0.1.
    assert pod_requests(spec) == {"cpu": 5100, "memory": 2 * 1024**3 * 1000, "nvidia.com/gpu": 1000, "pods": 1000}


def _node(labels: dict[str, str], taints: tuple[tuple[str, str, str], ...] = ()) -> ClusterNode:
    return ClusterNode("n1", labels, taints, {})


def _affinity(*exprs: dict[str, object]) -> NodeFilter:
    term = {"matchExpressions": list(exprs)}
    return NodeFilter.of(
        {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}}
    )


@pytest.mark.parametrize(
    ("expr", "matches"),
    [
        ({"key": "accel", "operator": "In", "values": ["h100", "b200"]}, True),
        ({"key": "accel", "operator": "In", "values": ["a100"]}, False),
        ({"key": "accel", "operator": "NotIn", "values": ["a100"]}, True),
        ({"key": "missing", "operator": "NotIn", "values": ["a"]}, True),
        ({"key": "accel", "operator": "Exists"}, True),
        ({"key": "accel", "operator": "DoesNotExist"}, False),
        ({"key": "gen", "operator": "Gt", "values": ["8"]}, True),
        ({"key": "gen", "operator": "Lt", "values": ["9"]}, False),
        ({"key": "accel", "operator": "Gt", "values": ["1"]}, False),
    ],
)
def test_required_node_affinity(expr: dict[str, object], matches: bool) -> None:
    assert _affinity(expr).allows(_node({"accel": "h100", "gen": "9"})) is matches


def test_tolerations() -> None:
    node = _node({}, (("gpu", "yes", "NoSchedule"), ("maint", "", "NoExecute")))
    both = NodeFilter.of({"tolerations": [{"key": "gpu", "value": "yes"}, {"key": "maint", "operator": "Exists"}]})
    assert both.allows(node)
    wrong_value = NodeFilter.of({"tolerations": [{"key": "gpu", "value": "no"}, {"key": "maint", "operator": "Exists"}]})
    assert not wrong_value.allows(node)
    everything = NodeFilter.of({"tolerations": [{"operator": "Exists"}]})
    assert everything.allows(node)
    assert not NodeFilter.of({}).allows(node)


def test_inventory_pools_and_nodes_add_up(tmp_path: Path) -> None:
    # A NodeInventory and a Node list together: 1 + 1 nodes of 8 GPUs.
    root = source(tmp_path, [pcs("llm", [clique("w", 2, 8)])], inventory(pool("p", 1)))
    (root / "nodes.yaml").write_text(_nodes({"name": "n1"}))
    assert feasibility(root)[0] == 0


def test_pods_of_a_podgroup_that_differ_are_not_merged() -> None:
    from grove_gitops.feasibility.check import _runs

    def pod(gpus: str, hostname: str) -> dict[str, object]:
        container = {"name": "m", "resources": {"limits": {"nvidia.com/gpu": gpus}}}
        return {"spec": {"hostname": hostname, "containers": [container]}}

    runs = _runs([pod("8", "a"), pod("8", "b"), pod("4", "c"), pod("8", "d")])
    assert [(dict(r.requests)["nvidia.com/gpu"], r.count) for r in runs] == [(8000, 2), (4000, 1), (8000, 1)]
