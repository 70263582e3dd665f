"""Resource sharing: ResourceClaims at PCS, scaling-group and clique level (§7.5).

Grove resolves a sharing reference to an internal ``resourceClaimTemplates`` entry, or to a
cluster ``ResourceClaimTemplate``. A renderer cannot look into the cluster, so an external
template must be in the source tree (``resource.k8s.io`` ResourceClaimTemplate, which then
also passes through to the output); otherwise validation names the missing template.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from grove_gitops.api.podcliqueset import (
    CliqueSharingFilter,
    PCSGResourceSharingSpec,
    PCSResourceSharingSpec,
    PodCliqueScalingGroupConfig,
    PodCliqueSet,
    ResourceClaimTemplateConfig,
    ResourceSharingSpec,
    SharingFilter,
)
from grove_gitops.expand import labels as L
from grove_gitops.expand.jsoncopy import json_copy
from grove_gitops.expand.plan import CliqueInstance
from grove_gitops.fields.fielderrors import FieldError, not_found

ALL = "AllReplicas"
PER = "PerReplica"


@dataclass(frozen=True)
class ClaimRef:
    name: str


def _internal_templates(pcs: PodCliqueSet) -> dict[str, ResourceClaimTemplateConfig]:
    """The PodCliqueSet's own templates by name (the first of a repeated name, as Grove's
    lookup finds it): one dict instead of a scan per reference, which was quadratic."""
    out: dict[str, ResourceClaimTemplateConfig] = {}
    for t in pcs.spec.template.resourceClaimTemplates or []:
        out.setdefault(t.name, t)
    return out


def _template_spec(
    pcs: PodCliqueSet,
    ref: ResourceSharingSpec,
    external: Mapping[tuple[str, str], dict[str, Any]],
    internal: Mapping[str, ResourceClaimTemplateConfig],
) -> dict[str, Any] | None:
    if not ref.namespace:
        t = internal.get(ref.name)
        if t is not None:
            spec = t.templateSpec.get("spec")
            return spec if isinstance(spec, dict) else {}
    found = external.get((ref.namespace or pcs.namespace, ref.name))
    if found is None:
        return None
    spec = found.get("spec", {}).get("spec") if isinstance(found.get("spec"), dict) else None
    return spec if isinstance(spec, dict) else {}


def validate_templates(pcs: PodCliqueSet, external: Mapping[tuple[str, str], dict[str, Any]]) -> list[FieldError]:
    """Every sharing reference must resolve to a template we can see."""
    errs: list[FieldError] = []
    T = "spec.template"
    places: list[tuple[str, list[Any]]] = [(f"{T}.resourceSharing", pcs.spec.template.resourceSharing or [])]
    places += [
        (f"{T}.podCliqueScalingGroups[{i}].resourceSharing", g.resourceSharing or [])
        for i, g in enumerate(pcs.scaling_groups)
    ]
    places += [(f"{T}.cliques[{i}].resourceSharing", c.resourceSharing or []) for i, c in enumerate(pcs.cliques)]
    internal = _internal_templates(pcs)
    for path, refs in places:
        for i, ref in enumerate(refs):
            if ref.name and _template_spec(pcs, ref, external, internal) is None:
                ns = ref.namespace or pcs.namespace
                errs.append(
                    not_found(
                        f"{path}[{i}].name",
                        f"{ns}/{ref.name}: neither an internal resourceClaimTemplate nor a ResourceClaimTemplate "
                        "in the source tree",
                    )
                )
    return errs


def _claim(pcs: PodCliqueSet, name: str, spec: dict[str, Any], extra: dict[str, str]) -> dict[str, Any]:
    labels = L.default_labels(pcs.name)
    labels[L.COMPONENT] = L.COMPONENT_RESOURCE_CLAIM
    labels.update(extra)
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": pcs.namespace, "labels": labels},
        "spec": json_copy(spec),
    }


class ClaimPlanner:
    """Creates each claim once and tells every pod which claims it mounts, in Grove's order:
    PCS-All, PCS-Per(i), PCSG-All, PCSG-Per(j), clique-All, clique-Per(k)."""

    def __init__(self, pcs: PodCliqueSet, external: Mapping[tuple[str, str], dict[str, Any]]) -> None:
        self.pcs = pcs
        self.external = external
        self.internal = _internal_templates(pcs)
        self.objects: dict[str, dict[str, Any]] = {}
        #: The references that apply to a clique, per (clique, scaling group): filters are
        #: matched once per pair, not once per PodClique (20,000 PodCliques x a long filter).
        self._pcs_refs: dict[tuple[str, str | None], list[PCSResourceSharingSpec]] = {}
        self._group_refs: dict[tuple[int, str], list[PCSGResourceSharingSpec]] = {}
        self._pcs_index: _FilterIndex | None = None
        self._group_index: dict[int, _FilterIndex] = {}

    def _make(self, ref: ResourceSharingSpec, name: str, extra: dict[str, str]) -> ClaimRef:
        if name not in self.objects:
            spec = _template_spec(self.pcs, ref, self.external, self.internal) or {}
            self.objects[name] = _claim(self.pcs, name, spec, extra)
        return ClaimRef(name)

    def _matching_pcs_refs(self, inst: CliqueInstance) -> list[PCSResourceSharingSpec]:
        group = inst.group.name if inst.group is not None else None
        key = (inst.template.name, group)
        if key not in self._pcs_refs:
            refs = self.pcs.spec.template.resourceSharing or []
            if self._pcs_index is None:
                self._pcs_index = _FilterIndex.of([r.filter for r in refs])
            found = self._pcs_index.matching(inst.template.name, group)
            self._pcs_refs[key] = [refs[i] for i in found]
        return self._pcs_refs[key]

    def _matching_group_refs(self, group: PodCliqueScalingGroupConfig, clique: str) -> list[PCSGResourceSharingSpec]:
        key = (id(group), clique)
        if key not in self._group_refs:
            refs = group.resourceSharing or []
            index = self._group_index.get(id(group))
            if index is None:
                index = self._group_index[id(group)] = _FilterIndex.of([r.filter for r in refs])
            self._group_refs[key] = [refs[i] for i in index.matching(clique, None)]
        return self._group_refs[key]

    def _scoped(
        self, ref: ResourceSharingSpec, owner: str, index: int, extra: dict[str, str], index_label: str | None
    ) -> ClaimRef:
        if ref.scope == ALL:
            return self._make(ref, f"{owner}-all-{ref.name}", extra)
        per = dict(extra)
        if index_label is not None:
            per[index_label] = str(index)
        return self._make(ref, f"{owner}-{index}-{ref.name}", per)

    def claims_for(self, inst: CliqueInstance) -> list[list[ClaimRef]]:
        """The ResourceClaims each pod of ``inst`` mounts, by pod index; ``[]`` when none of
        them mounts any (a pod past the end of the list mounts none: the callers' rule), which
        is most cliques of most trees and then costs no list per pod (issue 35.4)."""
        pcs = self.pcs
        group_refs: list[PCSGResourceSharingSpec] = []
        if inst.group is not None and inst.group_fqn is not None:
            group_refs = self._matching_group_refs(inst.group, inst.template.name)
        if not (inst.template.resourceSharing or group_refs or self._matching_pcs_refs(inst)):
            return []
        shared: list[ClaimRef] = []
        pcs_refs = self._matching_pcs_refs(inst)
        for ref in pcs_refs:
            if ref.scope == ALL:
                shared.append(self._make(ref, f"{pcs.name}-all-{ref.name}", {}))
        for ref in pcs_refs:
            if ref.scope != ALL:
                shared.append(
                    self._make(
                        ref, f"{pcs.name}-{inst.pcs_replica}-{ref.name}", {L.PCS_REPLICA_INDEX: str(inst.pcs_replica)}
                    )
                )
        if group_refs and inst.group_fqn is not None:
            group_labels = {L.PCSG: inst.group_fqn}
            for want_all in (True, False):
                for gref in group_refs:
                    if (gref.scope == ALL) == want_all:
                        shared.append(
                            self._scoped(gref, inst.group_fqn, inst.group_replica, group_labels, L.PCSG_REPLICA_INDEX)
                        )
        per_pod: list[list[ClaimRef]] = []
        clique_labels = {L.PODCLIQUE: inst.fqn}
        refs = inst.template.resourceSharing or []
        all_claims = [self._make(r, f"{inst.fqn}-all-{r.name}", clique_labels) for r in refs if r.scope == ALL]
        for k in range(inst.pods):
            per = [self._scoped(r, inst.fqn, k, clique_labels, L.POD_INDEX) for r in refs if r.scope != ALL]
            per_pod.append(shared + all_claims + per)
        return per_pod


@dataclass(frozen=True)
class _FilterIndex:
    """Which references of one list apply to a clique: those without a filter, and those
    whose filter names the clique or its scaling group. Found through the names, so the cost
    is the matches, not the list length times the filters' lengths."""

    unfiltered: tuple[int, ...]
    by_clique: dict[str, tuple[int, ...]]
    by_group: dict[str, tuple[int, ...]]

    @staticmethod
    def of(filters: Sequence[SharingFilter | CliqueSharingFilter | None]) -> _FilterIndex:
        unfiltered: list[int] = []
        by_clique: dict[str, list[int]] = {}
        by_group: dict[str, list[int]] = {}
        for i, flt in enumerate(filters):
            if flt is None:
                unfiltered.append(i)
                continue
            for name in dict.fromkeys(flt.childCliqueNames or []):
                by_clique.setdefault(name, []).append(i)
            if isinstance(flt, SharingFilter):
                for name in dict.fromkeys(flt.childScalingGroupNames or []):
                    by_group.setdefault(name, []).append(i)
        return _FilterIndex(
            tuple(unfiltered),
            {k: tuple(v) for k, v in by_clique.items()},
            {k: tuple(v) for k, v in by_group.items()},
        )

    def matching(self, clique: str, group: str | None) -> list[int]:
        """Indexes of the references that apply, in list order (Grove's order)."""
        found = set(self.unfiltered)
        found.update(self.by_clique.get(clique, ()))
        if group is not None:
            found.update(self.by_group.get(group, ()))
        return sorted(found)
