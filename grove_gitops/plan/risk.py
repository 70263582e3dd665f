"""Rollout risk: the capacity each role keeps during every step, and the steps that take a role down.

A *role* is what a PodCliqueSet replica is built from: a standalone PodClique (``router``) or
a scaling group (``decode``), named by its template name so the same role in every
PodCliqueSet replica counts together. Grove (spec/grove-day2.md §2.2-§2.4, §2.6) rolls one
PodCliqueSet replica at a time; inside it, a standalone PodClique loses one Ready pod at a
time and a scaling group one whole replica at a time — all its cliques, changed or not, so a
step that changes only a scaling group's workers still takes its whole replica (leader too)
out of service. Its only guards are
``readyReplicas >= minAvailable`` (a standalone PodClique) and ``availableReplicas >=
minAvailable`` (a scaling group) *before* the deletion, so a role with a single pod or a
single scaling-group replica is deleted outright: with one PodCliqueSet replica, that role
has no available pod until its replacement is Ready. The agent's steps
(:mod:`grove_gitops.readmodel.order`) retire exactly those units, one per step, so the capacity a
step leaves a role is Grove's number, whether the roles of a replica roll one after another
(the agent) or side by side (Grove).

At plan time every pod is assumed Ready and a step's replacements Ready before the next step,
as in the rest of the plan. A role's pods are the slots rendered on *both* sides: a slot only
HEAD adds is not Ready yet, a slot only BASE has is going away. Replicas the agent creates
above an autoscaling floor are not in Git and not counted (the role is marked autoscaled:
its live count may be higher).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from grove_gitops.readmodel.order import Step

if TYPE_CHECKING:  # only types: pods -> terms, so no circle either way
    from grove_gitops.diff.autoscaling import Bounds
    from grove_gitops.plan.pods import RenderedPod

RoleKind = Literal["podclique", "scalingGroup"]
KIND_WORDS: dict[str, str] = {"podclique": "standalone PodClique", "scalingGroup": "scaling group"}


@dataclass(frozen=True, order=True)
class Role:
    """A standalone PodClique or a scaling group of the PodCliqueSet template."""

    name: str
    kind: RoleKind

    @property
    def label(self) -> str:
        """``decode (scaling group)``."""
        return f"{self.name} ({KIND_WORDS[self.kind]})"


@dataclass(frozen=True)
class RoleCapacity:
    """What a role keeps while one step's pods are down: available pods of the role in the
    PodCliqueSet replica being rolled and in the whole PodCliqueSet, out of how many."""

    role: Role
    replica_available: int
    replica_total: int
    pcs_available: int
    pcs_total: int
    autoscaled: bool = False

    @property
    def outage(self) -> bool:
        """No pod of the role is available anywhere in the PodCliqueSet during the step."""
        return self.pcs_total > 0 and self.pcs_available == 0

    def text(self, replica: int) -> str:
        """``decode: 0/2 pods in replica 0, 0/2 in the PodCliqueSet``."""
        return (
            f"{self.role.name}: {self.replica_available}/{self.replica_total} pods in replica {replica}, "
            f"{self.pcs_available}/{self.pcs_total} in the PodCliqueSet"
        )


@dataclass(frozen=True)
class StepRisk:
    """The capacity left to every role the step touches (the others keep all their pods)."""

    capacities: tuple[RoleCapacity, ...]

    @property
    def outages(self) -> tuple[RoleCapacity, ...]:
        return tuple(c for c in self.capacities if c.outage)


@dataclass(frozen=True)
class Outage:
    """A role the rollout takes down in the whole PodCliqueSet, the steps that do it and the fix."""

    role: Role
    steps: tuple[int, ...]  # 1-based, as printed
    autoscaled: bool = False
    #: The scale target's ``maxReplicas`` when autoscaled (a floor of 2 needs a maximum of 2 too).
    maximum: int | None = None

    @property
    def field(self) -> str:
        """The source field that decides how many copies of the role stay during a rollout.

        Grove keeps one copy serving while another is replaced only if the role has two
        (spec/grove-day2.md §2.6). Not autoscaled, that count is the template's ``replicas``.
        Autoscaled, it is the live count, which the autoscaler may lower to the floor at any
        time (spec/grove-autoscaling.md §1.1-§1.2): only ``minReplicas`` guarantees it, and
        ``replicas`` above the floor guarantees nothing.
        """
        if self.role.kind == "scalingGroup":
            leaf = "scaleConfig.minReplicas" if self.autoscaled else "replicas"
            return f"spec.template.podCliqueScalingGroups[{self.role.name}].{leaf}"
        leaf = "spec.autoScalingConfig.minReplicas" if self.autoscaled else "spec.replicas"
        return f"spec.template.cliques[{self.role.name}].{leaf}"

    @property
    def fix(self) -> str:
        return self.fix_text()

    def fix_text(self, wrap: Callable[[str], str] = str) -> str:
        """The fix; ``wrap`` formats the role name and the field (code spans in Markdown: the
        name comes from the rendered tree, which a PR may have written)."""
        name = wrap(self.role.name)
        owner = f"the scaling group {name}" if self.role.kind == "scalingGroup" else f"the PodClique {name}"
        if self.autoscaled:
            config = "scaleConfig" if self.role.kind == "scalingGroup" else "autoScalingConfig"
            what = (
                f"set {wrap('minReplicas: 2')} in the {config} of {owner} ({wrap(self.field)}: the autoscaler "
                f"may scale it down to its floor, so its replicas count does not keep a copy"
            )
            if self.maximum is not None and self.maximum < 2:
                what += f"; raise its {wrap('maxReplicas')} to 2 as well"
            what += ")"
        else:
            leaf = "replicas: 2" if self.role.kind == "scalingGroup" else "spec.replicas: 2"
            what = f"set {wrap(leaf)} on {owner} ({wrap(self.field)})"
        return (
            f"{what}, or {wrap('spec.replicas: 2')} on the PodCliqueSet, so another copy serves while one is "
            f"replaced; or set {wrap('spec.updateStrategy.type: OnDelete')} and replace the pods yourself when it suits"
        )

    def sentence(self, steps_word: str = "step") -> str:
        """``OUTAGE of decode (scaling group): step 1 leaves it no available pod ...``."""
        steps = ", ".join(str(s) for s in self.steps)
        plural = "s" if len(self.steps) != 1 else ""
        live = " (counting the replicas Git holds; the live count may be higher)" if self.autoscaled else ""
        return (
            f"OUTAGE of {self.role.label}: {steps_word}{plural} {steps} leave{'' if plural else 's'} it no "
            f"available pod in the whole PodCliqueSet{live}. Fix: {self.fix}."
        )


def role_of(pod: RenderedPod, pcs: str) -> Role:
    """The template role of a slot: its scaling group or PodClique FQN without ``<pcs>-<replica>-``."""
    kind: RoleKind = "scalingGroup" if pod.slot.scaling_group else "podclique"
    fqn = fqn_of(pod)
    prefix = f"{pcs}-{pod.replica}-"
    return Role(fqn[len(prefix) :] if fqn.startswith(prefix) and len(fqn) > len(prefix) else fqn, kind)


def fqn_of(pod: RenderedPod) -> str:
    """The scaling group's or standalone PodClique's object name (a scale target's name)."""
    return pod.slot.scaling_group or pod.slot.podclique


def step_risks(
    pcs: str,
    staying: Iterable[RenderedPod],
    steps: Sequence[Step],
    autoscaled: Mapping[str, Bounds] | None = None,
) -> tuple[tuple[StepRisk, ...], tuple[Outage, ...]]:
    """Per step the capacity of the roles it touches, and the roles some step takes down.

    ``staying`` are the slots rendered on both sides (see the module doc); ``autoscaled`` the
    workload's scale targets by name. Linear in pods plus steps.
    """
    autoscaled = autoscaled or {}
    pods = {p.slot.hostname: p for p in staying}
    per_replica: dict[tuple[Role, int], int] = {}
    per_pcs: dict[Role, int] = {}
    #: Pods of each scaling-group replica: Grove deletes and recreates all its cliques together
    #: when any changed (spec/grove-day2.md §2.4), and a replica short of a clique serves nothing.
    members: dict[tuple[str, int], int] = {}
    scaled: dict[Role, int] = {}
    for pod in pods.values():
        role = role_of(pod, pcs)
        per_replica[(role, pod.replica)] = per_replica.get((role, pod.replica), 0) + 1
        per_pcs[role] = per_pcs.get(role, 0) + 1
        unit = _group_replica(pod)
        if unit is not None:
            members[unit] = members.get(unit, 0) + 1
        bounds = autoscaled.get(fqn_of(pod))
        if bounds is not None:
            scaled[role] = min(scaled.get(role, bounds.maximum), bounds.maximum)
    risks: list[StepRisk] = []
    down: dict[Role, list[int]] = {}
    for number, step in enumerate(steps, start=1):
        out: dict[Role, int] = {}
        units: set[tuple[str, int]] = set()
        for host in step.hostnames:
            found = pods.get(host)
            if found is None:
                continue
            role, unit = role_of(found, pcs), _group_replica(found)
            if unit is None:
                out[role] = out.get(role, 0) + 1
            elif unit not in units:
                units.add(unit)
                out[role] = out.get(role, 0) + members[unit]
        capacities = []
        for role in sorted(out):
            total = per_replica.get((role, step.replica), 0)
            capacity = RoleCapacity(
                role,
                max(total - out[role], 0),
                total,
                max(per_pcs[role] - out[role], 0),
                per_pcs[role],
                role in scaled,
            )
            capacities.append(capacity)
            if capacity.outage:
                down.setdefault(role, []).append(number)
        risks.append(StepRisk(tuple(capacities)))
    outages = tuple(
        Outage(role, tuple(numbers), role in scaled, scaled.get(role)) for role, numbers in sorted(down.items())
    )
    return tuple(risks), outages


def _group_replica(pod: RenderedPod) -> tuple[str, int] | None:
    """(scaling group FQN, its replica index) of a scaling-group slot, else None."""
    slot = pod.slot
    return (slot.scaling_group, slot.scaling_group_replica or 0) if slot.scaling_group else None


def role_totals(pcs: str, staying: Iterable[RenderedPod]) -> dict[Role, int]:
    """Pods per role in the whole PodCliqueSet (what every role not in a step keeps)."""
    out: dict[Role, int] = {}
    for pod in staying:
        role = role_of(pod, pcs)
        out[role] = out.get(role, 0) + 1
    return dict(sorted(out.items()))
