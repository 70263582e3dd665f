"""One virtual source tree per Cluster, planned with the single-cluster pipeline.

A fleet is a layer above :func:`grove_gitops.pipeline.validate`: for each Cluster this module
builds the :class:`SourceSet` a single-cluster repository would have held (that cluster's
OperatorConfiguration, RenderConfiguration and ClusterTopologyBindings, the PodCliqueSets it
selects with its overrides applied, the pass-through objects of its paths) and plans it. So
every check of ``render`` runs per cluster, and a workload valid on one cluster and invalid on
another is reported once per cluster it fails on: ``file: field: message [cluster <name>]``.

The render cache stays incremental per cluster: a PodCliqueSet's cache key is a digest of
its cluster's configuration, so a change to one cluster's OperatorConfiguration re-renders
that cluster only.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from grove_gitops import pipeline
from grove_gitops.api.operatorconfig import OperatorConfiguration
from grove_gitops.api.renderconfig import RenderConfig
from grove_gitops.api.topology import ClusterTopologyBinding
from grove_gitops.backendapi import available_backends
from grove_gitops.cache import RenderCache
from grove_gitops.errors import InputProblem, InvalidInputError
from grove_gitops.fields.externalrefs import image_reference_problems, is_registry_host, shown
from grove_gitops.fleet.model import Cluster, ConfigRef, parse_cluster
from grove_gitops.load.patterns import gitignore_spec
from grove_gitops.load.source import Sourced, SourceSet
from grove_gitops.render import RenderPlan


@dataclass
class ClusterPlan:
    """One cluster's validated plan, and where its Cluster object came from."""

    cluster: Cluster
    file: str
    plan: RenderPlan

    @property
    def name(self) -> str:
        return self.cluster.name


@dataclass
class FleetPlan:
    clusters: list[ClusterPlan]
    #: Warnings of the whole source (read once, not per cluster).
    warnings: list[str] = field(default_factory=list)


def tag(name: str) -> str:
    """The suffix of every per-cluster problem and warning."""
    return f" [cluster {name}]"


def _suffixed(problems: list[InputProblem], name: str) -> list[InputProblem]:
    return [InputProblem(p.file, p.field, p.message + tag(name)) for p in problems]


def _config_name(cfg: OperatorConfiguration | RenderConfig) -> str:
    if isinstance(cfg, RenderConfig):
        return cfg.metadata.name
    meta = (cfg.model_extra or {}).get("metadata")
    return str(meta.get("name") or "") if isinstance(meta, dict) else ""


def _same_path(a: str, b: str) -> bool:
    return PurePosixPath(a) == PurePosixPath(b)


def _resolve(
    ref: ConfigRef, kind: str, found: list[Sourced[Any]], names: list[str], file: str, where: str
) -> tuple[list[Sourced[Any]], list[InputProblem]]:
    """The configurations ``ref`` names (by name or file), or a problem at ``where``."""
    if ref.name is not None:
        hits = [item for item, n in zip(found, names, strict=True) if n == ref.name]
        field_path = f"{where}.name"
    else:
        hits = [item for item in found if _same_path(item.file, ref.path or "")]
        field_path = f"{where}.path"
    if not hits:
        return [], [InputProblem(file, field_path, f"Not found: no {kind} with {ref.describe()} in the source tree")]
    return hits, []


def _one(
    ref: ConfigRef | None, kind: str, found: list[Sourced[Any]], names: list[str], file: str, where: str
) -> tuple[Sourced[Any] | None, list[InputProblem]]:
    if ref is None:
        return None, []
    hits, problems = _resolve(ref, kind, found, names, file, where)
    if len(hits) > 1:
        files = ", ".join(sorted({h.file for h in hits}))
        return None, [InputProblem(file, where, f"Invalid value: {ref.describe()} matches {len(hits)} {kind}s ({files})")]
    return (hits[0] if hits else None), problems


