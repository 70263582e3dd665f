"""What the agent decided to do, as plain values.

The decision modules (release, rollout, healing, scale-in) are pure functions of a
:class:`~grove_gitops.readmodel.snapshot.Snapshot`, the agent's :class:`Memory` and the time;
they return these values, and :mod:`grove_gitops.agent.execute` alone talks to the API
server. That keeps every rule testable without a server and makes "no step is taken twice"
a property of one place: the executor guards each delete with the pod's uid.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

Key = tuple[str, str]


@dataclass(frozen=True)
class DeletePod:
    """Delete one pod (precondition: its uid), e.g. to retire it or to have GitOps re-create it."""

    namespace: str
    name: str
    uid: str
    reason: str  # PodRetired, SupersededPodDeleted, FailedPodDeleted, GangTerminated, UnwantedPodDeleted
    message: str
    gang: Key | None = None  # the PodGang the Event is attached to


@dataclass(frozen=True)
class Ungate:
    """Remove the scheduling gate of one pod the decision saw (uid-guarded JSON patch)."""

    namespace: str
    name: str
    uid: str
    gang: Key


@dataclass(frozen=True)
class SetCondition:
    """Set one condition on a PodGang's status; ``since`` (epoch seconds) is the
    lastTransitionTime to record when the status changes (None = now)."""

    gang: Key
    type: str
    status: str
    reason: str
    message: str
    since: float | None = None
    # (step, steps) when the message is a progress counter: the executor refreshes such a
    # message only now and then, so progress never costs a write per replaced pod
    progress: tuple[int, int] | None = None


@dataclass(frozen=True)
class Event:
    gang: Key
    reason: str
    message: str
    type: str = "Normal"


Action = DeletePod | Ungate | SetCondition | Event


WorkloadKey = tuple[str, str]  # (namespace, PodCliqueSet)


@dataclass
class Memory:
    """What the agent remembers between passes about **one workload** (namespace,
    PodCliqueSet). Everything here is either re-derivable from the cluster (and persisted as
    PodGang conditions where it is not) or only makes the agent more careful after a restart
    (a grace period starts again).

    One per workload (:class:`Memories`), and only the passes over that workload ever read,
    add or drop its entries: a pass sees one workload's snapshot, so anything it pruned by
    "not in my snapshot" from a shared store would wipe the other workloads' timers (issue 22:
    with a second PodCliqueSet in the cluster, scale-in never deleted anything).
    """

    unwanted_since: dict[Key, float] = field(default_factory=dict)  # released pod -> first seen unwanted
    breach_since: dict[str, float] = field(default_factory=dict)  # breach unit -> breach began
    ever_healthy: set[str] = field(default_factory=set)  # breach units seen healthy once
    warned: set[str] = field(default_factory=set)  # problems already logged
    # "ns/pcs/replica" -> (steps done, steps left at the last pass): the progress count only
    rollout_steps: dict[str, tuple[int, int]] = field(default_factory=dict)
    # base PodGangs whose persisted MinAvailableBreached this agent has read once (healing.py):
    # after that, the memory above is authoritative, so a stale condition in the cache cannot
    # restart a breach clock that a gang termination just reset
    resumed: set[Key] = field(default_factory=set)
    # What the workload's PodGangs want (the pods they reference) and when this agent saw
    # that change (None: not since it started); see intent.py
    listed: frozenset[Key] | None = None
    intent_at: float | None = None
    # gated pods no PodGang lists -> (uid, first seen, first intent change seen after that)
    unlisted: dict[Key, tuple[str, float, float | None]] = field(default_factory=dict)
    # rollout steps waiting for replacement pods that do not exist yet: pod -> since when
    missing_since: dict[str, float] = field(default_factory=dict)
    missing_message: str | None = None  # the RollingUpdate message of the wait under way, once reported


class Memories:
    """The agent's memory: one :class:`Memory` per workload, created on first use."""

    def __init__(self) -> None:
        self.workloads: dict[WorkloadKey, Memory] = {}

    def of(self, workload: WorkloadKey) -> Memory:
        memory = self.workloads.get(workload)
        if memory is None:
            memory = self.workloads[workload] = Memory()
        return memory

    def retain(self, workloads: Collection[WorkloadKey]) -> None:
        """Forget workloads with no object left in the cluster (called on resync): a
        PodCliqueSet removed from Git, whose last pods are gone, leaves no pass that would
        drop its entries. A workload that comes back starts afresh, the cautious side."""
        self.workloads = {k: m for k, m in self.workloads.items() if k in workloads}
