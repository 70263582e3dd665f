"""Validation of one cluster's loaded source into a :class:`RenderPlan`, and the expansion of each
of its PodCliqueSets (with its scheduler backend) into objects.

Owns steps 2 and 4 of :mod:`grove_gitops.pipeline` (which runs the steps in order, writing in
``output``): :func:`plan_loaded` validates every document and plans, :meth:`RenderPlan.expand`
expands one PodCliqueSet. :func:`render_source` is the whole render in memory, for tests and
tools: a pure function of the source tree (no cluster, no clock, no randomness) that either
returns every object plus warnings, or raises :class:`InvalidInputError` carrying every problem
of every file.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from grove_gitops.api.gitopswiring import wiring_problems
from grove_gitops.api.operatorconfig import OperatorConfiguration
from grove_gitops.api.podcliqueset import PodCliqueSet
from grove_gitops.api.renderconfig import RenderConfig
from grove_gitops.api.topology import ClusterTopologyBinding
from grove_gitops.backendapi import BackendContext, SchedulerBackend, available_backends
from grove_gitops.cache import CachedShard, RenderCache, digest
from grove_gitops.errors import InputProblem, InvalidInputError
from grove_gitops.expand.context import ExpandContext
from grove_gitops.expand.gitsplit import git_objects
from grove_gitops.expand.hpa import hpas
from grove_gitops.expand.hpacheck import validate_hpas
from grove_gitops.expand.resourceclaims import validate_templates
from grove_gitops.expand.scaling import Counts, counts_at
from grove_gitops.expand.workload import ExpansionMemo, expand_pcs
from grove_gitops.expand.workloadobject import workload_object
from grove_gitops.fields.fielderrors import FieldError, invalid
from grove_gitops.load.memory import MemorySource
from grove_gitops.load.source import Sourced, SourceSet, load_source, parse_pcs, repaired_pcs
from grove_gitops.problems import MAX_PROBLEMS_PER_DOCUMENT, cap_document, document_name
from grove_gitops.validation.acknowledge import workload_acknowledgements
from grove_gitops.validation.clusterfacts import read_facts
from grove_gitops.validation.coexistence import coexistence_problems
from grove_gitops.validation.config import validate_binding, validate_operator_config
from grove_gitops.validation.defaulting import apply_defaults
from grove_gitops.validation.kubeversions import kube_version_warnings, validate_kube_version
from grove_gitops.validation.limits import (
    BYTES_RULE,
    MAX_RENDER_POD_BYTES,
    check_pod_limit,
    count_pods,
    loop_bounds,
)
from grove_gitops.validation.mnnvl import validate_mnnvl
from grove_gitops.validation.namespaces import namespace_warnings
from grove_gitops.validation.podcliqueset import starts_after_warnings, validate_spec
from grove_gitops.validation.podspec import object_errors, unknown_builtin_kind, validate_pod_specs
from grove_gitops.validation.podspec import preload as preload_schema_validator
from grove_gitops.validation.references import reference_warnings
from grove_gitops.validation.scheduler import selected_scheduler, validate_scheduler_names
from grove_gitops.validation.topology import validate_cel, validate_topology
from grove_gitops.yamlfiles.positions import locate

CLUSTER_SHARD = "_cluster"


@dataclass(frozen=True)
class RenderedObject:
    """An output object and the shard (directory) it belongs to: ``ns/pcs``, ``ns/_resources``
    or ``_cluster``."""

    shard: str
    obj: dict[str, Any]


@dataclass
class RenderResult:
    config: RenderConfig
    objects: list[RenderedObject] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    #: (namespace, name) of every rendered PodCliqueSet, and the file it came from.
    podcliquesets: dict[tuple[str, str], str] = field(default_factory=dict)
    #: (namespace, name) -> ``spec.updateStrategy.type`` (defaulted): ``grove-gitops plan``
    #: needs the strategy, which no rendered object carries on every render.
    update_strategies: dict[tuple[str, str], str] = field(default_factory=dict)
    #: Gangs that do not fit the source's node inventory (``render_source(feasibility=True)``
    #: under ``feasibility: warn``); kept apart so they never reach the output's README.
    feasibility_warnings: list[str] = field(default_factory=list)
    #: The plan rendered: the shard README of an autoscaled workload expands it at its floor.
    plan: RenderPlan | None = None


@dataclass
class _Inputs:
    source: SourceSet
    render: RenderConfig
    opcfg: OperatorConfiguration
    bindings: dict[str, ClusterTopologyBinding]
    backends: dict[str, SchedulerBackend]
    problems: list[InputProblem]
    warnings: list[str]


def _problems(file: str, errors: list[FieldError], document: str = "") -> list[InputProblem]:
    """One document's errors as problems, at most :data:`MAX_PROBLEMS_PER_DOCUMENT` of them."""
    return cap_document(
        file, (InputProblem(file, e.path, e.message(), located_at=e.located_at) for e in errors), document
    )