def _scheduler_of(doc: dict[str, Any], default: str) -> str:
    """The scheduler a raw PodCliqueSet selects: the first clique's non-empty schedulerName."""
    for clique in _cliques(doc):
        pod_spec = (clique.get("spec") or {}).get("podSpec") if isinstance(clique.get("spec"), dict) else None
        name = pod_spec.get("schedulerName") if isinstance(pod_spec, dict) else None
        if isinstance(name, str) and name:
            return name
    return default


def _cliques(doc: dict[str, Any]) -> list[dict[str, Any]]:
    spec = doc.get("spec")
    template = spec.get("template") if isinstance(spec, dict) else None
    cliques = template.get("cliques") if isinstance(template, dict) else None
    return [c for c in cliques if isinstance(c, dict)] if isinstance(cliques, list) else []


def rewrite_image(image: str, registry: str) -> str:
    """Replace the registry of ``image`` with ``registry``; the path, tag and digest stay.

    The first path component is a registry when it holds ``.``, ``:`` or an upper-case letter
    or is ``localhost`` (Docker's rule, ``splitDockerDomain`` of distribution/reference);
    ``vllm/vllm:1`` and ``nginx`` have none (Docker Hub).
    """
    first, slash, rest = image.partition("/")
    if slash and is_registry_host(first):
        return f"{registry}/{rest}"
    return f"{registry}/{image}"


def _set_queue(doc: dict[str, Any], where: str, key: str, queue: str) -> None:
    """Write ``queue`` at the PodCliqueSet level and drop the same key everywhere else, so
    the backend resolves exactly this queue."""
    meta = doc.setdefault("metadata", {})
    for holder in [meta, *_cliques(doc)]:
        if not isinstance(holder, dict):
            continue
        for part in ("labels", "annotations"):
            values = holder.get(part)
            if isinstance(values, dict):
                values.pop(key, None)
    target = meta.get(where)
    if not isinstance(target, dict):
        target = meta[where] = {}
    target[key] = queue


def _rewrite_images(doc: dict[str, Any], registry: str, file: str, cluster_file: str) -> list[InputProblem]:
    """Point every container image of ``doc`` at ``registry``; an image that is a valid
    reference before and not after (its name grew beyond 255 characters) is a problem of the
    Cluster's ``imageRegistry``. An image invalid already is left to whoever pulls it, as
    without a fleet."""
    problems: list[InputProblem] = []
    for clique in _cliques(doc):
        spec = clique.get("spec")
        pod_spec = spec.get("podSpec") if isinstance(spec, dict) else None
        if not isinstance(pod_spec, dict):
            continue
        for part in ("initContainers", "containers"):
            for container in pod_spec.get(part) or []:
                if isinstance(container, dict) and isinstance(container.get("image"), str):
                    image = container["image"]
                    container["image"] = rewrite_image(image, registry)
                    wrong = image_reference_problems(container["image"])
                    if wrong and not image_reference_problems(image):
                        problems.append(
                            InputProblem(
                                cluster_file,
                                "spec.overrides.imageRegistry",
                                f"Invalid value: {shown(registry)}: turns image {shown(image)} of {file} into "
                                f"{shown(container['image'])}: {wrong[0]}",
                            )
                        )
    return problems


def _apply_overrides(
    item: Sourced[dict[str, Any]],
    cluster: Cluster,
    cluster_file: str,
    default_profile: str,
    warnings: list[str],
    problems: list[InputProblem],
) -> Sourced[dict[str, Any]]:
    overrides = cluster.spec.overrides
    doc = copy.deepcopy(item.obj)
    if overrides.imageRegistry is not None:
        problems += _rewrite_images(doc, overrides.imageRegistry, item.file, cluster_file)
    if overrides.queue is not None:
        scheduler = _scheduler_of(doc, default_profile)
        backend = available_backends().get(scheduler)
        if backend is not None and backend.queue_key is not None:
            _set_queue(doc, *backend.queue_key, overrides.queue)
        else:
            name = (doc.get("metadata") or {}).get("name")
            warnings.append(
                f"{item.file}: spec.overrides.queue: scheduler {scheduler!r} of PodCliqueSet {name} has no queue; "
                f"the override does not apply{tag(cluster.name)}"
            )
    return Sourced(item.file, doc)


