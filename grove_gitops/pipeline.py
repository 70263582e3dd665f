"""One cluster's render, top down: load → validate → (feasibility) → expand and backends → output.

Owns the order of the steps of a single-cluster render and nothing else; each step is a call
into the room that owns it:

1. :func:`load` — read every file of the source tree (``grove_gitops.load``);
2. :func:`validate` — parse, default and validate every document into a
   :class:`~grove_gitops.render.RenderPlan`, nothing expanded yet (``grove_gitops.render``);
3. :func:`check_feasibility` — with a node inventory, place the gangs on it
   (``grove_gitops.feasibility``): under ``feasibility: enforce`` a gang that does not fit
   raises before anything is built;
4. :func:`build` — expand each PodCliqueSet, run its scheduler backend and lay the objects out
   as files (``grove_gitops.output.layout``; review-only mode: the source's own objects);
5. :func:`render_loaded` — the whole of it, writing OUT as it goes (``grove_gitops.output.writer``).

``grove-gitops render`` / ``validate``, ``diff``, ``watch`` and the controller reach these
steps through :mod:`grove_gitops.sourcetree`, which sends a tree with Cluster objects to
``grove_gitops.fleet`` instead; the fleet runs steps 2 and 4 once per cluster. This module
imports nothing of the fleet (tests/test_architecture.py holds it to that).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path

from grove_gitops.cache import RenderCache
from grove_gitops.load.memory import MemorySource
from grove_gitops.load.source import SourceSet, load_source
from grove_gitops.output.layout import Tree, build_tree_from_plan, render_shard
from grove_gitops.output.parallel import EarlyPool
from grove_gitops.output.review import build_review_tree
from grove_gitops.output.writer import write_tree
from grove_gitops.render import OnAccepted, RenderPlan, plan_loaded, preload


@dataclass
class ClusterTree:
    """One cluster's part of a fleet's :class:`Outcome`."""

    name: str
    plan: RenderPlan
    tree: Tree


@dataclass
class Outcome:
    """A finished render: the whole tree, and per cluster (empty without Cluster objects)."""

    tree: Tree
    podcliquesets: int
    acknowledged: list[str]
    clusters: list[ClusterTree] = field(default_factory=list)
    #: The single-cluster plan (None in a fleet).
    plan: RenderPlan | None = None
    #: Gangs that do not fit the node inventory under ``feasibility: warn`` (kept apart from
    #: the tree's warnings so they never reach the output's README).
    feasibility_warnings: list[str] = field(default_factory=list)
    #: The same gangs as data: (namespace, PodGang) -> why it does not fit.
    unfit_gangs: dict[tuple[str, str], str] = field(default_factory=dict)

    @property
    def acknowledged_codes(self) -> dict[str, frozenset[str]]:
        """file -> warning codes its PodCliqueSets acknowledge, over every plan (a file's
        annotation is the same in each cluster's plan; a fleet's warnings name the file)."""
        out: dict[str, frozenset[str]] = {}
        for plan in self.plans:
            for file, codes in plan.acknowledged_codes.items():
                out[file] = out.get(file, frozenset()) | codes
        return out

    @property
    def plans(self) -> list[RenderPlan]:
        """The single plan, or every cluster's."""
        return [self.plan] if self.plan is not None else [c.plan for c in self.clusters]

    @property
    def update_strategies(self) -> dict[tuple[str, str], str]:
        """(namespace, name) -> update strategy of every rendered PodCliqueSet (``plan``); known
        for a PodCliqueSet the cache rendered too."""
        return {item.key: item.update_strategy for plan in self.plans for item in plan.items}


@dataclass
class Validated:
    """A single-cluster source loaded and validated (and placed, when asked): nothing built yet."""

    plan: RenderPlan
    #: See :attr:`Outcome.feasibility_warnings`.
    feasibility_warnings: list[str] = field(default_factory=list)
    #: See :attr:`Outcome.unfit_gangs`.
    unfit_gangs: dict[tuple[str, str], str] = field(default_factory=dict)


# 1. load ------------------------------------------------------------------------------------


def load(source: Path | MemorySource, cache: RenderCache | None = None, jobs: int = 1) -> SourceSet:
    """Every file of ``source`` read and split into documents (``jobs`` processes parse a large
    tree); what the files hold is not judged yet, beyond YAML and the bounds on size. While
    workers parse, this process imports what step 2 needs (``render.preload``)."""
    return load_source(source, cache, jobs, meanwhile=preload)


# 2. validate --------------------------------------------------------------------------------


def validate(
    loaded: SourceSet, cache: RenderCache | None = None, on_accepted: OnAccepted | None = None
) -> RenderPlan:
    """Every document of one cluster's source validated, or :class:`InvalidInputError` with every
    problem of every file. A fleet validates one virtual source per cluster through here.
    ``on_accepted``: see :func:`~grove_gitops.render.plan_loaded` (step 4 starting early)."""
    return plan_loaded(loaded, cache, on_accepted)


