"""The order of a rolling update, shared by the agent and ``grove-gitops plan``.

One function decides it, so the plan a reviewer reads before merging is the order the agent
follows after it. Grove (``spec/grove-day2.md`` §2.2-§2.4) walks one PodCliqueSet replica at
a time; inside a replica it rolls every standalone PodClique (oldest Ready pod first) and
every scaling group (lowest replica index first) *concurrently*. grove-gitops serialises the
steps of a replica so that at most one standalone pod or one scaling-group replica is out at
a time (the bound the issue asks for), in an order that depends only on names, never on pod
age, so the plan can print it exactly:

1. standalone PodCliques by PodClique name, their pods by pod index;
2. then scaling groups by name, their replicas by replica index (base-gang replicas first,
   as in Grove), each replica's pods retired together.

Replicas are chosen as Grove's ``sortPendingReplicas`` does: replicas with no scheduled pod
first, then replicas with a breached (not yet expired) MinAvailable, then by index.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class SlotRef:
    """What ordering needs to know about one slot (one hostname)."""

    hostname: str
    podclique: str  # PodClique FQN
    index: int  # pod index inside the PodClique
    scaling_group: str | None = None  # PCSG FQN, None for a standalone PodClique
    scaling_group_replica: int | None = None


@dataclass(frozen=True)
class Step:
    """Slots retired together; the next step starts when their replacements are Ready."""

    replica: int
    unit: str  # "podclique <fqn>" or "scaling group <fqn> replica <j>"
    hostnames: tuple[str, ...]


@dataclass(frozen=True)
class ReplicaRank:
    """A PodCliqueSet replica that still has old pods, with what Grove sorts it by."""

    index: int
    scheduled_pods: int = 1
    breached: bool = False


def steps_for_replica(replica: int, slots: Iterable[SlotRef]) -> list[Step]:
    """The steps of one PodCliqueSet replica, in execution order."""
    standalone: list[SlotRef] = []
    groups: dict[tuple[str, int], list[SlotRef]] = {}
    for slot in slots:
        if slot.scaling_group is None:
            standalone.append(slot)
        else:
            groups.setdefault((slot.scaling_group, slot.scaling_group_replica or 0), []).append(slot)
    steps = [
        Step(replica, f"podclique {s.podclique}", (s.hostname,))
        for s in sorted(standalone, key=lambda s: (s.podclique, s.index, s.hostname))
    ]
    for (group, j), members in sorted(groups.items()):
        hostnames = tuple(s.hostname for s in sorted(members, key=lambda s: (s.podclique, s.index, s.hostname)))
        steps.append(Step(replica, f"scaling group {group} replica {j}", hostnames))
    return steps


def order_replicas(candidates: Iterable[ReplicaRank]) -> list[int]:
    """Grove's order of pending replicas: unscheduled first, then breached, then by index."""
    ranked = sorted(candidates, key=lambda r: (r.scheduled_pods > 0, not r.breached, r.index))
    return [r.index for r in ranked]
