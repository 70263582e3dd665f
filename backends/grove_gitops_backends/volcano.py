"""``volcano``: Grove's Volcano backend (``operator/internal/scheduler/volcano/{backend,queue}.go``).

What it renders (``spec/grove-backends.md`` §4.3, §6.1, §8):

* one ``scheduling.volcano.sh/v1beta1`` PodGroup per PodGang, same name and namespace, with
  the PodGang's labels (Grove copies no annotations): ``minMember`` = Σ ``minReplicas`` (at
  least 1), the queue, ``priorityClassName`` and one ``subGroupPolicy`` entry per podgroup
  (pods selected by ``grove.io/podclique``, ``subGroupSize`` = ``minReplicas`` (at least 1),
  ``minSubGroups: 1``);
* per pod: ``schedulerName: volcano`` and the annotations ``scheduling.k8s.io/group-name``
  (the one Volcano's scheduler reads) and ``scheduling.volcano.sh/group-name``, both the
  PodGang name. Setting them also stops Volcano from creating a PodGroup of its own.

Volcano has no topology object a binding could be rendered into: HyperNodes describe the
physical network and are created by an administrator or by Volcano's auto-discovery, so
:meth:`topology_objects` renders nothing.

Topology, beyond Grove. Grove refuses every ``topologyConstraint`` for Volcano. Volcano
constrains placement through HyperNode *tiers* (1 = closest to the nodes), which a
ClusterTopologyBinding's domains do not name, so we let the volcano profile's ``config`` in
the OperatorConfiguration supply the mapping::

    scheduler:
      profiles:
      - name: volcano
        config:
          hyperNodeTiers:
            <ClusterTopologyBinding name>: {host: 1, rack: 2, block: 3}   # int: highestTierAllowed
            # a string value names a HyperNode tierName instead (highestTierName)

With a mapping, a constraint becomes ``networkTopology``: ``required`` → ``{mode: hard,
highestTierAllowed: <tier>}``; ``preferred`` only → ``{mode: soft, highestTierAllowed:
<tier>}`` (Volcano's soft mode packs as tightly as it can; the tier records the preference).
Volcano has one mode per constraint, so a constraint with both keeps the required domain and
a warning says the preferred one is not rendered. The gang constraint goes on the PodGroup,
a clique's own constraint on its ``subGroupPolicy`` entry. A scaling group's constraint in
the base PodGang (Grove's topology group config) becomes one ``subGroupPolicy`` entry per
scaling-group replica that selects its pods by ``grove.io/podcliquescalinggroup`` and
``grove.io/podcliquescalinggroup-replica-index``, replacing its cliques' entries: a Volcano
pod belongs to exactly one entry (the first that matches), so this is refused when a member
clique has its own constraint or fewer required than created pods (a combined sub-gang could
not keep per-clique minimums). Without a mapping, or for a domain the mapping lacks, the
constraint is refused, with Grove's message (plus the domain when a mapping exists).

Deliberate differences from Grove:

* **Clique-template queue (§11.3).** Grove's admission accepts a queue set only on the
  clique templates, but its sync reads only the PodCliqueSet's annotation and silently puts
  the PodGroup into ``default``. We use the queue the admission rules resolve to.
* **Queue existence.** Grove GETs the Queue at admission and refuses a missing or closed
  one. A render cannot see the cluster: a ``scheduling.volcano.sh/v1beta1`` Queue in the
  source tree counts as existing, any other queue but ``default`` (which Volcano creates
  itself) gets a warning naming it, not an error.
* All constraint sites are reported at once, each at its own field path; Grove stops at the
  first. No ``ownerReferences`` (no UIDs at render time); the PodGroup is re-rendered whole,
  so Grove's "keep the old gang while every minReplicas is 0" rule has nothing to keep.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, ClassVar

from grove_gitops.api.podcliqueset import PodCliqueSet, TopologyConstraint
from grove_gitops.api.topology import ClusterTopologyBinding
from grove_gitops.backendapi import BackendFinding, K8sObject, PodPlacement, SchedulerBackend
from grove_gitops.errors import GroveGitopsError
from grove_gitops.fields.k8snames import dns1123_subdomain_problems
from grove_gitops.validation.topology import explicit_topology_name, has_constraints

NAME = "volcano"
QUEUE_ANNOTATION = "scheduling.grove.io/volcano-queue"
DEFAULT_QUEUE = "default"
KUBE_GROUP_NAME = "scheduling.k8s.io/group-name"
VOLCANO_GROUP_NAME = "scheduling.volcano.sh/group-name"
PODCLIQUE = "grove.io/podclique"
PCSG = "grove.io/podcliquescalinggroup"
PCSG_REPLICA_INDEX = "grove.io/podcliquescalinggroup-replica-index"
TOPOLOGY_NAME = "grove.io/topology-name"

PODGROUP_API_VERSION = "scheduling.volcano.sh/v1beta1"
QUEUE_API_VERSION = "scheduling.volcano.sh/v1beta1"
TIERS_KEY = "hyperNodeTiers"
CONFIG_PATH = f"scheduler.profiles[{NAME}].config.{TIERS_KEY}"

NOT_SUPPORTED = "volcano scheduler backend does not support topologyConstraint on"

Tier = int | str
Tiers = dict[str, dict[str, Tier]]  # binding name -> domain -> tier number or tierName


def _go_quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _annotation(annotations: Mapping[str, str] | None) -> str:
    return (annotations or {}).get(QUEUE_ANNOTATION, "").strip()


@dataclass(frozen=True)
class _Site:
    """One place a constraint can sit, named the way Grove's messages name it."""

    label: str  # PodCliqueSet | PodClique "x" | PodCliqueScalingGroup "y"
    path: str  # ...topologyConstraint
    tc: TopologyConstraint


