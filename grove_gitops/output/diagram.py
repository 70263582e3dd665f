"""The gang structure of one PodCliqueSet as a Mermaid ``flowchart`` (docs/diagrams.md).

PodCliqueSet → replicas → PodGangs (base, scaled) → scaling-group topology groups →
podgroups (``minReplicas`` / pods) → the backend's gang objects and their named parts.

Everything is read from the *rendered* objects of one shard, never from the source, so the
shard README (written while rendering) and ``diff``'s comment (reading two rendered trees)
draw the same picture from the same bytes. No backend is named here: a PodGang lists its
scheduler objects in ``gitops.grove.io/gang-objects``, and a gang object is drawn
generically: its gang-relevant scalar fields (``min*``, topology, tiers, queue, mode,
sizes) as label lines, every list item with a ``name`` under its ``spec`` as a child node,
and a ``parent*`` field that names a sibling as the edge to that sibling. A new backend is
drawn without touching this module.

Safety: object names come from an untrusted source tree. No text of an object ever becomes
a node id (ids are ``n0``, ``n1``, ... in drawing order), and every label character outside
a small safe set is written as a Mermaid entity code (``#34;``), so no name can close a
label, start a ``click``/``%%{init}%%`` directive or smuggle HTML.

Size: identical replicas (same structure once the replica's name prefix is ignored) are
drawn once and noted as ``replicas 1..7 like 0``; at most :data:`MAX_CHILDREN` children per
node and :data:`MAX_NODES` nodes in all are drawn, with a note saying how many were left out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

#: Nodes drawn at most per diagram (Mermaid and GitHub stay readable and fast well below 500).
MAX_NODES = 200
#: Children drawn at most under one node (podgroups of a gang, sub-groups of a PodGroup).
MAX_CHILDREN = 24
#: Label lines of scheduler facts at most per gang-object node.
MAX_FACTS = 5
#: Nesting depth of named list items drawn under a gang object.
MAX_DEPTH = 3

GANG_OBJECTS = "gitops.grove.io/gang-objects"
DAY2 = "gitops.grove.io/day2"
SCHEDULER_LABEL = "grove.io/scheduler-name"
TOPOLOGY_NAME = "grove.io/topology-name"
PODGANG_GROUP = "scheduler.grove.io"

#: Words that make a gang object's scalar field worth a label line.
_FACT_WORDS = ("min", "topolog", "tier", "queue", "mode", "size", "count", "level")
#: Field names too generic to stand alone in a label: their parent's name goes first.
_GENERIC = frozenset({"key", "mode", "required", "preferred", "name", "level"})
#: Label characters written as they are; everything else becomes ``#<code>;``.
_UNSAFE = re.compile(r"[^A-Za-z0-9 ._/:=+-]")

#: Node styles, by node class. Fixed text: never built from input.
_CLASS_DEFS = (
    "classDef pcs fill:#e8f0fe,stroke:#1a73e8,color:#0b2e59",
    "classDef replica fill:#f1f3f4,stroke:#5f6368,color:#202124",
    "classDef gang fill:#e6f4ea,stroke:#188038,color:#0d3d1c",
    "classDef scaled fill:#fef7e0,stroke:#b06000,color:#3c2a00",
    "classDef group fill:#fff,stroke:#188038,stroke-dasharray:4 2,color:#202124",
    "classDef podgroup fill:#fff,stroke:#5f6368,color:#202124",
    "classDef backend fill:#f3e8fd,stroke:#8430ce,color:#2d0a4e",
    "classDef part fill:#fff,stroke:#8430ce,color:#2d0a4e",
    "classDef note fill:#fff,stroke:#9aa0a6,stroke-dasharray:2 2,color:#5f6368",
)
#: Diff marks (see :func:`mark_changes`).
_MARK_DEFS = (
    "classDef added fill:#d2f4dc,stroke:#137333,stroke-width:3px",
    "classDef changed fill:#feefc3,stroke:#e37400,stroke-width:3px",
    "classDef removed fill:#fce8e6,stroke:#c5221f,stroke-width:3px,stroke-dasharray:6 3",
)
MARKS = ("added", "changed", "removed")


def escape_label(text: str) -> str:
    """``text`` with every character outside ``[A-Za-z0-9 ._/:=+-]`` as a Mermaid entity code.

    Mermaid decodes ``#<decimal>;`` inside a quoted label, so ``"``, ``<``, ``#``, ``;``,
    backticks, brackets, ``%`` and newlines all survive as text and none of them can end
    the label or open markup.
    """
    # One regex pass over the text, not a match per character (issue 35.4: every shard README).
    return _UNSAFE.sub(lambda m: f"#{ord(m.group())};", text)


@dataclass(frozen=True)
class Node:
    """One box: ``key`` is its identity across two renders (for diff marks), never printed."""

    key: str
    lines: tuple[str, ...]
    cls: str


@dataclass
class Graph:
    """Nodes in drawing order and edges ``(from, to, dotted)`` between their indices."""

    nodes: list[Node] = field(default_factory=list)
    edges: list[tuple[int, int, bool]] = field(default_factory=list)

    def add(self, node: Node, parent: int | None = None, dotted: bool = False) -> int:
        self.nodes.append(node)
        index = len(self.nodes) - 1
        if parent is not None:
            self.edges.append((parent, index, dotted))
        return index

    @property
    def empty(self) -> bool:
        return not self.nodes


# --- reading the rendered objects -------------------------------------------------------


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _name(obj: Mapping[str, Any]) -> str:
    return str(_meta(obj).get("name") or "")


def _annotation(obj: Mapping[str, Any], key: str) -> str:
    annotations = _meta(obj).get("annotations")
    value = annotations.get(key) if isinstance(annotations, Mapping) else None
    return value if isinstance(value, str) else ""


def _group(api_version: str) -> str:
    return api_version.split("/")[0] if "/" in api_version else ""


def is_podgang(obj: Mapping[str, Any]) -> bool:
    return obj.get("kind") == "PodGang" and _group(str(obj.get("apiVersion", ""))) == PODGANG_GROUP


def _natural(text: str) -> tuple[Any, ...]:
    """``x-2`` before ``x-10``."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", text))