def _pcs_key(doc: dict[str, Any], default_ns: str) -> tuple[str, str]:
    meta = doc.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    return str(meta.get("namespace") or default_ns), str(meta.get("name") or "")


def _labels(doc: dict[str, Any]) -> dict[str, str]:
    meta = doc.get("metadata")
    labels = meta.get("labels") if isinstance(meta, dict) else None
    return {str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {}


def _cluster_source(
    source: SourceSet, cluster: Cluster, file: str, used: set[int], selected: set[int]
) -> tuple[SourceSet, list[InputProblem], list[str]]:
    """The source tree this cluster would have had on its own; ``used``/``selected`` collect
    the ids of configurations and PodCliqueSets some cluster took (for the warnings)."""
    spec = cluster.spec
    problems: list[InputProblem] = []
    warnings: list[str] = []
    opcfg, p = _one(
        spec.operatorConfiguration,
        "OperatorConfiguration",
        source.operator_configs,
        [_config_name(i.obj) for i in source.operator_configs],
        file,
        "spec.operatorConfiguration",
    )
    problems += p
    render, p = _one(
        spec.renderConfiguration,
        "RenderConfiguration",
        source.render_configs,
        [_config_name(i.obj) for i in source.render_configs],
        file,
        "spec.renderConfiguration",
    )
    problems += p
    bindings: list[Sourced[ClusterTopologyBinding]] = []
    for i, ref in enumerate(spec.clusterTopologyBindings):
        hits, p = _resolve(
            ref, "ClusterTopologyBinding", source.bindings, [b.obj.name for b in source.bindings], file,
            f"spec.clusterTopologyBindings[{i}]",
        )
        problems += p
        bindings += [h for h in hits if all(h is not b for b in bindings)]
    for item in [opcfg, render, *bindings]:
        if item is not None:
            used.add(id(item))
    if opcfg is not None:
        opcfg = Sourced(opcfg.file, opcfg.obj.model_copy(deep=True))
    render_cfg = render.obj if render is not None else RenderConfig()
    if render is not None and render_cfg.wiring is not None:
        problems.append(
            InputProblem(
                render.file,
                "wiring",
                f"Forbidden: Cluster {file}: a fleet generates each cluster's wiring from the Cluster's spec.gitops",
            )
        )
    if render is not None and render_cfg.review:
        problems.append(
            InputProblem(
                render.file,
                "mode",
                f"Forbidden: Cluster {file}: review-only mode is for a single-cluster source (docs/adoption.md); "
                "a fleet renders every cluster in full",
            )
        )
    default_ns = render_cfg.defaultNamespace
    profile = spec.overrides.defaultSchedulerProfile
    if profile is not None:
        cfg = opcfg.obj if opcfg is not None else OperatorConfiguration()
        cfg.apply_scheduler_defaults()
        if cfg.profile(profile) is None:
            enabled = ", ".join(p.name for p in cfg.scheduler.profiles)
            problems.append(
                InputProblem(
                    file,
                    "spec.overrides.defaultSchedulerProfile",
                    f"Unsupported value: {profile!r}: not a profile of the cluster's OperatorConfiguration "
                    f"(enabled: {enabled})",
                )
            )
        cfg.scheduler.defaultProfileName = profile
        opcfg = Sourced(opcfg.file if opcfg is not None else file, cfg)
    default_profile = "default-scheduler"
    if opcfg is not None:
        probe = opcfg.obj.model_copy(deep=True)
        probe.apply_scheduler_defaults()
        default_profile = probe.scheduler.defaultProfileName

    patterns = spec.workloads.paths
    match = gitignore_spec(patterns) if patterns is not None else None
    selector = spec.workloads.selector

    def in_paths(item: Sourced[Any]) -> bool:
        return match is None or match.match_file(item.file)

    pcs: list[Sourced[dict[str, Any]]] = []
    keys: set[tuple[str, str]] = set()
    for item in source.podcliquesets:
        if not in_paths(item) or (selector is not None and not selector.matches(_labels(item.obj))):
            continue
        selected.add(id(item))
        keys.add(_pcs_key(item.obj, default_ns))
        changed = _apply_overrides(item, cluster, file, default_profile, warnings, problems)
        replicas = spec.overrides.replicas
        ns, name = _pcs_key(changed.obj, default_ns)
        for key in (f"{ns}/{name}", name if ns == default_ns else None):
            if key is not None and key in replicas and isinstance(changed.obj.get("spec"), dict):
                changed.obj["spec"]["replicas"] = replicas[key]
        pcs.append(changed)
    for key in spec.overrides.replicas:
        ns, _, name = key.rpartition("/")
        if (ns or default_ns, name) not in keys:
            problems.append(
                InputProblem(
                    file, f"spec.overrides.replicas[{key}]", "Not found: no PodCliqueSet of this cluster has this name"
                )
            )
    virtual = SourceSet(
        podcliquesets=pcs,
        bindings=bindings,
        operator_config=opcfg,
        render_config=render,
        passthrough=[item for item in source.passthrough if in_paths(item)],
        cluster_facts=[item for item in source.cluster_facts if in_paths(item)],
        files=source.files,  # where a warning's line and column are found (--output json)
    )
    return virtual, problems, warnings


def plan_fleet(source: SourceSet, cache: RenderCache | None = None) -> FleetPlan:
    """Plan every Cluster of ``source``, or raise :class:`InvalidInputError` with every
    problem: the source's own once, each cluster's tagged with its name."""
    conflicts = set(source.config_conflicts)
    problems = [p for p in source.problems if p not in conflicts] + list(source.fleet_problems)
    warnings = list(source.warnings)
    clusters: list[tuple[Cluster, str]] = []
    seen: dict[str, str] = {}
    for item in source.clusters:
        cluster, p = parse_cluster(item.file, item.obj)
        problems += p
        if cluster is None:
            continue
        if cluster.name in seen:
            problems.append(
                InputProblem(item.file, "metadata.name", f'duplicate Cluster "{cluster.name}" (also in {seen[cluster.name]})')
            )
            continue
        seen[cluster.name] = item.file
        clusters.append((cluster, item.file))
    planned: list[ClusterPlan] = []
    used: set[int] = set()
    selected: set[int] = set()
    for cluster, file in sorted(clusters, key=lambda c: c[0].name):
        virtual, p, w = _cluster_source(source, cluster, file, used, selected)
        warnings += w
        if p:
            problems += _suffixed(p, cluster.name)
            continue
        try:
            plan = pipeline.validate(virtual, cache)
        except InvalidInputError as exc:
            problems += _suffixed(exc.problems, cluster.name)
            continue
        plan.warnings[:] = [w + tag(cluster.name) for w in plan.warnings]
        planned.append(ClusterPlan(cluster, file, plan))
    if problems:
        raise InvalidInputError(problems)
    configs: list[tuple[str, str]] = [(i.file, "OperatorConfiguration") for i in source.operator_configs if id(i) not in used]
    configs += [(i.file, "RenderConfiguration") for i in source.render_configs if id(i) not in used]
    configs += [(i.file, f"ClusterTopologyBinding {i.obj.name}") for i in source.bindings if id(i) not in used]
    warnings += [f"{file}: {what} is used by no Cluster; ignored" for file, what in configs]
    for raw in source.podcliquesets:
        if id(raw) not in selected:
            meta = raw.obj.get("metadata") or {}
            warnings.append(f"{raw.file}: PodCliqueSet {meta.get('name')} is selected by no Cluster; not rendered")
    return FleetPlan(planned, warnings)
