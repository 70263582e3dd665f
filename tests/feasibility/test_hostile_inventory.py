"""Hostile node inventories (issue 21, item 2): every count that sizes a loop is bounded.

A 68 KB NodeInventory of 100 pools x 100,000 nodes ran ``feasibility`` and ``validate`` out of
memory: a pool was expanded into one object per node. Now a pool is one entry with a count,
the nodes of an inventory and of a source are limited to ``MAX_NODES``, and pools, labels,
taints and resources are bounded and checked as Kubernetes names. The fuzz class throws random
pool counts (up to 100 x 100,000), labels (huge, invalid, many) and duplicate pools at
``validate`` and ``feasibility``: an answer or a clean ``file: field: message`` error, never a
traceback; a few worst cases run in a subprocess whose address space is capped at 1.5 GB.
The equivalence property: a pool of N identical nodes answers as N Nodes listed one by one.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from grove_gitops.api.inventory import NodeInventory
from grove_gitops.api.inventorycheck import MAX_LABELS, MAX_NODES, MAX_POOLS, SHOWN, inventory_problems
from tests.feasibility.helpers import BLOCK, HOST, RACK, ZONE, clique, gang, inventory, pack, pcs, pool, run, source
from tests.support import plain

#: The address space of a subprocess running a worst case.
MEMORY_CAP = 1536 * 1024 * 1024
WORKLOAD = [pcs("llm", [clique("w", 2, 4, topology=pack("host"))], topology=pack("rack"))]


def _cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``grove-gitops ARGS ROOT`` in a subprocess with its address space capped."""

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))

    return subprocess.run(
        [sys.executable, "-m", "grove_gitops", args[0], str(root), *args[1:]],
        capture_output=True,
        text=True,
        preexec_fn=cap,
        timeout=600,  # a hang guard only, far above the second or two it takes
        check=False,
    )


def _pools(n: int, count: int) -> list[dict[str, Any]]:
    return [pool(f"pool-{i}", count, rack=f"r{i}") for i in range(n)]


def test_the_reported_inventory_is_a_clean_limit_error(tmp_path: Path) -> None:
    # The finding: 100 pools of 100,000 nodes each, every pool within its own limit.
    root = source(tmp_path, WORKLOAD, inventory(*_pools(100, 100_000)))
    for command in ("feasibility", "validate"):
        result = _cli(root, command)
        assert result.returncode == 1, result.stderr[-2000:]
        assert "Traceback" not in result.stderr
        assert (
            f"error: inventory.yaml: pools: Too many: 10000000: must have at most {MAX_NODES} nodes in total"
        ) in plain(result.stderr)


@pytest.mark.parametrize("output", ["text", "json"])
def test_the_largest_legal_inventory_is_answered_in_bounded_memory(tmp_path: Path, output: str) -> None:
    # MAX_NODES nodes in one pool, with a host level: 100,000 hosts, none of them expanded
    # for the search (the JSON answer still lists each host, as its contract says).
    root = source(tmp_path, WORKLOAD, inventory(pool("big", MAX_NODES)))
    result = _cli(root, "feasibility", "--output", output)
    assert result.returncode == 0, result.stderr[-2000:]
    if output == "json":
        answer = json.loads(result.stdout)
        assert answer["nodes"] == MAX_NODES and gang(answer, "llm-0")["fits"] is True
        hosts = [d for d in answer["domains"] if d["level"] == "host"]
        assert len(hosts) == MAX_NODES and hosts[:3] == sorted(hosts, key=lambda d: d["domain"])[:3]
        assert [d["domain"] for d in hosts if d["requested"]["nvidia.com/gpu"] != "0"] == ["z1/b1/r1/big-0"]
    else:
        assert f"1 of 1 gang(s) fit on {MAX_NODES} node(s)." in result.stdout
        assert f"host   ({MAX_NODES} domains: see --output json)" in result.stdout


def test_the_total_counts_every_inventory_of_the_source(tmp_path: Path) -> None:
    half = MAX_NODES // 2 + 1
    root = source(tmp_path, WORKLOAD, inventory(pool("a", half)))
    (root / "more.yaml").write_text(yaml.safe_dump(inventory(pool("b", half)), sort_keys=False))
    result = run("validate", str(root))
    assert result.exit_code == 1
    assert (
        f"error: more.yaml: pools[0].count: Too many: the source's node inventories hold {2 * half} nodes so far: "
        f"must have at most {MAX_NODES} nodes in total"
    ) in plain(result.output)
    # One node fewer in total is an answer.
    (root / "more.yaml").write_text(yaml.safe_dump(inventory(pool("b", MAX_NODES - half)), sort_keys=False))
    assert run("feasibility", str(root)).exit_code == 0


