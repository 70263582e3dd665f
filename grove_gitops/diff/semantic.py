"""What a change means for scheduling, per shard (PodCliqueSet), without knowing any backend.

A reviewer of a PodCliqueSet change asks: which gangs appear or disappear, does any gang's
minimum size, queue, priority or topology move, does the workload switch scheduler, and how
many pods are created, deleted or replaced. Every scheduler spells its gang differently
(KAI ``spec.minMember`` + ``subGroups``, Volcano ``minMember`` + ``subGroupPolicy``,
Kubernetes ``schedulingPolicy.gang.minCount``, Grove ``podgroups[].minReplicas``), but they
all use a small vocabulary of field names. So the summary is driven by *field names*, not
kinds: any non-Pod object carrying one of :data:`SIZE_FIELDS`, a queue, a
``priorityClassName`` or a field whose name mentions topology is "gang-like", and its
changes are reported. A new backend's objects are summarised with no code here.

Paths are written like Kubernetes field paths; list items that have a ``name`` are
addressed by it (``spec.podgroups[demo-0-worker].minReplicas``) so reordering or inserting
an item does not shift every path after it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from grove_gitops.diff.autoscaling import HPA_KIND, ShardAutoscaling, shard_autoscaling
from grove_gitops.diff.model import Change, ChangeType, ObjectKey, TreeObject
from grove_gitops.diff.paths import item_names, join
from grove_gitops.diff.unified import DEFAULT_CONTEXT, ObjectDiff, object_diff

Category = Literal["size", "queue", "priority", "topology"]
CATEGORIES: tuple[Category, ...] = ("size", "queue", "priority", "topology")

#: Gang minimums across schedulers: KAI/Volcano/Koordinator/coscheduling ``minMember``,
#: Kubernetes ``minCount``/``minGroupCount``, Grove ``minReplicas``, KAI ``minSubGroup``,
#: Volcano ``subGroupSize``/``minSubGroups``, and ``minAvailable``.
SIZE_FIELDS = frozenset(
    {
        "minMember",
        "minCount",
        "minReplicas",
        "minGroupCount",
        "minSubGroup",
        "minSubGroups",
        "subGroupSize",
        "minAvailable",
    }
)
QUEUE_FIELDS = frozenset({"queue", "queueName"})
PRIORITY_FIELDS = frozenset({"priorityClassName"})
#: Label / annotation keys (by suffix after the prefix) that carry gang settings, e.g.
#: ``kai.scheduler/queue``, ``scheduling.volcano.sh/queue-name``,
#: ``gang.scheduling.koordinator.sh/min-available``.
META_SIZE_WORDS = ("min-available", "min-member", "minmember", "min-count")
META_QUEUE_WORDS = ("queue",)
#: The label Grove puts on every PodGang naming the backend that schedules it.
SCHEDULER_LABEL = "grove.io/scheduler-name"
GANG_KIND = "PodGang"
#: Our own API group (the ``gitops.grove.io`` PodCliqueSet in Git; scale targets live in the cluster only).
GITOPS_GROUP = "gitops.grove.io"


def _mentions_topology(text: str) -> bool:
    return "topology" in text.lower()


def _classify_spec(path_keys: list[str], topology_object: bool) -> Category | None:
    last = path_keys[-1] if path_keys else ""
    if last in SIZE_FIELDS:
        return "size"
    if last in QUEUE_FIELDS:
        return "queue"
    if last in PRIORITY_FIELDS:
        return "priority"
    if topology_object or any(_mentions_topology(k) for k in path_keys):
        return "topology"
    return None


def _classify_meta(key: str) -> Category | None:
    lowered = key.lower().rsplit("/", 1)[-1]
    if any(w in lowered for w in META_SIZE_WORDS):
        return "size"
    if any(w in lowered for w in META_QUEUE_WORDS):
        return "queue"
    if _mentions_topology(key):
        return "topology"
    return None


def _spec_fields(value: Any, keys: list[str], prefix: str, topo: bool, out: dict[str, tuple[Category, Any]]) -> None:
    """Walk ``spec`` keeping the map keys seen (list item names are not field names)."""
    if isinstance(value, dict) and value:
        for k in value:
            _spec_fields(value[k], [*keys, str(k)], join(prefix, str(k)), topo, out)
    elif isinstance(value, list) and value:
        names = item_names(value)
        for i, item in enumerate(value):
            _spec_fields(item, keys, f"{prefix}[{names[i] if names else i}]", topo, out)
    else:
        category = _classify_spec(keys, topo)
        if category is not None:
            out[prefix] = (category, value)


def is_topology_object(key: ObjectKey) -> bool:
    """Topology definitions (Grove ClusterTopologyBinding, KAI Topology, Volcano HyperNode in
    ``topology.volcano.sh``): every spec field of theirs is a topology setting."""
    return _mentions_topology(key.kind) or _mentions_topology(key.group)


def is_autoscaling_object(key: ObjectKey) -> bool:
    """An HPA or one of our ``gitops.grove.io`` objects: their ``minReplicas`` /
    ``minAvailable`` are autoscaling bounds, reported in the shard's autoscaling table
    (:mod:`.autoscaling`), not gang settings (and the workload object's ``spec.source`` holds
    a whole PodCliqueSet document, whose every field would repeat here)."""
    return key.group == GITOPS_GROUP or (key.kind == HPA_KIND and key.group == "autoscaling")


def semantic_fields(key: ObjectKey, obj: Mapping[str, Any]) -> dict[str, tuple[Category, Any]]:
    """``{path: (category, value)}`` of the gang settings an object carries (none for Pods:
    their queue labels and priority mirror the gang's and would only repeat it; none for
    autoscaling objects, :func:`is_autoscaling_object`)."""
    if (key.kind == "Pod" and not key.group) or is_autoscaling_object(key):
        return {}
    out: dict[str, tuple[Category, Any]] = {}
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        for section in ("labels", "annotations"):
            values = meta.get(section)
            if isinstance(values, dict):
                for k, v in values.items():
                    category = _classify_meta(str(k))
                    if category is not None:
                        out[join(f"metadata.{section}", str(k))] = (category, v)
    spec = obj.get("spec")
    if spec is not None:
        _spec_fields(spec, [], "spec", is_topology_object(key), out)
    return out


def is_gang_like(key: ObjectKey, obj: Mapping[str, Any]) -> bool:
    return key.kind == GANG_KIND or bool(semantic_fields(key, obj))


def rank(change: Change) -> int:
    """Display order: gang and topology objects first (what reviewers care about), other
    objects next, pods last (the bulk)."""
    key = change.key
    if key.kind == "Pod" and not key.group:
        return 2
    objs = [o for o in (change.base, change.head) if o is not None]
    if is_topology_object(key) or any(is_gang_like(o.key, o.obj) for o in objs):
        return 0
    return 1


def _natural(text: str) -> tuple[tuple[int, int | str], ...]:
    """``worker-2`` before ``worker-10``: a reviewer scans pods by index, not by string."""
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in re.split(r"(\d+)", text) if p)


def display_name(change: Change) -> str:
    """Pods by hostname (``<podclique>-<index>``, without the hash), others by name."""
    if change.key.kind == "Pod" and not change.key.group:
        spec = change.current.obj.get("spec")
        host = spec.get("hostname") if isinstance(spec, dict) else None
        if isinstance(host, str) and host:
            return host
    return change.key.name


def display_order(change: Change) -> tuple[Any, ...]:
    """Gang/topology objects, then others, then pods; within each by kind, then naturally."""
    key = change.key
    return (rank(change), key.kind_label, key.namespace, _natural(display_name(change)), key)


def format_value(value: Any) -> str:
    """A leaf value on one line: scalars as YAML would print them, structures as JSON."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    return json.dumps(value, sort_keys=True, separators=(", ", ": "))