_CLAIM_TEMPLATE_GROUP = "resource.k8s.io/"


def _claim_templates(source: SourceSet, default_ns: str) -> dict[tuple[str, str], dict[str, Any]]:
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for item in source.passthrough:
        obj = item.obj
        if obj.get("kind") == "ResourceClaimTemplate" and str(obj.get("apiVersion", "")).startswith(
            _CLAIM_TEMPLATE_GROUP
        ):
            meta = obj.get("metadata") or {}
            out[(meta.get("namespace") or default_ns, meta["name"])] = obj
    return out


def preload() -> None:
    """What planning imports on first use, imported ahead: the schema validator
    (``validation.podspec``) and the scheduler backends' modules, about 60 ms of CPU that the
    first PodCliqueSet paid before any could go to a worker (issue 35.4). ``pipeline.load``
    runs it while worker processes parse the source, time this process would spend waiting."""
    preload_schema_validator()
    available_backends()


def _prepare(source: SourceSet) -> _Inputs:
    problems = list(source.problems)
    warnings: list[str] = list(source.warnings)
    render = source.render_config.obj if source.render_config else RenderConfig()
    if source.render_config is not None and render.wiring is not None:
        problems += wiring_problems(source.render_config.file, render.wiring, "wiring")
    opcfg_src = source.operator_config
    opcfg = opcfg_src.obj if opcfg_src else OperatorConfiguration()
    opcfg.apply_scheduler_defaults()
    classes = available_backends()
    problems += _problems(
        opcfg_src.file if opcfg_src else "OperatorConfiguration",
        validate_operator_config(opcfg, classes),
        "the OperatorConfiguration",
    )

    bindings: dict[str, ClusterTopologyBinding] = {}
    enabled = {p.name for p in opcfg.scheduler.profiles if p.name in classes}
    topology_aware = {n for n in enabled if classes[n].topology_aware}
    for item in source.bindings:
        binding_errs = validate_binding(item.obj, enabled, topology_aware)
        problems += _problems(item.file, binding_errs, f"ClusterTopologyBinding {item.obj.name}")
        if item.obj.name in bindings:
            problems.append(
                InputProblem(item.file, "metadata.name", f'duplicate ClusterTopologyBinding "{item.obj.name}"')
            )
        bindings[item.obj.name] = item.obj

    backends: dict[str, SchedulerBackend] = {}
    for profile in opcfg.scheduler.profiles:
        cls = classes.get(profile.name)
        if cls is None:
            continue
        ctx = BackendContext(
            render=render,
            profile_config=profile.config or {},
            bindings=bindings,
            tas_enabled=opcfg.topologyAwareScheduling.enabled,
            source_objects=tuple(item.obj for item in source.passthrough),
        )
        backends[profile.name] = cls(ctx)
    for item in source.bindings:
        for backend in backends.values():
            for finding in backend.validate_binding(item.obj):
                if finding.warning:
                    warnings.append(f"{item.file}: {finding.field}: {finding.message}")
                else:
                    problems.append(InputProblem(item.file, finding.field, finding.message))
    return _Inputs(source, render, opcfg, bindings, backends, problems, warnings)


