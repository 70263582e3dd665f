"""Which counts of a PodCliqueSet are autoscaled, and the count each expansion uses.

Git holds the shape, the cluster holds the count (docs/autoscaling.md). A standalone clique
with ``autoScalingConfig`` and a scaling group with ``scaleConfig`` are *scale units*: per
PodCliqueSet replica ``i`` one scale target ``<pcs>-<i>-<name>`` in ``gitops.grove.io``
carries the live count, which HPAs, KEDA, ``kubectl scale`` or a planner write through
``/scale``. The render uses the autoscaling minimum (the *floor*) for those counts; the agent
expands the same source with the live counts (:data:`Counts`), through the same code.

Counts never enter a hash or a name (#565): they only decide how many pods or scaling-group
replicas exist, and every such object has the name it has at any count.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from grove_gitops.api.podcliqueset import PodCliqueSet
from grove_gitops.expand import labels as L
from grove_gitops.expand import names

#: Our API group: never ``grove.io``, whose kinds a Grove operator installed beside us would
#: reconcile.
GROUP = "gitops.grove.io"
API_VERSION = f"{GROUP}/v1alpha1"
PCSG_KIND, PCLQ_KIND, PCS_KIND = "PodCliqueScalingGroup", "PodClique", "PodCliqueSet"

#: (PodCliqueSet replica, template clique or scaling-group name) -> count.
Counts = Mapping[tuple[int, str], int]


@dataclass(frozen=True)
class ScaleUnit:
    """One autoscaled template entry; each PodCliqueSet replica has one scale target of it."""

    kind: str  # PCSG_KIND or PCLQ_KIND
    name: str  # template name of the clique or scaling group
    path: str  # the source field of its autoscaling config
    min_available: int
    min_replicas: int  # the floor: what Git renders
    max_replicas: int
    initial: int  # Grove's start value: the template replicas, clamped into [floor, max]
    pods_per_replica: int  # pods one unit of the count adds
    metrics: tuple[dict[str, object], ...] = ()

    def target_name(self, pcs: str, replica: int) -> str:
        return names.pcsg_name(pcs, replica, self.name) if self.kind == PCSG_KIND else names.pclq_name(
            pcs, replica, self.name
        )

    def selector(self, pcs: str, replica: int) -> str:
        """The label selector string the target publishes (``labels.Selector.String()``:
        keys sorted), matching every pod the unit's count sizes."""
        key = L.PCSG if self.kind == PCSG_KIND else L.PODCLIQUE
        pairs = {L.MANAGED_BY: L.MANAGED_BY_VALUE, L.PART_OF: pcs, key: self.target_name(pcs, replica)}
        return ",".join(f"{k}={v}" for k, v in sorted(pairs.items()))

    @property
    def scalable(self) -> bool:
        """False when min == max: Git renders every replica and the agent creates nothing."""
        return self.max_replicas > self.min_replicas


def _clamp(value: int, low: int, high: int) -> int:
    return max(low, min(value, max(low, high)))


def scale_units(pcs: PodCliqueSet) -> list[ScaleUnit]:
    """The autoscaled entries of a defaulted, validated PodCliqueSet, cliques first (template
    order) then scaling groups, as Grove creates its HPAs (``hpa.go:128-166``)."""
    grouped = {c for g in pcs.scaling_groups for c in g.cliqueNames}
    by_name = {c.name: c for c in pcs.cliques}
    out: list[ScaleUnit] = []
    for i, clique in enumerate(pcs.cliques):
        asc = clique.spec.autoScalingConfig
        if asc is None or clique.name in grouped:
            continue
        floor = asc.minReplicas if asc.minReplicas is not None else clique.spec.replicas
        min_available = clique.spec.minAvailable if clique.spec.minAvailable is not None else clique.spec.replicas
        out.append(
            ScaleUnit(
                PCLQ_KIND,
                clique.name,
                f"spec.template.cliques[{i}].spec.autoScalingConfig",
                min_available,
                floor,
                max(asc.maxReplicas, floor),
                _clamp(clique.spec.replicas, floor, asc.maxReplicas),
                1,
                tuple(asc.metrics or ()),
            )
        )
    for i, group in enumerate(pcs.scaling_groups):
        sc = group.scaleConfig
        if sc is None:
            continue
        replicas = group.replicas if group.replicas is not None else 1
        floor = sc.minReplicas if sc.minReplicas is not None else replicas
        pods = sum(by_name[c].spec.replicas for c in group.cliqueNames if c in by_name)
        out.append(
            ScaleUnit(
                PCSG_KIND,
                group.name,
                f"spec.template.podCliqueScalingGroups[{i}].scaleConfig",
                group.minAvailable if group.minAvailable is not None else 1,
                floor,
                max(sc.maxReplicas, floor),
                _clamp(replicas, floor, sc.maxReplicas),
                pods,
                tuple(sc.metrics or ()),
            )
        )
    return out


def floor_counts(pcs: PodCliqueSet) -> dict[tuple[int, str], int]:
    """The counts Git renders: every scale unit at its floor, in every PodCliqueSet replica."""
    units = scale_units(pcs)
    return {(i, u.name): u.min_replicas for i in range(pcs.spec.replicas) for u in units}


def counts_at(pcs: PodCliqueSet, at: str) -> dict[tuple[int, str], int]:
    """Every scale unit of every replica at ``"floor"``, ``"initial"`` (Grove's start value,
    what the agent creates a scale target with) or ``"max"``."""
    def pick(u: ScaleUnit) -> int:
        return {"floor": u.min_replicas, "initial": u.initial, "max": u.max_replicas}[at]

    return {(i, u.name): pick(u) for i in range(pcs.spec.replicas) for u in scale_units(pcs)}


def max_counts(pcs: PodCliqueSet, replica: int) -> dict[tuple[int, str], int]:
    """Every scale unit of ``replica`` at its maximum: a plan with these counts holds every
    PodClique any live count can have (a backend looks PodCliques up by name)."""
    return {(replica, u.name): u.max_replicas for u in scale_units(pcs)}


class CountOf:
    """The count of each template entry in each PodCliqueSet replica: the given live count,
    else the floor of an autoscaled entry, else the template's own count."""

    def __init__(self, pcs: PodCliqueSet, counts: Counts | None = None) -> None:
        self.counts = dict(counts or {})
        self.floors = {u.name: u.min_replicas for u in scale_units(pcs)}

    def __call__(self, replica: int, name: str, template: int) -> int:
        found = self.counts.get((replica, name))
        if found is not None:
            return found
        return self.floors.get(name, template)
