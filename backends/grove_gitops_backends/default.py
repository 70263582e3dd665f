"""``default-scheduler``: Grove's ``kube`` backend (``operator/internal/scheduler/kube``), plus
gang scheduling through Kubernetes' own Workload API when the profile asks for it.

Without ``gangScheduling`` (Grove's behaviour): pods only get ``schedulerName:
default-scheduler`` and there are no gang objects. Grove accepts topology constraints for
this backend and silently ignores them (its ``ValidatePodCliqueSet`` returns nil,
``spec/grove-backends.md`` §11 item 4); we accept them too, because the PodGang still carries
them, but warn that nothing enforces them.

With ``scheduler.profiles[name=default-scheduler].config.gangScheduling: true``: Grove
declares this field (``KubeSchedulerConfig``) but never reads it (§4.1, §11 item 5) and has
no Workload API backend (§4.5). We read it and render, per PodGang, the ``scheduling.k8s.io``
objects of the render's ``kubernetesVersion`` (``backends/workload_api.py``: a Workload, and
from 1.36 PodGroups, and on 1.37 CompositePodGroups for multi-podgroup gangs), and bind each
pod with the version's pod field (1.35 ``spec.workloadRef``, 1.36+ ``spec.schedulingGroup``).
Pods keep Grove's scheduling gate: the Workload API needs nothing else on the pod
(``spec/backend-crs.md`` §5.4; kube-scheduler additionally holds a pod in ``PreEnqueue`` until
its gang object exists and enough of its pods do), and lifting all of a gang's gates together
is the only rule that is safe for every scheduler.

``validate`` warns, once per render, which feature gates and ``--runtime-config`` the
cluster needs, and per PodCliqueSet about what the target version cannot express (merged
gangs losing per-clique minimums on 1.35 / 1.36, topology constraints that are preferred or
that a single PodGroup key cannot carry); it rejects a non-boolean ``gangScheduling`` and, on
1.37, a gang whose CompositePodGroup template would exceed Kubernetes' eight-template limit.
It refuses ``gangScheduling`` when ``kubernetesVersion`` predates the Workload API (1.35), naming
the version it needs; without it this backend renders for every supported version.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar

from grove_gitops.api.podcliqueset import PodCliqueSet
from grove_gitops.backendapi import BackendContext, BackendFinding, K8sObject, PodPlacement, SchedulerBackend
from grove_gitops.expand.context import ExpandContext
from grove_gitops.expand.plan import Planner
from grove_gitops.expand.podgangs import build_podgangs
from grove_gitops.expand.topology import Translator
from grove_gitops.validation.kubeversions import at_least, needs_message
from grove_gitops.validation.topology import has_constraints
from grove_gitops_backends import workload_api as wapi

CONFIG_FIELD = "scheduler.profiles[default-scheduler].config.gangScheduling"
TOPOLOGY_IGNORED = "topology constraints are recorded in the PodGang but the default-scheduler does not enforce them"

_OBJECTS = {
    "1.35": "scheduling.k8s.io/v1alpha1 Workloads and pod spec.workloadRef",
    "1.36": "scheduling.k8s.io/v1alpha2 Workloads and PodGroups and pod spec.schedulingGroup",
    "1.37": "scheduling.k8s.io/v1beta1 Workloads and PodGroups and pod spec.schedulingGroup",
}


def _gates(names: tuple[str, ...]) -> str:
    return " and ".join(names) if len(names) < 3 else ", ".join(names[:-1]) + " and " + names[-1]


def requirement_message(version: str) -> str:
    """The one-time warning naming what the cluster must enable for the rendered objects."""
    info = wapi.VERSIONS[version]
    gate_word = "feature gates" if len(info.gates) > 1 else "feature gate"
    default_off = " (beta, but off by default)" if version == "1.37" else " (alpha)"
    return (
        f"gangScheduling renders Kubernetes {version} {_OBJECTS[version]}: the cluster needs {gate_word} "
        f"{_gates(info.gates)}{default_off} on kube-apiserver and kube-scheduler and "
        f"--runtime-config={info.runtime_config} on kube-apiserver; without them the Workload API kinds are not "
        f"served (the apply fails) and kube-apiserver drops {info.pod_field} from the pods, so nothing is "
        "gang-scheduled"
    )


TOPOLOGY_REQUIREMENT = (
    f"PodGroup topology constraints need feature gate {wapi.TOPOLOGY_GATE} (alpha) on kube-apiserver and "
    "kube-scheduler; without it kube-apiserver drops schedulingConstraints (the pods are placed without topology "
    "and Argo CD / Flux report the objects out of sync)"
)
COMPOSITE_REQUIREMENT = (
    "PodGangs with several podgroups are rendered as scheduling.k8s.io/v1alpha3 CompositePodGroups: the cluster "
    f"needs feature gate {wapi.COMPOSITE_GATE} (alpha) on kube-apiserver and kube-scheduler and "
    f"--runtime-config={wapi.COMPOSITE_API}=true on kube-apiserver; without them the CompositePodGroups cannot be "
    "created and the gate-lifter never releases those gangs' pods"
)

#: Found with the real Flux (tests/controlplane/test_flux.py): kustomize-controller normalises every
#: pod through client-go's typed PodSpec before its server-side apply, and the k8s.io/api of Flux
#: 2.9+ (v0.36) has no ``workloadRef``: the field never reaches a 1.35 server. ``gitops: both``
#: renders for either engine, so it warns too, naming the condition.
FLUX_DROPS_WORKLOAD_REF = (
    "gitops: {gitops} on Kubernetes 1.35: {when}Flux (2.9 and later) drops pod spec.workloadRef when it applies the pods "
    "(its server-side apply passes them through client-go's typed PodSpec, which no longer has the field), so "
    "the pods lose their gang and the agent releases none of them; apply with Argo CD, or use another gang backend "
    "on 1.35 (docs/backends/default-scheduler.md, GitOps notes)"
)


class DefaultSchedulerBackend(SchedulerBackend):
    name: ClassVar[str] = "default-scheduler"
    warning_codes: ClassVar[Mapping[str, str]] = {
        "topology-ignored": re.escape(TOPOLOGY_IGNORED),
        "workload-api-requirement": re.escape(CONFIG_FIELD) + ": ",
        "workload-api-topology": r"(Workload API has (required topology constraints only|no topology constraints)"
        r"|Kubernetes 1\.36 renders .* as one PodGroup with a single topology key)",
        "workload-api-min-count": r"cannot make several pod groups all-or-nothing together",
        "workload-api-flux": r"Flux \(2\.9 and later\) drops pod spec\.workloadRef",
    }
    #: Grove's ``KubeSchedulerConfig``: a misspelt ``gangScheduling`` would render no gangs.
    config_keys: ClassVar[frozenset[str] | None] = frozenset({"gangScheduling"})

    def __init__(self, context: BackendContext) -> None:
        super().__init__(context)
        #: Requirement warnings already given in this render (one backend instance per render).
        self._announced: set[str] = set()
        #: The replica whose gangs are being expanded (see :meth:`_replica_index`).
        self._index: wapi.ReplicaIndex | None = None

    @property
    def version(self) -> str:
        return self.context.render.kubernetesVersion

    @property
    def gang_scheduling(self) -> bool:
        """``config.gangScheduling``; only a real ``true`` counts (validate rejects other types)."""
        return self.context.profile_config.get("gangScheduling") is True

    def validate(self, pcs: PodCliqueSet) -> list[BackendFinding]:
        raw: Any = self.context.profile_config.get("gangScheduling")
        if raw is not None and not isinstance(raw, bool):
            return [BackendFinding(CONFIG_FIELD, f"gangScheduling must be a boolean (true or false), not {raw!r}")]
        if not raw:
            if self.context.tas_enabled and has_constraints(pcs):
                return [BackendFinding("spec.template", TOPOLOGY_IGNORED, warning=True)]
            return []
        if not at_least(self.version, wapi.MIN_VERSION):
            what = "gangScheduling: true (the Workload API, scheduling.k8s.io) and its gang objects"
            return [BackendFinding(CONFIG_FIELD, needs_message(what, wapi.MIN_VERSION, self.version))]
        findings: list[BackendFinding] = []
        topology = composite = False
        for plan in self._plans(pcs):
            findings += [BackendFinding(n.path, n.message, warning=not n.error) for n in plan.notes]
            topology = topology or plan.has_topology
            composite = composite or plan.composite
        wanted = [requirement_message(self.version)]
        if topology:
            wanted.append(TOPOLOGY_REQUIREMENT)
        if composite:
            wanted.append(COMPOSITE_REQUIREMENT)
        gitops = self.context.render.gitops
        if self.version == "1.35" and gitops in ("flux", "both"):
            when = "if Flux applies this output, " if gitops == "both" else ""
            wanted.append(FLUX_DROPS_WORKLOAD_REF.format(gitops=gitops, when=when))
        for message in wanted:
            if message not in self._announced:
                self._announced.add(message)
                findings.append(BackendFinding(CONFIG_FIELD, message, warning=True))
        return list(dict.fromkeys(findings))

    def _plans(self, pcs: PodCliqueSet) -> list[wapi.GangPlan]:
        """Plans of the first replica's PodGangs, built exactly as the expansion will build them
        (every other replica has the same shape)."""
        if pcs.spec.replicas < 1 or not pcs.cliques:
            return []
        ctx = ExpandContext(self.context.render, self, self.context.tas_enabled, self.context.bindings)
        instances = Planner(pcs).instances(0)
        gangs = build_podgangs(pcs, 0, instances, {i.fqn: [] for i in instances}, self.name, Translator(pcs, ctx))
        index = wapi.ReplicaIndex.build(pcs, 0, instances)
        return [wapi.plan_gang(g, pcs, self.version, index) for g in gangs]

    def _replica_index(self, podgang: K8sObject, pcs: PodCliqueSet) -> wapi.ReplicaIndex:
        """The index of the replica being expanded, kept while its gangs are (one replica at a time)."""
        replica = wapi.gang_replica(podgang, pcs)
        if self._index is None or not self._index.serves(pcs, replica):
            self._index = wapi.ReplicaIndex.build(pcs, replica)
        return self._index

    def prepare_pod(self, pod: K8sObject, placement: PodPlacement) -> None:
        super().prepare_pod(pod, placement)
        if self.gang_scheduling:
            pod["spec"].update(wapi.pod_binding(self.version, placement))

    def gang_objects(self, podgang: K8sObject, pcs: PodCliqueSet) -> list[K8sObject]:
        if not self.gang_scheduling:
            return []
        plan = wapi.plan_gang(podgang, pcs, self.version, self._replica_index(podgang, pcs))
        waves = self.context.render.gitops in ("argocd", "both")
        return wapi.build_objects(plan, podgang, self.version, waves)
