"""One side's rendered objects, grouped the way the agent groups live ones.

A PodCliqueSet is (namespace, ``app.kubernetes.io/part-of``), as in
:mod:`grove_gitops.readmodel.snapshot`; a slot is a pod's ``spec.hostname``. Every pod becomes
a :class:`~grove_gitops.readmodel.order.SlotRef` built from the labels the agent reads, so the
plan hands :func:`~grove_gitops.readmodel.order.steps_for_replica` exactly what the agent will.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from grove_gitops.diff.autoscaling import Bounds, targets_of
from grove_gitops.diff.model import ObjectKey, TreeObject
from grove_gitops.diff.renderinputs import is_workload_object
from grove_gitops.diff.report import Side
from grove_gitops.plan.terms import ROLLING_RECREATE, PlanError
from grove_gitops.readmodel.gangs import PODCLIQUE_LABEL, MalformedPodGang
from grove_gitops.readmodel.order import SlotRef
from grove_gitops.readmodel.snapshot import PART_OF, PCS_REPLICA_INDEX, PCSG, PCSG_REPLICA_INDEX, POD_INDEX, parse_day2

WorkloadKey = tuple[str, str]  # (namespace, PodCliqueSet)


@dataclass(frozen=True)
class RenderedPod:
    """A rendered pod in its slot, with the PodCliqueSet replica it belongs to."""

    obj: TreeObject
    slot: SlotRef
    replica: int

    @property
    def name(self) -> str:
        return self.obj.key.name


@dataclass
class Workload:
    """One PodCliqueSet on one side: its pods by hostname and every object labelled as its."""

    namespace: str
    name: str
    pods: dict[str, RenderedPod] = field(default_factory=dict)
    gangs: list[TreeObject] = field(default_factory=list)
    texts: dict[ObjectKey, str] = field(default_factory=dict)
    #: Scale targets by name, from the workload's ``gitops.grove.io`` PodCliqueSet.
    units: dict[str, Bounds] = field(default_factory=dict)

    def unit_of(self, pod: RenderedPod) -> tuple[Bounds, int] | None:
        """The scale target a slot belongs to and the slot's index in its count (a clique's
        pod index, a scaling group's replica index), or None when it is not autoscaled."""
        slot = pod.slot
        if slot.scaling_group is not None:
            unit = self.units.get(slot.scaling_group)
            index = slot.scaling_group_replica
        else:
            unit = self.units.get(slot.podclique)
            index = slot.index
        return (unit, index) if unit is not None and index is not None else None

    def in_cluster_range(self, pod: RenderedPod) -> bool:
        """Whether the slot is one the agent creates at some live count: floor <= index < max."""
        found = self.unit_of(pod)
        return found is not None and found[0].floor <= found[1] < found[0].maximum


def natural(text: str) -> tuple[tuple[int, int | str], ...]:
    """``worker-2`` before ``worker-10``: slots read in index order."""
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in re.split(r"(\d+)", text) if p)


def _labels(obj: Mapping[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    labels = meta.get("labels") if isinstance(meta, dict) else None
    return labels if isinstance(labels, dict) else {}


def _int(value: Any) -> int | None:
    """A label's decimal index, or None. ``isdigit`` alone admits ``'²'`` and 4,301-digit
    strings, both of which ``int`` refuses with a ValueError; an index has at most 9 digits."""
    if isinstance(value, str) and 0 < len(value) <= 9 and value.isascii() and value.isdigit():
        return int(value)
    return None


def slot_ref(hostname: str, labels: Mapping[str, Any]) -> tuple[SlotRef, int]:
    """The slot as ordering sees it, and its PodCliqueSet replica index.

    A pod without Grove's labels (a hand-made rendered tree) falls back to what its
    hostname, ``<podclique>-<index>``, says, as a standalone pod of replica 0.
    """
    clique_fallback, _, index_fallback = hostname.rpartition("-")
    podclique = labels.get(PODCLIQUE_LABEL)
    group = labels.get(PCSG)
    index = _int(labels.get(POD_INDEX))
    ref = SlotRef(
        hostname=hostname,
        podclique=podclique if isinstance(podclique, str) and podclique else clique_fallback or hostname,
        index=index if index is not None else (_int(index_fallback) or 0),
        scaling_group=group if isinstance(group, str) and group else None,
        scaling_group_replica=_int(labels.get(PCSG_REPLICA_INDEX)) if isinstance(group, str) and group else None,
    )
    return ref, _int(labels.get(PCS_REPLICA_INDEX)) or 0


def workloads(side: Side) -> dict[WorkloadKey, Workload]:
    """Every PodCliqueSet of a side that owns at least one rendered object."""
    out: dict[WorkloadKey, Workload] = {}
    for key, obj in sorted(side.objects.items()):
        pcs = _labels(obj.obj).get(PART_OF)
        if not isinstance(pcs, str) or not pcs or not key.namespace:
            continue
        wl = out.get((key.namespace, pcs))
        if wl is None:
            wl = out[(key.namespace, pcs)] = Workload(key.namespace, pcs)
        wl.texts[key] = obj.text
        if is_workload_object(key):
            wl.units = targets_of(obj.obj, {})
        if key.kind == "PodGang":
            wl.gangs.append(obj)
        if key.kind != "Pod" or key.group:
            continue
        spec = obj.obj.get("spec")
        hostname = spec.get("hostname") if isinstance(spec, dict) else None
        if not isinstance(hostname, str) or not hostname:
            continue  # the agent leaves such a pod alone too; it is no slot
        if hostname in wl.pods:
            other = wl.pods[hostname].obj.path
            raise PlanError(f"{obj.path}: spec.hostname: {hostname!r} is also the hostname of {other}")
        ref, replica = slot_ref(hostname, _labels(obj.obj))
        wl.pods[hostname] = RenderedPod(obj, ref, replica)
    return out


def strategy(side: Side, wl: Workload | None, key: WorkloadKey) -> str:
    """The update strategy: the PodGangs' ``gitops.grove.io/day2`` annotation (what the agent
    reads), else the source's ``spec.updateStrategy.type``, else Grove's default."""
    for gang in wl.gangs if wl is not None else []:
        try:
            day2 = parse_day2(gang.obj)
        except MalformedPodGang as exc:
            raise PlanError(f"{gang.path}: {exc}") from exc
        if day2 is not None:
            return day2.strategy
    return side.strategies.get(key, ROLLING_RECREATE)
