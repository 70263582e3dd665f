"""What a change does to autoscaling, per scale target: bounds, metrics and who owns which replica.

Git holds the shape, the cluster holds the count (docs/autoscaling.md): for every scale target
``<pcs>-<i>-<clique|group>`` Git renders the replicas below the *floor* (``minReplicas``), and
the agent creates the replicas from the floor up to the live count, which is not in Git. A
reviewer must see which bounds move and what moving them means, so every scale target of a
changed shard gets a row: kind, floor, maximum, metrics, the replicas Git holds and those the
agent creates, and what changed.

Everything is read from the rendered objects, not the source (so ``--rendered`` trees work the
same): the ``gitops.grove.io`` PodCliqueSet's ``spec.scaleTargets`` (bounds) and the HPA named
like the target (metrics). A rendered tree is untrusted: malformed entries are skipped, every
string is kept as data (the Markdown view escapes it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from grove_gitops.diff.model import TreeObject
from grove_gitops.diff.renderinputs import InputChange, input_changes, is_workload_object
from grove_gitops.expand.scaling import API_VERSION, PCLQ_KIND, PCSG_KIND

HPA_API, HPA_KIND = "autoscaling/v2", "HorizontalPodAutoscaler"
#: Rows of one shard's autoscaling table; the object diffs below still list every HPA.
MAX_UNITS = 40
#: Metrics of one HPA summarised (the API server allows any number).
MAX_METRICS = 20
#: The longest metrics summary kept (a metric name or selector from the source can be long).
MAX_METRICS_CHARS = 200
#: The plain statement every autoscaling section carries.
AGENT_NOTE = "Replicas from the floor up to the live count are created in the cluster by the agent, not by this PR."
LIVE_NOTE = (
    "Git holds the replicas below the floor; the live count (the scale target's spec.replicas, written by "
    "the HPA, KEDA or a planner) is not in Git."
)
FLOOR_NOTE = (
    "Moving the floor moves replicas between Git and the cluster: raising it puts the replicas below the new "
    "floor into Git (the agent may have created them already), lowering it takes them out of Git, and they then "
    "exist only while the live count covers them."
)

BASE_GANG_NOTE = (
    "A standalone clique that gains or loses autoscaling moves its PodCliqueSet replica's base PodGang "
    "out of Git or back: its pod list follows the live count, so the agent creates it."
)


@dataclass(frozen=True)
class Bounds:
    """One side's view of one scale target."""

    kind: str
    template: str
    replica: int
    floor: int
    maximum: int
    min_available: int
    #: Summary of the HPA's metrics; None when no HPA targets it.
    metrics: str | None

    @property
    def unit(self) -> str:
        """What one unit of the count is: a pod of a clique, a replica of a scaling group."""
        return "pod" if self.kind == PCLQ_KIND else "replica"


@dataclass(frozen=True)
class UnitChange:
    """A scale target of one shard on both sides (``None``: absent there)."""

    shard: str
    name: str
    base: Bounds | None
    head: Bounds | None

    @property
    def current(self) -> Bounds:
        found = self.head or self.base
        assert found is not None
        return found

    @property
    def change(self) -> str:
        if self.base is None:
            return "added"
        if self.head is None:
            return "removed"
        return "unchanged" if self.base == self.head else "modified"

    @property
    def floor_moved(self) -> bool:
        return self.base is not None and self.head is not None and self.base.floor != self.head.floor

    def changes(self) -> list[str]:
        """What changed, in words: ``floor 2 → 3``, ``max 4 → 6``, ``metrics changed``."""
        b, h = self.base, self.head
        if b is None:
            return ["autoscaling added"]
        if h is None:
            return ["autoscaling removed: Git renders every replica of the template's count again"]
        out = []
        if b.kind != h.kind:
            out.append(f"kind {b.kind} → {h.kind}")
        if b.floor != h.floor:
            out.append(f"floor {b.floor} → {h.floor}")
        if b.maximum != h.maximum:
            out.append(f"max {b.maximum} → {h.maximum}")
        if b.min_available != h.min_available:
            out.append(f"minAvailable {b.min_available} → {h.min_available}")
        if b.metrics != h.metrics:
            out.append("HPA added" if b.metrics is None else "HPA removed" if h.metrics is None else "metrics changed")
        return out

    def floor_move(self) -> str:
        """Which replicas change hands when the floor moves ("" when it does not)."""
        if not self.floor_moved:
            return ""
        assert self.base is not None and self.head is not None
        low, high = sorted((self.base.floor, self.head.floor))
        one = high - low == 1
        units = indices(self.current.unit, low, high)
        if self.head.floor > self.base.floor:
            verb = "moves" if one else "move"
            return f"{units} {verb} into Git (created by the agent until now, when the live count reached it)"
        verb = "leaves" if one else "leave"
        return f"{units} {verb} Git: the agent creates {'it' if one else 'them'} while the live count covers {'it' if one else 'them'}"