def _validate_pcs(
    item: Sourced[PodCliqueSet], inputs: _Inputs, claim_templates: Mapping[tuple[str, str], Any]
) -> tuple[list[FieldError], int]:
    """Every check of one PodCliqueSet (defaulted here), and the bytes of its pods and PodGangs
    (``limits.estimate_pod_bytes``; 0 when there are errors)."""
    pcs = item.obj
    opcfg = inputs.opcfg
    apply_defaults(pcs, inputs.render.defaultNamespace)
    _, too_many = check_pod_limit(pcs, inputs.render.limits)
    pod_bytes = 0
    if not too_many:
        too_many, pod_bytes = loop_bounds(pcs, inputs.render.limits)
    if too_many:
        return too_many, 0  # nothing below may iterate over a billion replicas (or minAvailable)
    tas = opcfg.topologyAwareScheduling.enabled
    errs = validate_cel(pcs)
    topo_errs, topo_warnings = validate_topology(pcs, tas, inputs.bindings)
    errs += topo_errs
    inputs.warnings += [f"{item.file}: {w}" for w in topo_warnings]
    errs += validate_spec(pcs)
    inputs.warnings += [f"{item.file}: {w}" for w in starts_after_warnings(pcs)]
    errs += validate_mnnvl(pcs, opcfg.network.autoMNNVLEnabled)
    errs += validate_kube_version(pcs, inputs.render.kubernetesVersion)
    inputs.warnings += [f"{item.file}: {w}" for w in kube_version_warnings(pcs, inputs.render.kubernetesVersion)]
    default = opcfg.scheduler.defaultProfileName
    scheduler_errs = validate_scheduler_names(pcs, default, inputs.backends.keys())
    errs += scheduler_errs
    errs += validate_templates(pcs, claim_templates)
    errs += validate_pod_specs(pcs, inputs.render.kubernetesVersion)
    if not errs:  # the HPAs are built from a PodCliqueSet Grove accepts
        errs += validate_hpas(pcs, inputs.render.kubernetesVersion)
    errs += _backend_findings(item, inputs, default, scheduler_ok=not scheduler_errs, grove_errs=bool(errs))
    return errs, 0 if errs else pod_bytes


def _backend_findings(
    item: Sourced[PodCliqueSet], inputs: _Inputs, default: str, *, scheduler_ok: bool, grove_errs: bool
) -> list[FieldError]:
    """The selected backend's findings, reported beside Grove's own errors in the same run.

    They only depend on the scheduler name resolving to an enabled backend, so they are skipped only
    when it does not. A backend may assume a spec Grove accepts: when Grove found errors, an exception
    from the backend means "cannot judge this spec" and its findings are left out (Grove's errors
    already fail the run); on a spec Grove accepts, an exception is a backend bug and propagates.
    """
    pcs = item.obj
    backend = inputs.backends.get(selected_scheduler(pcs, default)) if pcs.cliques and scheduler_ok else None
    if backend is None:
        return []
    try:
        findings = list(backend.validate(pcs))
    except Exception:
        if grove_errs:
            return []
        raise
    errs: list[FieldError] = []
    for finding in findings:
        if finding.warning:
            inputs.warnings.append(f"{item.file}: {finding.field}: {finding.message}")
        else:
            errs.append(FieldError(finding.field or "spec", finding.kind, finding.message))
    return errs