@dataclass(frozen=True)
class FieldChange:
    """One gang setting that differs; ``old``/``new`` are ``None`` when the field (or its
    whole object) is absent on that side."""

    key: ObjectKey
    path: str
    category: Category
    old: str | None
    new: str | None
    #: What happened to the object: an added or removed object's settings are all "— → value"
    #: and are summarised per object (:meth:`ShardSummary.whole_objects`), not listed.
    object_change: ChangeType = ChangeType.MODIFIED


def field_changes(change: Change) -> list[FieldChange]:
    base = semantic_fields(change.base.key, change.base.obj) if change.base else {}
    head = semantic_fields(change.head.key, change.head.obj) if change.head else {}
    out: list[FieldChange] = []
    for path in list(base) + [p for p in head if p not in base]:
        old, new = base.get(path), head.get(path)
        old_s = format_value(old[1]) if old else None
        new_s = format_value(new[1]) if new else None
        source = new or old
        if old_s != new_s and source is not None:
            out.append(FieldChange(change.key, path, source[0], old_s, new_s, change.type))
    return out


def _schedulers(objects: Iterable[TreeObject]) -> list[str]:
    """Schedulers a shard uses: the PodGang label, else (no gangs) the pods' schedulerName."""
    labelled: set[str] = set()
    pods: set[str] = set()
    for o in objects:
        meta = o.obj.get("metadata")
        labels = meta.get("labels") if isinstance(meta, dict) else None
        if isinstance(labels, dict) and isinstance(labels.get(SCHEDULER_LABEL), str):
            labelled.add(labels[SCHEDULER_LABEL])
        if o.key.kind == "Pod" and not o.key.group:
            spec = o.obj.get("spec")
            name = spec.get("schedulerName") if isinstance(spec, dict) else None
            if isinstance(name, str):
                pods.add(name)
    return sorted(labelled or pods)


