"""HorizontalPodAutoscalers as Grove creates them (``spec/grove-autoscaling.md`` §2.1), in Git.

One HPA per PodCliqueSet replica and scale unit, named like its target, cliques first then
scaling groups. Differences from Grove, each deliberate:

- the target is our scale target in ``gitops.grove.io`` (same kind and name), not Grove's;
- an empty ``metrics`` is rendered as the value the API server stores for it (CPU at 80 %),
  so Argo CD / Flux never see the server's defaulting as drift (Grove re-sends ``null``);
- labels carry ``managed-by: grove-gitops`` like every object we render;
- no ``ownerReferences``: Git prunes an HPA whose unit or replica is gone.

Grove's unit mismatch (§6.1) is kept, as an HPA on these targets behaves the same; the render
warns with the factor (:func:`unit_warnings`).
"""

from __future__ import annotations

from typing import Any

from grove_gitops.api.podcliqueset import PodCliqueSet
from grove_gitops.expand import labels as L
from grove_gitops.expand.jsoncopy import json_copy
from grove_gitops.expand.scaling import API_VERSION, PCSG_KIND, ScaleUnit, scale_units

COMPONENT_HPA = "pcs-hpa"
#: What kube-apiserver stores for an HPA without metrics (autoscaling/v2 defaulting).
DEFAULT_METRICS: list[dict[str, Any]] = [
    {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}
]


def hpa(pcs: PodCliqueSet, replica: int, unit: ScaleUnit) -> dict[str, Any]:
    name = unit.target_name(pcs.name, replica)
    labels = L.default_labels(pcs.name)
    labels.update({L.NAME: name, L.COMPONENT: COMPONENT_HPA})
    metrics = [json_copy(m) for m in unit.metrics] if unit.metrics else json_copy(DEFAULT_METRICS)
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name, "namespace": pcs.namespace, "labels": labels},
        "spec": {
            "scaleTargetRef": {"apiVersion": API_VERSION, "kind": unit.kind, "name": name},
            "minReplicas": unit.min_replicas,
            "maxReplicas": unit.max_replicas,
            "metrics": metrics,
        },
    }


#: PodCliqueSet annotation: ``external`` renders no HPA, for KEDA or a planner that owns the
#: count through the same scale targets (two autoscalers on one ``/scale`` would fight).
AUTOSCALER_ANNOTATION = "gitops.grove.io/autoscaler"
EXTERNAL = "external"


def hpas(pcs: PodCliqueSet) -> list[dict[str, Any]]:
    """Every HPA of the PodCliqueSet, per replica, in Grove's order (``hpa.go:128-166``);
    none when the PodCliqueSet says another autoscaler owns its counts."""
    if (pcs.metadata.annotations or {}).get(AUTOSCALER_ANNOTATION) == EXTERNAL:
        return []
    units = scale_units(pcs)
    return [hpa(pcs, i, u) for i in range(pcs.spec.replicas) for u in units]


def _per_pod(metric: dict[str, Any]) -> bool:
    """True when the HPA turns this metric into "pods needed": every type but an Object or
    External metric with an ``AverageValue`` target ([K-RC])."""
    kind = metric.get("type")
    if kind in ("Object", "External"):
        body = metric.get("object" if kind == "Object" else "external") or {}
        target = body.get("target") if isinstance(body, dict) else None
        return not (isinstance(target, dict) and target.get("type") == "AverageValue")
    return True


def unit_warnings(pcs: PodCliqueSet) -> list[tuple[str, str]]:
    """Grove's §6.1: a scaling group's selector matches all its pods, so a per-pod metric makes
    the HPA propose a pod count as the replica count. Warned with the factor."""
    out = []
    for unit in scale_units(pcs):
        if unit.kind != PCSG_KIND or unit.pods_per_replica <= 1:
            continue
        metrics = list(unit.metrics) or DEFAULT_METRICS
        per_pod = [m for m in metrics if _per_pod(m)]
        if not per_pod:
            continue
        out.append(
            (
                f"{unit.path}.metrics",
                f"the HorizontalPodAutoscaler of scaling group {unit.name!r} counts pods, and one replica of it has "
                f"{unit.pods_per_replica} pods: it proposes up to {unit.pods_per_replica}x the replicas the load needs "
                "(as with Grove); use an Object or External metric with target type AverageValue, or KEDA, "
                "for a per-replica target (docs/autoscaling.md)",
            )
        )
    return out