def _checks_despite_schema(
    raw: Sourced[dict[str, Any]], inputs: _Inputs, claim_templates: Mapping[tuple[str, str], Any]
) -> list[InputProblem]:
    """Grove's checks of a PodCliqueSet whose only schema errors are unknown fields, on its
    repaired copy (``load.schemarepair``), so one run reports a typo'd field and a wrong
    topology domain together. The document fails already: its warnings are dropped, and a
    check that cannot judge the repaired copy (an exception) adds nothing."""
    repaired = repaired_pcs(raw)
    if repaired is None:
        return []
    before = len(inputs.warnings)
    try:
        errs, _ = _validate_pcs(Sourced(raw.file, repaired.model), inputs, claim_templates)
    except Exception:
        errs = []
    finally:
        del inputs.warnings[before:]
    return [InputProblem(raw.file, e.path, e.message()) for e in errs if repaired.keeps(e)]


@dataclass
class PlannedPCS:
    """A valid PodCliqueSet waiting to be expanded (``pcs`` is None when the cache has it)."""

    file: str
    key: tuple[str, str]
    digest: str
    pcs: PodCliqueSet | None
    warnings: list[str]
    pods: int = 0
    #: Defaulted ``spec.updateStrategy.type``: ``plan`` needs it, and a cache hit has no spec.
    update_strategy: str = "RollingRecreate"
    #: The source document, so that a cache hit whose files the store then loses (another
    #: process evicted the entry) can still be expanded: it validated when it was cached.
    raw: Sourced[dict[str, Any]] | None = None


class EarlyShards(Protocol):
    """Shards that began rendering while the plan was still being validated (issue 35.4:
    ``grove_gitops.output.parallel.EarlyPool``, started by ``grove_gitops.pipeline``)."""

    def shards(self, items: list[PlannedPCS]) -> Generator[CachedShard, None, None] | None:
        """``items``' shards in their order, or None when they are not the ones it rendered."""

    def publish(self, staging: bytes) -> None:
        """Write the shards rendered from now on into the staging tree ``staging`` describes
        (an encoded ``grove_gitops.output.staging.Published``)."""

    def close(self) -> None:
        """Stop the workers (they finish the shard in hand)."""


#: Told of each PodCliqueSet as planning accepts it (see :func:`plan_loaded`).
OnAccepted = Callable[["RenderPlan", PlannedPCS], None]


