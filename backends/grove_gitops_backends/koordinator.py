"""``koord-scheduler``: Koordinator's coscheduling plugin, following Grove's unmerged GREP-537.

Grove has no Koordinator backend (``spec/backend-crs.md`` §2.4); this one follows the GREP-537
proposal where it matches Koordinator's shipped API (koordinator ``a7a1b76``,
``spec/backend-crs.md`` §6) and the shipped API where the proposal does not.

What it renders, per PodGang:

* one ``scheduling.sigs.k8s.io/v1alpha1`` PodGroup per PodGang *podgroup* (= PodClique), with
  ``spec.minMember`` = the podgroup's ``minReplicas`` and ``spec.scheduleTimeoutSeconds`` from the
  profile config (default 600, Koordinator's own default wait);
* all PodGroups of one PodGang bound into one Koordinator *GangGroup* by the identical
  ``gang.scheduling.koordinator.sh/groups`` annotation (a JSON list of ``"<namespace>/<name>"``), so
  the whole PodGang is all-or-nothing while each clique keeps its own minimum; plus ``mode``
  (``Strict`` unless configured), an optional ``match-policy`` and ``total-number`` (the podgroup's
  pod count, known at render time);
* when the PodCliqueSet has a required topology domain, the identical
  ``gang.scheduling.koordinator.sh/network-topology-spec`` annotation on every PodGroup of the gang
  (Koordinator takes the spec from whichever gang's pod reaches PreFilter first, so members must
  agree).

Pods get ``schedulerName: koord-scheduler``, the label ``pod-group.scheduling.sigs.k8s.io: <PodGroup
name>`` and, when the profile config sets ``defaultQoSClass`` and the clique template does not
already carry one, the label ``koordinator.sh/qosClass``.

PodGroup names: GREP-537 writes ``{podgang}-{podgroup}``, but its own example (``demo-0-pleader``)
shows that it means the PodClique FQN, which is already unique in the namespace; concatenating
literally would give ``disagg-0-disagg-0-pleader``. The name must also be a valid label value,
because pods point at it with a label, so it is the FQN when that fits in 63 characters and
otherwise the first 52 characters (trailing ``-``/``.`` stripped) plus ``-`` and 10 hex characters of
the FQN's SHA-256: stable, unique in practice and always ≤ 63 characters.

Topology (single layer, as GREP-537 scopes it): Koordinator gathers a whole GangGroup into one
domain of one *layer* of the ``ClusterNetworkTopology`` named ``default``, and its solver reads only
the deepest ``MustGather`` layer; ``PreferGather`` is accepted but not read (§6.3). Therefore:

* every required domain in the PodCliqueSet (PCS level and clique level) must be the same one, and
  if the PCS level has none, every clique must carry it (a clique-only constraint cannot be kept
  to that clique: the spec is gang-wide);
* scaling-group-level constraints are rejected (GREP-537 does the same: they would need separate
  topology for disjoint parts of one GangGroup);
* a preferred-only constraint is rejected (it would silently do nothing); a preferred domain beside
  a required one is dropped with a warning;
* the ClusterTopologyBinding domain is mapped to a Koordinator layer name through the profile
  config ``networkTopologyLayers: {<binding>: {<domain>: <Layer>}}``, or, when
  ``clusterNetworkTopology: <binding>`` asks us to render the ``default`` ClusterNetworkTopology from
  that binding, through the layer names we render (``block`` → ``BlockLayer``, the
  ``kubernetes.io/hostname`` level → ``NodeTopologyLayer``). GREP-537's built-in
  ``hostLayer``/``rackLayer``/``blockLayer`` table is not used: those names exist in Koordinator's
  proposal, not in its code, where layer names are whatever the admin's ClusterNetworkTopology says.

The ClusterNetworkTopology is an admin object (a cluster singleton that Koordinator, not Grove,
owns; GREP-537 leaves it external), so it is rendered only when the profile config opts in.

Also rejected, as in GREP-537: MNNVL (``grove.io/mnnvl-group`` other than ``none``). GREP-537 keys
this on ``grove.io/auto-mnnvl: enabled``, which Grove's code (``fcc3b3b``) does not read; its annotation is
``grove.io/mnnvl-group``. (With ``network.autoMNNVLEnabled`` on, the core renders ComputeDomains; this
backend refuses them.)

Gating: Koordinator counts *gated* pods toward a gang's minimum (§6.5), so ungated siblings would
wait in Permit, and in ``Strict`` mode be rejected after the wait, if part of a GangGroup stayed
gated. The gate-lifter ungates every pod of a PodGang together once these PodGroups exist, and a
PodGang is exactly one GangGroup, so that window stays short.

Profile config keys (all optional): ``gangMode`` (``Strict``/``NonStrict``), ``matchPolicy``
(``once-satisfied``/``only-waiting``/``waiting-and-running``), ``scheduleTimeoutSeconds`` (≥ 1),
``defaultQoSClass`` (``LSE``/``LSR``/``LS``/``BE``), ``networkTopologyLayers``,
``clusterNetworkTopology``. Unknown keys are errors: a typo would otherwise silently change
scheduling. The interface has no hook for validating a profile's config, so config problems are
reported with every PodCliqueSet that selects this backend, and by :meth:`topology_objects`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from grove_gitops.api.podcliqueset import PodCliqueSet, TopologyConstraint
from grove_gitops.api.topology import ClusterTopologyBinding
from grove_gitops.backendapi import BackendContext, BackendFinding, K8sObject, PodPlacement, SchedulerBackend
from grove_gitops.errors import InputProblem, InvalidInputError
from grove_gitops.fields import pointer
from grove_gitops.validation.topology import explicit_topology_name, has_constraints

SCHEDULER = "koord-scheduler"
PODGROUP_API_VERSION = "scheduling.sigs.k8s.io/v1alpha1"
TOPOLOGY_API_VERSION = "scheduling.koordinator.sh/v1alpha1"

POD_GROUP_LABEL = "pod-group.scheduling.sigs.k8s.io"
QOS_LABEL = "koordinator.sh/qosClass"
GANG_GROUPS = "gang.scheduling.koordinator.sh/groups"
GANG_MODE = "gang.scheduling.koordinator.sh/mode"
GANG_MATCH_POLICY = "gang.scheduling.koordinator.sh/match-policy"
GANG_TOTAL_NUMBER = "gang.scheduling.koordinator.sh/total-number"
NETWORK_TOPOLOGY_SPEC = "gang.scheduling.koordinator.sh/network-topology-spec"
PODGANG_LABEL = "grove.io/podgang"
TOPOLOGY_NAME_ANNOTATION = "grove.io/topology-name"
MNNVL_ANNOTATION = "grove.io/mnnvl-group"
MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGED_BY_VALUE = "grove-gitops"
#: Our own provenance annotation on the rendered ClusterNetworkTopology.
SOURCE_BINDING_ANNOTATION = "gitops.grove.io/cluster-topology-binding"

#: Koordinator reads only the ClusterNetworkTopology of this name (``tree_manager.go:43``).
CLUSTER_NETWORK_TOPOLOGY_NAME = "default"
NODE_LAYER = "NodeTopologyLayer"
CLUSTER_LAYER = "ClusterTopologyLayer"
HOSTNAME_KEY = "kubernetes.io/hostname"

GANG_MODES = ("Strict", "NonStrict")
MATCH_POLICIES = ("once-satisfied", "only-waiting", "waiting-and-running")
#: GREP-537's enum for a workload-wide default; ``SYSTEM`` is for node components only.
DEFAULT_QOS_CLASSES = ("LSE", "LSR", "LS", "BE")
#: Every value Koordinator defines (``apis/extension/qos.go``), accepted on a clique's own label.
QOS_CLASSES = ("LSE", "LSR", "LS", "BE", "SYSTEM")
DEFAULT_SCHEDULE_TIMEOUT_SECONDS = 600
INT32_MAX = 2**31 - 1
MAX_NAME_LENGTH = 63
_HASH_LENGTH = 10

CONFIG_KEYS = (
    "gangMode",
    "matchPolicy",
    "scheduleTimeoutSeconds",
    "defaultQoSClass",
    "networkTopologyLayers",
    "clusterNetworkTopology",
)
CONFIG_PATH = f"scheduler.profiles[{SCHEDULER}].config"
T = "spec.template"

MNNVL_MESSAGE = (
    "koord-scheduler does not support MNNVL: ComputeDomain ResourceClaims are incompatible with Koordinator's "
    'device scheduling; remove the grove.io/mnnvl-group annotation (or set it to "none") or use kai-scheduler'
)
PCSG_TOPOLOGY_MESSAGE = (
    "koord-scheduler does not support PodCliqueScalingGroup-level topology constraints: a PodGang becomes one "
    "Koordinator GangGroup, which carries a single network-topology-spec for all of its pods; put the constraint "
    "on spec.template.topologyConstraint instead"
)
PREFERRED_ONLY_MESSAGE = (
    "koord-scheduler cannot honour a preferred-only topology constraint: Koordinator accepts PreferGather but "
    "its solver does not read it, so the preference would silently do nothing; use pack.required or remove the "
    "constraint"
)


def podgroup_name(podgroup: str) -> str:
    """The Koordinator PodGroup name for a PodGang podgroup (a PodClique FQN), ≤ 63 characters.

    Pods reference the PodGroup through a *label*, whose value may not exceed 63 characters, so a
    longer FQN is shortened to a prefix plus a stable digest of the whole FQN.
    """
    if len(podgroup) <= MAX_NAME_LENGTH:
        return podgroup
    digest = hashlib.sha256(podgroup.encode()).hexdigest()[:_HASH_LENGTH]
    prefix = podgroup[: MAX_NAME_LENGTH - _HASH_LENGTH - 1].rstrip("-.")
    return f"{prefix}-{digest}"


def derived_layer_name(domain: str) -> str:
    """``gpu-rack`` → ``GpuRackLayer``: the naming style of Koordinator's own examples."""
    name = "".join(part[:1].upper() + part[1:] for part in domain.split("-")) + "Layer"
    return f"Grove{name}" if name in (NODE_LAYER, CLUSTER_LAYER) else name


