"""``kai-scheduler``: Grove's KAI backend (``operator/internal/scheduler/kai/{backend,topology}.go``).

What it renders (``spec/grove-backends.md`` §4.2, §6.2, §8):

* one ``scheduling.run.ai/v2alpha2`` PodGroup per PodGang, same name and namespace, with the
  PodGang's labels and annotations plus ``kai.scheduler/skip-podgrouper: "true"``;
  ``minMember`` = Σ ``minReplicas``, the resolved queue, ``priorityClassName``, the gang
  topology constraint and a flat SubGroup list: one parent per scaling-group topology
  group config (``minSubGroup``), then one leaf per PodGang podgroup (``minMember``);
* the same skip annotation on the PodGang itself (Grove patches it there so KAI's own
  podgrouper, which treats the PodGang as the workload owner, leaves the PodGroup alone);
* per pod: ``schedulerName: kai-scheduler``, label ``kai.scheduler/subgroup-name: <PodClique
  FQN>``, annotations ``kai.scheduler/skip-podgrouper: "true"`` and ``pod-group-name: <PodGang>``;
* one cluster-scoped ``kai.scheduler/v1alpha1`` Topology per ClusterTopologyBinding (levels
  = the binding's node-label keys, broadest first), unless the binding points KAI at an
  externally managed Topology through ``schedulerTopologyBindings``.

Deliberate differences from Grove, each because Grove's behaviour is a bug or does not fit
a renderer:

* **External topology name (§11.2).** Grove always writes ``topology: <binding name>`` into
  the PodGroup, even when the binding tells KAI to use an external Topology with another
  name, so KAI looks for an object nobody created. We write the external
  ``topologyReference`` there.
* **Skip-annotation flip-flop (§11.1).** In-cluster, Grove's PodCliqueSet controller strips
  the annotation that the KAI sync patched onto the PodGang. A render has no second writer:
  the annotation is always rendered, on the PodGang, the PodGroup and every pod.
* **Topologies KAI would refuse (§11.15).** Grove creates the Topology blindly and start-up
  fails when KAI's CRD refuses it (hostname not the last level, more than 16 levels, a key
  whose prefix is not a lowercase DNS subdomain). We refuse such a binding up front.
* **SubGroup names (§11.15).** KAI SubGroup names must be DNS labels; Grove builds them from
  PodClique FQNs and never checks. A PodCliqueSet, clique or scaling-group name with a dot
  is rejected here with a message saying why.
* **Sticky queue.** Grove never changes ``spec.queue`` of an existing PodGroup. Rendered
  output is declarative: the PodGroup always carries the queue the source resolves to;
  Argo CD / Flux apply a change (KAI's CRD does not make ``queue`` immutable).
* No ``ownerReferences`` (no UIDs at render time), and ``spec.topologyConstraint`` is
  omitted when the PodGang has none (Grove serialises an empty struct ``{}``; KAI reads both
  as "no constraint").

``minMember`` is never 0: Grove's validation rejects ``minAvailable <= 0``, so every leaf
needs at least one pod. (KAI's CRD allows 0 since v0.17 and reads it as "no gang", which is
why a 0 would be dangerous rather than invalid.)
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from grove_gitops.api.podcliqueset import PodCliqueSet
from grove_gitops.api.topology import ClusterTopologyBinding
from grove_gitops.backendapi import AppliedObject, BackendFinding, K8sObject, PodPlacement, SchedulerBackend
from grove_gitops.errors import GroveGitopsError
from grove_gitops.fields.fielderrors import FieldError, invalid
from grove_gitops.output.gitopsmeta import RECREATE_ON_SYNC

NAME = "kai-scheduler"
QUEUE_KEY = "kai.scheduler/queue"
SKIP_PODGROUPER = "kai.scheduler/skip-podgrouper"
POD_GROUP_NAME = "pod-group-name"
SUBGROUP_NAME = "kai.scheduler/subgroup-name"
LEGACY_TOPOLOGY = "kai.scheduler/topology"
TOPOLOGY_NAME = "grove.io/topology-name"
MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGED_BY_VALUE = "grove-gitops"

PODGROUP_API_VERSION = "scheduling.run.ai/v2alpha2"
TOPOLOGY_API_VERSION = "kai.scheduler/v1alpha1"

#: KAI Topology CRD rules (``kai.scheduler_topologies.yaml``): 1..16 levels, hostname last,
#: and a node-label pattern whose prefix must be a *lowercase* DNS subdomain.
MAX_TOPOLOGY_LEVELS = 16
HOSTNAME_LABEL = "kubernetes.io/hostname"
NODE_LABEL_PATTERN = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)
_NODE_LABEL_RE = re.compile(NODE_LABEL_PATTERN)
HOSTNAME_MESSAGE = "the kubernetes.io/hostname label can only be used at the lowest level of topology"


def _controlled_by(meta: Mapping[str, Any], binding: str) -> bool:
    """Whether ``meta`` names the ClusterTopologyBinding ``binding`` as its controller."""
    refs = meta.get("ownerReferences") or []
    return any(
        isinstance(r, dict) and r.get("kind") == "ClusterTopologyBinding" and r.get("name") == binding and r.get("controller")
        for r in refs
    )


def _go_quote(value: str) -> str:
    """Go's ``%q`` for the plain strings Grove formats (names and queues are ASCII)."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _queue_from_meta(labels: dict[str, str] | None, annotations: dict[str, str] | None, base: str) -> tuple[str, str]:
    """Grove's ``resolveQueueNameFromMetadata``: the label wins, the annotation is a fallback.

    Returns the queue ("" when neither is set) and the field path it came from.
    """
    label = (labels or {}).get(QUEUE_KEY, "")
    if label:
        return label, f"{base}labels[{QUEUE_KEY}]"
    return (annotations or {}).get(QUEUE_KEY, ""), f"{base}annotations[{QUEUE_KEY}]"