def indices(unit: str, low: int, high: int) -> str:
    """Indices ``low`` .. ``high - 1``: ``pod 2`` or ``pods 2–3``."""
    return f"{unit} {low}" if high - low == 1 else f"{unit}s {low}–{high - 1}"


def git_owned(b: Bounds) -> str:
    """The replicas Git renders: those below the floor."""
    return indices(b.unit, 0, b.floor) if b.floor > 0 else "none"


def agent_owned(b: Bounds) -> str:
    """The replicas the agent may create: from the floor up to the live count (at most the maximum)."""
    if b.maximum <= b.floor:
        return "none (floor = max)"
    return f"{indices(b.unit, b.floor, b.maximum)}, up to the live count"


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _target(value: Any) -> str:
    if not isinstance(value, dict):
        return "?"
    if "averageUtilization" in value:
        return f"{value['averageUtilization']}%"
    if "averageValue" in value:
        return f"{value['averageValue']} average"
    if "value" in value:
        return str(value["value"])
    kind = value.get("type")
    return str(kind) if isinstance(kind, str) else "?"


def _metric_name(body: Any) -> str:
    metric = body.get("metric") if isinstance(body, dict) else None
    name = metric.get("name") if isinstance(metric, dict) else None
    return str(name) if name is not None else "?"


def metric_summary(metric: Any) -> str:
    """One metric in a few words: ``cpu 80%``, ``pods metric tokens 100 average``."""
    if not isinstance(metric, dict):
        return "?"
    kind = metric.get("type")
    if kind == "Resource" or kind == "ContainerResource":
        body = metric.get("resource" if kind == "Resource" else "containerResource")
        body = body if isinstance(body, dict) else {}
        name = body.get("name", "?")
        where = f" of container {body.get('container', '?')}" if kind == "ContainerResource" else ""
        return f"{name}{where} {_target(body.get('target'))}"
    if kind in ("Pods", "Object", "External"):
        key = str(kind).lower()
        body = metric.get(key)
        word = {"Pods": "pods", "Object": "object", "External": "external"}[str(kind)]
        return f"{word} metric {_metric_name(body)} {_target(body.get('target') if isinstance(body, dict) else None)}"
    return str(kind) if kind is not None else "?"


def metrics_summary(hpa: Mapping[str, Any]) -> str:
    spec = hpa.get("spec")
    metrics = spec.get("metrics") if isinstance(spec, dict) else None
    if not isinstance(metrics, list) or not metrics:
        return "none"
    text = "; ".join(metric_summary(m) for m in metrics[:MAX_METRICS])
    return text if len(text) <= MAX_METRICS_CHARS else text[:MAX_METRICS_CHARS] + "…"


def _hpas(objects: Iterable[TreeObject]) -> dict[str, Mapping[str, Any]]:
    """HPAs by the name of the ``gitops.grove.io`` target they scale."""
    out: dict[str, Mapping[str, Any]] = {}
    for o in objects:
        if o.key.api_version != HPA_API or o.key.kind != HPA_KIND:
            continue
        spec = o.obj.get("spec")
        ref = spec.get("scaleTargetRef") if isinstance(spec, dict) else None
        if isinstance(ref, dict) and ref.get("apiVersion") == API_VERSION and isinstance(ref.get("name"), str):
            out.setdefault(ref["name"], o.obj)
    return out


