"""What a Kubernetes minor version can carry: features of a PodCliqueSet that need a newer API.

A render targets RenderConfiguration's ``kubernetesVersion`` (1.31 to 1.37). Most of the output
(gated pods, PodGangs, the scheduler backends' custom resources, ``autoscaling/v2`` HPAs) is
valid on every one of them, since scheduling gates went GA in 1.30. What is not is refused here,
naming the version it needs, instead of rendering objects the cluster does not serve or fields
its API server drops:

* ``resourceSharing`` renders ``resource.k8s.io/v1`` ResourceClaims, which Kubernetes serves
  from 1.34 (Grove itself creates only ``v1``; 1.31-1.33 serve ``v1alpha3`` / ``v1beta1`` /
  ``v1beta2`` behind the off-by-default DynamicResourceAllocation gate, so no claim is rendered
  in an older API version).
* MNNVL (``grove.io/mnnvl-group``) gives GPU pods a ``resourceClaims`` entry and a
  ComputeDomain whose claim template the NVIDIA DRA driver creates in ``resource.k8s.io/v1``:
  dynamic resource allocation, on by default from 1.34 (on older API servers the pod field is
  dropped while the gate is off).

A clique's own ``podSpec.resourceClaims`` gets a warning instead on 1.31-1.33: it is the user's
field, valid in those versions' Pod schema, and works on a cluster that enabled the gate.

A scheduler backend's own needs (the Workload API gangs of ``default-scheduler``, 1.35+) are
declared by the backend in ``backends/``, with :func:`needs_message` for the wording.
"""

from __future__ import annotations

from grove_gitops.api.podcliqueset import PodCliqueSet
from grove_gitops.fields.fielderrors import FieldError, forbidden
from grove_gitops.validation.mnnvl import MNNVL_ANNOTATION

#: The first version that serves ``resource.k8s.io/v1`` with DRA on by default (KEP-4381 GA).
DRA_VERSION = "1.34"


def minor(version: str) -> int:
    """``"1.34"`` → 34 (versions reach here validated as ``1.<minor>``)."""
    return int(version.partition(".")[2])


def at_least(version: str, minimum: str) -> bool:
    """Whether ``version`` is ``minimum`` or newer (both ``1.<minor>``)."""
    return minor(version) >= minor(minimum)


def needs_message(what: str, minimum: str, version: str) -> str:
    """One wording for every refusal: what needs which version, and the version targeted."""
    return (
        f"{what} need Kubernetes {minimum} or later, but RenderConfiguration kubernetesVersion is "
        f'"{version}" (raise it if the cluster runs {minimum}+)'
    )


def _sharing_paths(pcs: PodCliqueSet) -> list[str]:
    template = pcs.spec.template
    paths = ["spec.template.resourceSharing"] if template.resourceSharing else []
    paths += [
        f"spec.template.podCliqueScalingGroups[{i}].resourceSharing"
        for i, group in enumerate(pcs.scaling_groups)
        if group.resourceSharing
    ]
    paths += [f"spec.template.cliques[{i}].resourceSharing" for i, c in enumerate(pcs.cliques) if c.resourceSharing]
    return paths


def _mnnvl_paths(pcs: PodCliqueSet) -> list[str]:
    """Where a PodCliqueSet enrols something in an MNNVL group (``none`` opts out)."""
    places: list[tuple[str, dict[str, str] | None]] = [("metadata.annotations", pcs.metadata.annotations)]
    places += [(f"spec.template.cliques[{i}].annotations", c.annotations) for i, c in enumerate(pcs.cliques)]
    places += [
        (f"spec.template.podCliqueScalingGroups[{i}].annotations", g.annotations)
        for i, g in enumerate(pcs.scaling_groups)
    ]
    return [
        f"{base}.{MNNVL_ANNOTATION}"
        for base, values in places
        if values and values.get(MNNVL_ANNOTATION, "none") != "none"
    ]


def validate_kube_version(pcs: PodCliqueSet, version: str) -> list[FieldError]:
    """Each feature of ``pcs`` the target ``version`` cannot carry, at the field that asks for it."""
    if at_least(version, DRA_VERSION):
        return []
    claims = needs_message("ResourceClaims (resource.k8s.io/v1)", DRA_VERSION, version)
    mnnvl = needs_message(
        "MNNVL ComputeDomains (pods' resourceClaims, dynamic resource allocation in resource.k8s.io/v1)",
        DRA_VERSION,
        version,
    )
    return [forbidden(path, claims) for path in _sharing_paths(pcs)] + [
        forbidden(path, mnnvl) for path in _mnnvl_paths(pcs)
    ]


def kube_version_warnings(pcs: PodCliqueSet, version: str) -> list[str]:
    """``field: message`` warnings for what ``version`` accepts but may silently drop."""
    if at_least(version, DRA_VERSION):
        return []
    return [
        f"spec.template.cliques[{i}].spec.podSpec.resourceClaims: pod resourceClaims need dynamic resource "
        f'allocation, on by default from Kubernetes {DRA_VERSION}; on "{version}" kube-apiserver drops the field '
        "unless the DynamicResourceAllocation feature gate is on"
        for i, clique in enumerate(pcs.cliques)
        if clique.spec.podSpec.get("resourceClaims")
    ]
