"""The rollout plan as data: what every output format (text, Markdown, JSON) lays out.

Computed once (:mod:`.compute`), so ``plan``'s terminal view, its JSON and the section in
``diff``'s PR comment never disagree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from grove_gitops.diff.autoscaling import Bounds
from grove_gitops.plan.risk import Outage, Role, StepRisk
from grove_gitops.plan.stranded import Stranded
from grove_gitops.plan.terms import ON_DELETE as ON_DELETE
from grove_gitops.plan.terms import ROLLING_RECREATE as ROLLING_RECREATE
from grove_gitops.plan.terms import PlanError as PlanError
from grove_gitops.plan.timing import StepTime, TotalTime, total_time
from grove_gitops.readmodel.order import Step

Change = Literal["modified", "added", "removed"]


def round_sizes(steps: Sequence[Step], rounds: Sequence[int]) -> dict[int, int]:
    """Pods down in each round of Grove's order: the sum of its steps' pods."""
    out: dict[int, int] = {}
    for step, number in zip(steps, rounds, strict=True):
        out[number] = out.get(number, 0) + len(step.hostnames)
    return out


@dataclass(frozen=True)
class PodCliqueSetPlan:
    """What happens to one PodCliqueSet between BASE and HEAD.

    ``steps`` are in execution order, each one's hostnames retired together; ``changed``
    are the slots whose pod is replaced (under OnDelete too, where there are no steps);
    ``added`` / ``removed`` are scale-out and scale-in slots, which are not steps.
    ``restart_fields`` maps a PodClique to the pod fields that differ between its old and
    new pods (why they are replaced).
    """

    namespace: str
    name: str
    change: Change
    strategy: str
    steps: tuple[Step, ...] = ()
    changed: tuple[str, ...] = ()
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    restart_fields: dict[str, tuple[str, ...]] = field(default_factory=dict)
    message: str = ""
    #: Scale targets of the workload (HEAD's; BASE's when it is removed), by name: Git holds
    #: their replicas below the floor, the agent those from the floor up to the live count.
    autoscaled: tuple[tuple[str, Bounds], ...] = ()
    #: Of ``removed``: slots that leave Git because the floor went down, into the range the
    #: agent creates (it keeps them while the live count covers them); not deleted by the plan.
    to_cluster: tuple[str, ...] = ()
    #: Of ``added``: slots that enter Git because the floor went up, from the range the agent
    #: created (they may already run).
    from_cluster: tuple[str, ...] = ()
    #: Per step (same order as ``steps``) the capacity left to the roles it touches.
    risks: tuple[StepRisk, ...] = ()
    #: Roles some step leaves with no available pod in the whole PodCliqueSet.
    outages: tuple[Outage, ...] = ()
    #: Pods per role in the whole PodCliqueSet (slots on both sides): what an untouched role keeps.
    roles: tuple[tuple[Role, int], ...] = ()
    #: Running gangs whose changed PodGang no longer fits the node inventory (HEAD's).
    stranded: tuple[Stranded, ...] = ()
    #: Per step (same order as ``steps``) what it waits for and its bound from the probes.
    times: tuple[StepTime, ...] = ()
    #: Whose order ``steps`` follow: ``agent`` (grove-gitops' agent, one step at a time) or
    #: ``grove`` (Grove's operator, RenderConfiguration ``mode: review``: :mod:`.groveorder`).
    order: Literal["agent", "grove"] = "agent"
    #: Grove's order only: per step (same order as ``steps``) its round; steps of a round are
    #: down at the same time.
    rounds: tuple[int, ...] = ()
    #: Grove's order only: what the agent would do instead, its steps and most pods down at once.
    agent_steps: int = 0
    agent_max_unavailable: int = 0

    @property
    def total_time(self) -> TotalTime:
        """The steps' bounds added up (unknown when a step has no probe); under Grove's order
        the steps of a round run side by side, so a round counts its longest step."""
        total = total_time(self.times)
        if not self.rounds or len(self.rounds) != len(self.times):
            return total
        longest: dict[int, int] = {}
        for number, t in zip(self.rounds, self.times, strict=True):
            if t.bound is not None:
                longest[number] = max(longest.get(number, 0), t.bound)
        return TotalTime(sum(longest.values()), total.known_steps, total.unknown_steps)

    @property
    def max_unavailable(self) -> int:
        """The most slots down at once: the largest step, or under Grove's order the largest
        round (all replicas healthy at plan time)."""
        if self.rounds:
            return max(round_sizes(self.steps, self.rounds).values(), default=0)
        return max((len(s.hostnames) for s in self.steps), default=0)

    @property
    def round_count(self) -> int:
        """Grove's order: how many rounds (0 under the agent's order)."""
        return max(self.rounds, default=0)

    @property
    def concurrent(self) -> bool:
        """Some round has two or more steps down at once (Grove's order only)."""
        return len(set(self.rounds)) < len(self.rounds)

    @property
    def title(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class Plan:
    """Every PodCliqueSet whose rendered pods or PodGangs differ, by namespace and name."""

    podcliquesets: tuple[PodCliqueSetPlan, ...] = ()
    #: HEAD is in review mode: Grove's operator rolls it out, no agent is expected.
    review: bool = False
    #: Objects changed in a field the API server will not update in place (KAI's Topology
    #: levels), which Argo CD / Flux therefore delete and re-create on sync: (kind, namespace, name).
    recreated: tuple[tuple[str, str, str], ...] = ()

    @property
    def steps(self) -> int:
        return sum(len(p.steps) for p in self.podcliquesets)

    @property
    def outages(self) -> list[tuple[PodCliqueSetPlan, Outage]]:
        """Every role some rollout takes down, with its PodCliqueSet."""
        return [(p, o) for p in self.podcliquesets for o in p.outages]

    @property
    def stranded(self) -> list[tuple[PodCliqueSetPlan, Stranded]]:
        """Every gang some change strands, with its PodCliqueSet."""
        return [(p, s) for p in self.podcliquesets for s in p.stranded]