@dataclass(frozen=True)
class Layer:
    """One rendered Koordinator layer: the binding level it comes from and its node-label key."""

    domain: str
    layer: str
    key: str | None  # None for NodeTopologyLayer, whose domain is the node itself


def derived_layers(binding: ClusterTopologyBinding) -> list[Layer]:
    """The binding's levels as a Koordinator layer chain, broadest first.

    Koordinator's tree must end in ``NodeTopologyLayer`` (``tree.go:43-91``), which has no label
    key. A ``kubernetes.io/hostname`` level *is* that layer; levels narrower than it (``numa``)
    cannot exist in Koordinator's tree and are left out.
    """
    out: list[Layer] = []
    used: set[str] = set()
    for index, level in enumerate(binding.spec.levels):
        if level.key == HOSTNAME_KEY:
            out.append(Layer(level.domain, NODE_LAYER, None))
            return out
        name = derived_layer_name(level.domain)
        if name in used:  # "a-b" and "a--b" both give "ABLayer"
            name = f"{name}{index}"
        used.add(name)
        out.append(Layer(level.domain, name, level.key))
    return out


def cluster_network_topology(binding: ClusterTopologyBinding) -> K8sObject:
    """The ``default`` ClusterNetworkTopology equivalent to ``binding``."""
    entries: list[dict[str, Any]] = []
    parent: str | None = None
    layers = derived_layers(binding)
    if not layers or layers[-1].layer != NODE_LAYER:
        layers.append(Layer("", NODE_LAYER, None))
    for layer in layers:
        entry: dict[str, Any] = {"topologyLayer": layer.layer}
        if parent is not None:
            entry["parentTopologyLayer"] = parent
        if layer.key is not None:
            entry["labelKey"] = [layer.key]
        entries.append(entry)
        parent = layer.layer
    return {
        "apiVersion": TOPOLOGY_API_VERSION,
        "kind": "ClusterNetworkTopology",
        "metadata": {
            "name": CLUSTER_NETWORK_TOPOLOGY_NAME,
            "labels": {MANAGED_BY: MANAGED_BY_VALUE},
            "annotations": {SOURCE_BINDING_ANNOTATION: binding.name},
        },
        "spec": {"networkTopologySpec": entries},
    }


