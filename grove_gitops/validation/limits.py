"""Size limits checked before anything is expanded or iterated.

Expansion is linear in the number of pods: ``replicas: 1000000000`` on one clique would make
``validate`` and ``render`` run for hours and exhaust memory before any other check could
fire. The pod count is known from the defaulted PodCliqueSet alone, so it is computed first
and compared with :class:`~grove_gitops.api.renderconfig.RenderLimits`.

The pod count alone is not enough: other numbers size loops too, and some of them run while
the PodCliqueSet is still being validated (a gang-scheduling backend plans the first
replica's PodGangs to judge it). :func:`check_loop_bounds` therefore bounds every number the
planner iterates over (PodCliqueSet, clique and scaling-group ``replicas``, scaling-group
``minAvailable``), the PodCliques it creates, and the startup waits (``startsAfter``) it
writes into pods, all by arithmetic, never by iterating over the counts themselves.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from grove_gitops.api.podcliqueset import (
    EXPLICIT,
    IN_ORDER,
    AutoScalingConfig,
    PodCliqueScalingGroupConfig,
    PodCliqueSet,
    PodCliqueTemplateSpec,
    ResourceSharingSpec,
)
from grove_gitops.api.renderconfig import RenderLimits
from grove_gitops.fields.fielderrors import FieldError, invalid

#: Most PodCliques one PodCliqueSet's pods may wait for, summed over its pods: every pod's
#: Grove init container gets one ``--podcliques`` argument per PodClique it waits for. Real
#: workloads wait for a handful per pod; the bound keeps a startsAfter fan-out onto a large
#: scaling group (10,000 pods each waiting for 10,000 PodCliques) from building 10^8 of them.
MAX_STARTUP_WAITS = 1_000_000
#: Most ResourceClaim references one PodCliqueSet's pods may hold, summed over its pods: each
#: resourceSharing entry (PCS, scaling group or clique level) that applies to a pod is one
#: ``resourceClaims`` entry of it. 5,000 shared claims x 2,000 pods took 3 GB before failing.
MAX_CLAIM_REFERENCES = 1_000_000
#: Most bytes the pods of one PodCliqueSet may take, estimated as pods x the JSON size of
#: their clique's podSpec, labels and annotations. A PodCliqueSet of 20,000 ordinary pods is
#: about 70 MiB; one 1 MB podSpec x 20,000 pods would be 20 GB to hash and write.
MAX_POD_BYTES = 256 * 1024 * 1024  # PodGangs copy the PodCliqueSet's labels and annotations: counted too
#: The same for all PodCliqueSets of a render that are not in the render cache: several
#: PodCliqueSets of one short file could otherwise each stay just below ``MAX_POD_BYTES``.
#: 50,000 ordinary pods are about 175 MiB; 200,000 (the pod limits' ceiling) about 700 MiB.
MAX_RENDER_POD_BYTES = 1024 * 1024 * 1024
#: How the bytes are estimated, for the messages.
BYTES_RULE = "pods x their clique's podSpec, labels and annotations; PodGangs x the PodCliqueSet's labels and annotations"
LIMIT_NAME = "RenderConfiguration limits.maxPodsPerPodCliqueSet"


def _count(value: int | None, default: int = 0) -> int:
    return max(value if value is not None else default, 0)


def pods_per_replica(pcs: PodCliqueSet) -> list[tuple[str, int, int]]:
    """``(field of the replicas that sets it, its value, pods)`` for every clique of one PCS replica.

    A clique in a scaling group gets ``group replicas x clique replicas`` pods; the field
    named is the clique's ``replicas`` (the usual culprit).
    """
    groups: dict[str, tuple[int, str | None, int]] = {}  # clique -> (replicas, autoscaling field, its value)
    for g, group in enumerate(pcs.scaling_groups):
        top = _scale_max(group.scaleConfig)
        field = f"spec.template.podCliqueScalingGroups[{g}].scaleConfig.maxReplicas" if top > _count(
            group.replicas, 1) else None
        for name in group.cliqueNames:
            groups[name] = (max(_count(group.replicas, 1), top), field, top)
    out = []
    for i, clique in enumerate(pcs.cliques):
        # An autoscaled clique or group counts at its autoscaling maximum: the agent creates
        # that many when a scaler asks (docs/autoscaling.md), so the bound must hold there;
        # the field named is then the maximum.
        top = _scale_max(clique.spec.autoScalingConfig)
        replicas = max(_count(clique.spec.replicas), top)
        times, group_field, group_top = groups.get(clique.name, (1, None, 0))
        field, value = f"spec.template.cliques[{i}].spec.replicas", clique.spec.replicas
        if top > _count(clique.spec.replicas):
            field, value = f"spec.template.cliques[{i}].spec.autoScalingConfig.maxReplicas", top
        elif group_field is not None and group_top >= replicas:
            field, value = group_field, group_top
        out.append((field, value, replicas * times))
    return out


def _scale_max(config: AutoScalingConfig | None) -> int:
    if config is None:
        return 0
    return max(_count(config.maxReplicas), _count(config.minReplicas))


def count_pods(pcs: PodCliqueSet) -> int:
    """Pods the PodCliqueSet expands to: PCS replicas x pods of one replica."""
    return _count(pcs.spec.replicas) * sum(p for _, _, p in pods_per_replica(pcs))


def check_pod_limit(pcs: PodCliqueSet, limits: RenderLimits) -> tuple[int, list[FieldError]]:
    """The pod count of ``pcs`` and an error when it is above ``maxPodsPerPodCliqueSet``."""
    total = count_pods(pcs)
    limit = limits.maxPodsPerPodCliqueSet
    if total <= limit:
        return total, []
    field, value, pods = max(pods_per_replica(pcs), key=lambda fvp: fvp[2], default=("spec.replicas", 0, 0))
    if _count(pcs.spec.replicas) >= pods:
        field, value = "spec.replicas", pcs.spec.replicas
    message = f"this PodCliqueSet would have {total} pods, above the limit of {limit} ({LIMIT_NAME})"
    return total, [invalid(field, value, message)]


def check_loop_bounds(pcs: PodCliqueSet, limits: RenderLimits) -> list[FieldError]:
    """Errors for every number that would size a loop beyond what a valid PodCliqueSet can need
    (:func:`loop_bounds` without the bytes)."""
    return loop_bounds(pcs, limits)[0]


def loop_bounds(pcs: PodCliqueSet, limits: RenderLimits) -> tuple[list[FieldError], int]:
    """Errors for every number that would size a loop beyond what a valid PodCliqueSet can need,
    and, when there is none, :func:`estimate_pod_bytes` of it (0 otherwise): both come from one
    walk of the spec, which a render paid twice per PodCliqueSet (issue 35.4).

    Run on the defaulted PodCliqueSet after :func:`check_pod_limit` and before any other rule,
    backend or expansion; when it returns errors nothing else may look at the PodCliqueSet.
    A valid PodCliqueSet within the pod limit never trips it: each PCS replica, PodClique and
    scaling-group replica holds at least one pod, and Grove itself refuses a scaling group's
    ``minAvailable`` above its ``replicas`` (the same message is used here).
    """
    errs = _count_fields(pcs, limits.maxPodsPerPodCliqueSet)
    if errs:
        return errs, 0
    size = _Size.of(pcs)
    limit = limits.maxPodsPerPodCliqueSet
    if size.podcliques > limit:
        message = (
            f"this PodCliqueSet would have {size.podcliques} PodCliques, above the limit of {limit} "
            f"({LIMIT_NAME}; every PodClique holds at least one pod)"
        )
        return [invalid("spec.template.podCliqueScalingGroups", "object", message)], 0
    if size.waits > MAX_STARTUP_WAITS:
        message = (
            f"its pods would wait for {size.waits} PodCliques in total (one init-container argument each), "
            f"above the limit of {MAX_STARTUP_WAITS}: startsAfter a scaling group makes every pod wait for each of "
            "the group's minAvailable replicas"
        )
        return [invalid("spec.template.cliques", "object", message)], 0
    if size.claims > MAX_CLAIM_REFERENCES:
        message = (
            f"its pods would hold up to {size.claims} ResourceClaim references in total (each resourceSharing "
            f"entry once per pod it applies to), above the limit of {MAX_CLAIM_REFERENCES}"
        )
        return [invalid("spec.template.resourceSharing", "object", message)], 0
    if size.pod_bytes > MAX_POD_BYTES:
        message = (
            f"its pods and PodGangs would take about {size.pod_bytes // (1024 * 1024)} MiB ({BYTES_RULE}), above the "
            f"limit of {MAX_POD_BYTES // (1024 * 1024)} MiB"
        )
        return [invalid("spec.template.cliques", "object", message)], 0
    return [], size.pod_bytes


def estimate_pod_bytes(pcs: PodCliqueSet) -> int:
    """The bytes of the pods and PodGangs (``BYTES_RULE``) of a PodCliqueSet
    :func:`check_loop_bounds` accepted; see ``MAX_RENDER_POD_BYTES``."""
    return _Size.of(pcs).pod_bytes


def _scale_fields(config: AutoScalingConfig | None, path: str, limit: int) -> list[FieldError]:
    """An autoscaling bound above the pod limit: the agent would loop that far."""
    if config is None:
        return []
    above = f"must be no more than {limit}, the most pods this PodCliqueSet may have ({LIMIT_NAME})"
    return [
        invalid(f"{path}.{name}", value, above)
        for name, value in (("minReplicas", config.minReplicas), ("maxReplicas", config.maxReplicas))
        if value is not None and value > limit
    ]


def _count_fields(pcs: PodCliqueSet, limit: int) -> list[FieldError]:
    """Each count on its own: none may exceed the pod limit, and a scaling group's
    ``minAvailable`` (how many replicas every startup wait and base PodGang names) not its
    ``replicas``."""
    errs: list[FieldError] = []
    above = f"must be no more than {limit}, the most pods this PodCliqueSet may have ({LIMIT_NAME})"
    if pcs.spec.replicas > limit:
        errs.append(invalid("spec.replicas", pcs.spec.replicas, above))
    for i, clique in enumerate(pcs.cliques):
        if clique.spec.replicas > limit:
            errs.append(invalid(f"spec.template.cliques[{i}].spec.replicas", clique.spec.replicas, above))
        errs += _scale_fields(clique.spec.autoScalingConfig, f"spec.template.cliques[{i}].spec.autoScalingConfig", limit)
    for i, group in enumerate(pcs.scaling_groups):
        path = f"spec.template.podCliqueScalingGroups[{i}]"
        replicas, minimum = _group_replicas(group), _group_min(group)
        errs += _scale_fields(group.scaleConfig, f"{path}.scaleConfig", limit)
        if replicas > limit:
            errs.append(invalid(f"{path}.replicas", replicas, above))
        elif minimum > replicas:
            errs.append(invalid(f"{path}.minAvailable", minimum, "minAvailable must not be greater than replicas"))
    return errs


def _group_replicas(group: PodCliqueScalingGroupConfig) -> int:
    return group.replicas if group.replicas is not None else 1


def _group_min(group: PodCliqueScalingGroupConfig) -> int:
    return group.minAvailable if group.minAvailable is not None else 1


@dataclass(frozen=True)
class _Size:
    """What ``expand.plan.Planner`` and the pod builder would create for the whole PodCliqueSet:
    PodCliques, and startup waits summed over pods (an upper bound, counted the way the planner
    walks the spec, duplicates and unknown names included)."""

    podcliques: int
    waits: int
    #: ResourceClaim references summed over pods; an upper bound (a reference whose filter
    #: names both a clique and its scaling group is counted twice).
    claims: int
    #: Bytes of the pods (pods x the JSON size of their clique's podSpec, labels, annotations)
    #: and of the PodGangs (gangs x the PodCliqueSet's labels and annotations, which each copies).
    pod_bytes: int

    @staticmethod
    def of(pcs: PodCliqueSet) -> _Size:
        cliques = pcs.cliques
        by_name = {c.name: c for c in cliques}
        index = {c.name: i for i, c in enumerate(cliques)}
        group_of: dict[str, PodCliqueScalingGroupConfig] = {}
        for g in pcs.scaling_groups:
            for name in g.cliqueNames:
                group_of.setdefault(name, g)
        startup = pcs.spec.template.cliqueStartupType
        memo: dict[int, tuple[int, int]] = {}

        def waits_of(template: PodCliqueTemplateSpec) -> tuple[int, int]:
            """PodCliques one pod of ``template`` waits for: in a base gang, in a scaled gang."""
            key = id(template)
            if key not in memo:
                if startup == IN_ORDER:
                    position = index[template.name]
                    wanted = [cliques[position - 1].name] if position > 0 else []
                elif startup == EXPLICIT:
                    wanted = [d for d in template.spec.startsAfter or [] if d]
                else:
                    wanted = []
                base = 0
                for dep in wanted:
                    if dep in by_name:
                        group = group_of.get(dep)
                        base += max(_group_min(group), 0) if group is not None else 1
                memo[key] = (base, len(wanted))
            return memo[key]

        shared = _SharingCounts.of(pcs.spec.template.resourceSharing or [])
        sizes: dict[int, int] = {}

        def pod_size(template: PodCliqueTemplateSpec) -> int:
            key = id(template)
            if key not in sizes:
                parts = (template.spec.podSpec, template.labels or {}, template.annotations or {})
                sizes[key] = sum(len(json.dumps(p, separators=(",", ":"), default=str)) for p in parts)
            return sizes[key]

        meta = pcs.metadata
        gang_size = sum(len(json.dumps(m or {}, separators=(",", ":"))) for m in (meta.labels, meta.annotations))
        podcliques = waits = claims = pod_bytes = 0
        gangs = 1  # per PCS replica: the base PodGang, then the scaled ones
        for c in cliques:
            if c.name not in group_of:
                count = max(c.spec.replicas, 1, _scale_max(c.spec.autoScalingConfig))  # at the maximum
                podcliques += 1
                waits += count * waits_of(c)[0]
                claims += count * (shared.applying(c.name) + len(c.resourceSharing or []))
                pod_bytes += count * pod_size(c)
        for g in pcs.scaling_groups:
            replicas = max(_group_replicas(g), 0, _scale_max(g.scaleConfig))
            base = min(max(_group_min(g), 0), replicas)
            podcliques += replicas * len(g.cliqueNames)
            gangs += replicas - base
            own = _SharingCounts.of(g.resourceSharing or [])
            for name in g.cliqueNames:
                template = by_name.get(name)
                if template is not None:
                    pods = max(template.spec.replicas, 1)
                    in_base, in_scaled = waits_of(template)
                    waits += pods * (base * in_base + (replicas - base) * in_scaled)
                    per_pod = shared.applying(name, g.name) + own.applying(name) + len(template.resourceSharing or [])
                    claims += replicas * pods * per_pod
                    pod_bytes += replicas * pods * pod_size(template)
        n = max(pcs.spec.replicas, 1)
        return _Size(podcliques * n, waits * n, claims * n, (pod_bytes + gangs * gang_size) * n)


@dataclass(frozen=True)
class _SharingCounts:
    """How many entries of one resourceSharing list apply to a clique, counted through the
    names their filters list (never list length x filter length)."""

    unfiltered: int
    by_clique: dict[str, int]
    by_group: dict[str, int]

    @staticmethod
    def of(refs: Sequence[ResourceSharingSpec]) -> _SharingCounts:
        unfiltered = 0
        by_clique: dict[str, int] = {}
        by_group: dict[str, int] = {}
        for ref in refs:
            flt = getattr(ref, "filter", None)
            if flt is None:
                unfiltered += 1
                continue
            for name in dict.fromkeys(flt.childCliqueNames or []):
                by_clique[name] = by_clique.get(name, 0) + 1
            for name in dict.fromkeys(getattr(flt, "childScalingGroupNames", None) or []):
                by_group[name] = by_group.get(name, 0) + 1
        return _SharingCounts(unfiltered, by_clique, by_group)

    def applying(self, clique: str, group: str | None = None) -> int:
        return self.unfiltered + self.by_clique.get(clique, 0) + (self.by_group.get(group, 0) if group else 0)
