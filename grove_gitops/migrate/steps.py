"""The order a migration replaces Grove's pods in, and the capacity each step leaves (pure).

The agent retires migrated Grove pods with its rollout rules (grove_gitops/agent/rollout.py),
so the steps are its steps: one PodCliqueSet replica at a time (by index: every replica of a
settled workload is scheduled and none is breached, so :func:`~grove_gitops.readmodel.order.order_replicas`
orders them by index), inside it :func:`~grove_gitops.readmodel.order.steps_for_replica` (standalone
PodCliques pod by pod, then scaling-group replicas whole). One step is one unit down: a pod, or a
scaling-group replica.
"""

from __future__ import annotations

from dataclasses import dataclass

from grove_gitops.migrate.compare import ADOPTED, GROVE, Comparison, SlotPlan
from grove_gitops.readmodel.order import ReplicaRank, SlotRef, order_replicas, steps_for_replica


@dataclass(frozen=True)
class RoleLeft:
    """What a step leaves of one role it takes down: Ready pods in its replica and in all."""

    role: str
    replica_left: int
    replica_total: int
    pcs_left: int
    pcs_total: int


@dataclass(frozen=True)
class MigrationStep:
    replica: int
    unit: str
    replaces: tuple[tuple[str, str], ...]  # (Grove pod, rendered pod) per slot
    left: tuple[RoleLeft, ...]


def plan_steps(comparison: Comparison) -> list[MigrationStep]:
    """The steps still to do (slots a Grove pod, handed over or not, still holds)."""
    todo = [s for s in comparison.slots if s.state in (GROVE, ADOPTED)]
    by_host = {s.hostname: s for s in todo}
    replicas = sorted({s.replica for s in todo})
    out: list[MigrationStep] = []
    for replica in order_replicas(ReplicaRank(i) for i in replicas):
        refs = [SlotRef(s.hostname, s.podclique, s.index, s.scaling_group, s.scaling_group_replica)
                for s in todo if s.replica == replica]
        for step in steps_for_replica(replica, refs):
            slots = [by_host[h] for h in step.hostnames]
            out.append(MigrationStep(replica, step.unit, tuple((s.live or "", s.rendered) for s in slots),
                                     _left(comparison.slots, replica, slots)))
    return out


def _left(every: list[SlotPlan], replica: int, step: list[SlotPlan]) -> tuple[RoleLeft, ...]:
    out = []
    for role in sorted({s.role for s in step}):
        down = sum(1 for s in step if s.role == role)
        in_replica = sum(1 for s in every if s.role == role and s.replica == replica)
        in_pcs = sum(1 for s in every if s.role == role)
        out.append(RoleLeft(role, in_replica - down, in_replica, in_pcs - down, in_pcs))
    return tuple(out)
