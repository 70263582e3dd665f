"""Resource sharing: ResourceClaims at PCS, scaling-group and clique level (§7.5).

Grove resolves a sharing reference to an internal ``resourceClaimTemplates`` entry, or to a
cluster ``ResourceClaimTemplate``. A renderer cannot look into the cluster, so an external
template must be in the source tree (``resource.k8s.io`` ResourceClaimTemplate, which then
also passes through to the output); otherwise validation names the missing template.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from grove_gitops.api.podcliqueset import (
    PCSGResourceSharingSpec,
    PCSResourceSharingSpec,
    PodCliqueSet,
    ResourceSharingSpec,
)
from grove_gitops.expand import labels as L
from grove_gitops.expand.jsoncopy import json_copy
from grove_gitops.expand.plan import CliqueInstance
from grove_gitops.validation.fielderrors import FieldError, not_found

ALL = "AllReplicas"
PER = "PerReplica"


@dataclass(frozen=True)
class ClaimRef:
    name: str


def _template_spec(
    pcs: PodCliqueSet, ref: ResourceSharingSpec, external: Mapping[tuple[str, str], dict[str, Any]]
) -> dict[str, Any] | None:
    if not ref.namespace:
        for t in pcs.spec.template.resourceClaimTemplates or []:
            if t.name == ref.name:
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
    for path, refs in places:
        for i, ref in enumerate(refs):
            if ref.name and _template_spec(pcs, ref, external) is None:
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
        self.objects: dict[str, dict[str, Any]] = {}

    def _make(self, ref: ResourceSharingSpec, name: str, extra: dict[str, str]) -> ClaimRef:
        if name not in self.objects:
            spec = _template_spec(self.pcs, ref, self.external) or {}
            self.objects[name] = _claim(self.pcs, name, spec, extra)
        return ClaimRef(name)

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
        pcs = self.pcs
        shared: list[ClaimRef] = []
        pcs_refs = [r for r in pcs.spec.template.resourceSharing or [] if _pcs_filter_matches(r, inst)]
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
        if inst.group is not None and inst.group_fqn is not None:
            group_labels = {L.PCSG: inst.group_fqn}
            group_refs = [r for r in inst.group.resourceSharing or [] if _pcsg_filter_matches(r, inst.template.name)]
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
        for k in range(inst.template.spec.replicas):
            per = [self._scoped(r, inst.fqn, k, clique_labels, L.POD_INDEX) for r in refs if r.scope != ALL]
            per_pod.append(shared + all_claims + per)
        return per_pod


def _pcs_filter_matches(ref: PCSResourceSharingSpec, inst: CliqueInstance) -> bool:
    if ref.filter is None:
        return True
    if inst.template.name in (ref.filter.childCliqueNames or []):
        return True
    return inst.group is not None and inst.group.name in (ref.filter.childScalingGroupNames or [])


def _pcsg_filter_matches(ref: PCSGResourceSharingSpec, clique: str) -> bool:
    return ref.filter is None or clique in (ref.filter.childCliqueNames or [])