def _error(tmp_path: Path, inv: dict[str, Any] | str) -> str:
    """The output of ``validate``, once ``feasibility`` and ``validate`` both exit 1 cleanly."""
    root = source(tmp_path, WORKLOAD, inv)
    outputs = []
    for command in ("feasibility", "validate"):
        result = run(command, str(root))
        assert result.exit_code == 1, result.output
        assert "Traceback" not in result.output
        outputs.append(plain(result.output))
    return outputs[1]


HUGE = "x" * 1_000_000


@pytest.mark.parametrize(
    ("inv", "expected"),
    [
        (
            inventory(pool("a", 1, labels={f"example.com/l{i}": "v" for i in range(MAX_LABELS)})),
            f"inventory.yaml: pools[0].labels: Too many: {MAX_LABELS + 3}: must have at most {MAX_LABELS} labels",
        ),
        (
            inventory(pool("a", 1, labels={"accel": HUGE})),
            f'inventory.yaml: pools[0].labels.accel: Invalid value: "{"x" * SHOWN}...": must be no more than 63',
        ),
        (
            inventory(pool("a", 1, labels={HUGE: "v"})),
            f'inventory.yaml: pools[0].labels: Invalid value: "{"x" * SHOWN}...": name part must be no more than 63',
        ),
        (
            inventory(pool("a", 1, labels={"bad key!": "v"})),
            'inventory.yaml: pools[0].labels: Invalid value: "bad key!": name part must consist of',
        ),
        (
            inventory(pool("GPU_pool", 2)),
            'inventory.yaml: pools[0].name: Invalid value: "GPU_pool": a lowercase RFC 1123 subdomain',
        ),
        (
            inventory(pool("n" * 61, 100)),
            f'inventory.yaml: pools[0].name: Invalid value: "{"n" * 61}": its last node name {"n" * 61}-99 must be '
            "no more than 63 characters (a hostname)",
        ),
        (
            inventory(pool("a", 2), pool("b", 1), pool("a", 7)),
            "inventory.yaml: pools[2].name: node a-0 is also defined in inventory.yaml",
        ),
        (
            inventory(pool("a", 1, taints=[{"key": f"k{i}", "effect": "NoSchedule"} for i in range(65)])),
            "inventory.yaml: pools[0].taints: Too many: 65: must have at most 64 taints",
        ),
        (
            {**inventory(pool("a", 1)), "pools": [{**pool("a", 1), "allocatable": {"cpu": "1e30"}}]},
            f"inventory.yaml: pools[0].allocatable.cpu: Invalid value: must be no more than {2**63 - 1}",
        ),
        (
            {**inventory(), "pools": [{**pool("a", 1), "allocatable": {f"example.com/r{i}": 1 for i in range(65)}}]},
            "inventory.yaml: pools[0].allocatable: Too many: 65: must have at most 64 resources",
        ),
    ],
    ids=["labels", "huge-value", "huge-key", "bad-key", "pool-name", "long-hostname", "duplicate", "taints",
         "amount", "resources"],
)
def test_hostile_inventory_content_is_an_input_error(tmp_path: Path, inv: dict[str, Any], expected: str) -> None:
    output = _error(tmp_path, inv)
    assert f"error: {expected}" in output
    assert len(output) < 20_000  # a megabyte-long label is not echoed back


def test_pools_are_bounded() -> None:
    # (A file of 10,001 pools takes the YAML loader seconds; the check itself is what counts.)
    pools = [{"name": f"p{i}", "count": 1, "allocatable": {}} for i in range(MAX_POOLS + 1)]
    problems = inventory_problems([("inventory.yaml", NodeInventory.model_validate(inventory(*pools)))], [])
    assert [str(p) for p in problems] == [
        f"inventory.yaml: pools: Too many: {MAX_POOLS + 1}: must have at most {MAX_POOLS} pools"
    ]


def test_hostile_node_list_is_an_input_error(tmp_path: Path) -> None:
    labels = {f"example.com/l{i}": "v" for i in range(MAX_LABELS + 1)}
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "a-0", "labels": labels}}
    nodes = {"apiVersion": "v1", "kind": "List", "items": [node, {**node, "metadata": {"name": "n1", "labels": {"k": HUGE}}}]}
    root = source(tmp_path, WORKLOAD, inventory(pool("a", 2)))
    (root / "nodes.yaml").write_text(yaml.safe_dump(nodes))
    result = run("validate", str(root))
    assert result.exit_code == 1 and "Traceback" not in result.output
    output = plain(result.output)
    assert f"error: nodes.yaml: items[0].metadata.labels: Too many: {MAX_LABELS + 1}" in output
    assert "error: nodes.yaml: items[0].metadata.name: node a-0 is also defined in inventory.yaml" in output
    assert f'error: nodes.yaml: items[1].metadata.labels.k: Invalid value: "{"x" * SHOWN}..."' in output