def _json_list(text: str) -> list[Any]:
    try:
        value = json.loads(text) if text else []
    except ValueError:
        return []
    return value if isinstance(value, list) else []


def _replica_of(gang: Mapping[str, Any], pcs: str) -> int | None:
    """The PodCliqueSet replica of a gang: its day-2 annotation, else its name ``<pcs>-<i>...``."""
    try:
        day2 = json.loads(_annotation(gang, DAY2) or "{}")
    except ValueError:
        day2 = {}
    index = day2.get("replicaIndex") if isinstance(day2, dict) else None
    if isinstance(index, int) and not isinstance(index, bool):
        return index
    match = re.fullmatch(rf"{re.escape(pcs)}-(\d+)(?:-.*)?", _name(gang))
    return int(match.group(1)) if match else None


def _pack(constraint: Any) -> list[str]:
    """``required: key`` / ``preferred: key`` lines of a PodGang topology constraint."""
    pack = constraint.get("packConstraint") if isinstance(constraint, Mapping) else None
    if not isinstance(pack, Mapping):
        return []
    return [f"{k}: {pack[k]}" for k in ("required", "preferred") if isinstance(pack.get(k), str)]


def _short(name: str, prefix: str) -> str:
    """A podgroup's name without its ``<pcs>-<replica>-`` prefix (the diagram already says it)."""
    return name[len(prefix) :] if prefix and name.startswith(prefix) and len(name) > len(prefix) else name


# --- gang objects, drawn generically ----------------------------------------------------


