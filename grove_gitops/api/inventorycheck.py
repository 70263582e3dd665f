"""The checks of a source's node inventory that no single field can make: every count that
sizes a loop of ``feasibility`` is bounded here, before anything iterates over it.

A NodeInventory pool is one entry with a ``count`` (``feasibility`` never expands it into
nodes), so the limits are on what does cost work: the total number of nodes of an inventory
and of the whole source (issue 21: 100 pools of 100,000 nodes ran out of memory), the pools,
and the labels, taints and resources of each pool or Node, whose strings are Kubernetes
names and label values. Two nodes of one name are refused without listing any node: a pool's
node names ``<pool>-<i>`` can only meet those of another pool of the same name, or a Node
whose name splits into that pool name and an index below its count.

Every message quotes at most :data:`SHOWN` characters of what the file says, so a hostile
megabyte-long label is not echoed back.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache

from grove_gitops.api.inventory import HOSTNAME, Node, NodeInventory, NodePool, quantity_value
from grove_gitops.errors import InputProblem
from grove_gitops.fields.k8snames import (
    dns1123_subdomain_problems,
    label_value_problems,
    qualified_name_problems,
)

#: Nodes of one NodeInventory, and of all inventories and Nodes of a source together. A pool
#: costs the same whatever its count; the total still bounds what a report lists per host.
MAX_NODES = 100_000
#: Pools of one NodeInventory (each is an entry every placement step may look at).
MAX_POOLS = 10_000
#: Labels, taints and allocatable resources of one pool or Node (real nodes carry tens).
MAX_LABELS = 256
MAX_TAINTS = 64
MAX_RESOURCES = 64
#: The largest allocatable amount, in the resource's unit (Kubernetes' int64 quantity).
MAX_AMOUNT = 2**63 - 1
#: A node name becomes the ``kubernetes.io/hostname`` label value, at most 63 characters.
MAX_NODE_NAME = 63
#: How much of a refused string a message quotes.
SHOWN = 64


def shown(value: str) -> str:
    """``value`` quoted, cut to :data:`SHOWN` characters (a message never echoes a megabyte)."""
    text = value if len(value) <= SHOWN else value[:SHOWN] + "..."
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass(frozen=True)
class Entry:
    """One pool (``prefix`` ``pools[i]``) or Node (``items[i].`` or empty) of a file."""

    file: str
    prefix: str
    labels: Mapping[str, str]
    taints: Sequence[tuple[str, str | None]]
    allocatable: Mapping[str, str | int | float]


#: Pools repeat their label keys, values and resource names: each is checked once.
_name_problems = lru_cache(maxsize=4096)(qualified_name_problems)
_value_problems = lru_cache(maxsize=4096)(label_value_problems)


def _count_problem(entry: Entry, field: str, have: int, limit: int, what: str) -> InputProblem | None:
    if have <= limit:
        return None
    return InputProblem(entry.file, f"{entry.prefix}{field}", f"Too many: {have}: must have at most {limit} {what}")


def _entry_problems(entry: Entry, labels_field: str, taints_field: str, alloc_field: str) -> Iterator[InputProblem]:
    """Counts first: a list over its limit is not looked into (its size is the problem)."""
    where = entry.file
    too_many = [
        _count_problem(entry, labels_field, len(entry.labels), MAX_LABELS, "labels"),
        _count_problem(entry, taints_field, len(entry.taints), MAX_TAINTS, "taints"),
        _count_problem(entry, alloc_field, len(entry.allocatable), MAX_RESOURCES, "resources"),
    ]
    yield from (p for p in too_many if p is not None)
    if too_many[0] is None:
        path = f"{entry.prefix}{labels_field}"
        for key, value in entry.labels.items():
            key_problems = _name_problems(key)
            for p in key_problems:
                yield InputProblem(where, path, f"Invalid value: {shown(key)}: {p}")
            for p in [] if key_problems else _value_problems(value):
                yield InputProblem(where, f"{path}.{key}", f"Invalid value: {shown(value)}: {p}")
    if too_many[1] is None:
        for i, (taint_key, taint_value) in enumerate(entry.taints):
            path = f"{entry.prefix}{taints_field}[{i}]"
            for p in _name_problems(taint_key):
                yield InputProblem(where, f"{path}.key", f"Invalid value: {shown(taint_key)}: {p}")
            for p in _value_problems(taint_value or ""):
                yield InputProblem(where, f"{path}.value", f"Invalid value: {shown(taint_value or '')}: {p}")
    if too_many[2] is None:
        for name, amount in entry.allocatable.items():
            path = f"{entry.prefix}{alloc_field}"
            for p in _name_problems(name):
                yield InputProblem(where, path, f"Invalid value: {shown(name)}: {p}")
            if _amount(amount) > MAX_AMOUNT:
                yield InputProblem(where, f"{path}.{name}", f"Invalid value: must be no more than {MAX_AMOUNT}")


@lru_cache(maxsize=4096)
def _amount(value: str | int | float) -> Decimal:
    return quantity_value(value)


def _pool_name_problems(file: str, i: int, pool: NodePool) -> Iterator[InputProblem]:
    """A pool's node names ``<name>-<i>`` are node names and hostname label values."""
    last = f"{pool.name}-{pool.count - 1}"
    problems = dns1123_subdomain_problems(pool.name)
    if not problems and len(last) > MAX_NODE_NAME:
        problems = [f"its last node name {last} must be no more than {MAX_NODE_NAME} characters (a hostname)"]
    for p in problems:
        yield InputProblem(file, f"pools[{i}].name", f"Invalid value: {shown(pool.name)}: {p}")


