"""The Argo CD Lua health checks of ``overlays/argocd/health`` do what their comments claim.

Every script runs in a Lua 5.1 sandbox shaped like Argo CD's (no ``string`` library), on
objects shaped like what each scheduler writes. The claims are in each script's header and in
``docs/gitops-wiring.md``; the table below is the executable form of both.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest

from .helpers import GANG_KINDS, GITOPS_KINDS, HEALTH, HEALTH_STATUSES, health_script, load_one, run_health

DELETING = {"deletionTimestamp": "2026-08-30T10:00:00Z", "finalizers": ["example.com/keep"]}


def obj(api_version: str, kind: str, status: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    namespaced = kind not in ("Topology", "ClusterNetworkTopology", "ClusterTopologyBinding")
    meta: dict[str, Any] = {"name": fields.pop("name", "disagg-0"), "uid": "1f9c", "generation": 1}
    if namespaced:
        meta["namespace"] = "llm"
    meta.update(fields.pop("metadata", {}))
    out: dict[str, Any] = {"apiVersion": api_version, "kind": kind, "metadata": meta}
    out.update(fields)
    if status is not None:
        out["status"] = status
    return out


def cond(ctype: str, status: str, reason: str | None = None, message: str | None = None) -> dict[str, Any]:
    c: dict[str, Any] = {"type": ctype, "status": status, "lastTransitionTime": "2026-08-30T09:59:00Z"}
    if reason is not None:
        c["reason"] = reason
    if message is not None:
        c["message"] = message
    return c


PODGANG = "scheduler.grove.io/v1alpha1"
KAI_PG = "scheduling.run.ai/v2alpha2"
KAI_TOPO = "kai.scheduler/v1alpha1"
VOLCANO_PG = "scheduling.volcano.sh/v1beta1"
KOORD_PG = "scheduling.sigs.k8s.io/v1alpha1"
KOORD_CNT = "scheduling.koordinator.sh/v1alpha1"
COSCHED_PG = "scheduling.x-k8s.io/v1alpha1"
K8S_137 = "scheduling.k8s.io/v1beta1"
K8S_136 = "scheduling.k8s.io/v1alpha2"
K8S_COMPOSITE = "scheduling.k8s.io/v1alpha3"
CTB = "grove.io/v1alpha1"

PODGANG_SPEC = {
    "podgroups": [
        {"name": "disagg-0-pleader", "minReplicas": 1, "podReferences": [{"namespace": "llm", "name": "p-0"}]},
    ]
}
KAI_UNSCHEDULABLE = {
    "type": "UnschedulableOnNodePool",
    "nodePool": "default",
    "status": "True",
    "transitionID": "0",
    "reason": "Unschedulable",
    "message": "Resources were found for 0 pods while 5 are required for gang scheduling",
    "reasons": [
        {
            "reason": "OverLimit",
            "message": "Scheduling the pod group would exceed the limit of queue team-a",
            "details": {"queueDetails": {"name": "team-a", "queueResourceLimits": {"nvidia.com/gpu": "8"}}},
        }
    ],
}
VOLCANO_WAITING = cond(
    "Unschedulable", "True", "NotEnoughTasks", "Not enough valid tasks for gang-scheduling, valid: 0, min: 5"
)
VOLCANO_NO_FIT = cond(
    "Unschedulable",
    "True",
    "NotEnoughResources",
    "5/5 tasks in gang unschedulable: pod group is not ready, 5 Pending, 5 minAvailable; "
    "Pending: 5 Unschedulable",
)

# (group, kind, case id, object, expected status, expected message)
CASES: list[tuple[str, str, str, dict[str, Any], str, str]] = [
    # --- scheduler.grove.io PodGang -------------------------------------------------------
    ("scheduler.grove.io", "PodGang", "fresh", obj(PODGANG, "PodGang", spec=PODGANG_SPEC), "Healthy", "PodGang exists"),
    (
        "scheduler.grove.io",
        "PodGang",
        "grove-initialized-false",
        obj(
            PODGANG,
            "PodGang",
            {
                "phase": "Pending",
                "conditions": [
                    cond(
                        "Initialized",
                        "False",
                        "PodGangPodsCreationPending",
                        "Not all constituent pods have been created yet",
                    )
                ],
            },
        ),
        "Healthy",
        "PodGang phase Pending (Not all constituent pods have been created yet)",
    ),
    (
        "scheduler.grove.io",
        "PodGang",
        "grove-initialized-true",
        obj(
            PODGANG,
            "PodGang",
            {
                "phase": "Pending",
                "conditions": [cond("Initialized", "True", "PodGangPodsCreated", "PodGang is fully initialized")],
            },
        ),
        "Healthy",
        "PodGang phase Pending (PodGang is fully initialized)",
    ),
    (
        "scheduler.grove.io",
        "PodGang",
        "running",
        obj(PODGANG, "PodGang", {"phase": "Running", "conditions": [cond("Ready", "True")]}),
        "Healthy",
        "PodGang phase Running",
    ),
    (
        "scheduler.grove.io",
        "PodGang",
        "unhealthy-false",
        obj(PODGANG, "PodGang", {"phase": "Running", "conditions": [cond("Unhealthy", "False", "AllGood")]}),
        "Healthy",
        "PodGang phase Running",
    ),
    (
        "scheduler.grove.io",
        "PodGang",
        "unhealthy-true",
        obj(
            PODGANG,
            "PodGang",
            {"phase": "Running", "conditions": [cond("Unhealthy", "True", "PodFailed", "pod p-0 failed")]},
        ),
        "Degraded",
        "pod p-0 failed",
    ),
    (
        "scheduler.grove.io",
        "PodGang",
        "unschedulable-reason-only",
        obj(PODGANG, "PodGang", {"conditions": [cond("Unschedulable", "True", "NoFit")]}),
        "Degraded",
        "NoFit",
    ),
    (
        "scheduler.grove.io",
        "PodGang",
        "phase-failed",
        obj(PODGANG, "PodGang", {"phase": "Failed"}),
        "Degraded",
        "PodGang phase Failed",
    ),
    # --- scheduling.run.ai PodGroup (KAI) -------------------------------------------------
    (
        "scheduling.run.ai",
        "PodGroup",
        "fresh",
        obj(KAI_PG, "PodGroup", spec={"minMember": 5, "queue": "team-a"}),
        "Healthy",
        "KAI PodGroup exists",
    ),
    ("scheduling.run.ai", "PodGroup", "empty-status", obj(KAI_PG, "PodGroup", {}), "Healthy", "KAI PodGroup exists"),
    (
        "scheduling.run.ai",
        "PodGroup",
        "unschedulable-on-node-pool",
        obj(KAI_PG, "PodGroup", {"schedulingConditions": [KAI_UNSCHEDULABLE]}),
        "Degraded",
        "Unschedulable on node pool default: OverLimit: Scheduling the pod group would exceed the limit of queue team-a",
    ),
    (
        "scheduling.run.ai",
        "PodGroup",
        "unschedulable-deprecated-message-only",
        obj(
            KAI_PG,
            "PodGroup",
            {
                "schedulingConditions": [
                    {
                        "type": "UnschedulableOnNodePool",
                        "status": "True",
                        "transitionID": "4",
                        "reason": "Unschedulable",
                        "message": "Resources were found for 2 pods while 5 are required for gang scheduling",
                    }
                ]
            },
        ),
        "Degraded",
        "Unschedulable: Resources were found for 2 pods while 5 are required for gang scheduling",
    ),
    (
        "scheduling.run.ai",
        "PodGroup",
        "latest-condition-by-numeric-transition-id",
        obj(
            KAI_PG,
            "PodGroup",
            {
                "schedulingConditions": [
                    {**KAI_UNSCHEDULABLE, "transitionID": "10", "status": "False"},
                    {**KAI_UNSCHEDULABLE, "transitionID": "9"},
                ]
            },
        ),
        "Healthy",
        "KAI PodGroup exists",
    ),
    (
        "scheduling.run.ai",
        "PodGroup",
        "later-entry-wins-a-tie",
        obj(
            KAI_PG,
            "PodGroup",
            {
                "schedulingConditions": [
                    {**KAI_UNSCHEDULABLE, "transitionID": "3", "status": "False"},
                    {**KAI_UNSCHEDULABLE, "transitionID": "3", "reasons": [{"reason": "QueueDoesNotExist"}]},
                ]
            },
        ),
        "Degraded",
        "Unschedulable on node pool default: QueueDoesNotExist",
    ),
    (
        "scheduling.run.ai",
        "PodGroup",
        "stale-condition-after-placement",
        obj(
            KAI_PG,
            "PodGroup",
            {
                "schedulingConditions": [KAI_UNSCHEDULABLE],
                "resourcesStatus": {"allocated": {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "8"}},
            },
        ),
        "Healthy",
        "KAI PodGroup scheduled",
    ),
    (
        "scheduling.run.ai",
        "PodGroup",
        "zero-allocation-is-not-placement",
        obj(
            KAI_PG,
            "PodGroup",
            {"schedulingConditions": [KAI_UNSCHEDULABLE], "resourcesStatus": {"allocated": {"cpu": "0"}}},
        ),
        "Degraded",
        "Unschedulable on node pool default: OverLimit: Scheduling the pod group would exceed the limit of queue team-a",
    ),
    (
        "scheduling.run.ai",
        "PodGroup",
        "status-condition-unschedulable",
        obj(KAI_PG, "PodGroup", {"conditions": [cond("Unschedulable", "True", "QueueDoesNotExist")]}),
        "Degraded",
        "QueueDoesNotExist",
    ),
    (
        "scheduling.run.ai",
        "PodGroup",
        "status-condition-other",
        obj(KAI_PG, "PodGroup", {"conditions": [cond("Stale", "False", "Fresh", "all pods running")]}),
        "Healthy",
        "KAI PodGroup exists",
    ),
    # --- kai.scheduler Topology -----------------------------------------------------------
    (
        "kai.scheduler",
        "Topology",
        "fresh",
        obj(
            KAI_TOPO,
            "Topology",
            name="gpu-fabric",
            spec={
                "levels": [
                    {"nodeLabel": "network.example.com/block"},
                    {"nodeLabel": "network.example.com/rack"},
                    {"nodeLabel": "kubernetes.io/hostname"},
                ]
            },
        ),
        "Healthy",
        "Topology exists (3 levels)",
    ),
    ("kai.scheduler", "Topology", "no-spec", obj(KAI_TOPO, "Topology"), "Healthy", "Topology exists"),
    # --- scheduling.volcano.sh PodGroup ---------------------------------------------------
    (
        "scheduling.volcano.sh",
        "PodGroup",
        "fresh",
        obj(VOLCANO_PG, "PodGroup", spec={"minMember": 5, "queue": "team-a"}),
        "Healthy",
        "PodGroup exists",
    ),
    (
        "scheduling.volcano.sh",
        "PodGroup",
        "pending",
        obj(VOLCANO_PG, "PodGroup", {"phase": "Pending"}),
        "Healthy",
        "PodGroup phase Pending",
    ),
    (
        "scheduling.volcano.sh",
        "PodGroup",
        "inqueue",
        obj(VOLCANO_PG, "PodGroup", {"phase": "Inqueue"}),
        "Healthy",
        "PodGroup phase Inqueue",
    ),
    (
        "scheduling.volcano.sh",
        "PodGroup",
        "running",
        obj(VOLCANO_PG, "PodGroup", {"phase": "Running", "running": 5}),
        "Healthy",
        "PodGroup phase Running",
    ),
    (
        "scheduling.volcano.sh",
        "PodGroup",
        "completed",
        obj(VOLCANO_PG, "PodGroup", {"phase": "Completed", "succeeded": 5}),
        "Healthy",
        "PodGroup phase Completed",
    ),
    (
        "scheduling.volcano.sh",
        "PodGroup",
        "pending-waiting-for-pods",
        obj(VOLCANO_PG, "PodGroup", {"phase": "Pending", "conditions": [VOLCANO_WAITING]}),
        "Healthy",
        "waiting for pods: Not enough valid tasks for gang-scheduling, valid: 0, min: 5",
    ),
    (
        "scheduling.volcano.sh",
        "PodGroup",
        "waiting-for-task-pods-reason-only",
        obj(VOLCANO_PG, "PodGroup", {"phase": "Pending", "conditions": [cond("Unschedulable", "True", "NotEnoughPodsOfTask")]}),
        "Healthy",
        "waiting for pods: NotEnoughPodsOfTask",
    ),
    (
        "scheduling.volcano.sh",
        "PodGroup",
        "inqueue-unschedulable",
        obj(VOLCANO_PG, "PodGroup", {"phase": "Inqueue", "conditions": [VOLCANO_NO_FIT]}),
        "Degraded",
        VOLCANO_NO_FIT["message"],
    ),
    (
        "scheduling.volcano.sh",
        "PodGroup",
        "unknown-unschedulable",
        obj(VOLCANO_PG, "PodGroup", {"phase": "Unknown", "running": 2, "conditions": [VOLCANO_NO_FIT]}),
        "Degraded",
        VOLCANO_NO_FIT["message"],
    ),
    (
        "scheduling.volcano.sh",
        "PodGroup",
        "running-with-stale-unschedulable",
        obj(
            VOLCANO_PG,
            "PodGroup",
            {"phase": "Running", "conditions": [VOLCANO_NO_FIT, cond("Scheduled", "True", "tasks in gang are ready to be scheduled")]},
        ),
        "Healthy",
        "PodGroup phase Running",
    ),
    (
        "scheduling.volcano.sh",
        "PodGroup",
        "unschedulable-false",
        obj(VOLCANO_PG, "PodGroup", {"phase": "Inqueue", "conditions": [{**VOLCANO_NO_FIT, "status": "False"}]}),
        "Healthy",
        "PodGroup phase Inqueue",
    ),
    (
        "scheduling.volcano.sh",
        "PodGroup",
        "unschedulable-reason-only",
        obj(VOLCANO_PG, "PodGroup", {"phase": "Pending", "conditions": [cond("Unschedulable", "True", "QueueClosed")]}),
        "Degraded",
        "QueueClosed",
    ),
    # --- scheduling.k8s.io Workload / PodGroup / CompositePodGroup ------------------------
    (
        "scheduling.k8s.io",
        "Workload",
        "fresh",
        obj(
            K8S_137,
            "Workload",
            name="disagg",
            spec={"podGroupTemplates": [{"name": "replica", "schedulingPolicy": {"gang": {"minCount": 5}}}]},
        ),
        "Healthy",
        "Workload exists",
    ),
    (
        "scheduling.k8s.io",
        "PodGroup",
        "fresh",
        obj(
            K8S_137,
            "PodGroup",
            spec={
                "workloadRef": {"workloadName": "disagg", "templateName": "replica"},
                "schedulingPolicy": {"gang": {"minCount": 5}},
            },
        ),
        "Healthy",
        "PodGroup exists",
    ),
    (
        "scheduling.k8s.io",
        "PodGroup",
        "1.36-scheduled",
        obj(K8S_136, "PodGroup", {"conditions": [cond("PodGroupScheduled", "True", "Scheduled")]}),
        "Healthy",
        "PodGroup scheduled",
    ),
    (
        "scheduling.k8s.io",
        "PodGroup",
        "1.37-initially-scheduled",
        obj(K8S_137, "PodGroup", {"conditions": [cond("PodGroupInitiallyScheduled", "True", "Scheduled")]}),
        "Healthy",
        "PodGroup scheduled",
    ),
    (
        "scheduling.k8s.io",
        "PodGroup",
        "1.37-unschedulable",
        obj(
            K8S_137,
            "PodGroup",
            {
                "conditions": [
                    cond(
                        "PodGroupInitiallyScheduled",
                        "False",
                        "Unschedulable",
                        "0/8 nodes are available: 8 Insufficient nvidia.com/gpu.",
                    )
                ]
            },
        ),
        "Degraded",
        "Unschedulable: 0/8 nodes are available: 8 Insufficient nvidia.com/gpu.",
    ),
    (
        "scheduling.k8s.io",
        "PodGroup",
        "1.36-scheduler-error",
        obj(K8S_136, "PodGroup", {"conditions": [cond("PodGroupScheduled", "False", "SchedulerError")]}),
        "Degraded",
        "SchedulerError",
    ),
    (
        "scheduling.k8s.io",
        "PodGroup",
        "false-with-other-reason",
        obj(K8S_137, "PodGroup", {"conditions": [cond("PodGroupInitiallyScheduled", "False", "WaitingForPods")]}),
        "Healthy",
        "PodGroup not scheduled yet (WaitingForPods)",
    ),
    (
        "scheduling.k8s.io",
        "PodGroup",
        "disruption-target-only",
        obj(K8S_137, "PodGroup", {"conditions": [cond("DisruptionTarget", "True", "PreemptionByScheduler")]}),
        "Healthy",
        "PodGroup exists",
    ),
    (
        "scheduling.k8s.io",
        "CompositePodGroup",
        "fresh",
        obj(
            K8S_COMPOSITE,
            "CompositePodGroup",
            spec={
                "workloadRef": {"workloadName": "disagg", "templateName": "replica"},
                "schedulingPolicy": {"gang": {"minGroupCount": 2}},
            },
        ),
        "Healthy",
        "CompositePodGroup exists",
    ),
    (
        "scheduling.k8s.io",
        "CompositePodGroup",
        "scheduled",
        obj(K8S_COMPOSITE, "CompositePodGroup", {"conditions": [cond("CompositePodGroupInitiallyScheduled", "True")]}),
        "Healthy",
        "CompositePodGroup scheduled",
    ),
    (
        "scheduling.k8s.io",
        "CompositePodGroup",
        "invalid-layout",
        obj(
            K8S_COMPOSITE,
            "CompositePodGroup",
            {
                "conditions": [
                    cond("CompositePodGroupInitiallyScheduled", "False", "Invalid", "hierarchy depth exceeds 4")
                ]
            },
        ),
        "Degraded",
        "Invalid: hierarchy depth exceeds 4",
    ),
    (
        "scheduling.k8s.io",
        "CompositePodGroup",
        "unschedulable",
        obj(K8S_COMPOSITE, "CompositePodGroup", {"conditions": [cond("CompositePodGroupInitiallyScheduled", "False", "Unschedulable")]}),
        "Degraded",
        "Unschedulable",
    ),
    (
        "scheduling.k8s.io",
        "CompositePodGroup",
        "false-with-other-reason",
        obj(K8S_COMPOSITE, "CompositePodGroup", {"conditions": [cond("CompositePodGroupInitiallyScheduled", "False", "Pending")]}),
        "Healthy",
        "CompositePodGroup not scheduled yet (Pending)",
    ),
    # --- grove.io ClusterTopologyBinding --------------------------------------------------
    (
        "grove.io",
        "ClusterTopologyBinding",
        "in-sync",
        obj(
            CTB,
            "ClusterTopologyBinding",
            {
                "conditions": [cond("SchedulerTopologyDrift", "False", "InSync", "All scheduler backend topologies are in sync")],
                "schedulerTopologyStatuses": [
                    {"schedulerName": "kai-scheduler", "topologyReference": "gpu-fabric", "inSync": True}
                ],
            },
            name="gpu-fabric",
            spec={"levels": [{"domain": "zone", "key": "topology.kubernetes.io/zone"}]},
        ),
        "Healthy",
        "ClusterTopologyBinding exists (1 levels)",
    ),
    (
        "grove.io",
        "ClusterTopologyBinding",
        "drift-condition",
        obj(
            CTB,
            "ClusterTopologyBinding",
            {"conditions": [cond("SchedulerTopologyDrift", "True", "Drift", "kai-scheduler topology gpu-fabric differs")]},
        ),
        "Degraded",
        "kai-scheduler topology gpu-fabric differs",
    ),
    (
        "grove.io",
        "ClusterTopologyBinding",
        "statuses-out-of-sync",
        obj(
            CTB,
            "ClusterTopologyBinding",
            {
                "schedulerTopologyStatuses": [
                    {"schedulerName": "kai-scheduler", "topologyReference": "gpu-fabric", "inSync": False, "message": "levels differ"},
                    {"schedulerName": "volcano", "topologyReference": "fabric", "inSync": True},
                    {"schedulerName": "koord-scheduler", "topologyReference": "default", "inSync": False},
                ]
            },
        ),
        "Degraded",
        "kai-scheduler topology gpu-fabric out of sync: levels differ; koord-scheduler topology default out of sync",
    ),
    # --- scheduling.koordinator.sh ClusterNetworkTopology ---------------------------------
    (
        "scheduling.koordinator.sh",
        "ClusterNetworkTopology",
        "default",
        obj(
            KOORD_CNT,
            "ClusterNetworkTopology",
            {"detailStatus": [{"topologyInfo": {"topologyLayer": "BlockLayer", "topologyName": "b1"}, "nodeNum": 4}]},
            name="default",
            spec={"networkTopologySpec": [{"topologyLayer": "NodeTopologyLayer"}]},
        ),
        "Healthy",
        "ClusterNetworkTopology exists",
    ),
    (
        "scheduling.koordinator.sh",
        "ClusterNetworkTopology",
        "not-named-default",
        obj(KOORD_CNT, "ClusterNetworkTopology", name="fabric"),
        "Healthy",
        "ClusterNetworkTopology exists, but koord-scheduler only reads the one named default",
    ),
]

# --- gitops.grove.io (docs/autoscaling.md): the workload's own health -----------------------------
GITOPS = "gitops.grove.io/v1alpha1"
WAITING = "Waiting for the grove-gitops agent"
QUOTA = cond("ScaleBlocked", "True", "QuotaExceeded", 'pods "llama-0-prefill-3-x" is forbidden: exceeded quota: gpu')
NOT_BLOCKED = cond("ScaleBlocked", "False", "GangsCreated", "every gang of the count was created")


def pcs(status: dict[str, Any] | None, replicas: int = 2, generation: int = 1) -> dict[str, Any]:
    return obj(GITOPS, "PodCliqueSet", status, metadata={"generation": generation}, spec={"replicas": replicas})


def target(kind: str, status: dict[str, Any] | None, replicas: int = 2, generation: int = 1) -> dict[str, Any]:
    spec = {"replicas": replicas, "minAvailable": 1, "minReplicas": 1, "maxReplicas": 8}
    return obj(GITOPS, kind, status, metadata={"generation": generation}, spec=spec)


def counts(replicas: int, ready: int, available: int, updated: int, gen: int = 1, *conds: Any) -> dict[str, Any]:
    return {
        "observedGeneration": gen,
        "replicas": replicas,
        "readyReplicas": ready,
        "availableReplicas": available,
        "updatedReplicas": updated,
        "selector": "app.kubernetes.io/managed-by=grove-gitops",
        "conditions": list(conds),
    }


def pcs_status(available: int, updated: int, gen: int = 1, *conds: Any) -> dict[str, Any]:
    return {
        "observedGeneration": gen,
        "replicas": 2,
        "availableReplicas": available,
        "updatedReplicas": updated,
        "conditions": list(conds),
    }


G = "gitops.grove.io"
CASES += [
    (G, "PodCliqueSet", "fresh", pcs(None), "Progressing", WAITING),
    (G, "PodCliqueSet", "empty-status", pcs({}), "Progressing", WAITING),
    (
        G,
        "PodCliqueSet",
        "generation-lag",
        pcs(pcs_status(2, 2, 1), generation=2),
        "Progressing",
        "Waiting for the grove-gitops agent to observe generation 2",
    ),
    (
        G,
        "PodCliqueSet",
        "available",
        pcs(pcs_status(2, 2, 1, cond("Ready", "True", "Available"), NOT_BLOCKED)),
        "Healthy",
        "2 of 2 replicas available and updated",
    ),
    (
        G,
        "PodCliqueSet",
        "starting",
        pcs(pcs_status(1, 2, 1, cond("Ready", "False", "ReplicasNotReady", "1 of 2 replicas available (each standalone PodClique and scaling group at its minAvailable)"))),
        "Progressing",
        "1 of 2 replicas available, 2 updated",
    ),
    (G, "PodCliqueSet", "rolling-update", pcs(pcs_status(2, 1)), "Progressing", "2 of 2 replicas available, 1 updated"),
    (G, "PodCliqueSet", "counts-missing", pcs({"observedGeneration": 1}), "Progressing", "0 of 2 replicas available, 0 updated"),
    (G, "PodCliqueSet", "zero-replicas", pcs({"observedGeneration": 1}, replicas=0), "Healthy", "0 of 0 replicas available and updated"),
    (G, "PodCliqueSet", "quota", pcs(pcs_status(2, 2, 1, QUOTA)), "Degraded", QUOTA["message"]),
    (
        G,
        "PodCliqueSet",
        "quota-reason-only",
        pcs(pcs_status(1, 1, 1, cond("ScaleBlocked", "True", "QuotaExceeded"))),
        "Degraded",
        "QuotaExceeded",
    ),
    (
        G,
        "PodCliqueSet",
        "invalid-workload",
        pcs(pcs_status(0, 0, 1, cond("Ready", "False", "InvalidWorkload", "spec.source: no PodCliqueSet document"))),
        "Degraded",
        "spec.source: no PodCliqueSet document",
    ),
]
for _kind, _word, _ready in (("PodCliqueScalingGroup", "available", "availableReplicas"), ("PodClique", "ready", "readyReplicas")):
    CASES += [
        (G, _kind, "fresh", target(_kind, None), "Progressing", WAITING),
        (G, _kind, "empty-status", target(_kind, {}), "Progressing", WAITING),
        (
            G,
            _kind,
            "scale-write-not-yet-observed",
            target(_kind, counts(2, 2, 2, 2, 3), replicas=4, generation=4),
            "Progressing",
            "Waiting for the grove-gitops agent to observe generation 4",
        ),
        (
            G,
            _kind,
            "scaling-out",
            target(_kind, counts(4, 2, 2, 2, 4, NOT_BLOCKED), replicas=4, generation=4),
            "Progressing",
            f"2 of 4 replicas {_word}, 2 updated",
        ),
        (
            G,
            _kind,
            "scaling-in",
            target(_kind, counts(3, 3, 3, 3, 5), replicas=1, generation=5),
            "Progressing",
            "Scaling in: 3 replicas, 1 desired",
        ),
        (G, _kind, "scaled", target(_kind, counts(2, 2, 2, 2, 1, NOT_BLOCKED)), "Healthy", f"2 of 2 replicas {_word} and updated"),
        (G, _kind, "rolling-update", target(_kind, counts(2, 2, 2, 1)), "Progressing", f"2 of 2 replicas {_word}, 1 updated"),
        (G, _kind, "quota", target(_kind, counts(2, 2, 2, 2, 1, QUOTA), replicas=3), "Degraded", QUOTA["message"]),
        (
            G,
            _kind,
            "quota-reason-only",
            target(_kind, counts(2, 2, 2, 2, 1, cond("ScaleBlocked", "True", "QuotaExceeded"))),
            "Degraded",
            "QuotaExceeded",
        ),
    ]
# A group counts available replicas (every clique meets minAvailable), a clique ready pods.
CASES += [
    (
        G,
        "PodCliqueScalingGroup",
        "ready-but-not-available",
        target("PodCliqueScalingGroup", counts(2, 2, 1, 2)),
        "Progressing",
        "1 of 2 replicas available, 2 updated",
    ),
    (
        G,
        "PodClique",
        "available-but-not-ready",
        target("PodClique", counts(2, 1, 2, 2)),
        "Progressing",
        "1 of 2 replicas ready, 2 updated",
    ),
]

# Koordinator and scheduler-plugins share the v1alpha1 PodGroup status: same table for both.
for _group, _api in (("scheduling.sigs.k8s.io", KOORD_PG), ("scheduling.x-k8s.io", COSCHED_PG)):
    CASES += [
        (_group, "PodGroup", "fresh", obj(_api, "PodGroup", spec={"minMember": 5}), "Healthy", "PodGroup exists"),
        (_group, "PodGroup", "pending", obj(_api, "PodGroup", {"phase": "Pending"}), "Healthy", "PodGroup phase Pending"),
        (
            _group,
            "PodGroup",
            "scheduling",
            obj(_api, "PodGroup", {"phase": "Scheduling", "scheduled": 3}),
            "Healthy",
            "PodGroup phase Scheduling",
        ),
        (
            _group,
            "PodGroup",
            "running",
            obj(_api, "PodGroup", {"phase": "Running", "running": 5}),
            "Healthy",
            "PodGroup phase Running",
        ),
        (
            _group,
            "PodGroup",
            "finished",
            obj(_api, "PodGroup", {"phase": "Finished", "succeeded": 5}),
            "Healthy",
            "PodGroup phase Finished",
        ),
        (
            _group,
            "PodGroup",
            "failed-with-count",
            obj(_api, "PodGroup", {"phase": "Failed", "failed": 2, "running": 3}),
            "Degraded",
            "PodGroup phase Failed (2 failed pods)",
        ),
        (
            _group,
            "PodGroup",
            "failed-without-count",
            obj(_api, "PodGroup", {"phase": "Failed"}),
            "Degraded",
            "PodGroup phase Failed",
        ),
    ]


@pytest.mark.parametrize(
    ("group", "kind", "obj_", "status", "message"),
    [pytest.param(g, k, o, s, m, id=f"{g}_{k}-{case}") for g, k, case, o, s, m in CASES],
)
def test_health_claims(group: str, kind: str, obj_: dict[str, Any], status: str, message: str) -> None:
    assert run_health(health_script(group, kind), obj_) == {"status": status, "message": message}


def test_every_kind_has_claims_for_fresh_and_failure_paths() -> None:
    """The table covers every script; every script that has a Degraded claim is tested Degraded."""
    covered = {(g, k) for g, k, *_ in CASES}
    assert covered == {(g, k) for g, k, _ in GANG_KINDS + GITOPS_KINDS}
    for path in sorted(HEALTH.glob("*.lua")):
        group, kind = path.stem.rsplit("_", 1)
        statuses = {s for g, k, _, _, s, _ in CASES if (g, k) == (group, kind)}
        header = path.read_text().split("Claims", 1)[1]
        if re.search(r"--\s+Degraded\s", header):
            assert "Degraded" in statuses, f"{path.name} claims Degraded but no case tests it"


@pytest.mark.parametrize(("group", "kind", "namespaced"), GANG_KINDS, ids=[f"{g}_{k}" for g, k, _ in GANG_KINDS])
def test_freshly_created_object_without_status_is_healthy(group: str, kind: str, namespaced: bool) -> None:
    """What Argo CD sees right after applying wave 0: metadata and spec, no status."""
    fresh = obj(f"{group}/v1", kind, name="default" if kind == "ClusterNetworkTopology" else "disagg-0")
    if not namespaced:
        fresh["metadata"].pop("namespace", None)
    result = run_health(health_script(group, kind), fresh)
    assert result["status"] == "Healthy"
    assert result["message"]


ALL_KINDS = GANG_KINDS + GITOPS_KINDS


@pytest.mark.parametrize(("group", "kind", "namespaced"), ALL_KINDS, ids=[f"{g}_{k}" for g, k, _ in ALL_KINDS])
def test_object_being_deleted_is_progressing(group: str, kind: str, namespaced: bool) -> None:
    """Deletion wins over everything, like Argo CD's own rule, even over a failure signal."""
    failing = obj(
        f"{group}/v1",
        kind,
        {
            "phase": "Failed",
            "observedGeneration": 1,
            "conditions": [cond("Unschedulable", "True", "NoFit", "no fit"), QUOTA],
            "schedulingConditions": [KAI_UNSCHEDULABLE],
        },
        metadata=DELETING,
    )
    assert run_health(health_script(group, kind), failing) == {"status": "Progressing", "message": "Pending deletion"}


