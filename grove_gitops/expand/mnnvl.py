"""MNNVL: multi-node NVLink ComputeDomains for GPU cliques (``spec/grove-desired-state.md`` §7.6).

A clique is enrolled in a group through the ``grove.io/mnnvl-group`` annotation, resolved
clique → scaling group → PodCliqueSet (the first layer that sets it wins; ``none`` opts out).
An enrolled clique that asks for ``nvidia.com/gpu`` gets a ResourceClaim named
``mnnvl-claim`` from the ResourceClaimTemplate ``P-i-<group>`` in every GPU container, and
each PCS replica gets one ``resource.nvidia.com/v1beta1`` ComputeDomain per enrolled group,
whose channel names that template (the NVIDIA DRA driver creates it). Validation already
refuses the annotation unless ``network.autoMNNVLEnabled`` is on.

Difference from Grove: no ``grove.io/computedomain-finalizer`` and no ownerReferences (the
GitOps tool prunes); Grove only adds finalizers to objects its own controller removes.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from grove_gitops.api.podcliqueset import PodCliqueScalingGroupConfig, PodCliqueSet, PodCliqueTemplateSpec
from grove_gitops.expand import labels as L
from grove_gitops.validation.mnnvl import MNNVL_ANNOTATION

GPU = "nvidia.com/gpu"
CLAIM = "mnnvl-claim"
COMPONENT = "pcs-computedomain"


def _group_from(annotations: dict[str, str] | None) -> tuple[bool, str | None]:
    if annotations and MNNVL_ANNOTATION in annotations:
        value = annotations[MNNVL_ANNOTATION]
        return True, None if value == "none" else value
    return False, None


def resolve_group(
    pcs: PodCliqueSet, clique: PodCliqueTemplateSpec, group: PodCliqueScalingGroupConfig | None
) -> str | None:
    """The enrolled group of a clique, or None (not enrolled / opted out)."""
    for layer in (clique.annotations, group.annotations if group is not None else None, pcs.metadata.annotations):
        found, value = _group_from(layer)
        if found:
            return value
    return None


def _positive(quantity: Any) -> bool:
    try:
        return Decimal(str(quantity).strip()) > 0
    except (InvalidOperation, ValueError):
        return False


def container_has_gpu(container: dict[str, Any]) -> bool:
    resources = container.get("resources") or {}
    return any(_positive((resources.get(kind) or {}).get(GPU, 0)) for kind in ("limits", "requests"))


def has_gpu(pod_spec: dict[str, Any]) -> bool:
    return any(container_has_gpu(c) for key in ("containers", "initContainers") for c in pod_spec.get(key) or [])


def inject_claim(pod_spec: dict[str, Any], template_name: str) -> None:
    """Add the MNNVL claim to a PodClique's pod spec (in place); nothing without a GPU container."""
    if not has_gpu(pod_spec):
        return
    claims = pod_spec.setdefault("resourceClaims", [])
    if not any(c.get("name") == CLAIM for c in claims):
        claims.append({"name": CLAIM, "resourceClaimTemplateName": template_name})
    for key in ("containers", "initContainers"):
        for container in pod_spec.get(key) or []:
            if not container_has_gpu(container):
                continue
            container_claims = container.setdefault("resources", {}).setdefault("claims", [])
            if not any(c.get("name") == CLAIM for c in container_claims):
                container_claims.append({"name": CLAIM})


def template_name(pcs: str, replica: int, group: str) -> str:
    return f"{pcs}-{replica}-{group}"


def compute_domains(pcs: PodCliqueSet, replica: int) -> list[dict[str, Any]]:
    """One ComputeDomain per distinct group enrolled by a GPU clique, for one PCS replica."""
    group_of = {c: g for g in pcs.scaling_groups for c in g.cliqueNames}
    groups: list[str] = []
    for clique in pcs.cliques:
        group = resolve_group(pcs, clique, group_of.get(clique.name))
        if group is not None and group not in groups and has_gpu(clique.spec.podSpec):
            groups.append(group)
    out = []
    for group in sorted(groups):
        name = template_name(pcs.name, replica, group)
        labels = L.default_labels(pcs.name)
        labels.update(
            {L.NAME: name, L.COMPONENT: COMPONENT, L.PCS_REPLICA_INDEX: str(replica), MNNVL_ANNOTATION: group}
        )
        out.append(
            {
                "apiVersion": "resource.nvidia.com/v1beta1",
                "kind": "ComputeDomain",
                "metadata": {"name": name, "namespace": pcs.namespace, "labels": labels},
                "spec": {"numNodes": 0, "channel": {"resourceClaimTemplate": {"name": name}}},
            }
        )
    return out
