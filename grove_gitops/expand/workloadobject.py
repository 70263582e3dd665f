"""The ``gitops.grove.io`` PodCliqueSet: the one in-cluster object per workload Git holds.

It answers "there is no PodCliqueSet in the cluster": ``kubectl get gpcs`` lists every
workload, and the agent writes its status (replicas, availability, rollout, conditions).
For an autoscaled workload it is also the agent's input and the owner of what the agent
creates (docs/autoscaling.md):

- ``spec.scaleTargets`` names, per PodCliqueSet replica, each scale target the agent creates
  (``<pcs>-<i>-<clique|group>``) with the bounds Git sets; the count itself is never here;
- ``spec.source`` holds the render inputs of this workload (its PodCliqueSet document and the
  configuration documents it reads), so the agent expands live counts with the same code and
  the same inputs as the render that wrote this object;
- every object the agent creates carries an ownerReference to it: deleting the workload from
  Git deletes them through the garbage collector (and the agent deletes them itself).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from grove_gitops.api.podcliqueset import PodCliqueSet
from grove_gitops.expand import labels as L
from grove_gitops.expand.scaling import API_VERSION, PCS_KIND, scale_units

COMPONENT = "podcliqueset"


def scale_targets(pcs: PodCliqueSet) -> list[dict[str, Any]]:
    units = scale_units(pcs)
    return [
        {
            "kind": u.kind,
            "name": u.target_name(pcs.name, i),
            "podCliqueSetReplica": i,
            "templateName": u.name,
            "minAvailable": u.min_available,
            "minReplicas": u.min_replicas,
            "maxReplicas": u.max_replicas,
            "initialReplicas": u.initial,
            "selector": u.selector(pcs.name, i),
        }
        for i in range(pcs.spec.replicas)
        for u in units
    ]


def workload_object(pcs: PodCliqueSet, version: str, source: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The object; ``source`` is written only when a scale target exists (nothing reads it
    otherwise, and it is the largest part)."""
    labels = L.default_labels(pcs.name)
    labels[L.COMPONENT] = COMPONENT
    targets = scale_targets(pcs)
    spec: dict[str, Any] = {"replicas": pcs.spec.replicas, "rendererVersion": version, "scaleTargets": targets}
    if targets:
        spec["source"] = list(source)
    return {
        "apiVersion": API_VERSION,
        "kind": PCS_KIND,
        "metadata": {"name": pcs.name, "namespace": pcs.namespace, "labels": labels},
        "spec": spec,
    }
