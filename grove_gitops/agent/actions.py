"""What the agent decided to do, as plain values.

The decision modules (release, rollout, healing, scale-in) are pure functions of a
:class:`~grove_gitops.agent.snapshot.Snapshot`, the agent's :class:`Memory` and the time;
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


@dataclass
class Memory:
    """What the agent remembers between passes. Everything here is either re-derivable from
    the cluster (and persisted as PodGang conditions where it is not) or only makes the agent
    more careful after a restart (a grace period starts again)."""

    unwanted_since: dict[Key, float] = field(default_factory=dict)  # pod -> first seen unwanted
    breach_since: dict[str, float] = field(default_factory=dict)  # breach unit -> breach began
    ever_healthy: set[str] = field(default_factory=set)  # breach units seen healthy once
    warned: set[str] = field(default_factory=set)  # problems already logged
    rollout_total: dict[str, int] = field(default_factory=dict)  # "ns/pcs/replica" -> steps at its start
    # base PodGangs whose persisted MinAvailableBreached this agent has read once (healing.py):
    # after that, the memory above is authoritative, so a stale condition in the cache cannot
    # restart a breach clock that a gang termination just reset
    resumed: set[Key] = field(default_factory=set)

    def retain(self, workloads: Collection[tuple[str, str]], pods: Collection[Key], gangs: Collection[Key]) -> None:
        """Forget what belongs to objects gone from the cluster: a PodCliqueSet removed from
        Git leaves no workload that would ever prune its own entries (called on resync).

        Breach units and rollout totals are keyed ``namespace/podcliqueset/...``; Kubernetes
        names hold no ``/``, so the first two parts are the workload.
        """

        def live(unit: str) -> bool:
            ns, _, rest = unit.partition("/")
            return (ns, rest.partition("/")[0]) in workloads

        self.breach_since = {u: t for u, t in self.breach_since.items() if live(u)}
        self.ever_healthy = {u for u in self.ever_healthy if live(u)}
        self.rollout_total = {u: n for u, n in self.rollout_total.items() if live(u)}
        self.unwanted_since = {k: t for k, t in self.unwanted_since.items() if k in pods}
        self.resumed = {k for k in self.resumed if k in gangs}