def resolve_queue(pcs: PodCliqueSet) -> tuple[str, BackendFinding | None]:
    """Grove's ``resolveQueueNameForPodCliqueSet`` (§6.2), with its exact messages.

    A queue is mandatory for KAI: there is no default queue. A PodCliqueSet-level queue must
    agree with every clique that sets one; without it, the cliques must agree among
    themselves.
    """
    ref = f"{pcs.namespace}/{pcs.name}"
    queue, _ = _queue_from_meta(pcs.metadata.labels, pcs.metadata.annotations, "metadata.")
    if queue:
        for i, clique in enumerate(pcs.cliques):
            cq, path = _queue_from_meta(clique.labels, clique.annotations, f"spec.template.cliques[{i}].")
            if cq and cq != queue:
                return "", BackendFinding(
                    path,
                    f"KAI queue on PodCliqueSet {ref} is {_go_quote(queue)} but PodClique template "
                    f"{_go_quote(clique.name)} resolves to {_go_quote(cq)}",
                )
        return queue, None
    found: dict[str, str] = {}  # queue -> path of the first clique that names it
    for i, clique in enumerate(pcs.cliques):
        cq, path = _queue_from_meta(clique.labels, clique.annotations, f"spec.template.cliques[{i}].")
        if cq:
            found.setdefault(cq, path)
    if not found:
        return "", BackendFinding(
            f"metadata.labels[{QUEUE_KEY}]",
            f"no KAI queue is configured on PodCliqueSet {ref} or its PodClique templates; "
            f"set the label {QUEUE_KEY}: <queue> under metadata.labels, naming the KAI Queue its gangs "
            "are submitted to (KAI has no default queue)",
            kind="Required value",
        )
    if len(found) > 1:
        second = list(found.values())[1]
        return "", BackendFinding(
            second, f"conflicting KAI queues on PodCliqueSet {ref} PodClique templates: [{' '.join(sorted(found))}]"
        )
    return next(iter(found)), None