def _sites(pcs: PodCliqueSet) -> Iterator[_Site]:
    """PCS, then cliques, then scaling groups: Grove's check order."""
    tmpl = pcs.spec.template
    if tmpl.topologyConstraint is not None:
        yield _Site("PodCliqueSet", "spec.template.topologyConstraint", tmpl.topologyConstraint)
    for i, clique in enumerate(pcs.cliques):
        if clique.topologyConstraint is not None:
            yield _Site(
                f"PodClique {_go_quote(clique.name)}",
                f"spec.template.cliques[{i}].topologyConstraint",
                clique.topologyConstraint,
            )
    for i, group in enumerate(pcs.scaling_groups):
        if group.topologyConstraint is not None:
            yield _Site(
                f"PodCliqueScalingGroup {_go_quote(group.name)}",
                f"spec.template.podCliqueScalingGroups[{i}].topologyConstraint",
                group.topologyConstraint,
            )


def parse_tiers(config: Mapping[str, Any]) -> tuple[Tiers, list[BackendFinding]]:
    """Read ``hyperNodeTiers`` from the profile config; malformed entries become errors."""
    raw = config.get(TIERS_KEY)
    if raw is None:
        return {}, []
    if not isinstance(raw, dict):
        return {}, [BackendFinding(CONFIG_PATH, "must map ClusterTopologyBinding names to {domain: tier} mappings")]
    tiers: Tiers = {}
    problems: list[BackendFinding] = []
    for binding, domains in raw.items():
        path = f"{CONFIG_PATH}[{binding}]"
        if not isinstance(domains, dict):
            problems.append(BackendFinding(path, "must map topology domains to HyperNode tiers"))
            continue
        tiers[str(binding)] = {}
        for domain, tier in domains.items():
            valid_int = isinstance(tier, int) and not isinstance(tier, bool) and tier >= 0
            valid_name = isinstance(tier, str) and 0 < len(tier) <= 253
            if not (valid_int or valid_name):
                problems.append(
                    BackendFinding(
                        f"{path}[{domain}]",
                        f"HyperNode tier must be a number >= 0 (highestTierAllowed) or a tierName "
                        f"(highestTierName), got {tier!r}",
                    )
                )
                continue
            tiers[str(binding)][str(domain)] = tier
    return tiers, problems


def network_topology(required: Tier | None, preferred: Tier | None) -> dict[str, Any] | None:
    """Volcano ``networkTopology`` for one constraint: hard for a required tier, else soft."""
    tier, mode = (required, "hard") if required is not None else (preferred, "soft")
    if tier is None:
        return None
    field = "highestTierName" if isinstance(tier, str) else "highestTierAllowed"
    return {"mode": mode, field: tier}


