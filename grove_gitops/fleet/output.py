"""The output of a source tree, fleet or not: what ``render``, ``validate``, ``diff`` and the
controller call.

Without Cluster objects this is today's pipeline, untouched (:func:`plan_loaded` then
:func:`build_tree_from_plan`), so the output is the same bytes. With Cluster objects every
cluster's complete tree goes to ``OUT/<cluster>/`` (plus its generated ``_flux/`` /
``_argocd/`` wiring), and OUT gets a ``README.md`` listing the clusters and a ``render.meta``
(the marker that lets a later render replace OUT and keeps the loader from reading it back).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from grove_gitops import __version__
from grove_gitops.cache import RenderCache
from grove_gitops.fleet.plan import ClusterPlan, FleetPlan, plan_fleet
from grove_gitops.fleet.wiring import wiring_files
from grove_gitops.load.memory import MemorySource
from grove_gitops.load.source import load_source
from grove_gitops.output.layout import Tree, build_tree_from_plan
from grove_gitops.output.marker import META_FILE, META_MARKER
from grove_gitops.output.review import build_review_tree
from grove_gitops.output.writer import TreeWriter, write_tree
from grove_gitops.render import RenderPlan, plan_loaded


@dataclass
class ClusterTree:
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
class SourcePlan:
    """A source tree loaded and validated, nothing built yet: one plan, or a fleet's."""

    plan: RenderPlan | None
    fleet: FleetPlan | None
    #: See :attr:`Outcome.feasibility_warnings`.
    feasibility_warnings: list[str] = field(default_factory=list)
    #: See :attr:`Outcome.unfit_gangs`.
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
    ``feasibility`` see :func:`plan_source_tree`. ``fsync`` as in :class:`TreeWriter` (a
    fleet's tree; ``single`` writes its own).
    """
    planned = plan_source_tree(source, cache, jobs, feasibility)
    if planned.plan is not None and planned.plan.config.review:
        # Review-only mode: the source's own objects for Argo CD / Flux, not the expansion.
        tree = build_review_tree(planned.plan)
        if out is not None:
            write_tree(tree, out, fsync=fsync)
        return build_source_tree(planned, cache, jobs, lambda _plan: tree)
    if planned.fleet is None or out is None:
        return build_source_tree(planned, cache, jobs, single)
    writer = TreeWriter(out, fsync=fsync)
    try:
        outcome = build_fleet(planned.fleet, cache, jobs, on_files=writer.write)
        writer.write(outcome.tree.files)
        writer.commit()
    except BaseException:
        writer.abort()
        raise
    return outcome


def plan_source_tree(
    source: Path | MemorySource, cache: RenderCache | None = None, jobs: int = 1, feasibility: bool = False
) -> SourcePlan:
    """Load and validate ``source`` (fleet or not); raises :class:`InvalidInputError`.

    With ``feasibility`` and a node inventory in a single-cluster source, its gangs are
    placed on the inventory first (docs/feasibility.md): under ``feasibility: enforce`` a
    gang that does not fit raises before anything is built. A fleet is not checked (an
    inventory would have to name its cluster).
    """
    loaded = load_source(source, cache, jobs)
    if loaded.clusters:
        return SourcePlan(None, plan_fleet(loaded, cache))
    plan = plan_loaded(loaded, cache)
    found: list[str] = []
    unfit: dict[tuple[str, str], str] = {}
    if feasibility and loaded.has_inventory:
        from grove_gitops.feasibility.check import apply_mode, unfit_gangs
        from grove_gitops.feasibility.planned import check_plan

        # The placement needs every PodCliqueSet expanded: a cache hit carries only bytes.
        full = plan if all(item.pcs is not None for item in plan.items) else plan_loaded(loaded)
        result = check_plan(full)
        found = apply_mode(result, plan.config.feasibility)
        unfit = unfit_gangs(result)
    return SourcePlan(plan, None, found, unfit)


def build_source_tree(
    planned: SourcePlan,
    cache: RenderCache | None = None,
    jobs: int = 1,
    single: Callable[[RenderPlan], Tree] | None = None,
    skip: Collection[str] = (),
    keep_objects: bool = False,
) -> Outcome:
    """The output of a planned source, in memory (``single``: see :func:`render_source_tree`).

    ``skip`` (``diff``) as in :func:`build_tree_from_plan`, for a single-cluster source only:
    a fleet's generated wiring lists every shard and reads its PodGangs, so a fleet is
    always built whole. ``keep_objects`` as there too.
    """
    plan = planned.plan
    if plan is None:
        assert planned.fleet is not None
        return build_fleet(planned.fleet, cache, jobs)
    tree = (
        single(plan)
        if single is not None
        else build_tree_from_plan(plan, cache, jobs=jobs, skip=skip, keep_objects=keep_objects)
    )
    acknowledged = list(plan.config.acknowledgedWarnings)
    return Outcome(
        tree,
        len(plan.items),
        acknowledged,
        plan=plan,
        feasibility_warnings=planned.feasibility_warnings,
        unfit_gangs=planned.unfit_gangs,
    )


def _prefixed(name: str, files: Mapping[str, bytes]) -> dict[str, bytes]:
    return {f"{name}/{path}": data for path, data in files.items()}


def build_fleet(
    fleet: FleetPlan,
    cache: RenderCache | None = None,
    jobs: int = 1,
    on_files: Callable[[dict[str, bytes]], None] | None = None,
) -> Outcome:
    """Every cluster's tree under ``<cluster>/``, its wiring, and the root summary."""
    combined = Tree(warnings=list(fleet.warnings))
    clusters: list[ClusterTree] = []
    acknowledged: list[str] = []
    for planned in fleet.clusters:
        tree = _cluster_tree(planned, cache, jobs, on_files)
        clusters.append(ClusterTree(planned.name, planned.plan, tree))
        combined.files.update(_prefixed(planned.name, tree.files))
        combined.shards.update({f"{planned.name}/{s}": names for s, names in tree.shards.items()})
        combined.warnings += tree.warnings
        combined.objects += tree.objects
        acknowledged += [a for a in planned.plan.config.acknowledgedWarnings if a not in acknowledged]
    combined.files["README.md"] = _root_readme(clusters).encode()
    combined.files[META_FILE] = _meta(clusters, len(combined.files) + 1).encode()
    return Outcome(combined, sum(len(c.plan.items) for c in clusters), acknowledged, clusters)


def _cluster_tree(
    planned: ClusterPlan,
    cache: RenderCache | None,
    jobs: int,
    on_files: Callable[[dict[str, bytes]], None] | None,
) -> Tree:
    sink = None if on_files is None else (lambda files: on_files(_prefixed(planned.name, files)))
    tree = build_tree_from_plan(planned.plan, cache, jobs=jobs, on_files=sink)
    tree.files.update(wiring_files(planned.cluster, planned.plan.config, tree.files, tree.shards))
    return tree


def _root_readme(clusters: list[ClusterTree]) -> str:
    lines = [
        "# Rendered Grove workloads (fleet)",
        "",
        f"Generated by grove-gitops {__version__}, one complete tree per cluster. Do not edit: change the source "
        "and re-render.",
        "",
        "| cluster | Kubernetes | PodCliqueSets | objects | directory |",
        "| --- | --- | ---: | ---: | --- |",
    ]
    for c in clusters:
        lines.append(
            f"| {c.name} | {c.plan.config.kubernetesVersion} | {len(c.plan.items)} | {c.tree.objects} | `{c.name}/` |"
        )
    lines += [
        "",
        "Each cluster directory is what a single-cluster render writes, plus the generated wiring: "
        "`_flux/` (one Flux Kustomization per shard) and `_argocd/` (one Argo CD Application per shard, "
        "applied by an app-of-apps), per the RenderConfiguration's `gitops` setting.",
    ]
    return "\n".join(lines) + "\n"


def _meta(clusters: list[ClusterTree], files: int) -> str:
    data = {
        "generator": META_MARKER,
        "version": __version__,
        "clusters": {
            c.name: {
                "kubernetesVersion": c.plan.config.kubernetesVersion,
                "podCliqueSets": sorted(f"{ns}/{n}" for ns, n in (i.key for i in c.plan.items)),
                "objects": c.tree.objects,
            }
            for c in clusters
        },
        "files": files,
    }
    return json.dumps(data, indent=2, sort_keys=True) + "\n"