ODD_STATUSES: list[dict[str, Any]] = [
    {},
    {"phase": ""},
    {"conditions": []},
    {"conditions": [{}]},
    {"conditions": [{"type": "Unschedulable"}]},
    {"conditions": [{"type": "Unschedulable", "status": "True"}]},
    {"conditions": [{"type": "PodGroupInitiallyScheduled", "status": "False"}]},
    {"conditions": [{"type": "CompositePodGroupInitiallyScheduled", "status": "False", "reason": ""}]},
    {"schedulingConditions": []},
    {"schedulingConditions": [{}]},
    {"schedulingConditions": [{"type": "UnschedulableOnNodePool", "status": "True"}]},
    {"schedulingConditions": [{"type": "UnschedulableOnNodePool", "status": "True", "reasons": [{}]}]},
    {"schedulingConditions": [{"type": "UnschedulableOnNodePool", "status": "True", "transitionID": "x"}]},
    {"resourcesStatus": {}},
    {"resourcesStatus": {"allocated": {}}},
    {"schedulerTopologyStatuses": [{}]},
    {"schedulerTopologyStatuses": [{"inSync": False}]},
    {"phase": "Failed", "failed": 0},
    {"detailStatus": []},
    {"observedGeneration": "1"},
    {"observedGeneration": 1},
    {"observedGeneration": 1, "replicas": "2", "readyReplicas": None, "availableReplicas": "x"},
    {"observedGeneration": 1, "conditions": [{"type": "ScaleBlocked", "status": "True"}]},
    {"observedGeneration": 1, "conditions": [{"type": "Ready", "status": "False", "reason": "InvalidWorkload"}]},
]