@dataclass(frozen=True)
class KoordinatorConfig:
    """The ``koord-scheduler`` profile's ``config``, parsed (GREP-537's
    ``KoordinatorSchedulerConfiguration`` plus our topology keys)."""

    gang_mode: str = "Strict"
    match_policy: str | None = None
    schedule_timeout_seconds: int = DEFAULT_SCHEDULE_TIMEOUT_SECONDS
    default_qos_class: str | None = None
    network_topology_layers: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    cluster_network_topology: str | None = None


def _choice(raw: Mapping[str, Any], key: str, allowed: tuple[str, ...], problems: list[tuple[str, str]]) -> str | None:
    value = raw.get(key)
    if value is None:
        return None
    if value not in allowed:
        quoted = ", ".join(json.dumps(a) for a in allowed)
        problems.append((key, f"must be one of {quoted} (got {json.dumps(value)})"))
        return None
    return str(value)


def parse_config(
    raw: Mapping[str, Any], bindings: Mapping[str, ClusterTopologyBinding]
) -> tuple[KoordinatorConfig, list[tuple[str, str]]]:
    """Parse the profile config; returns the config (defaults where invalid) and
    ``(key path, message)`` problems."""
    problems: list[tuple[str, str]] = []
    for key in raw:
        if key not in CONFIG_KEYS:
            problems.append((str(key), "unknown key; supported keys: " + ", ".join(CONFIG_KEYS)))
    gang_mode = _choice(raw, "gangMode", GANG_MODES, problems) or "Strict"
    match_policy = _choice(raw, "matchPolicy", MATCH_POLICIES, problems)
    default_qos = _choice(raw, "defaultQoSClass", DEFAULT_QOS_CLASSES, problems)
    timeout = raw.get("scheduleTimeoutSeconds", DEFAULT_SCHEDULE_TIMEOUT_SECONDS)
    if isinstance(timeout, bool) or not isinstance(timeout, int) or not 1 <= timeout <= INT32_MAX:
        problems.append(("scheduleTimeoutSeconds", f"must be an integer between 1 and {INT32_MAX}"))
        timeout = DEFAULT_SCHEDULE_TIMEOUT_SECONDS

    cnt = raw.get("clusterNetworkTopology")
    if cnt is not None and (not isinstance(cnt, str) or cnt not in bindings):
        problems.append(
            ("clusterNetworkTopology", f"must name a ClusterTopologyBinding of the source tree (got {json.dumps(cnt)})")
        )
        cnt = None

    layers: dict[str, dict[str, str]] = {}
    raw_layers = raw.get("networkTopologyLayers", {})
    if not isinstance(raw_layers, Mapping):
        problems.append(("networkTopologyLayers", "must be a map of ClusterTopologyBinding name to {domain: layer}"))
        raw_layers = {}
    for ctb, mapping in raw_layers.items():
        path = f"networkTopologyLayers.{ctb}"
        binding = bindings.get(str(ctb))
        if binding is None:
            problems.append((path, f'ClusterTopologyBinding "{ctb}" not found'))
            continue
        if ctb == cnt:
            problems.append(
                (
                    path,
                    f"cannot be combined with clusterNetworkTopology: {ctb}; the rendered ClusterNetworkTopology "
                    "defines the layer names of that binding",
                )
            )
            continue
        if not isinstance(mapping, Mapping):
            problems.append((path, "must be a map of domain to Koordinator layer name"))
            continue
        domains = binding.domains()
        good: dict[str, str] = {}
        for domain, layer in mapping.items():
            if domain not in domains:
                problems.append((f"{path}.{domain}", f"domain is not a level of ClusterTopologyBinding {ctb!r}"))
            elif not isinstance(layer, str) or not layer or layer == CLUSTER_LAYER:
                problems.append(
                    (f"{path}.{domain}", f"must be a Koordinator topology layer name other than {CLUSTER_LAYER}")
                )
            else:
                good[str(domain)] = layer
        layers[str(ctb)] = good
    config = KoordinatorConfig(
        gang_mode=gang_mode,
        match_policy=match_policy,
        schedule_timeout_seconds=timeout,
        default_qos_class=default_qos,
        network_topology_layers=layers,
        cluster_network_topology=cnt,
    )
    return config, problems


