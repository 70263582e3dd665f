"""Size limits checked before anything is expanded.

Expansion is linear in the number of pods: ``replicas: 1000000000`` on one clique would make
``validate`` and ``render`` run for hours and exhaust memory before any other check could
fire. The pod count is known from the defaulted PodCliqueSet alone, so it is computed first
and compared with :class:`~grove_gitops.api.renderconfig.RenderLimits`.
"""

from __future__ import annotations

from grove_gitops.api.podcliqueset import PodCliqueSet
from grove_gitops.api.renderconfig import RenderLimits
from grove_gitops.validation.fielderrors import FieldError, invalid


def _count(value: int | None, default: int = 0) -> int:
    return max(value if value is not None else default, 0)


def pods_per_replica(pcs: PodCliqueSet) -> list[tuple[str, int, int]]:
    """``(field of the replicas that sets it, its value, pods)`` for every clique of one PCS replica.

    A clique in a scaling group gets ``group replicas x clique replicas`` pods; the field
    named is the clique's ``replicas`` (the usual culprit).
    """
    groups: dict[str, int] = {}
    for group in pcs.scaling_groups:
        for name in group.cliqueNames:
            groups[name] = _count(group.replicas, 1)
    out = []
    for i, clique in enumerate(pcs.cliques):
        pods = _count(clique.spec.replicas) * groups.get(clique.name, 1)
        out.append((f"spec.template.cliques[{i}].spec.replicas", clique.spec.replicas, pods))
    return out


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
    message = (
        f"this PodCliqueSet would have {total} pods, above the limit of {limit} "
        "(RenderConfiguration limits.maxPodsPerPodCliqueSet)"
    )
    return total, [invalid(field, value, message)]