@pytest.mark.parametrize(("group", "kind", "namespaced"), ALL_KINDS, ids=[f"{g}_{k}" for g, k, _ in ALL_KINDS])
def test_partial_statuses_never_break_a_script(group: str, kind: str, namespaced: bool) -> None:
    """Half-written statuses (missing fields, empty lists) give a valid answer, never a Lua error."""
    for status in ODD_STATUSES:
        result = run_health(health_script(group, kind), obj(f"{group}/v1", kind, copy.deepcopy(status)))
        assert result["status"] in HEALTH_STATUSES, (status, result)
        assert isinstance(result.get("message"), str) and result["message"], (status, result)


def test_rendered_gang_and_topology_objects_are_healthy(rendered_examples: Path) -> None:
    """The objects the renderer actually writes (no status) are Healthy as applied."""
    seen = set()
    for path in sorted(rendered_examples.rglob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        rendered = load_one(path)
        group = str(rendered["apiVersion"]).rpartition("/")[0]
        if (group, rendered["kind"]) not in {(g, k) for g, k, _ in GANG_KINDS}:
            continue
        seen.add((group, rendered["kind"]))
        result = run_health(health_script(group, rendered["kind"]), rendered)
        assert result["status"] == "Healthy", (path.name, result)
    # examples/ renders at least its PodGangs and its ClusterTopologyBinding.
    assert {("scheduler.grove.io", "PodGang"), ("grove.io", "ClusterTopologyBinding")} <= seen


_COMMENT = re.compile(r"--[^\n]*")


@pytest.mark.parametrize("path", sorted(HEALTH.glob("*.lua")), ids=lambda p: p.name)
def test_scripts_use_only_libraries_argo_cd_opens(path: Path) -> None:
    """Argo CD opens base, table and a reduced os: no string/math/io library, no string methods."""
    code = _COMMENT.sub("", path.read_text())
    assert not re.search(r"\b(string|math|io|os|debug|coroutine|utf8)\s*\.", code)
    assert not re.search(r"[\w)\]\"']\s*:\s*[A-Za-z_]\w*\s*\(", code), "method call (string library)"
    assert "Claims" in path.read_text(), "every script documents its claims in its header"


@pytest.mark.parametrize(("group", "kind", "namespaced"), GITOPS_KINDS, ids=[f"{g}_{k}" for g, k, _ in GITOPS_KINDS])
def test_gitops_kinds_without_spec_or_generation_never_break(group: str, kind: str, namespaced: bool) -> None:
    """A half-built object (no spec, no generation) still gets an answer."""
    bare = {"apiVersion": f"{group}/v1alpha1", "kind": kind, "metadata": {"name": "x"}, "status": {"observedGeneration": 1}}
    result = run_health(health_script(group, kind), bare)
    assert result["status"] == "Healthy" and result["message"]


def test_podcliqueset_is_in_the_last_sync_wave_of_its_shard(rendered_examples: Path) -> None:
    """Its health waits for the Pods (wave 10): in an earlier wave Argo CD would never reach them.
    (Holds for every gitops.grove.io PodCliqueSet the renderer writes.)"""
    wave = "argocd.argoproj.io/sync-wave"
    shards: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(rendered_examples.rglob("*.yaml")):
        if path.name != "kustomization.yaml":
            shards.setdefault(path.parent.as_posix(), []).append(load_one(path))
    for objects in shards.values():
        waves = [int(o["metadata"].get("annotations", {}).get(wave, "0")) for o in objects]
        for o, w in zip(objects, waves, strict=True):
            if (o["apiVersion"], o["kind"]) == (GITOPS, "PodCliqueSet"):
                assert w >= max(waves), (o["metadata"]["name"], w, max(waves))