@dataclass
class Counts:
    added: int = 0
    removed: int = 0
    modified: int = 0
    replaced: int = 0

    def add(self, change: Change) -> None:
        setattr(self, change.type.value, getattr(self, change.type.value) + 1)

    @property
    def total(self) -> int:
        return self.added + self.removed + self.modified + self.replaced


@dataclass
class ShardSummary:
    """The semantic summary of one shard: a PodCliqueSet (``ns/pcs``), ``ns/_resources`` or
    ``_cluster``."""

    shard: str
    changes: list[Change]
    schedulers_base: list[str]
    schedulers_head: list[str]
    gangs: dict[ChangeType, list[str]] = field(default_factory=dict)
    gang_objects: Counts = field(default_factory=Counts)
    pods: Counts = field(default_factory=Counts)
    others: Counts = field(default_factory=Counts)
    fields: list[FieldChange] = field(default_factory=list)
    diffs: list[ObjectDiff] = field(default_factory=list)
    #: Scale targets and render inputs of the shard's workload; None when it has none on either side.
    autoscaling: ShardAutoscaling | None = None

    @property
    def lines_added(self) -> int:
        return sum(d.added for d in self.diffs)

    @property
    def lines_removed(self) -> int:
        return sum(d.removed for d in self.diffs)

    @property
    def scheduler_switched(self) -> bool:
        return bool(self.schedulers_base and self.schedulers_head and self.schedulers_base != self.schedulers_head)

    def pod_names(self, change_type: ChangeType) -> list[str]:
        return [c.key.name for c in self.changes if c.type == change_type and _is_pod(c.key)]

    @property
    def changed_fields(self) -> list[FieldChange]:
        """Settings that moved on an object present on both sides (the rows of the table)."""
        return [f for f in self.fields if f.object_change not in (ChangeType.ADDED, ChangeType.REMOVED)]

    def whole_objects(self) -> list[tuple[ObjectKey, ChangeType, dict[Category, int]]]:
        """Added and removed objects with how many gang settings they carry, per category."""
        out: dict[ObjectKey, tuple[ChangeType, dict[Category, int]]] = {}
        for f in self.fields:
            if f.object_change in (ChangeType.ADDED, ChangeType.REMOVED):
                counts = out.setdefault(f.key, (f.object_change, {}))[1]
                counts[f.category] = counts.get(f.category, 0) + 1
        return [(k, t, {c: n[c] for c in CATEGORIES if c in n}) for k, (t, n) in out.items()]

    def categories(self) -> dict[Category, int]:
        """How many gang settings changed on objects present on both sides, per category, in
        :data:`CATEGORIES` order (an added gang's settings are not changes of a setting)."""
        out: dict[Category, int] = {}
        for category in CATEGORIES:
            n = sum(1 for f in self.changed_fields if f.category == category)
            if n:
                out[category] = n
        return out


def _is_pod(key: ObjectKey) -> bool:
    return key.kind == "Pod" and not key.group


def summarize(
    changes: list[Change],
    base: Mapping[ObjectKey, TreeObject],
    head: Mapping[ObjectKey, TreeObject],
    context: int = DEFAULT_CONTEXT,
) -> list[ShardSummary]:
    """One summary per shard that has at least one change, in shard order."""
    by_shard: dict[str, list[Change]] = {}
    for c in changes:
        by_shard.setdefault(c.shard, []).append(c)
    base_by_shard: dict[str, list[TreeObject]] = {}
    head_by_shard: dict[str, list[TreeObject]] = {}
    for k, o in base.items():
        base_by_shard.setdefault(k.shard, []).append(o)
    for k, o in head.items():
        head_by_shard.setdefault(k.shard, []).append(o)
    out: list[ShardSummary] = []
    for shard in sorted(by_shard):
        shard_changes = sorted(by_shard[shard], key=display_order)
        summary = ShardSummary(
            shard,
            shard_changes,
            _schedulers(base_by_shard.get(shard, [])),
            _schedulers(head_by_shard.get(shard, [])),
        )
        for c in shard_changes:
            if c.key.kind == GANG_KIND:
                summary.gangs.setdefault(c.type, []).append(c.key.name)
            elif _is_pod(c.key):
                summary.pods.add(c)
            elif rank(c) == 0:
                summary.gang_objects.add(c)
            else:
                summary.others.add(c)
            summary.fields += field_changes(c)
            summary.diffs.append(object_diff(c, context))
        scaling = shard_autoscaling(shard, base_by_shard.get(shard, []), head_by_shard.get(shard, []))
        summary.autoscaling = None if scaling.empty else scaling
        out.append(summary)
    return out