class VolcanoBackend(SchedulerBackend):
    name: ClassVar[str] = NAME
    warning_codes: ClassVar[Mapping[str, str]] = {
        "preferred-ignored": r"Volcano networkTopology has one mode per constraint",
        "tier-domain-missing": r"ClusterTopologyBinding .* has no domain ",
        "queue-undefined": r"volcano queue .* is not defined in the source tree",
    }
    queue_key: ClassVar[tuple[str, str] | None] = ("annotations", QUEUE_ANNOTATION)
    queue_object: ClassVar[tuple[str, str] | None] = ("scheduling.volcano.sh", "Queue")
    pod_scheduler_name: ClassVar[str] = NAME

    # ------------------------------------------------------------------ admission

    def _source_queues(self) -> frozenset[str]:
        """Names of the Volcano Queues in the source tree (a render cannot ask the cluster)."""
        return frozenset(
            str(obj["metadata"]["name"])
            for obj in self.context.source_objects
            if obj.get("apiVersion") == QUEUE_API_VERSION and obj.get("kind") == "Queue"
        )

    def reads_source_object(self, obj: Mapping[str, Any]) -> bool:
        return obj.get("apiVersion") == QUEUE_API_VERSION and obj.get("kind") == "Queue"

    def validate(self, pcs: PodCliqueSet) -> list[BackendFinding]:
        """Grove's ``ValidatePodCliqueSet``: topology (extended with HyperNode tiers), then queues."""
        return self._topology_findings(pcs) + self._queue_findings(pcs)

    def _topology_findings(self, pcs: PodCliqueSet) -> list[BackendFinding]:
        tiers, findings = parse_tiers(self.context.profile_config)
        if findings or not has_constraints(pcs):
            return findings  # a broken mapping would only add follow-up "no tier" errors
        binding_name = explicit_topology_name(pcs)
        mapping = tiers.get(binding_name)
        if mapping is None:
            return findings + [BackendFinding(s.path, f"{NOT_SUPPORTED} {s.label}") for s in _sites(pcs)]
        binding = self.context.bindings.get(binding_name)
        if binding is not None:
            findings += self._mapping_findings(binding, mapping)
        for site in _sites(pcs):
            req, pref = site.tc.required_domain(), site.tc.preferred_domain()
            # packDomain is refused on create by the core, so a required domain is pack.required.
            for field, domain in (("pack.required", req), ("pack.preferred", pref)):
                if domain and domain not in mapping:
                    findings.append(
                        BackendFinding(
                            f"{site.path}.{field}",
                            f"{NOT_SUPPORTED} {site.label}: topology domain {_go_quote(domain)} has no HyperNode tier "
                            f"in the volcano profile config ({TIERS_KEY}[{binding_name}])",
                        )
                    )
            if req and pref and req in mapping and pref in mapping:
                findings.append(
                    BackendFinding(
                        f"{site.path}.pack.preferred",
                        f"Volcano networkTopology has one mode per constraint: the required domain {_go_quote(req)} "
                        f"is rendered (mode hard), the preferred domain {_go_quote(pref)} is not",
                        warning=True,
                    )
                )
        findings += self._group_findings(pcs)
        return findings

    @staticmethod
    def _mapping_findings(binding: ClusterTopologyBinding, mapping: dict[str, Tier]) -> list[BackendFinding]:
        """Tiers must grow from the narrowest domain to the broadest one, as HyperNode tiers do."""
        out: list[BackendFinding] = []
        path = f"{CONFIG_PATH}[{binding.name}]"
        domains = binding.domains()
        for domain in mapping:
            if domain not in domains:
                out.append(
                    BackendFinding(
                        f"{path}[{domain}]",
                        f"ClusterTopologyBinding {_go_quote(binding.name)} has no domain {_go_quote(domain)}",
                        warning=True,
                    )
                )
        numbered: list[tuple[str, int]] = []
        for domain in domains:
            tier = mapping.get(domain)
            if isinstance(tier, int):
                numbered.append((domain, tier))
        for (broad, broad_tier), (narrow, narrow_tier) in pairwise(numbered):
            if broad_tier <= narrow_tier:
                out.append(
                    BackendFinding(
                        f"{path}[{broad}]",
                        f"HyperNode tiers must decrease from broader to narrower domains: {_go_quote(broad)} "
                        f"(tier {broad_tier}) is broader than {_go_quote(narrow)} (tier {narrow_tier}) in "
                        f"ClusterTopologyBinding {_go_quote(binding.name)}",
                    )
                )
        return out

    def _group_findings(self, pcs: PodCliqueSet) -> list[BackendFinding]:
        """A scaling-group constraint in the base PodGang needs one combined subGroupPolicy
        entry per replica; say why when that cannot keep Grove's gang semantics."""
        out: list[BackendFinding] = []
        by_name = {c.name: c for c in pcs.cliques}
        for i, group in enumerate(pcs.scaling_groups):
            if group.topologyConstraint is None:
                continue
            path = f"spec.template.podCliqueScalingGroups[{i}].topologyConstraint"
            prefix = f"{NOT_SUPPORTED} PodCliqueScalingGroup {_go_quote(group.name)}"
            for cname in group.cliqueNames:
                clique = by_name.get(cname)
                if clique is None:
                    continue
                if clique.topologyConstraint is not None:
                    out.append(
                        BackendFinding(
                            path,
                            f"{prefix} while its PodClique {_go_quote(cname)} has its own topologyConstraint: a Volcano "
                            "pod belongs to one subGroupPolicy entry, so the two constraints cannot be nested",
                        )
                    )
                elif (clique.spec.minAvailable or 0) < clique.spec.replicas:
                    out.append(
                        BackendFinding(
                            path,
                            f"{prefix} while its PodClique {_go_quote(cname)} has minAvailable "
                            f"{clique.spec.minAvailable} < replicas {clique.spec.replicas}: the scaling group's "
                            "subGroupPolicy entry could not keep per-PodClique minimums",
                        )
                    )
        return out

    def _queue_findings(self, pcs: PodCliqueSet) -> list[BackendFinding]:
        """Grove's ``validateQueueAnnotations`` (§6.1) with its messages and paths; the Queue
        existence check becomes a warning (see the module docstring)."""
        pcs_path = f"metadata.annotations[{QUEUE_ANNOTATION}]"
        pcs_queue = _annotation(pcs.metadata.annotations)
        if pcs_queue and (problems := dns1123_subdomain_problems(pcs_queue)):
            return [BackendFinding(pcs_path, "; ".join(problems))]
        errors: list[BackendFinding] = []
        first: str | None = None
        queue_path = pcs_path
        for i, clique in enumerate(pcs.cliques):
            path = f"spec.template.cliques[{i}].annotations[{QUEUE_ANNOTATION}]"
            clique_queue = _annotation(clique.annotations)
            if clique_queue and (problems := dns1123_subdomain_problems(clique_queue)):
                errors.append(BackendFinding(path, "; ".join(problems)))
                continue
            if pcs_queue and clique_queue and pcs_queue != clique_queue:
                errors.append(
                    BackendFinding(
                        path,
                        "conflicting volcano queue annotations: PodCliqueSet has "
                        f"{_go_quote(pcs_queue)}, PodClique has {_go_quote(clique_queue)}",
                    )
                )
                continue
            resolved = pcs_queue or clique_queue or DEFAULT_QUEUE
            if first is None:
                first = resolved
                if clique_queue and not pcs_queue:
                    queue_path = path
            elif resolved != first:
                errors.append(
                    BackendFinding(
                        path, "all PodCliques in a PodCliqueSet using volcano scheduler must resolve to the same queue"
                    )
                )
        if errors:
            return errors
        queue = first or pcs_queue or DEFAULT_QUEUE
        if queue == DEFAULT_QUEUE:
            return []
        if queue in self._source_queues():
            return []
        return [
            BackendFinding(
                queue_path,
                f"volcano queue {_go_quote(queue)} is not defined in the source tree (no {QUEUE_API_VERSION} Queue "
                f"{_go_quote(queue)}); it must exist and be Open in the cluster or Volcano keeps the PodGroups pending",
                warning=True,
            )
        ]

    # ------------------------------------------------------------------ pods

    def prepare_pod(self, pod: K8sObject, placement: PodPlacement) -> None:
        """Grove's ``PreparePod``: name the PodGroup on the pod so Volcano does not make its own."""
        super().prepare_pod(pod, placement)
        meta = pod["metadata"]
        annotations = meta.get("annotations") or {}
        annotations[VOLCANO_GROUP_NAME] = placement.podgang
        annotations[KUBE_GROUP_NAME] = placement.podgang
        meta["annotations"] = annotations

    # ------------------------------------------------------------------ gang objects

    def gang_objects(self, podgang: K8sObject, pcs: PodCliqueSet) -> list[K8sObject]:
        """Grove's ``SyncPodGang`` mutate function, as a whole desired object."""
        meta, gang = podgang["metadata"], podgang["spec"]
        podgroups: list[dict[str, Any]] = gang["podgroups"]
        to_volcano = self._translator(meta.get("annotations") or {})

        policies: list[dict[str, Any]] = []
        grouped: dict[str, dict[str, Any]] = {}  # member podgroup -> its scaling-group entry
        sizes = {pg["name"]: pg["minReplicas"] for pg in podgroups}
        for cfg in gang.get("topologyConstraintGroupConfigs") or []:
            members = cfg.get("podGroupNames") or []
            topology = to_volcano(cfg.get("topologyConstraint"))
            if not members or topology is None:
                continue
            pcsg_fqn, _, replica = cfg["name"].rpartition("-")  # <pcs>-<r>-<pcsg>-<j>
            entry = {
                "name": cfg["name"],
                "labelSelector": {"matchLabels": {PCSG: pcsg_fqn, PCSG_REPLICA_INDEX: replica}},
                "matchLabelKeys": [PCSG, PCSG_REPLICA_INDEX],
                "subGroupSize": max(sum(sizes.get(m, 0) for m in members), 1),
                "minSubGroups": 1,
                "networkTopology": topology,
            }
            for member in members:
                grouped[member] = entry
        emitted: set[str] = set()
        for pg in podgroups:
            if pg["name"] in grouped:
                entry = grouped[pg["name"]]  # in place of its first member, once
                if entry["name"] not in emitted:
                    emitted.add(entry["name"])
                    policies.append(entry)
                continue
            policy: dict[str, Any] = {
                "name": pg["name"],
                "labelSelector": {"matchLabels": {PODCLIQUE: pg["name"]}},
                "matchLabelKeys": [PODCLIQUE],
                "subGroupSize": max(pg["minReplicas"], 1),
                "minSubGroups": 1,
            }
            own = to_volcano(pg.get("topologyConstraint"))
            if own is not None:
                policy["networkTopology"] = own
            policies.append(policy)

        spec: dict[str, Any] = {
            "minMember": max(sum(pg["minReplicas"] for pg in podgroups), 1),
            "queue": self.effective_queue(pcs),
        }
        if gang.get("priorityClassName"):
            spec["priorityClassName"] = gang["priorityClassName"]
        gang_topology = to_volcano(gang.get("topologyConstraint"))
        if gang_topology is not None:
            spec["networkTopology"] = gang_topology
        spec["subGroupPolicy"] = policies
        return [
            {
                "apiVersion": PODGROUP_API_VERSION,
                "kind": "PodGroup",
                "metadata": {
                    "name": meta["name"],
                    "namespace": meta["namespace"],
                    "labels": dict(meta.get("labels") or {}),
                },
                "spec": spec,
            }
        ]

    @staticmethod
    def effective_queue(pcs: PodCliqueSet) -> str:
        """The queue admission resolved: the PodCliqueSet's, else the cliques' (one value, as
        validated), else ``default``. Grove's sync forgets the clique case (§11.3)."""
        pcs_queue = _annotation(pcs.metadata.annotations)
        if pcs_queue:
            return pcs_queue
        for clique in pcs.cliques:
            clique_queue = _annotation(clique.annotations)
            if clique_queue:
                return clique_queue
        return DEFAULT_QUEUE

    def _translator(self, annotations: Mapping[str, str]) -> Callable[[dict[str, Any] | None], dict[str, Any] | None]:
        """A function PodGang constraint (node-label keys) → ``networkTopology`` or None."""
        binding_name = annotations.get(TOPOLOGY_NAME, "")
        binding = self.context.bindings.get(binding_name)
        mapping = parse_tiers(self.context.profile_config)[0].get(binding_name, {})
        domain_of = {level.key: level.domain for level in binding.spec.levels} if binding is not None else {}

        def tier(key: str | None) -> Tier | None:
            if not key:
                return None
            domain = domain_of.get(key)
            if domain is None or domain not in mapping:  # validate() refused this constraint already
                raise GroveGitopsError(f"no HyperNode tier for topology key {key!r} of {binding_name!r}")
            return mapping[domain]

        def to_volcano(tc: dict[str, Any] | None) -> dict[str, Any] | None:
            pack = (tc or {}).get("packConstraint")
            if not pack:
                return None
            return network_topology(tier(pack.get("required")), tier(pack.get("preferred")))

        return to_volcano

    # ------------------------------------------------------------------ topology

    def topology_objects(self, binding: ClusterTopologyBinding) -> list[K8sObject]:
        """Nothing: HyperNodes are the network's own description, discovered or written by an
        administrator, not something a ClusterTopologyBinding can be turned into."""
        return []