def _facts(value: Any, path: tuple[str, ...] = (), relevant: bool = False) -> list[str]:
    """Gang-relevant scalar leaves of ``value`` as ``field: value`` lines, skipping named list
    items (those become child nodes) and ``parent*`` fields (those become edges).

    A leaf is relevant when any field on its path names a fact word; ``relevant`` carries that
    down the recursion, so each field name is tested once, not once per leaf below it (every
    shard README draws its gang objects: issue 35.4)."""
    out: list[str] = []
    if isinstance(value, Mapping):
        for key in value:
            if not isinstance(key, str) or key.lower().startswith("parent"):
                continue
            child = value[key]
            if isinstance(child, list) and any(isinstance(i, Mapping) and "name" in i for i in child):
                continue
            out += _facts(child, (*path, key), relevant or _names_fact(key))
    elif isinstance(value, list):
        for item in value:
            out += _facts(item, path, relevant)
    elif relevant and isinstance(value, (str, int, float)):
        label = path[-1] if path[-1] not in _GENERIC or len(path) < 2 else f"{path[-2]}.{path[-1]}"
        out.append(f"{label}: {value}")
    return out


def _names_fact(field_name: str) -> bool:
    lowered = field_name.lower()
    return any(word in lowered for word in _FACT_WORDS)


def _named_items(spec: Any, depth: int = 0) -> list[tuple[Mapping[str, Any], list[Any]]]:
    """``(item, its own named items)`` for every list item with a ``name`` below ``spec``."""
    found: list[tuple[Mapping[str, Any], list[Any]]] = []
    if depth >= MAX_DEPTH or not isinstance(spec, Mapping):
        return found
    for value in spec.values():
        if isinstance(value, list):
            for item in value:
                if isinstance(item, Mapping) and isinstance(item.get("name"), str):
                    found.append((item, _named_items(item, depth + 1)))
    return found