@dataclass
class RenderPlan:
    """Everything validated, nothing expanded yet: the output stage expands one
    PodCliqueSet at a time (or takes it from the cache), so memory stays bounded."""

    config: RenderConfig
    warnings: list[str]
    items: list[PlannedPCS]
    extra: list[RenderedObject]
    inputs: _Inputs
    claim_templates: dict[tuple[str, str], dict[str, Any]]
    #: file -> warning codes its PodCliqueSets acknowledge (``validation.acknowledge``).
    acknowledged_codes: dict[str, frozenset[str]] = field(default_factory=dict)
    #: The items' shards, already rendering in workers (set by ``pipeline.render_loaded``).
    early: EarlyShards | None = None

    def recover(self, item: PlannedPCS) -> PlannedPCS:
        """``item`` with its PodCliqueSet parsed, defaulted and validated again from its
        source document: a cache hit whose files the store lost after planning (another
        process evicted the entry, or its files are damaged) is rendered after all. Its
        warnings are the cached ones already; validation passed when it was cached under the
        same digest, so errors here mean a bug, not bad input."""
        if item.pcs is not None or item.raw is None:
            return item
        pcs, problems = parse_pcs(item.raw)
        if pcs is None:
            raise InvalidInputError(cap_document(item.file, problems, document_name(item.raw.obj)))
        errs, _ = _validate_pcs(
            Sourced(item.file, pcs), dataclasses.replace(self.inputs, warnings=[]), self.claim_templates
        )
        if errs:
            raise InvalidInputError(_problems(item.file, errs))
        return dataclasses.replace(item, pcs=pcs)

    def render_inputs(self, item: PlannedPCS) -> list[dict[str, Any]]:
        """The source documents ``item``'s objects depend on: its PodCliqueSet document, the
        render and operator configurations, the topology bindings, ResourceClaimTemplates and
        what a backend reads. Rendered alone (:func:`plan_source` of a
        :class:`~grove_gitops.load.memory.MemorySource` of them) they expand ``item`` exactly
        as this render does: the agent renders live counts from them (docs/autoscaling.md)."""
        if item.raw is None:
            raise ValueError(f"{item.file}: PodCliqueSet {item.key} has no source document")
        src = self.inputs.source
        docs: list[dict[str, Any]] = [item.raw.obj]
        if src.render_config is not None:
            docs.append(src.render_config.obj.model_dump(mode="json", exclude_none=True))
        if src.operator_config is not None:
            docs.append(src.operator_config.obj.model_dump(mode="json", exclude_none=True))
        for binding in self.inputs.bindings.values():
            obj = binding.model_dump(mode="json", exclude_none=True)
            obj.pop("status", None)
            docs.append(obj)
        backends = list(self.inputs.backends.values())
        for passthrough in src.passthrough:
            obj = passthrough.obj
            claim = obj.get("kind") == "ResourceClaimTemplate" and str(obj.get("apiVersion", "")).startswith(
                _CLAIM_TEMPLATE_GROUP
            )
            if claim or any(b.reads_source_object(obj) for b in backends):
                docs.append(obj)
        return docs

    def context_for(self, pcs: PodCliqueSet) -> ExpandContext:
        """What expanding ``pcs`` needs from the whole source: its backend (the profile it
        selects), the render and topology settings, the bindings and the claim templates."""
        opcfg = self.inputs.opcfg
        backend = self.inputs.backends[selected_scheduler(pcs, opcfg.scheduler.defaultProfileName)]
        return ExpandContext(
            self.inputs.render,
            backend,
            opcfg.topologyAwareScheduling.enabled,
            self.inputs.bindings,
            self.claim_templates,
            mnnvl_enabled=opcfg.network.autoMNNVLEnabled,
        )

    def expand(
        self, item: PlannedPCS, counts: Counts | None = None, floor: list[RenderedObject] | None = None
    ) -> tuple[list[RenderedObject], list[str]]:
        """Git's objects of ``item`` (autoscaled units at their floor, without what depends on a
        live count), or with ``counts`` every object of the workload at those counts: what the
        cluster holds once the agent has materialised them (:mod:`grove_gitops.expand.gitsplit`).
        ``floor``, when given with no ``counts``, receives every object at the floor (Git's and
        the agent's), which Git's were cut from: the shard README draws it without expanding again."""
        pcs = item.pcs
        if pcs is None:
            raise ValueError(f"{item.file}: PodCliqueSet {item.key} is only in the cache")
        ctx = self.context_for(pcs)
        from grove_gitops import __version__

        memo = ExpansionMemo()  # what gitsplit's render one above the floor shares with the floor
        expansion = expand_pcs(pcs, ctx, counts, memo)
        workload = expansion.objects if counts is not None else git_objects(pcs, ctx, expansion, memo)
        workload = [*workload, *hpas(pcs), workload_object(pcs, __version__, self.render_inputs(item))]
        shard = f"{pcs.namespace}/{pcs.name}"
        objects = [RenderedObject(_shard_of(o, shard), o) for o in workload]
        if floor is not None and counts is None:
            floor += [RenderedObject(_shard_of(o, shard), o) for o in expansion.objects]
        return objects, [f"{item.file}: {f}: {m}" for f, m in expansion.warnings]


def _global_digest(inputs: _Inputs, claim_templates: dict[tuple[str, str], dict[str, Any]]) -> str:
    """Everything besides its own document that a PodCliqueSet's output can depend on."""
    from grove_gitops import __version__

    return digest(
        __version__,
        inputs.render.model_dump(mode="json"),
        inputs.opcfg.model_dump(mode="json"),
        [b.model_dump(mode="json") for b in inputs.bindings.values()],
        [item.obj for item in inputs.source.passthrough],
        sorted(inputs.backends),
        sorted(claim_templates),
    )


