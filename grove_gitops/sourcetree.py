"""A source tree to its output, whichever kind it is: one cluster's, or a fleet's.

Owns one decision: a tree without Cluster objects takes the single-cluster pipeline
(:mod:`grove_gitops.pipeline`, the whole of it); a tree with Cluster objects goes to
:mod:`grove_gitops.fleet`, which runs that pipeline once per cluster and adds each cluster's
wiring and the root summary. ``render`` / ``validate``, ``diff``, ``watch`` and the controller
call this module; nothing below it knows about fleets, and the fleet never calls back up here.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from grove_gitops import pipeline
from grove_gitops.cache import RenderCache
from grove_gitops.load.memory import MemorySource
from grove_gitops.output.layout import Tree
from grove_gitops.pipeline import Outcome, Validated
from grove_gitops.render import RenderPlan

if TYPE_CHECKING:
    from grove_gitops.fleet.plan import FleetPlan


@dataclass
class SourcePlan:
    """A source tree loaded and validated, nothing built yet: one plan, or a fleet's."""

    plan: RenderPlan | None
    fleet: FleetPlan | None
    #: See :attr:`pipeline.Outcome.feasibility_warnings`.
    feasibility_warnings: list[str] = field(default_factory=list)
    #: See :attr:`pipeline.Outcome.unfit_gangs`.
    unfit_gangs: dict[tuple[str, str], str] = field(default_factory=dict)

    @property
    def digests(self) -> set[str]:
        """The cache keys of a single-cluster plan's PodCliqueSets that the cache holds
        (empty for a fleet: :func:`build_source_tree` never skips there)."""
        if self.plan is None:
            return set()
        return {item.digest for item in self.plan.items if item.pcs is None}


def render_source_tree(
    source: Path | MemorySource,
    out: Path | None = None,
    jobs: int = 1,
    cache: RenderCache | None = None,
    single: Callable[[RenderPlan], Tree] | None = None,
    feasibility: bool = False,
    fsync: bool = True,
) -> Outcome:
    """Plan and build the output of ``source`` (fleet or not) and write it to ``out`` if given.

    ``single`` builds a single-cluster tree from its plan (the caller's own path: the CLI
    writes while rendering, the controller uses its cache); default: in memory. With
    ``feasibility`` see :func:`plan_source_tree`. ``fsync`` as in
    :class:`~grove_gitops.output.writer.TreeWriter` (a fleet's tree, a review-only tree;
    ``single`` writes its own).
    """
    loaded = pipeline.load(source, cache, jobs)
    if not loaded.clusters:
        return pipeline.render_loaded(loaded, out, jobs, cache, single, feasibility, fsync)
    # The fleet's modules are imported only for a tree with Cluster objects: a single-cluster
    # render does not pay for them at start-up (issue 35.4).
    from grove_gitops.fleet.output import build_fleet, write_fleet
    from grove_gitops.fleet.plan import plan_fleet

    fleet = plan_fleet(loaded, cache)
    if out is None:
        return build_fleet(fleet, cache, jobs)
    return write_fleet(fleet, out, cache, jobs, fsync=fsync)


def plan_source_tree(
    source: Path | MemorySource, cache: RenderCache | None = None, jobs: int = 1, feasibility: bool = False
) -> SourcePlan:
    """Load and validate ``source`` (fleet or not); raises :class:`InvalidInputError`.

    With ``feasibility`` and a node inventory in a single-cluster source, its gangs are
    placed on the inventory first (:func:`pipeline.check_feasibility`). A fleet is not checked
    (an inventory would have to name its cluster).
    """
    loaded = pipeline.load(source, cache, jobs)
    if loaded.clusters:
        from grove_gitops.fleet.plan import plan_fleet

        return SourcePlan(None, plan_fleet(loaded, cache))
    validated = pipeline.plan_single(loaded, cache, feasibility)
    return SourcePlan(validated.plan, None, validated.feasibility_warnings, validated.unfit_gangs)


def build_source_tree(
    planned: SourcePlan,
    cache: RenderCache | None = None,
    jobs: int = 1,
    single: Callable[[RenderPlan], Tree] | None = None,
    skip: Collection[str] = (),
    keep_objects: bool = False,
) -> Outcome:
    """The output of a planned source, in memory (``single``: see :func:`render_source_tree`).

    ``skip`` (``diff``) as in :func:`pipeline.build`, for a single-cluster source only: a
    fleet's generated wiring lists every shard and reads its PodGangs, so a fleet is always
    built whole. ``keep_objects`` as there too.
    """
    if planned.plan is None:
        assert planned.fleet is not None
        from grove_gitops.fleet.output import build_fleet

        return build_fleet(planned.fleet, cache, jobs)
    validated = Validated(planned.plan, planned.feasibility_warnings, planned.unfit_gangs)
    return pipeline.build(validated, cache, jobs, single, skip, keep_objects)