def _dns_label_findings(pcs: PodCliqueSet) -> list[BackendFinding]:
    """KAI SubGroup names are DNS labels; every name that goes into one must be dot-free."""
    why = "KAI SubGroup names are built from it and must be DNS labels (RFC 1123), which cannot contain '.'"
    out: list[BackendFinding] = []
    if "." in pcs.name:
        out.append(BackendFinding("metadata.name", f"PodCliqueSet name {_go_quote(pcs.name)} contains '.': {why}"))
    for i, clique in enumerate(pcs.cliques):
        if "." in clique.name:
            out.append(
                BackendFinding(
                    f"spec.template.cliques[{i}].name",
                    f"PodClique name {_go_quote(clique.name)} contains '.': {why}",
                )
            )
    for i, group in enumerate(pcs.scaling_groups):
        if "." in group.name:
            out.append(
                BackendFinding(
                    f"spec.template.podCliqueScalingGroups[{i}].name",
                    f"PodCliqueScalingGroup name {_go_quote(group.name)} contains '.': {why}",
                )
            )
    return out


def topology_problems(binding: ClusterTopologyBinding) -> list[FieldError]:
    """What KAI's Topology CRD would refuse in the Topology rendered from ``binding``.

    Grove admits such bindings and fails at start-up (exit code 3) when KAI refuses the
    create; a renderer can say so before anything reaches the cluster.
    """
    refused = f"KAI Topology {_go_quote(binding.name)} would be refused"
    errs: list[FieldError] = []
    levels = binding.spec.levels
    if len(levels) > MAX_TOPOLOGY_LEVELS:
        errs.append(
            FieldError(
                "spec.levels", "Too many", f"{refused}: must have at most {MAX_TOPOLOGY_LEVELS} items", len(levels)
            )
        )
    for i, level in enumerate(levels):
        path = f"spec.levels[{i}].key"
        if level.key == HOSTNAME_LABEL and i != len(levels) - 1:
            errs.append(invalid(path, level.key, f"{refused}: {HOSTNAME_MESSAGE}"))
        if not _NODE_LABEL_RE.match(level.key):
            errs.append(
                invalid(
                    path,
                    level.key,
                    f"{refused}: nodeLabel should match '{NODE_LABEL_PATTERN}' "
                    "(an optional lowercase DNS-subdomain prefix, '/', and a label name)",
                )
            )
    return errs


