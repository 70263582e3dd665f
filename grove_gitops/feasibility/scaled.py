"""The gangs of autoscaled workloads at the floor and at the maximum (issue 23 item 7).

An autoscaled workload has no single size: Git renders its scale units at the *floor*
(``minReplicas``), the agent adds replicas up to the live count, at most ``maxReplicas``
(docs/autoscaling.md). So the check places the whole source twice:

* at the **floor**: every workload's objects with each autoscaled count at its floor, what
  the cluster holds at the least. Not Git's objects alone: for a standalone clique with
  ``autoScalingConfig`` the base PodGang's pod list follows the live count, so the agent makes
  it and Git holds none; the render at the floor includes it (:meth:`RenderPlan.expand` with
  :func:`~grove_gitops.expand.scaling.counts_at`).
* at the **maximum**: every autoscaled count at its ``maxReplicas`` at once, the worst case.

Only the floor must fit under ``feasibility: enforce``: the floor is what Git asks for, the
replicas above it are the scalers' to ask for and the agent's to create, and a gang that does
not fit then stays Pending without breaking the workload. The maximum is a warning.

The maximum is checked only within the render's own size limits: a ``maxReplicas`` of a
million is a legal bound, not a render anyone asked for. A workload whose maximum would break
``limits.maxPodsPerPodCliqueSet`` or any other limit of :mod:`grove_gitops.validation.limits`
is left at its floor in the maximum's placement, and its verdict says so; the same for the
workloads beyond ``limits.maxPodsPerRender`` or the render's byte limit in total.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from grove_gitops.api.podcliqueset import PodCliqueSet
from grove_gitops.api.renderconfig import RenderLimits
from grove_gitops.expand.scaling import PCLQ_KIND, PCSG_KIND, ScaleUnit, scale_units
from grove_gitops.validation.limits import MAX_RENDER_POD_BYTES, check_loop_bounds, check_pod_limit, estimate_pod_bytes

FLOOR, MAXIMUM = "floor", "max"


def at_counts(pcs: PodCliqueSet, at: str) -> PodCliqueSet:
    """A copy of ``pcs`` whose autoscaled template counts are their floor or maximum: what the
    render's size rules judge (they read template counts)."""
    units = {u.name: u for u in scale_units(pcs)}
    copy = pcs.model_copy(deep=True)

    def pick(u: ScaleUnit) -> int:
        return u.max_replicas if at == MAXIMUM else u.min_replicas

    for clique in copy.cliques:
        unit = units.get(clique.name)
        if unit is not None and unit.kind == PCLQ_KIND:
            clique.spec.replicas = pick(unit)
    for group in copy.scaling_groups:
        unit = units.get(group.name)
        if unit is not None and unit.kind == PCSG_KIND:
            group.replicas = pick(unit)
    return copy


@dataclass
class Budget:
    """What the maximum's expansions may still take of the render's limits."""

    limits: RenderLimits
    pods: int = 0
    pod_bytes: int = 0

    def admit(self, pcs: PodCliqueSet) -> str | None:
        """None when ``pcs`` at its maximum is within every limit (and is then counted), else
        why it is not checked at the maximum."""
        big = at_counts(pcs, MAXIMUM)
        pods, errs = check_pod_limit(big, self.limits)
        errs = errs or check_loop_bounds(big, self.limits)
        if errs:
            return f"not checked at the maximum: {errs[0].message()}"
        pod_bytes = estimate_pod_bytes(big)
        if self.pods + pods > self.limits.maxPodsPerRender:
            return (
                f"not checked at the maximum: the workloads at their maximum would have more than "
                f"{self.limits.maxPodsPerRender} pods (RenderConfiguration limits.maxPodsPerRender)"
            )
        if self.pod_bytes + pod_bytes > MAX_RENDER_POD_BYTES:
            return "not checked at the maximum: the workloads at their maximum would take more than the render's byte limit"
        self.pods += pods
        self.pod_bytes += pod_bytes
        return None


@dataclass(frozen=True)
class UnitBounds:
    """One autoscaled template entry: ``replicas of prefill`` or ``pods of worker``."""

    name: str
    kind: str
    floor: int
    maximum: int

    @property
    def word(self) -> str:
        return "pods" if self.kind == PCLQ_KIND else "replicas"

    def at(self, which: str) -> str:
        n = self.maximum if which == MAXIMUM else self.floor
        return f"{n} {self.word if n != 1 else self.word[:-1]} of {self.name}"


def unit_bounds(pcs: PodCliqueSet) -> list[UnitBounds]:
    return [UnitBounds(u.name, u.kind, u.min_replicas, u.max_replicas) for u in scale_units(pcs)]


@dataclass
class Verdict:
    """One autoscaled workload: does its floor fit, does its maximum?"""

    namespace: str
    name: str
    file: str
    units: list[UnitBounds]
    floor_fits: bool = True
    #: None when the maximum was not checked (``skipped`` says why).
    max_fits: bool | None = None
    skipped: str = ""
    scaled_total: int = 0
    scaled_placed: int = 0
    #: Pods beyond a podgroup's minReplicas (a standalone clique's count above minAvailable)
    #: that found no room at the maximum.
    extra_unplaced: int = 0
    base_fits_at_max: bool = True
    reasons: list[str] = field(default_factory=list)

    @property
    def title(self) -> str:
        return f"{self.namespace}/{self.name}"

    def sizes(self, which: str) -> str:
        return ", ".join(u.at(which) for u in self.units)

    def text(self) -> str:
        """``fits at the floor (2 replicas of prefill), does not fit at the maximum (4 replicas
        of prefill): 1 of 3 scaled gangs place``."""
        floor = "fits" if self.floor_fits else "does not fit"
        out = f"{floor} at the floor ({self.sizes(FLOOR)})"
        if self.max_fits is None:
            return f"{out}; {self.skipped} ({self.sizes(MAXIMUM)})"
        if self.max_fits:
            return f"{out}, fits at the maximum ({self.sizes(MAXIMUM)})"
        details = []
        if not self.base_fits_at_max:
            details.append("its base gang does not fit")
        if self.scaled_total:
            details.append(f"{self.scaled_placed} of {self.scaled_total} scaled gangs place")
        if self.extra_unplaced:
            details.append(f"{self.extra_unplaced} pod(s) above minAvailable find no room")
        return f"{out}, does not fit at the maximum ({self.sizes(MAXIMUM)}): {'; '.join(details)}"