def split_node_name(name: str) -> tuple[str, int] | None:
    """``a-b-12`` → (``a-b``, 12): the pool and index a generated node name would come from
    (None when ``name`` is no ``<pool>-<index>``; ``a-012`` is none, as ``a-12`` is generated)."""
    pool, sep, index = name.rpartition("-")
    if not sep or not pool or not index.isascii() or not index.isdigit() or len(index) > 6:
        return None
    if str(int(index)) != index:
        return None
    return pool, int(index)


def inventory_problems(
    inventories: Sequence[tuple[str, NodeInventory]], nodes: Sequence[tuple[str, str, Node]]
) -> list[InputProblem]:
    """Problems of the inventories (file, model) and Nodes (file, field prefix, model) of a
    source, in O(pools + Nodes): limits, names, and two nodes of one name."""
    problems: list[InputProblem] = []
    #: Pool name → (file, count) of its first pool; Node name → file of its first Node.
    pools: dict[str, tuple[str, int]] = {}
    named: dict[str, str] = {}
    total = 0
    over = False

    def count(file: str, field: str, n: int) -> None:
        nonlocal total, over
        total += n
        if total > MAX_NODES and not over:
            over = True
            problems.append(
                InputProblem(
                    file,
                    field,
                    f"Too many: the source's node inventories hold {total} nodes so far: "
                    f"must have at most {MAX_NODES} nodes in total",
                )
            )

    for file, inventory in inventories:
        if len(inventory.pools) > MAX_POOLS:
            problems.append(
                InputProblem(file, "pools", f"Too many: {len(inventory.pools)}: must have at most {MAX_POOLS} pools")
            )
            continue
        own = sum(p.count for p in inventory.pools)
        if own > MAX_NODES:
            problems.append(
                InputProblem(
                    file, "pools", f"Too many: {own}: must have at most {MAX_NODES} nodes in total (the sum of the counts)"
                )
            )
            over = True
        for i, pool in enumerate(inventory.pools):
            problems += _pool_name_problems(file, i, pool)
            entry = Entry(file, f"pools[{i}].", pool.labels, [(t.key, t.value) for t in pool.taints], pool.allocatable)
            problems += _entry_problems(entry, "labels", "taints", "allocatable")
            if pool.count > 1 and HOSTNAME in pool.labels:
                problems.append(
                    InputProblem(
                        file,
                        f"pools[{i}].labels.{HOSTNAME}",
                        f"{pool.count} nodes cannot share one hostname; leave it out (each node gets its own)",
                    )
                )
            first = pools.get(pool.name)
            if first is not None:
                problems.append(InputProblem(file, f"pools[{i}].name", f"node {pool.name}-0 is also defined in {first[0]}"))
            else:
                pools[pool.name] = (file, pool.count)
            count(file, f"pools[{i}].count", pool.count)
    for file, prefix, node in nodes:
        dot = f"{prefix}." if prefix else ""
        spec = node.spec.taints or []
        entry = Entry(file, dot, node.metadata.labels or {}, [(t.key, t.value) for t in spec], node.allocatable())
        problems += _entry_problems(entry, "metadata.labels", "spec.taints", "status.allocatable")
        name = node.metadata.name
        split = split_node_name(name)
        pool_of = pools.get(split[0]) if split is not None else None
        first_file = pool_of[0] if pool_of is not None and split is not None and split[1] < pool_of[1] else None
        first_file = first_file or named.get(name)
        if first_file is not None:
            problems.append(InputProblem(file, f"{dot}metadata.name", f"node {name} is also defined in {first_file}"))
        named.setdefault(name, file)
        count(file, f"{dot}metadata.name", 1)
    return problems