class KaiBackend(SchedulerBackend):
    name: ClassVar[str] = NAME
    queue_key: ClassVar[tuple[str, str] | None] = ("labels", QUEUE_KEY)
    queue_object: ClassVar[tuple[str, str] | None] = ("scheduling.run.ai", "Queue")
    pod_scheduler_name: ClassVar[str] = NAME
    topology_aware: ClassVar[bool] = True
    #: Grove's ``KaiSchedulerConfiguration`` is empty ("reserved for future options").
    config_keys: ClassVar[frozenset[str] | None] = frozenset()

    # ------------------------------------------------------------------ admission

    def validate(self, pcs: PodCliqueSet) -> list[BackendFinding]:
        """Grove's ``ValidatePodCliqueSet`` (the queue must resolve) plus the SubGroup-name rule."""
        findings = _dns_label_findings(pcs)
        _, problem = resolve_queue(pcs)
        if problem is not None:
            findings.append(problem)
        return findings

    # ------------------------------------------------------------------ pods

    def prepare_pod(self, pod: K8sObject, placement: PodPlacement) -> None:
        """Grove's ``PreparePod``: bind the pod to its PodGroup and leaf SubGroup, and keep KAI's
        podgrouper away (it would otherwise build a second PodGroup for the same pods)."""
        super().prepare_pod(pod, placement)
        meta = pod["metadata"]
        annotations = meta.get("annotations") or {}
        annotations[SKIP_PODGROUPER] = "true"
        annotations[POD_GROUP_NAME] = placement.podgang
        meta["annotations"] = annotations
        meta.setdefault("labels", {})[SUBGROUP_NAME] = placement.podgroup

    # ------------------------------------------------------------------ gang objects

    def gang_objects(self, podgang: K8sObject, pcs: PodCliqueSet) -> list[K8sObject]:
        """Grove's ``buildPodGroupForPodGang``: one KAI PodGroup named after the PodGang."""
        meta = podgang["metadata"]
        # Grove patches this onto the PodGang too (ensurePodGangSkipAnnotation); a render
        # writes it once, so the in-cluster flip-flop of §11.1 cannot happen.
        gang_annotations = meta.setdefault("annotations", {})
        gang_annotations[SKIP_PODGROUPER] = "true"
        gang_spec = podgang["spec"]
        queue, problem = resolve_queue(pcs)
        if problem is not None:  # validate() refused this PodCliqueSet already
            raise GroveGitopsError(problem.message)
        topology = self._topology_name(gang_annotations)

        def to_kai(tc: dict[str, Any] | None) -> dict[str, str] | None:
            pack = (tc or {}).get("packConstraint")
            if not pack:
                return None
            if not topology:
                raise GroveGitopsError("topology name cannot be empty when topology constraints are defined")
            out = {"topology": topology}
            if pack.get("required"):
                out["requiredTopologyLevel"] = pack["required"]
            if pack.get("preferred"):
                out["preferredTopologyLevel"] = pack["preferred"]
            return out

        subgroups: list[dict[str, Any]] = []
        parent_of: dict[str, str] = {}
        for cfg in gang_spec.get("topologyConstraintGroupConfigs") or []:
            members = cfg.get("podGroupNames") or []
            if not members:
                continue
            group: dict[str, Any] = {"name": cfg["name"], "minSubGroup": len(members)}
            group_tc = to_kai(cfg.get("topologyConstraint"))
            if group_tc is not None:
                group["topologyConstraint"] = group_tc
            subgroups.append(group)
            for member in members:
                parent_of[member] = cfg["name"]  # Grove: the last listing wins
        for pg in gang_spec["podgroups"]:
            leaf: dict[str, Any] = {"name": pg["name"], "minMember": pg["minReplicas"]}
            if pg["name"] in parent_of:
                leaf["parent"] = parent_of[pg["name"]]
            leaf_tc = to_kai(pg.get("topologyConstraint"))
            if leaf_tc is not None:
                leaf["topologyConstraint"] = leaf_tc
            subgroups.append(leaf)

        spec: dict[str, Any] = {
            "minMember": sum(pg["minReplicas"] for pg in gang_spec["podgroups"]),
            "queue": queue,
        }
        if gang_spec.get("priorityClassName"):
            spec["priorityClassName"] = gang_spec["priorityClassName"]
        gang_tc = to_kai(gang_spec.get("topologyConstraint"))
        if gang_tc is not None:
            spec["topologyConstraint"] = gang_tc
        spec["subGroups"] = subgroups
        return [
            {
                "apiVersion": PODGROUP_API_VERSION,
                "kind": "PodGroup",
                "metadata": {
                    "name": meta["name"],
                    "namespace": meta["namespace"],
                    "labels": dict(meta.get("labels") or {}),
                    "annotations": dict(gang_annotations),
                },
                "spec": spec,
            }
        ]

    def _topology_name(self, annotations: dict[str, str]) -> str:
        """The KAI Topology a constraint refers to.

        Grove's ``getTopologyName``: the binding name from ``grove.io/topology-name``, else the
        legacy ``kai.scheduler/topology`` annotation. Beyond Grove (§11.2): when the binding
        hands KAI an external Topology, that is the object KAI must look up.
        """
        name = annotations.get(TOPOLOGY_NAME, "")
        if not name:
            return annotations.get(LEGACY_TOPOLOGY, "")
        binding = self.context.bindings.get(name)
        external = binding.external_reference(NAME) if binding is not None else None
        return external or name

    # ------------------------------------------------------------------ topology

    def validate_binding(self, binding: ClusterTopologyBinding) -> list[BackendFinding]:
        """What KAI's Topology CRD would refuse in an auto-managed binding (Grove admits it, §11.15)."""
        if binding.external_reference(NAME):
            return []
        return [BackendFinding(e.path, e.message()) for e in topology_problems(binding)]

    def external_topology(self, binding: ClusterTopologyBinding) -> tuple[str, str, str] | None:
        ref = binding.external_reference(NAME)
        return (TOPOLOGY_API_VERSION, "Topology", ref) if ref else None

    def topology_drift(self, binding: ClusterTopologyBinding, live: Mapping[str, Any] | None) -> str | None:
        """Grove's ``CheckTopologyDrift`` (``kai/topology.go``), with Grove's messages."""
        ref = binding.external_reference(NAME) or binding.name
        if live is None:
            return f'KAI Topology "{ref}" not found'
        levels = (live.get("spec") or {}).get("levels") or []
        if levels != [{"nodeLabel": level.key} for level in binding.spec.levels]:
            return "KAI Topology levels differ from ClusterTopologyBinding levels"
        return None

    def coexistence_findings(
        self, binding: ClusterTopologyBinding, applied: Sequence[AppliedObject]
    ) -> list[BackendFinding]:
        """Grove's ``SyncTopology`` beside us (spec/grove-backends.md §5.3-§5.4): for a binding
        that does not name KAI under ``schedulerTopologyBindings``, Grove's operator creates the
        KAI Topology named after the binding itself and refuses one it does not control (an
        ownerReference to the binding, with its UID); at start-up the first refusal makes it
        exit with code 3. A render has no UID to give, so any such Topology we apply is an error."""
        if binding.external_reference(NAME):
            return []
        findings = []
        for item in applied:
            obj = item.obj
            meta = obj.get("metadata") or {}
            if obj.get("kind") != "Topology" or obj.get("apiVersion") != TOPOLOGY_API_VERSION:
                continue
            if meta.get("name") != binding.name or _controlled_by(meta, binding.name):
                continue
            where = "rendered into _cluster/ (auto-managed)" if item.rendered else f"passed through from {item.origin}"
            findings.append(
                BackendFinding(
                    "spec.schedulerTopologyBindings",
                    f"a Grove operator runs beside (RenderConfiguration mode: review or coexistWithGroveOperator: "
                    f"true), and the KAI Topology {_go_quote(binding.name)} {where} has no ownerReference to this "
                    f"ClusterTopologyBinding: Grove's SyncTopology refuses it (KAI Topology {binding.name} is not "
                    f"owned by ClusterTopologyBinding {binding.name}) and the operator exits with code 3 at "
                    f"start-up. Fix: make KAI's Topology external: add schedulerTopologyBindings: [{{schedulerName: "
                    f"{NAME}, topologyReference: {binding.name}-kai}}] here and a {TOPOLOGY_API_VERSION} Topology "
                    f"{binding.name}-kai with the same levels to the source (docs/migration.md, section 2)",
                    kind="Required value",
                )
            )
        return findings

    def topology_objects(self, binding: ClusterTopologyBinding) -> list[K8sObject]:
        """Grove's ``buildKAITopology``: the auto-managed Topology named after the binding.

        Nothing for a binding that points KAI at an external Topology (the gate-lifter checks
        that one for drift).
        """
        if binding.external_reference(NAME):
            return []
        return [
            {
                "apiVersion": TOPOLOGY_API_VERSION,
                "kind": "Topology",
                # KAI keeps nodeLabels immutable and Grove's operator deletes and re-creates the
                # Topology on a level change: the GitOps tool must do the same (issue 32.3).
                "metadata": {
                    "name": binding.name,
                    "labels": {MANAGED_BY: MANAGED_BY_VALUE},
                    "annotations": dict(RECREATE_ON_SYNC),
                },
                "spec": {"levels": [{"nodeLabel": level.key} for level in binding.spec.levels]},
            }
        ]