def _parent_ref(obj: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(field, name)`` of the first ``parent*`` field naming another object or part."""
    for key, value in obj.items():
        if isinstance(key, str) and key.lower().startswith("parent") and isinstance(value, str):
            return key, value
    return None


def _pick(candidates: list[tuple[str, int]], field_name: str) -> int | None:
    """Of the objects with the parent's name, the one whose kind the field names
    (``parentCompositePodGroupName`` → a CompositePodGroup, not a Workload of that name)."""
    for kind, index in candidates:
        if kind.lower() in field_name.lower():
            return index
    return candidates[0][1] if candidates else None


def _kind_label(obj: Mapping[str, Any]) -> str:
    group = _group(str(obj.get("apiVersion", "")))
    kind = str(obj.get("kind", ""))
    return f"{kind}.{group}" if group else kind


class _Add(Protocol):
    """Appends a node under ``parent`` (a position in the replica's list) and returns its position."""

    def __call__(self, node: Node, parent: int | None, dotted: bool = False) -> int: ...


def _parents_first(items: list[tuple[Mapping[str, Any], list[Any]]]) -> list[tuple[Mapping[str, Any], list[Any]]]:
    """Items reordered so that one whose ``parent*`` names a sibling comes after that sibling
    (KAI lists parents first, but nothing requires it). A cycle keeps the given order, so
    its first part hangs from the object and the cycle is broken there."""
    names = {str(item["name"]) for item, _ in items}
    done: set[str] = set()
    out: list[tuple[Mapping[str, Any], list[Any]]] = []
    pending = list(range(len(items)))
    while pending:
        ready = []
        for i in pending:
            ref = _parent_ref(items[i][0])
            if ref is None or ref[1] not in names or ref[1] in done:
                ready.append(i)
        if not ready:  # a cycle: keep the given order
            ready = pending
        done.update(str(items[i][0]["name"]) for i in ready)
        out += [items[i] for i in ready]
        pending = [i for i in pending if i not in set(ready)]
    return out


#: Characters that, before a replica's ``<pcs>-<i>``, make it part of a longer name.
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-")
_DIGITS = frozenset("0123456789")


def _masked(line: str, token: str) -> str:
    """``line`` with every ``token`` (a replica's ``<pcs>-<i>``) that stands as a name of its
    own, not inside a longer name or number, replaced by NUL: two replicas whose lines differ
    only there look alike. A scan with ``str.find``, not a regular expression compiled for
    each replica of each shard (issue 35.4)."""
    start = line.find(token)
    if start < 0:
        return line
    parts: list[str] = []
    done = 0
    size = len(token)
    while start >= 0:
        end = start + size
        if (start == 0 or line[start - 1] not in _NAME_CHARS) and not (end < len(line) and line[end] in _DIGITS):
            parts += [line[done:start], "\0"]
            done = end
            start = line.find(token, end)
        else:
            start = line.find(token, start + 1)
    parts.append(line[done:])
    return "".join(parts)


class _Builder:
    """Draws one shard: the PodCliqueSet box, then each replica that does not look like an
    earlier one (same boxes once the ``<pcs>-<i>`` prefix is ignored), then the notes."""

    def __init__(self, shard: str, objects: Iterable[Mapping[str, Any]]) -> None:
        self.namespace, _, self.pcs = shard.partition("/")
        self.gangs: list[Mapping[str, Any]] = []
        self.others: dict[tuple[str, str, str], Mapping[str, Any]] = {}
        for obj in objects:
            if is_podgang(obj):
                self.gangs.append(obj)
            elif obj.get("kind") != "Pod":
                self.others[(str(obj.get("apiVersion", "")), str(obj.get("kind", "")), _name(obj))] = obj
        self.graph = Graph()
        self.omitted = 0

    # one replica as a list of (node, parent position in the list or None, dotted)
    def _replica(self, index: int | None, gangs: Sequence[Mapping[str, Any]]) -> list[tuple[Node, int | None, bool]]:
        out: list[tuple[Node, int | None, bool]] = []
        rkey = f"r:{index}"

        def add(node: Node, parent: int | None, dotted: bool = False) -> int:
            out.append((node, parent, dotted))
            return len(out) - 1

        label = f"replica {index}" if index is not None else "replica ?"
        top = add(Node(rkey, (label, f"PodGangs: {len(gangs)}"), "replica"), None)
        prefix = f"{self.pcs}-{index}-" if index is not None else ""
        base = f"{self.pcs}-{index}"
        for gang in gangs:
            gname = _name(gang)
            raw = gang.get("spec")
            spec: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
            scaled = gname != base
            lines = ["PodGang " + gname, "scaled gang" if scaled else "base gang"]
            topo = _annotation(gang, TOPOLOGY_NAME)
            lines += [f"{'topology ' + topo + ' ' if topo else ''}{p}" for p in _pack(spec.get("topologyConstraint"))]
            g = add(Node(f"g:{gname}", tuple(lines), "scaled" if scaled else "gang"), top)
            podgroups = [p for p in spec.get("podgroups") or [] if isinstance(p, Mapping)]
            owner: dict[str, int] = {}
            configs = [c for c in spec.get("topologyConstraintGroupConfigs") or [] if isinstance(c, Mapping)]
            for cfg in configs[:MAX_CHILDREN]:
                cname = str(cfg.get("name", ""))
                clines = ("scaling group " + _short(cname, prefix), *_pack(cfg.get("topologyConstraint")))
                c = add(Node(f"t:{gname}/{cname}", clines, "group"), g)
                for member in cfg.get("podGroupNames") or []:
                    owner.setdefault(str(member), c)
            for pg in podgroups[:MAX_CHILDREN]:
                pname = str(pg.get("name", ""))
                refs = pg.get("podReferences")
                pods = len(refs) if isinstance(refs, list) else 0
                plines = (
                    "podgroup " + _short(pname, prefix),
                    f"minReplicas {pg.get('minReplicas', 0)} of {pods} pods",
                    *_pack(pg.get("topologyConstraint")),
                )
                add(Node(f"p:{gname}/{pname}", plines, "podgroup"), owner.get(pname, g))
            if len(podgroups) > MAX_CHILDREN:
                more = len(podgroups) - MAX_CHILDREN
                add(Node(f"p:{gname}/...", (f"{more} more podgroups not drawn",), "note"), g)
            self._gang_objects(gang, g, prefix, add)
        return out

    def _gang_objects(self, gang: Mapping[str, Any], g: int, prefix: str, add: _Add) -> None:
        gname = _name(gang)
        placed: dict[str, list[tuple[str, int]]] = {}
        refs = [r for r in _json_list(_annotation(gang, GANG_OBJECTS)) if isinstance(r, Mapping)]
        for ref in refs[:MAX_CHILDREN]:
            ident = (str(ref.get("apiVersion", "")), str(ref.get("kind", "")), str(ref.get("name", "")))
            obj = self.others.get(ident)
            okey = f"o:{gname}/{'/'.join(ident)}"
            if obj is None:
                add(Node(okey, (f"{ident[1]} {ident[2]}", "not in this shard"), "note"), g, True)
                continue
            spec = obj.get("spec")
            lines = (_kind_label(obj), ident[2], *_facts(spec)[:MAX_FACTS])
            ref_field = _parent_ref(spec) if isinstance(spec, Mapping) else None
            parent = _pick(placed.get(ref_field[1], []), ref_field[0]) if ref_field else None
            o = add(Node(okey, lines, "backend"), parent if parent is not None else g, True)
            placed.setdefault(ident[2], []).append((ident[1], o))
            self._parts(okey, _named_items(spec), o, prefix, add)
        if len(refs) > MAX_CHILDREN:
            add(Node(f"o:{gname}/...", (f"{len(refs) - MAX_CHILDREN} more gang objects not drawn",), "note"), g, True)

    def _parts(
        self, okey: str, items: list[tuple[Mapping[str, Any], list[Any]]], o: int, prefix: str, add: _Add
    ) -> None:
        by_name: dict[str, int] = {}
        for item, children in _parents_first(items[:MAX_CHILDREN]):
            name = str(item["name"])
            ref_field = _parent_ref(item)
            parent = by_name.get(ref_field[1], o) if ref_field else o
            lines = (_short(name, prefix), *_facts(item)[:MAX_FACTS])
            i = add(Node(f"{okey}/{name}", lines, "part"), parent)
            by_name.setdefault(name, i)
            self._parts(f"{okey}/{name}", children, i, prefix, add)
        if len(items) > MAX_CHILDREN:
            add(Node(f"{okey}/...", (f"{len(items) - MAX_CHILDREN} more parts not drawn",), "note"), o)

    def _signature(self, index: int | None, nodes: list[tuple[Node, int | None, bool]]) -> str:
        if index is None:
            return json.dumps([[n.lines, p, d] for n, p, d in nodes])
        token = f"{self.pcs}-{index}"
        lines = [
            [[_masked(line, token) for line in n.lines if not line.startswith("replica ")], p, d] for n, p, d in nodes
        ]
        return json.dumps(lines)

    def build(self) -> Graph:
        if not self.gangs:
            return self.graph
        replicas: dict[int | None, list[Mapping[str, Any]]] = {}
        for gang in self.gangs:
            replicas.setdefault(_replica_of(gang, self.pcs), []).append(gang)
        order = sorted(replicas, key=lambda r: (r is None, r if r is not None else 0))
        scheduler = str((_meta(self.gangs[0]).get("labels") or {}).get(SCHEDULER_LABEL, ""))
        head = ["PodCliqueSet " + self.pcs, "namespace " + self.namespace, f"replicas: {len(order)}"]
        if scheduler:
            head.append("scheduler " + scheduler)
        root = self.graph.add(Node("pcs", tuple(head), "pcs"))
        drawn: dict[str, int | None] = {}  # signature -> the replica drawn for it
        like: dict[int | None, list[int]] = {}
        for index in order:
            gangs = sorted(replicas[index], key=lambda g: (_name(g) != f"{self.pcs}-{index}", _natural(_name(g))))
            nodes = self._replica(index, gangs)
            sig = self._signature(index, nodes)
            if sig in drawn and index is not None:
                like.setdefault(drawn[sig], []).append(index)
                continue
            if len(self.graph.nodes) + len(nodes) > MAX_NODES - 2:
                self.omitted += 1
                continue
            drawn[sig] = index
            offset = len(self.graph.nodes)
            for node, parent, dotted in nodes:
                self.graph.add(node, root if parent is None else offset + parent, dotted)
            if index is not None:
                like[index] = []
        for index, copies in like.items():
            if copies:
                text = (
                    f"replicas {_ranges(copies)} like {index}"
                    if len(copies) > 1
                    else f"replica {copies[0]} like {index}"
                )
                self.graph.add(Node(f"like:{index}", (text,), "note"), root)
        if self.omitted:
            text = f"{self.omitted} more replicas not drawn: diagram size cap of {MAX_NODES} nodes"
            self.graph.add(Node("omitted", (text,), "note"), root)
        return self.graph


def _ranges(indices: Sequence[int]) -> str:
    """``1..3, 5, 7..9`` of sorted replica indices."""
    out: list[str] = []
    start = prev = indices[0]
    for i in [*indices[1:], None]:
        if i is not None and i == prev + 1:
            prev = i
            continue
        out.append(f"{start}..{prev}" if prev > start else str(start))
        if i is not None:
            start = prev = i
    return ", ".join(out)


def build_graph(shard: str, objects: Iterable[Mapping[str, Any]]) -> Graph:
    """The gang structure of shard ``<namespace>/<podcliqueset>`` from its rendered objects
    (pods are ignored and may be left out by the caller); empty when it has no PodGang."""
    return _Builder(shard, objects).build()


def to_mermaid(graph: Graph, marks: Mapping[str, str] | None = None) -> str:
    """Mermaid ``flowchart`` text of ``graph``; ``marks`` maps node keys to a class of
    :data:`MARKS`. Deterministic: same graph, same text."""
    marks = marks or {}
    lines = ["flowchart LR"]
    for i, node in enumerate(graph.nodes):
        label = "<br/>".join(escape_label(line) for line in node.lines)
        lines.append(f'  n{i}["{label}"]:::{node.cls}')
    for a, b, dotted in graph.edges:
        lines.append(f"  n{a} {'-.->' if dotted else '-->'} n{b}")
    used = {n.cls for n in graph.nodes}
    lines += [f"  {d}" for d in _CLASS_DEFS if d.split()[1] in used]
    marked = sorted((i, marks[n.key]) for i, n in enumerate(graph.nodes) if marks.get(n.key) in MARKS)
    if marked:
        used_marks = {m for _, m in marked}
        lines += [f"  {d}" for d in _MARK_DEFS if d.split()[1] in used_marks]
        for mark in MARKS:
            ids = [f"n{i}" for i, m in marked if m == mark]
            if ids:
                lines.append(f"  class {','.join(ids)} {mark}")
    return "\n".join(lines) + "\n"


def mark_changes(before: Graph, after: Graph) -> tuple[dict[str, str], dict[str, str]]:
    """Marks for a before/after pair: in ``after``, nodes not drawn before are ``added`` and
    nodes whose text changed are ``changed``; in ``before``, nodes gone from ``after`` are
    ``removed`` (and changed ones ``changed``)."""
    old = {n.key: n.lines for n in before.nodes}
    new = {n.key: n.lines for n in after.nodes}
    after_marks = {k: "added" if k not in old else "changed" for k, v in new.items() if old.get(k) != v}
    before_marks = {k: "removed" if k not in new else "changed" for k, v in old.items() if new.get(k) != v}
    return before_marks, after_marks


def shard_diagram(shard: str, objects: Iterable[Mapping[str, Any]]) -> str:
    """Mermaid text of a shard's gang structure, or ``""`` when it has no PodGang."""
    graph = build_graph(shard, objects)
    return "" if graph.empty else to_mermaid(graph)


def fenced(mermaid: str) -> str:
    """A ```` ```mermaid ```` block (labels never hold a backtick: :func:`escape_label`)."""
    return f"```mermaid\n{mermaid}```\n"


#: The sentence above a shard README's diagram.
README_LEGEND = (
    "PodCliqueSet → replicas → PodGangs (green: base, amber: scaled) → scaling-group topology groups"
    " (dashed) → podgroups, and the scheduler's gang objects (purple, dotted arrows) with their parts."
    " See docs/diagrams.md."
)