# 3. feasibility -----------------------------------------------------------------------------


def check_feasibility(loaded: SourceSet, plan: RenderPlan) -> Validated:
    """With a node inventory in ``loaded``, its gangs placed on it (docs/feasibility.md): under
    ``feasibility: enforce`` a gang that does not fit raises; under ``warn`` it is reported."""
    if not loaded.has_inventory:
        return Validated(plan)
    # Imported only with an inventory: placement is a package of its own that a render without
    # one never needs at start-up (issue 35.4).
    from grove_gitops.feasibility.check import apply_mode, unfit_gangs
    from grove_gitops.planfeasibility import check_plan

    # The placement needs every PodCliqueSet expanded: a cache hit carries only bytes.
    full = plan if all(item.pcs is not None for item in plan.items) else plan_loaded(loaded)
    result = check_plan(full)
    return Validated(plan, apply_mode(result, plan.config.feasibility), unfit_gangs(result))


def plan_single(
    loaded: SourceSet,
    cache: RenderCache | None = None,
    feasibility: bool = False,
    on_accepted: OnAccepted | None = None,
) -> Validated:
    """Steps 2 and 3: validate, then (with ``feasibility``) place on the inventory."""
    plan = validate(loaded, cache, on_accepted)
    return check_feasibility(loaded, plan) if feasibility else Validated(plan)


# 4. expand, backends, layout ----------------------------------------------------------------


def expand_tree(
    plan: RenderPlan,
    cache: RenderCache | None = None,
    jobs: int = 1,
    on_files: Callable[[dict[str, bytes]], None] | None = None,
    skip: Collection[str] = (),
    keep_objects: bool = False,
) -> Tree:
    """Each PodCliqueSet of ``plan`` expanded (its backend's objects included) and laid out as
    files, one at a time or in ``jobs`` processes; see :func:`build_tree_from_plan`."""
    return build_tree_from_plan(plan, cache, jobs=jobs, on_files=on_files, skip=skip, keep_objects=keep_objects)


def build(
    validated: Validated,
    cache: RenderCache | None = None,
    jobs: int = 1,
    single: Callable[[RenderPlan], Tree] | None = None,
    skip: Collection[str] = (),
    keep_objects: bool = False,
) -> Outcome:
    """The output of a validated source, in memory unless ``single`` (the caller's own way from a
    plan to a tree: the CLI writes while rendering) says otherwise. ``skip`` and
    ``keep_objects`` (``diff``) as in :func:`build_tree_from_plan`."""
    plan = validated.plan
    tree = single(plan) if single is not None else expand_tree(plan, cache, jobs, skip=skip, keep_objects=keep_objects)
    return Outcome(
        tree,
        len(plan.items),
        list(plan.config.acknowledgedWarnings),
        plan=plan,
        feasibility_warnings=validated.feasibility_warnings,
        unfit_gangs=validated.unfit_gangs,
    )


# 5. the whole render ------------------------------------------------------------------------


def render_loaded(
    loaded: SourceSet,
    out: Path | None = None,
    jobs: int = 1,
    cache: RenderCache | None = None,
    single: Callable[[RenderPlan], Tree] | None = None,
    feasibility: bool = False,
    fsync: bool = True,
) -> Outcome:
    """Steps 2 to 5 for one cluster's loaded source: ``single`` writes OUT itself as it builds
    (see :func:`build`); a review-only tree (the source's own objects for Argo CD / Flux, not the
    expansion) is written here when ``out`` is given.

    With ``jobs`` > 1, step 4 starts during step 2: workers render the first
    PodCliqueSets while the parent validates the rest (:class:`EarlyPool`, issue 35.4); the
    output is the same bytes, and a failing document still fails the render before a file is
    kept."""
    early = _early_pool(loaded, jobs)
    plan: RenderPlan | None = None
    try:
        validated = plan_single(loaded, cache, feasibility, early.offer if early is not None else None)
        plan = validated.plan
        if plan.config.review:
            tree = build_review_tree(plan)
            if out is not None:
                write_tree(tree, out, fsync=fsync)
            return build(validated, cache, jobs, lambda _plan: tree)
        if early is not None and early.started:
            plan.early = early
        return build(validated, cache, jobs, single)
    finally:
        if early is not None:
            early.close()
        if plan is not None:
            plan.early = None  # the outcome's plan keeps no stopped pool


def _early_pool(loaded: SourceSet, jobs: int) -> EarlyPool | None:
    """A pool for step 4 to start during step 2, where it can pay: more than one job and not a
    review-only tree (nothing is expanded). Only the cache's misses are offered to it; when the
    output stage finds other items to render than those (the cache lost or gained an entry in
    between), it renders them its own way and this pool's work is dropped."""
    config = loaded.render_config
    if jobs < 2 or (config is not None and config.obj.review):
        return None
    return EarlyPool(jobs, len(loaded.podcliquesets), render_shard)
