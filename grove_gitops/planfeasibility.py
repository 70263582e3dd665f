"""Feasibility of a render plan: every PodCliqueSet expanded one at a time, its gangs placed.

:func:`check_plan` places autoscaled workloads at their floor and, a second time, at their
maximum (:mod:`grove_gitops.feasibility.scaled`): only the floor is enforced. Owns the step
from a validated :class:`~grove_gitops.render.RenderPlan` to
:mod:`grove_gitops.feasibility.check`'s placement. It sits above both, outside the feasibility
package: the render calls ``feasibility.check`` and the render plan never imports this module,
so ``feasibility`` stays below ``render`` and this module above it.
"""

from __future__ import annotations

from grove_gitops.expand.scaling import counts_at, scale_units
from grove_gitops.feasibility.check import Feasibility, gangs_of, place_gangs
from grove_gitops.feasibility.model import Gang
from grove_gitops.feasibility.scaled import FLOOR, MAXIMUM, Budget, Verdict, unit_bounds
from grove_gitops.render import PlannedPCS, RenderPlan


def _autoscaled(item: PlannedPCS) -> bool:
    return item.pcs is not None and bool(scale_units(item.pcs))


def plan_gangs(
    plan: RenderPlan, at: str = FLOOR, budget: Budget | None = None, skipped: dict[tuple[str, str], str] | None = None
) -> list[Gang]:
    """The gangs of every PodCliqueSet of ``plan``, expanded one at a time (a PodGang only
    names pods of its own PodCliqueSet), so only one expansion is in memory at once.

    Autoscaled workloads are expanded with every autoscaled count at ``at`` (``"floor"`` or
    ``"max"``): the floor's render includes the base PodGang the agent makes for an autoscaled
    standalone clique, which Git does not hold. At the maximum, a workload ``budget`` refuses
    stays at its floor and ``skipped`` gets the reason."""
    files = {item.key: item.file for item in plan.items}
    gangs: list[Gang] = []
    for item in plan.items:
        counts = None
        if item.pcs is not None and _autoscaled(item):
            which = at
            if at == MAXIMUM and budget is not None:
                reason = budget.admit(item.pcs)
                if reason is not None:
                    which = FLOOR
                    if skipped is not None:
                        skipped[item.key] = reason
            counts = counts_at(item.pcs, which)
        gangs += gangs_of([o.obj for o in plan.expand(item, counts)[0]], files)
    return gangs


def _verdict(item: PlannedPCS, floor: Feasibility, maximum: Feasibility, skipped: str) -> Verdict:
    assert item.pcs is not None
    verdict = Verdict(item.key[0], item.key[1], item.file, unit_bounds(item.pcs), skipped=skipped)
    mine = [r for r in floor.results if (r.gang.namespace, r.gang.pcs) == item.key]
    verdict.floor_fits = all(r.fits for r in mine)
    if skipped:
        return verdict
    at_max = [r for r in maximum.results if (r.gang.namespace, r.gang.pcs) == item.key]
    scaled = [r for r in at_max if r.gang.kind == "scaled"]
    verdict.scaled_total = len(scaled)
    verdict.scaled_placed = sum(r.fits for r in scaled)
    verdict.base_fits_at_max = all(r.fits for r in at_max if r.gang.kind == "base")
    verdict.extra_unplaced = sum(r.extra_unplaced for r in at_max)
    verdict.max_fits = all(r.fits for r in at_max) and verdict.extra_unplaced == 0
    verdict.reasons = [f"{r.gang.name}: {r.reason}" for r in at_max if not r.fits and r.reason]
    return verdict


def check_plan(plan: RenderPlan) -> Feasibility | None:
    """Expand every PodCliqueSet of ``plan`` in memory and place its gangs; None (at no cost)
    when the source holds no inventory."""
    source = plan.inputs.source
    if not source.has_inventory:
        return None
    floor = place_gangs(plan_gangs(plan, FLOOR), source, plan.inputs.bindings)
    scaled = [i for i in plan.items if i.pcs is not None and any(u.scalable for u in scale_units(i.pcs))]
    if not scaled:
        return floor
    fixed = sum(i.pods for i in plan.items if not _autoscaled(i))
    skipped: dict[tuple[str, str], str] = {}
    budget = Budget(plan.config.limits, pods=fixed)
    floor.maximum = place_gangs(plan_gangs(plan, MAXIMUM, budget, skipped), source, plan.inputs.bindings)
    floor.verdicts = [_verdict(i, floor, floor.maximum, skipped.get(i.key, "")) for i in scaled]
    return floor