def targets_of(obj: Mapping[str, Any], hpas: Mapping[str, Mapping[str, Any]]) -> dict[str, Bounds]:
    """The well-formed ``spec.scaleTargets`` of a ``gitops.grove.io`` PodCliqueSet, by name."""
    spec = obj.get("spec")
    entries = spec.get("scaleTargets") if isinstance(spec, dict) else None
    out: dict[str, Bounds] = {}
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict):
            continue
        name, kind, template = entry.get("name"), entry.get("kind"), entry.get("templateName")
        numbers = [_int(entry.get(k)) for k in ("podCliqueSetReplica", "minReplicas", "maxReplicas", "minAvailable")]
        if not isinstance(name, str) or not name or kind not in (PCLQ_KIND, PCSG_KIND) or not isinstance(template, str):
            continue
        replica, floor, maximum, min_available = numbers
        if replica is None or floor is None or maximum is None or min_available is None or name in out:
            continue
        hpa = hpas.get(name)
        out[name] = Bounds(
            str(kind), template, replica, floor, maximum, min_available, metrics_summary(hpa) if hpa else None
        )
    return out


@dataclass(frozen=True)
class ShardAutoscaling:
    """One shard's autoscaling: every scale target on either side, and the render inputs' changes."""

    units: list[UnitChange]
    inputs: list[InputChange] | None

    @property
    def empty(self) -> bool:
        return not self.units and not self.inputs

    @property
    def floor_moved(self) -> bool:
        return any(u.floor_moved for u in self.units)


def _workload(objects: list[TreeObject]) -> Mapping[str, Any] | None:
    for o in objects:
        if is_workload_object(o.key):
            return o.obj
    return None


def shard_autoscaling(shard: str, base: list[TreeObject], head: list[TreeObject]) -> ShardAutoscaling:
    """The autoscaling of one shard's objects on both sides."""
    b_obj, h_obj = _workload(base), _workload(head)
    before = targets_of(b_obj, _hpas(base)) if b_obj is not None else {}
    after = targets_of(h_obj, _hpas(head)) if h_obj is not None else {}
    units = [UnitChange(shard, n, before.get(n), after.get(n)) for n in list(before) + [n for n in after if n not in before]]
    units.sort(key=lambda u: (u.current.replica, u.current.kind != PCLQ_KIND, u.current.template, u.name))
    return ShardAutoscaling(units, input_changes(b_obj, h_obj))


def bounds_dict(b: Bounds | None) -> dict[str, Any] | None:
    if b is None:
        return None
    return {
        "kind": b.kind,
        "templateName": b.template,
        "podCliqueSetReplica": b.replica,
        "minReplicas": b.floor,
        "maxReplicas": b.maximum,
        "minAvailable": b.min_available,
        "metrics": b.metrics,
        "gitOwned": git_owned(b),
        "clusterOwned": agent_owned(b),
    }


def unit_dict(u: UnitChange) -> dict[str, Any]:
    """One row for ``diff --output json`` (the same facts as the Markdown table)."""
    return {
        "shard": u.shard,
        "name": u.name,
        "change": u.change,
        "changes": u.changes(),
        "floorMove": u.floor_move() or None,
        "base": bounds_dict(u.base),
        "head": bounds_dict(u.head),
    }


def shard_dict(shard: str, a: ShardAutoscaling) -> dict[str, Any]:
    """One shard's entry of ``diff --output json``'s ``autoscaling`` list."""
    return {
        "shard": shard,
        "targets": [unit_dict(u) for u in a.units],
        "renderInputs": [{"document": c.document, "change": c.how, "paths": list(c.paths)} for c in a.inputs or []],
    }