def plan_source(root: Path | MemorySource, cache: RenderCache | None = None, jobs: int = 1) -> RenderPlan:
    """Load and validate a whole source tree, or raise :class:`InvalidInputError` with every
    problem of every file. ``jobs`` worker processes parse the files of a large tree."""
    return plan_loaded(load_source(root, cache, jobs), cache)


def plan_loaded(
    source: SourceSet, cache: RenderCache | None = None, on_accepted: OnAccepted | None = None
) -> RenderPlan:
    """:func:`plan_source` of a source already loaded (a fleet plans one virtual source per
    cluster, ``grove_gitops.fleet``).

    ``on_accepted(context, item)`` is told of each PodCliqueSet (a cache hit too, ``pcs`` None)
    as soon as it is planned, in order, while no problem has been found yet: ``context`` is this plan without its items
    (what expanding one needs). It lets the output stage render the first PodCliqueSets while
    the others are still being validated (issue 35.4); whatever it made of them is thrown away
    when a later document fails, since the plan then raises."""
    inputs = _prepare(source)
    problems = inputs.problems
    claim_templates = _claim_templates(source, inputs.render.defaultNamespace)
    global_digest = _global_digest(inputs, claim_templates)
    context = RenderPlan(inputs.render, [], [], [], inputs, claim_templates)
    seen: dict[tuple[str, str], str] = {}
    items: list[PlannedPCS] = []
    total_pods = total_bytes = 0
    max_pods = inputs.render.limits.maxPodsPerRender
    for raw in source.podcliquesets:
        doc_digest = digest(global_digest, raw.file, cache.doc_digest(raw.obj) if cache is not None else raw.obj)
        cached = cache.peek_shard(doc_digest) if cache is not None else None
        errs: list[FieldError] = []
        pod_bytes = 0  # of a cached PodCliqueSet: rendered before, so within bounds then
        if cached is not None:
            key, pcs, warnings, pods = cached.key, None, list(cached.warnings), cached.pods
            strategy = cached.update_strategy
        else:
            pcs, parse_problems = parse_pcs(raw)
            if pcs is None:  # past the cap already: the checks on a repaired copy add nothing shown
                full = len(parse_problems) >= MAX_PROBLEMS_PER_DOCUMENT
                despite = [] if full else _checks_despite_schema(raw, inputs, claim_templates)
                problems += cap_document(raw.file, [*parse_problems, *despite], document_name(raw.obj))
                continue
            before = len(inputs.warnings)
            errs, pod_bytes = _validate_pcs(Sourced(raw.file, pcs), inputs, claim_templates)
            warnings = inputs.warnings[before:]
            del inputs.warnings[before:]
            key = (pcs.namespace, pcs.name)
            pods = count_pods(pcs)
            declared = pcs.spec.updateStrategy
            strategy = (declared.type if declared else None) or "RollingRecreate"
        if pods <= inputs.render.limits.maxPodsPerPodCliqueSet and total_pods <= max_pods < total_pods + pods:
            message = (
                f"the render would have more than {max_pods} pods (RenderConfiguration limits.maxPodsPerRender): "
                f"{total_pods} before this PodCliqueSet, {pods} in it"
            )
            errs.append(FieldError("spec.replicas", "Too many", message))
        total_pods += pods
        if total_bytes <= MAX_RENDER_POD_BYTES < total_bytes + pod_bytes:
            mib = 1024 * 1024
            message = (
                f"the render's pods and PodGangs would take more than {MAX_RENDER_POD_BYTES // mib} MiB ({BYTES_RULE}): "
                f"{total_bytes // mib} MiB before this PodCliqueSet, {pod_bytes // mib} MiB in it"
            )
            errs.append(FieldError("spec.template.cliques", "Too many", message))
        total_bytes += pod_bytes
        if key in seen:
            errs.append(
                invalid("metadata.name", key[1], f"PodCliqueSet {key[0]}/{key[1]} is also defined in {seen[key]}")
            )
        seen.setdefault(key, raw.file)
        problems += _problems(raw.file, errs, document_name(raw.obj))
        if not errs:
            items.append(PlannedPCS(raw.file, key, doc_digest, pcs, warnings, pods, strategy, raw))
            if on_accepted is not None and not problems:
                on_accepted(context, items[-1])
    facts, fact_problems = read_facts(source.cluster_facts)
    problems += fact_problems
    inputs.warnings += namespace_warnings(source, inputs.render, facts.names("", "Namespace") if facts else set())
    for passthrough in source.passthrough:
        errs = object_errors(passthrough.obj, inputs.render.kubernetesVersion)
        problems += _problems(passthrough.file, errs, document_name(passthrough.obj))
        unknown = unknown_builtin_kind(passthrough.obj, inputs.render.kubernetesVersion)
        if unknown is not None:
            inputs.warnings.append(f"{passthrough.file}: {unknown}")
    problems += coexistence_problems(inputs.render, source.bindings, source.passthrough, inputs.backends)
    if problems:
        raise InvalidInputError(locate(problems, source.files))

    extra: list[RenderedObject] = []
    for binding in inputs.bindings.values():
        obj = binding.model_dump(mode="json", exclude_none=True)
        obj.pop("status", None)
        extra.append(RenderedObject(CLUSTER_SHARD, obj))
        for backend in inputs.backends.values():
            extra += [RenderedObject(CLUSTER_SHARD, o) for o in backend.topology_objects(binding)]
    for passthrough in source.passthrough:
        obj = passthrough.obj
        meta = obj.get("metadata") or {}
        ns = meta.get("namespace")
        extra.append(RenderedObject(f"{ns}/_resources" if ns else CLUSTER_SHARD, obj))
    if facts is not None:
        backends = {name: type(backend) for name, backend in inputs.backends.items()}
        inputs.warnings += reference_warnings(
            source, facts, inputs.render.defaultNamespace, backends, inputs.opcfg.scheduler.defaultProfileName
        )
    acks, ack_warnings = workload_acknowledgements(source.podcliquesets)
    inputs.warnings += ack_warnings
    return RenderPlan(inputs.render, inputs.warnings, items, extra, inputs, claim_templates, acks)