LABEL_TEXT = st.one_of(
    st.sampled_from(["a", "r1", "example.com/x", "Bad Key", "", "-x-", "n" * 64, HUGE[:100_000]]),
    st.text(max_size=20),
)
POOL = st.fixed_dictionaries(
    {
        "name": st.one_of(st.sampled_from(["a", "b", "pool-0", "UPPER", "x" * 70]), st.text(max_size=8)),
        "count": st.one_of(st.integers(1, 10), st.integers(1, 100_000), st.just(100_000), st.integers(-1, 200_000)),
        "labels": st.dictionaries(LABEL_TEXT, LABEL_TEXT, max_size=4),
        "allocatable": st.fixed_dictionaries(
            {"cpu": st.sampled_from(["64", "1e30", "1e3000", 8, "lots"]), "nvidia.com/gpu": st.integers(0, 16)}
        ),
    }
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(pools=st.lists(POOL, min_size=1, max_size=120), copies=st.integers(1, 2))
def test_hostile_inventories_end_in_an_answer_or_an_input_error(pools: list[dict[str, Any]], copies: int) -> None:
    """Random pool counts (up to 120 pools of 100,000), names and labels (invalid, huge,
    duplicate), in one or two files: exit 0/3 or 1, never a traceback; over the total, exit 1."""
    total = sum(p["count"] for p in pools) * copies
    try:  # a pool the model refuses (a count out of range, a bad quantity) hides the total
        NodeInventory.model_validate(inventory(*pools))
        parsed = True
    except ValidationError:
        parsed = False
    with tempfile.TemporaryDirectory() as tmp:
        root = source(Path(tmp), WORKLOAD, inventory(*pools))
        if copies == 2:
            (root / "again.yaml").write_text(yaml.safe_dump(inventory(*pools)))
        validate, feasibility = run("validate", str(root)), run("feasibility", str(root))
    assert validate.exit_code in (0, 1), validate.output
    assert feasibility.exit_code in (0, 1, 3), feasibility.output
    for result in (validate, feasibility):
        assert "Traceback" not in result.output
        assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    if total > MAX_NODES and parsed:
        assert validate.exit_code == 1 and "Too many" in validate.output
    assert (validate.exit_code == 1) == (feasibility.exit_code == 1)


def _node_list(n: int, gpus: int) -> dict[str, Any]:
    """``n`` Nodes ``p-0`` ... listed one by one, each as a pool's node would be."""
    items = []
    for j in range(n):
        labels = {HOST: f"p-{j}", ZONE: "z1", BLOCK: "b1", RACK: "r1"}
        alloc = {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": str(gpus)}
        items.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"p-{j}", "labels": labels}, "status": {"allocatable": alloc}})
    return {"apiVersion": "v1", "kind": "List", "items": items}


CLIQUES = st.lists(
    st.tuples(st.integers(1, 4), st.sampled_from([1, 2, 4, 8]), st.sampled_from([None, "host", "rack"])),
    min_size=1,
    max_size=3,
)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 12), gpus=st.sampled_from([4, 8]), cliques=CLIQUES, gangs=st.integers(1, 3))
def test_a_pool_of_n_nodes_answers_as_n_listed_nodes(n: int, gpus: int, cliques: list[tuple[int, int, str | None]], gangs: int) -> None:
    specs = [clique(f"c{i}", r, g, topology=pack(t) if t else None) for i, (r, g, t) in enumerate(cliques)]
    workloads = [pcs(f"w{k}", [dict(s) for s in specs]) for k in range(gangs)]
    with tempfile.TemporaryDirectory() as tmp:
        pooled = source(Path(tmp) / "pool", workloads, inventory(pool("p", n, gpus)))
        listed = source(Path(tmp) / "nodes", workloads, yaml.safe_dump(_node_list(n, gpus)))
        a, b = run("feasibility", str(pooled), "--output", "json"), run("feasibility", str(listed), "--output", "json")
    assert a.exit_code == b.exit_code and a.exit_code in (0, 3), a.output
    assert json.loads(a.stdout) == json.loads(b.stdout)