class KoordinatorBackend(SchedulerBackend):
    name: ClassVar[str] = SCHEDULER
    warning_codes: ClassVar[Mapping[str, str]] = {
        "preferred-ignored": r"preferred domain '.*' is not rendered: Koordinator's solver does not read PreferGather",
    }
    pod_scheduler_name: ClassVar[str] = SCHEDULER
    #: The QoS class prepare_pod writes is a default a template may set otherwise; it does not
    #: tie the pod to its gang (only the pod-group label does).
    unbound_fields: ClassVar[frozenset[str]] = frozenset({pointer.encode("metadata", "labels", QOS_LABEL)})

    def __init__(self, context: BackendContext) -> None:
        super().__init__(context)
        self.config, self.config_problems = parse_config(context.profile_config, context.bindings)

    # -- validation -------------------------------------------------------------------------

    def validate(self, pcs: PodCliqueSet) -> list[BackendFinding]:
        findings = [
            BackendFinding(f"{CONFIG_PATH}.{key}", f"OperatorConfiguration: {msg}") for key, msg in self.config_problems
        ]
        findings += _mnnvl_findings(pcs)
        for i, clique in enumerate(pcs.cliques):
            qos = (clique.labels or {}).get(QOS_LABEL)
            if qos is not None and qos not in QOS_CLASSES:
                findings.append(
                    BackendFinding(
                        f"{T}.cliques[{i}].labels[{QOS_LABEL}]",
                        f"must be one of {', '.join(QOS_CLASSES)} (got {json.dumps(qos)})",
                    )
                )
        if self.context.tas_enabled and has_constraints(pcs):
            findings += self._topology_findings(pcs)
        return findings

    def _topology_findings(self, pcs: PodCliqueSet) -> list[BackendFinding]:
        out: list[BackendFinding] = []
        for i, group in enumerate(pcs.scaling_groups):
            if group.topologyConstraint is not None:
                out.append(BackendFinding(f"{T}.podCliqueScalingGroups[{i}].topologyConstraint", PCSG_TOPOLOGY_MESSAGE))
        sites: list[tuple[str, TopologyConstraint]] = []
        if pcs.spec.template.topologyConstraint is not None:
            sites.append((f"{T}.topologyConstraint", pcs.spec.template.topologyConstraint))
        sites += [
            (f"{T}.cliques[{i}].topologyConstraint", c.topologyConstraint)
            for i, c in enumerate(pcs.cliques)
            if c.topologyConstraint is not None
        ]
        required = [(path, tc.required_domain()) for path, tc in sites if tc.required_domain()]
        if not required:
            out += [
                BackendFinding(f"{path}.pack.preferred", PREFERRED_ONLY_MESSAGE)
                for path, tc in sites
                if tc.preferred_domain()
            ]
            return out
        first_path, domain = required[0]
        conflicts = [
            BackendFinding(
                f"{path}.pack.required",
                f"koord-scheduler enforces one topology layer per gang: required domain '{other}' differs from "
                f"'{domain}' required at {first_path}; Koordinator shares one network-topology-spec across a "
                "GangGroup and gathers only at its deepest MustGather layer",
            )
            for path, other in required[1:]
            if other != domain
        ]
        if conflicts:
            return out + conflicts
        pcs_tc = pcs.spec.template.topologyConstraint
        if pcs_tc is None or not pcs_tc.required_domain():
            loose = [
                c.name
                for c in pcs.cliques
                if c.topologyConstraint is None or not c.topologyConstraint.required_domain()
            ]
            if loose:
                out.append(
                    BackendFinding(
                        first_path,
                        f"koord-scheduler applies one network-topology-spec to every pod of a gang, but clique(s) "
                        f"{', '.join(repr(n) for n in loose)} have no required topology domain; set "
                        f"pack.required: {domain} on spec.template.topologyConstraint or on every clique",
                    )
                )
        for path, tc in sites:
            preferred = tc.preferred_domain()
            if preferred and preferred != domain:
                out.append(
                    BackendFinding(
                        f"{path}.pack.preferred",
                        f"preferred domain '{preferred}' is not rendered: Koordinator's solver does not read "
                        f"PreferGather; only the required domain '{domain}' is enforced",
                        warning=True,
                    )
                )
        binding = self.context.bindings.get(explicit_topology_name(pcs))
        if binding is not None and self.layer_for(binding, domain) is None:
            out.append(BackendFinding(f"{first_path}.pack.required", self._no_layer_message(binding, domain)))
        return out

    def layer_for(self, binding: ClusterTopologyBinding, domain: str) -> str | None:
        """The Koordinator layer a binding domain maps to, or None when nothing maps it."""
        if binding.name == self.config.cluster_network_topology:
            return next((lay.layer for lay in derived_layers(binding) if lay.domain == domain), None)
        return self.config.network_topology_layers.get(binding.name, {}).get(domain)

    def _no_layer_message(self, binding: ClusterTopologyBinding, domain: str) -> str:
        if binding.name == self.config.cluster_network_topology:
            return (
                f"domain '{domain}' lies below the {HOSTNAME_KEY} level of ClusterTopologyBinding "
                f"'{binding.name}'; Koordinator's topology tree ends at {NODE_LAYER}"
            )
        return (
            f"no Koordinator topology layer for domain '{domain}' of ClusterTopologyBinding '{binding.name}': set "
            f"networkTopologyLayers.{binding.name}.{domain} in the {SCHEDULER} profile config, or "
            f"clusterNetworkTopology: {binding.name} to render the ClusterNetworkTopology from this binding"
        )

    # -- pods -------------------------------------------------------------------------------

    def prepare_pod(self, pod: K8sObject, placement: PodPlacement) -> None:
        super().prepare_pod(pod, placement)
        labels = pod["metadata"].setdefault("labels", {})
        labels[POD_GROUP_LABEL] = podgroup_name(placement.podgroup)
        if self.config.default_qos_class and QOS_LABEL not in labels:
            labels[QOS_LABEL] = self.config.default_qos_class

    # -- gang objects -----------------------------------------------------------------------

    def gang_objects(self, podgang: K8sObject, pcs: PodCliqueSet) -> list[K8sObject]:
        meta = podgang["metadata"]
        namespace, gang = meta["namespace"], meta["name"]
        podgroups: list[dict[str, Any]] = podgang["spec"]["podgroups"]
        names = [podgroup_name(pg["name"]) for pg in podgroups]
        common = {
            GANG_GROUPS: json.dumps([f"{namespace}/{n}" for n in names], separators=(",", ":")),
            GANG_MODE: self.config.gang_mode,
        }
        if self.config.match_policy:
            common[GANG_MATCH_POLICY] = self.config.match_policy
        topology = self._network_topology_spec(podgang, pcs)
        if topology is not None:
            common[NETWORK_TOPOLOGY_SPEC] = topology
        labels = {**(meta.get("labels") or {}), PODGANG_LABEL: gang}
        out: list[K8sObject] = []
        for pg, name in zip(podgroups, names, strict=True):
            annotations = dict(common)
            total = len(pg.get("podReferences") or [])
            if total >= pg["minReplicas"]:
                annotations[GANG_TOTAL_NUMBER] = str(total)
            out.append(
                {
                    "apiVersion": PODGROUP_API_VERSION,
                    "kind": "PodGroup",
                    "metadata": {
                        "name": name,
                        "namespace": namespace,
                        "labels": dict(labels),
                        "annotations": annotations,
                    },
                    "spec": {
                        "minMember": pg["minReplicas"],
                        "scheduleTimeoutSeconds": self.config.schedule_timeout_seconds,
                    },
                }
            )
        return out

    def _network_topology_spec(self, podgang: K8sObject, pcs: PodCliqueSet) -> str | None:
        """The gang-wide annotation value, from the PodGang's translated (node-label key) constraints."""
        spec = podgang["spec"]
        keys = {_required_key(spec.get("topologyConstraint"))}
        keys |= {_required_key(pg.get("topologyConstraint")) for pg in spec["podgroups"]}
        keys.discard(None)
        if not keys:
            return None
        topology = (podgang["metadata"].get("annotations") or {}).get(TOPOLOGY_NAME_ANNOTATION, "")
        binding = self.context.bindings.get(topology)
        key = next(iter(keys)) if len(keys) == 1 else None
        domain = next((lv.domain for lv in binding.spec.levels if lv.key == key), None) if binding else None
        layer = self.layer_for(binding, domain) if binding is not None and domain is not None else None
        if layer is None:
            # validate() refuses every PodCliqueSet that could get here; fail loudly rather than drop a
            # required constraint.
            raise InvalidInputError(
                [
                    InputProblem(
                        f"PodCliqueSet {pcs.namespace}/{pcs.name}",
                        f"PodGang {podgang['metadata']['name']}",
                        f"koord-scheduler cannot express the required topology keys {sorted(k for k in keys if k)}",
                    )
                ]
            )
        return json.dumps({"gatherStrategy": [{"layer": layer, "strategy": "MustGather"}]}, separators=(",", ":"))

    # -- topology ---------------------------------------------------------------------------

    def topology_objects(self, binding: ClusterTopologyBinding) -> list[K8sObject]:
        """The ``default`` ClusterNetworkTopology, for the one binding the profile config names."""
        if self.config_problems:
            raise InvalidInputError(
                InputProblem("OperatorConfiguration", f"{CONFIG_PATH}.{key}", msg) for key, msg in self.config_problems
            )
        if binding.name != self.config.cluster_network_topology:
            return []
        return [cluster_network_topology(binding)]


def _required_key(tc: Any) -> str | None:
    if not isinstance(tc, Mapping):
        return None
    pack = tc.get("packConstraint")
    required = pack.get("required") if isinstance(pack, Mapping) else None
    return required if isinstance(required, str) and required else None


def _mnnvl_findings(pcs: PodCliqueSet) -> list[BackendFinding]:
    places: list[tuple[str, Mapping[str, str] | None]] = [("metadata.annotations", pcs.metadata.annotations)]
    places += [(f"{T}.cliques[{i}].annotations", c.annotations) for i, c in enumerate(pcs.cliques)]
    places += [
        (f"{T}.podCliqueScalingGroups[{i}].annotations", g.annotations) for i, g in enumerate(pcs.scaling_groups)
    ]
    return [
        BackendFinding(f"{base}[{MNNVL_ANNOTATION}]", MNNVL_MESSAGE)
        for base, values in places
        if values and values.get(MNNVL_ANNOTATION, "none") != "none"
    ]