def render_source(root: Path, feasibility: bool = False, at: str = "git") -> RenderResult:
    """Render a whole source tree into objects (all in memory; see :func:`plan_source` for
    the streaming path), or raise :class:`InvalidInputError` with every problem.

    With ``feasibility`` and a node inventory in the source, the gangs are placed on it
    (docs/feasibility.md): a gang that does not fit raises under ``feasibility: enforce``.
    ``at`` is ``"git"`` (what Git holds: autoscaled counts at their floor, without what
    depends on a live count), or every object of the workloads with every autoscaled count at
    ``"floor"``, ``"initial"`` or ``"max"`` (Git plus what the agent creates at those counts).
    """
    plan = plan_source(root)
    result = RenderResult(config=plan.config, warnings=list(plan.warnings), plan=plan)
    for item in plan.items:
        counts = None if at == "git" or item.pcs is None else counts_at(item.pcs, at)
        objects, warnings = plan.expand(item, counts)
        result.warnings += item.warnings + warnings
        result.objects += objects
        result.podcliquesets[item.key] = item.file
        result.update_strategies[item.key] = item.update_strategy
    result.objects += plan.extra
    if feasibility and plan.inputs.source.has_inventory:
        from grove_gitops.feasibility.check import apply_mode, check_objects

        found = check_objects(
            (o.obj for o in result.objects), plan.inputs.source, plan.inputs.bindings, result.podcliquesets
        )
        result.feasibility_warnings = apply_mode(found, plan.config.feasibility)
    return result


def _shard_of(obj: dict[str, Any], pcs_shard: str) -> str:
    """Backend objects without a namespace (cluster-scoped) go to ``_cluster``."""
    return pcs_shard if obj.get("metadata", {}).get("namespace") else CLUSTER_SHARD
