"""Label, annotation and gate keys (``operator/api/common/labels.go`` and friends).

One deliberate difference from Grove: ``app.kubernetes.io/managed-by`` is ``grove-gitops``
(Grove writes ``grove-operator``). It is used consistently, including in the headless
Service selector, so selection still works and Grove's operator, if ever installed beside
us, does not adopt or delete our objects.
"""

from __future__ import annotations

MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGED_BY_VALUE = "grove-gitops"
PART_OF = "app.kubernetes.io/part-of"
NAME = "app.kubernetes.io/name"
COMPONENT = "app.kubernetes.io/component"

PODCLIQUE = "grove.io/podclique"
PODGANG = "grove.io/podgang"
BASE_PODGANG = "grove.io/base-podgang"
PCS_REPLICA_INDEX = "grove.io/podcliqueset-replica-index"
PCSG = "grove.io/podcliquescalinggroup"
PCSG_REPLICA_INDEX = "grove.io/podcliquescalinggroup-replica-index"
POD_INDEX = "grove.io/podclique-pod-index"
POD_TEMPLATE_HASH = "grove.io/pod-template-hash"
SCHEDULER_NAME = "grove.io/scheduler-name"
TOPOLOGY_NAME = "grove.io/topology-name"

#: PodGang annotation listing the backend objects the gate-lifter must see before release
#: (a JSON list of {apiVersion, kind, name}); it keeps the lifter free of backend code.
GANG_OBJECTS = "gitops.grove.io/gang-objects"

#: PodGang annotation with what the in-cluster agent needs for day 2 (rolling updates, gang
#: termination, scale-in) and cannot read from a PodCliqueSet, because none exists in the
#: cluster: a compact JSON object (``expand.podgangs.day2_annotation``, docs/day2.md).
DAY2 = "gitops.grove.io/day2"

#: PodGang annotation with what ties each podgroup's pods to the gang (the scheduler name, the
#: scheduler's PodGroup label or annotation), as JSON pointers to values: ``{"all": {...},
#: "each": {podgroup: {...}}}`` (``expand.workload.pod_binding``, ``readmodel.binding``). The
#: agent releases no pod that lacks one of them.
POD_BINDING = "gitops.grove.io/pod-binding"

SCHEDULING_GATE = "grove.io/podgang-pending-creation"

COMPONENT_PCS_PODCLIQUE = "pcs-podclique"
COMPONENT_PCSG_PODCLIQUE = "pcsg-podclique"
COMPONENT_PODGANG = "podgang"
COMPONENT_HEADLESS_SERVICE = "pcs-headless-service"
COMPONENT_SERVICE_ACCOUNT = "pod-service-account"
COMPONENT_ROLE = "pod-role"
COMPONENT_ROLE_BINDING = "pod-role-binding"
COMPONENT_TOKEN_SECRET = "pod-sa-token-secret"
COMPONENT_RESOURCE_CLAIM = "resource-claim"


def default_labels(pcs: str) -> dict[str, str]:
    """Grove's ``D(P)``: every child object carries these."""
    return {MANAGED_BY: MANAGED_BY_VALUE, PART_OF: pcs}
