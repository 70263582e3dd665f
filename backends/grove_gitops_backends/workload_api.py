"""Kubernetes' built-in Workload API (``scheduling.k8s.io``) for one PodGang, per minor version.

The API changed shape in every release (``spec/backend-crs.md`` §5), so this module keeps
one small builder per version and a version-independent *plan* of the gang in between:

* **1.35** (``v1alpha1``): a ``Workload`` whose ``spec.podGroups[]`` are the gangs; pods
  point at it with ``spec.workloadRef {name, podGroup}``. No topology.
* **1.36** (``v1alpha2``): a ``Workload`` of ``podGroupTemplates`` plus standalone
  ``PodGroup`` objects (``podGroupTemplateRef.workload``); pods point at a PodGroup with
  ``spec.schedulingGroup.podGroupName``. One required topology key per PodGroup.
* **1.37** (``v1beta1`` + ``v1alpha3``): as 1.36, with ``PodGroup.spec.workloadRef
  {workloadName, templateName}``, and ``CompositePodGroup`` (``v1alpha3`` only) to make
  several PodGroups all-or-nothing together.

Every PodGroup through 1.36 is an *independent* gang: nothing can say "the leader group and
the worker group, or neither". A PodGang with several podgroups is therefore rendered on
1.35 / 1.36 as **one merged pod group** with ``minCount`` = Σ ``minReplicas``: the gang stays
all-or-nothing (exactly so when every clique's ``minAvailable`` equals its ``replicas``), but
the per-clique minimums are lost. The alternative, one independent gang per podgroup, would
keep the minimums and lose the atomicity that gang scheduling exists for (a leader bound
while its workers wait forever). :func:`plan_gang` reports what is lost so the backend can
warn.

On 1.37 a multi-podgroup PodGang becomes a tree that mirrors Grove's own: a root
``CompositePodGroup`` (the PodGang), a nested one per scaling-group replica of the base
PodGang that has several cliques or a scaling-group topology constraint, and one PodGroup
per PodGang podgroup, each with ``gang`` policies that require every child. The Workload's
templates mirror the PodCliqueSet template (root = PodCliqueSet or scaling group, nested =
scaling group, leaf = clique), so PodGroups of the same clique share a template and the
eight-templates-per-level limit counts cliques, not replicas.

Names (all derived from Grove names, so ``prepare_pod`` can compute a pod's binding from its
placement alone): Workload = PodGang name; 1.35 pod group and 1.36 PodGroup = PodGang name;
1.37 PodGroup = PodGang podgroup name (the PodClique FQN); 1.37 root CompositePodGroup =
PodGang name, nested = ``<pcs>-<r>-<pcsg>-<j>-pcsg`` (the bare scaling-group replica name is
taken by a *scaled* PodGang's root, e.g. ``x-0-sg-0``). Names referenced from pod fields and
templates must be DNS labels; :func:`fit_label` keeps valid ones unchanged and replaces the
rest by a shortened, hash-suffixed label.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from grove_gitops.api.podcliqueset import PodCliqueSet, TopologyConstraint
from grove_gitops.backendapi import K8sObject, PodPlacement
from grove_gitops.expand import names
from grove_gitops.expand.plan import CliqueInstance, Planner
from grove_gitops.expand.scaling import max_counts

KubeVersion = Literal["1.35", "1.36", "1.37"]
#: The first Kubernetes with a Workload API (KEP-4671, ``scheduling.k8s.io/v1alpha1``); an
#: older ``kubernetesVersion`` is refused by the backend (``backends/default.py``).
MIN_VERSION = "1.35"

GROUP = "scheduling.k8s.io"
MAX_TEMPLATES = 8
NESTED_SUFFIX = "-pcsg"

#: Argo CD sync waves: the API server refuses a PodGroup whose Workload does not exist yet
#: (``spec/backend-crs.md`` §5.2), so the Workload goes first, then the composite parents.
SYNC_WAVE = "argocd.argoproj.io/sync-wave"
WAVE_WORKLOAD = "-2"
WAVE_COMPOSITE = "-1"

TOPOLOGY_GATE = "TopologyAwareWorkloadScheduling"
COMPOSITE_GATE = "CompositePodGroup"
COMPOSITE_API = f"{GROUP}/v1alpha3"


@dataclass(frozen=True)
class VersionInfo:
    """What one Kubernetes minor serves and needs (``spec/backend-crs.md`` §5.1-§5.3)."""

    workload_api: str
    podgroup_api: str | None  # None: pod groups live inside the Workload (1.35)
    gates: tuple[str, ...]
    runtime_config: str
    pod_field: str
    topology: bool
    composite: bool


VERSIONS: Mapping[str, VersionInfo] = {
    "1.35": VersionInfo(
        f"{GROUP}/v1alpha1",
        None,
        ("GenericWorkload", "GangScheduling"),
        f"{GROUP}/v1alpha1=true",
        "spec.workloadRef",
        topology=False,
        composite=False,
    ),
    "1.36": VersionInfo(
        f"{GROUP}/v1alpha2",
        f"{GROUP}/v1alpha2",
        ("GenericWorkload", "GangScheduling"),
        f"{GROUP}/v1alpha2=true",
        "spec.schedulingGroup",
        topology=True,
        composite=False,
    ),
    # GangScheduling and WorkloadAwarePreemption were merged into GenericWorkload in 1.37,
    # which is beta but still off by default.
    "1.37": VersionInfo(
        f"{GROUP}/v1beta1",
        f"{GROUP}/v1beta1",
        ("GenericWorkload",),
        f"{GROUP}/v1beta1=true",
        "spec.schedulingGroup",
        topology=True,
        composite=True,
    ),
}

_LABEL_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_HASH_LEN = 8
_MAX_LABEL = 63


def fit_label(name: str) -> str:
    """``name`` if it is a DNS label, else a deterministic DNS label derived from it.

    Grove names are normally labels already (PodGang and PodClique names are pod label
    values); a dot in a clique name or an unusually long name gets the first characters,
    sanitised, plus 8 hex digits of the name's SHA-256 so distinct names stay distinct.
    """
    if len(name) <= _MAX_LABEL and _LABEL_RE.match(name):
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:_HASH_LEN]
    clean = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")[: _MAX_LABEL - _HASH_LEN - 1].rstrip("-")
    return f"{clean}-{digest}" if clean else digest


def pod_group_name(version: str, placement: PodPlacement) -> str:
    """The pod group a pod belongs to: the PodGang (merged) through 1.36, its podgroup on 1.37."""
    return fit_label(placement.podgroup if version == "1.37" else placement.podgang)


def pod_binding(version: str, placement: PodPlacement) -> dict[str, Any]:
    """The pod spec fields that bind a pod to its gang (immutable on the API server)."""
    if version == "1.35":
        return {"workloadRef": {"name": fit_label(placement.podgang), "podGroup": pod_group_name(version, placement)}}
    return {"schedulingGroup": {"podGroupName": pod_group_name(version, placement)}}


# ---------------------------------------------------------------------------------------------
# The plan: version-independent tree of gangs, plus what the version cannot express
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Group:
    """One Kubernetes pod group (a 1.35 ``podGroups[]`` entry or a 1.36+ PodGroup object)."""

    name: str
    template: str
    min_count: int
    key: str | None


@dataclass(frozen=True)
class Composite:
    """One 1.37 CompositePodGroup: all children must be schedulable together."""

    name: str
    template: str
    key: str | None
    children: tuple[Node, ...]


Node = Group | Composite


@dataclass(frozen=True)
class Note:
    """Something the target version cannot express (warning) or refuses (``error``)."""

    path: str
    message: str
    error: bool = False


@dataclass
class GangPlan:
    podgang: str
    root: Node
    notes: list[Note] = field(default_factory=list)

    @property
    def has_topology(self) -> bool:
        return any(n.key for n in _walk(self.root))

    @property
    def composite(self) -> bool:
        return isinstance(self.root, Composite)


def _walk(node: Node) -> Iterable[Node]:
    yield node
    if isinstance(node, Composite):
        for child in node.children:
            yield from _walk(child)


def _pack(obj: Mapping[str, Any] | None) -> tuple[str | None, str | None]:
    """(required, preferred) node-label keys of a PodGang ``topologyConstraint``."""
    pack = (obj or {}).get("packConstraint") or {}
    return pack.get("required"), pack.get("preferred")


def _tc_path(base: str, tc: TopologyConstraint | None, which: Literal["required", "preferred"]) -> str:
    if which == "required" and tc is not None and not (tc.pack and tc.pack.required) and tc.packDomain:
        return f"{base}.topologyConstraint.packDomain"
    return f"{base}.topologyConstraint.pack.{which}"


class _Templates:
    """Template names, unique across one Workload's whole template tree (KEP-6012 requires it,
    because ``workloadRef.templateName`` names a template by its bare name)."""

    def __init__(self) -> None:
        self._by_identity: dict[tuple[str, ...], str] = {}
        self._taken: set[str] = set()

    def name(self, identity: tuple[str, ...], wanted: str) -> str:
        if identity in self._by_identity:
            return self._by_identity[identity]
        base = fit_label(wanted)
        candidate, n = base, 2
        while candidate in self._taken:
            candidate = fit_label(f"{wanted}-{n}")
            n += 1
        self._by_identity[identity] = candidate
        self._taken.add(candidate)
        return candidate


def gang_replica(podgang: Mapping[str, Any], pcs: PodCliqueSet) -> int:
    """The PodCliqueSet replica a rendered PodGang (``<pcs>-<replica>[-...]``) belongs to."""
    name: str = podgang["metadata"]["name"]
    return int(name[len(pcs.name) + 1 :].split("-", 1)[0])


@dataclass(frozen=True, eq=False)
class ReplicaIndex:
    """What every PodGang of one PodCliqueSet replica looks up, built once per replica.

    Building it per gang made a replica of N scaled gangs cost N x its PodCliques: 3,000
    scaling groups (6,000 pods) planned 18 million PodCliques and ran for minutes.
    """

    pcs: PodCliqueSet
    replica: int
    instances: dict[str, CliqueInstance]
    clique_index: dict[str, int]
    group_index: dict[str, int]

    @staticmethod
    def build(pcs: PodCliqueSet, replica: int, instances: list[CliqueInstance] | None = None) -> ReplicaIndex:
        # Without the expansion's instances, plan every count up to the autoscaling maximum:
        # a PodGang the agent renders at a live count names PodCliques above the floor.
        found = Planner(pcs, max_counts(pcs, replica)).instances(replica) if instances is None else instances
        return ReplicaIndex(
            pcs,
            replica,
            {i.fqn: i for i in found},
            {c.name: i for i, c in enumerate(pcs.cliques)},
            {g.name: i for i, g in enumerate(pcs.scaling_groups)},
        )

    def serves(self, pcs: PodCliqueSet, replica: int) -> bool:
        return self.pcs is pcs and self.replica == replica


class _GangView:
    """A rendered PodGang plus the PodClique instances behind its podgroups."""

    def __init__(self, podgang: Mapping[str, Any], pcs: PodCliqueSet, index: ReplicaIndex | None = None) -> None:
        self.pcs = pcs
        self.name: str = podgang["metadata"]["name"]
        spec = podgang["spec"]
        self.podgroups: list[Mapping[str, Any]] = list(spec["podgroups"])
        self.key, self.preferred = _pack(spec.get("topologyConstraint"))
        self.configs: dict[str, tuple[str, str | None, str | None]] = {}
        for config in spec.get("topologyConstraintGroupConfigs") or []:
            req, pref = _pack(config.get("topologyConstraint"))
            for member in config.get("podGroupNames") or []:
                self.configs[member] = (config["name"], req, pref)
        replica = gang_replica(podgang, pcs)
        if index is None or not index.serves(pcs, replica):
            index = ReplicaIndex.build(pcs, replica)
        self.instances = index.instances
        self.base = self.name == names.base_podgang_name(pcs.name, replica)
        self.clique_index = index.clique_index
        self.group_index = index.group_index
        self.replicas = pcs.spec.replicas

    def inst(self, podgroup: Mapping[str, Any]) -> CliqueInstance:
        return self.instances[podgroup["name"]]

    def clique_path(self, inst: CliqueInstance) -> str:
        return f"spec.template.cliques[{self.clique_index[inst.template.name]}]"

    def group_path(self, inst: CliqueInstance) -> str:
        assert inst.group is not None
        return f"spec.template.podCliqueScalingGroups[{self.group_index[inst.group.name]}]"

    def gang_tc(self) -> tuple[str, TopologyConstraint | None]:
        """Where the PodGang-level constraint came from: the PCS, or a scaled gang's scaling group."""
        tmpl = self.pcs.spec.template
        if not self.base and self.podgroups:
            inst = self.inst(self.podgroups[0])
            if inst.group is not None and inst.group.topologyConstraint is not None:
                return self.group_path(inst), inst.group.topologyConstraint
        return "spec.template", tmpl.topologyConstraint

    def describe(self) -> str:
        """How a note names this gang: every replica's and every scaled gang share its shape."""
        if self.base:
            return f"PodGang {self.name}" + (
                " (and the base PodGang of every other replica)" if self.replicas > 1 else ""
            )
        inst = self.inst(self.podgroups[0])
        group = inst.group.name if inst.group is not None else "?"
        return f"every scaled PodGang of scaling group {group}"

    def root_template(self) -> tuple[tuple[str, ...], str]:
        if self.base or not self.podgroups:
            return ("root",), self.pcs.name
        inst = self.inst(self.podgroups[0])
        return ("root",), inst.group.name if inst.group is not None else self.pcs.name


def plan_gang(
    podgang: Mapping[str, Any], pcs: PodCliqueSet, version: str, index: ReplicaIndex | None = None
) -> GangPlan:
    """The gang objects' shape for ``version`` and what that version cannot express.

    ``index`` is the gang's replica's :class:`ReplicaIndex` when the caller plans several
    gangs of one replica (built here when absent or of another replica)."""
    view = _GangView(podgang, pcs, index)
    if version == "1.37":
        return _plan_tree(view)
    return _plan_merged(view, version)


def _preferred_notes(view: _GangView) -> list[Note]:
    msg = "the Kubernetes Workload API has required topology constraints only: preferred packing by {} is not enforced"
    notes: list[Note] = []
    if view.preferred:
        path, tc = view.gang_tc()
        notes.append(Note(_tc_path(path, tc, "preferred"), msg.format(view.preferred)))
    seen_groups: set[str] = set()
    for pg in view.podgroups:
        inst = view.inst(pg)
        _, pref = _pack(pg.get("topologyConstraint"))
        if pref:
            notes.append(
                Note(_tc_path(view.clique_path(inst), inst.template.topologyConstraint, "preferred"), msg.format(pref))
            )
        config = view.configs.get(pg["name"])
        if config and config[2] and inst.group is not None and inst.group.name not in seen_groups:
            seen_groups.add(inst.group.name)
            notes.append(
                Note(_tc_path(view.group_path(inst), inst.group.topologyConstraint, "preferred"), msg.format(config[2]))
            )
    return notes


def _plan_merged(view: _GangView, version: str) -> GangPlan:
    """1.35 / 1.36: one pod group holding every pod of the PodGang."""
    members = [pg["name"] for pg in view.podgroups]
    total_min = sum(int(pg["minReplicas"]) for pg in view.podgroups)
    total_pods = sum(view.inst(pg).template.spec.replicas for pg in view.podgroups)
    # The one key the merged group can carry: the narrowest constraint that covers every pod
    # (Grove's admission guarantees a podgroup's domain is no wider than its gang's).
    candidates: list[str | None] = []
    if len(members) == 1:
        candidates.append(_pack(view.podgroups[0].get("topologyConstraint"))[0])
    candidates += [c[1] for c in _covering_configs(view, set(members))]
    candidates.append(view.key)
    key = next((k for k in candidates if k), None)
    name = fit_label(view.name)
    plan = GangPlan(view.name, Group(name, name, total_min, key if version != "1.35" else None))
    gang = view.describe()
    if len(members) > 1:
        for pg in view.podgroups:
            inst = view.inst(pg)
            minimum, replicas = int(pg["minReplicas"]), inst.template.spec.replicas
            if replicas > minimum:
                plan.notes.append(
                    Note(
                        f"{view.clique_path(inst)}.spec.minAvailable",
                        f"Kubernetes {version} cannot make several pod groups all-or-nothing together, so {gang} is "
                        f"rendered as one pod group with minCount {total_min} (the sum of its cliques' minAvailable) "
                        f"over {total_pods} pods: the scheduler starts it as soon as any {total_min} of them fit, so "
                        f"clique {inst.template.name} (minAvailable {minimum}, replicas {replicas}) may start with "
                        f"fewer than {minimum} pods (per-clique minimums need Kubernetes 1.37 CompositePodGroups)",
                    )
                )
    plan.notes += _lost_required(view, version, key, set(members))
    plan.notes += _preferred_notes(view)
    return _dedupe(plan)


def _covering_configs(view: _GangView, covered: set[str]) -> list[tuple[str, str | None, str | None]]:
    """Scaling-group topology configs whose podgroups include every one of ``covered``."""
    out = []
    for config in dict.fromkeys(view.configs.values()):
        members = {pg for pg, c in view.configs.items() if c == config}
        if covered <= members:
            out.append(config)
    return out


def _lost_required(view: _GangView, version: str, kept: str | None, merged: set[str]) -> list[Note]:
    """Required constraints narrower than the merged group, which its single key cannot carry
    (a constraint equal to the kept key is implied by it)."""
    notes: list[Note] = []
    if version == "1.35":
        why = "the Kubernetes 1.35 Workload API has no topology constraints: required packing by {} is not enforced"
        if view.key:
            path, tc = view.gang_tc()
            notes.append(Note(_tc_path(path, tc, "required"), why.format(view.key)))
    else:
        carried = f"it carries the PodGang's ({kept})" if kept else "it carries none"
        why = (
            f"Kubernetes 1.36 renders {view.describe()} as one PodGroup with a single topology key and {carried}: "
            "required packing by {} of this part of the gang alone is not enforced "
            "(needs Kubernetes 1.37 CompositePodGroups)"
        )
    for pg in view.podgroups:
        inst = view.inst(pg)
        req, _ = _pack(pg.get("topologyConstraint"))
        if req and (version == "1.35" or (len(merged) > 1 and req != kept)):
            msg = why.format(req)
            notes.append(Note(_tc_path(view.clique_path(inst), inst.template.topologyConstraint, "required"), msg))
        config = view.configs.get(pg["name"])
        if config and config[1] and inst.group is not None:
            config_members = {p for p, c in view.configs.items() if c == config}
            if version == "1.35" or (not merged <= config_members and config[1] != kept):
                msg = why.format(config[1])
                notes.append(Note(_tc_path(view.group_path(inst), inst.group.topologyConstraint, "required"), msg))
    return notes


def _plan_tree(view: _GangView) -> GangPlan:
    """1.37: one PodGroup, or a CompositePodGroup tree when the PodGang has several podgroups."""
    templates = _Templates()
    root_identity, root_wanted = view.root_template()
    if len(view.podgroups) == 1:
        pg = view.podgroups[0]
        inst = view.inst(pg)
        candidates = [_pack(pg.get("topologyConstraint"))[0]]
        candidates += [c[1] for c in _covering_configs(view, {pg["name"]})]
        candidates.append(view.key)
        tmpl = templates.name(_leaf_identity(inst), inst.template.name)
        root: Node = Group(
            fit_label(pg["name"]), tmpl, int(pg["minReplicas"]), next((k for k in candidates if k), None)
        )
        plan = GangPlan(view.name, root)
    else:
        root_tmpl = templates.name(root_identity, root_wanted)
        # Children in podgroup order; a scaling-group replica of the base PodGang that has
        # several cliques or a topology group config becomes one nested composite slot.
        slots: dict[tuple[str, str, int], list[Group]] = {}
        nested: dict[tuple[str, str, int], tuple[str, str, str | None]] = {}
        for i, pg in enumerate(view.podgroups):
            inst = view.inst(pg)
            config = view.configs.get(pg["name"])
            group = inst.group
            if view.base and group is not None and (len(group.cliqueNames) > 1 or config is not None):
                slot = ("pcsg", group.name, inst.group_replica)
                if slot not in nested:
                    nested[slot] = (
                        fit_label(f"{inst.group_fqn}-{inst.group_replica}{NESTED_SUFFIX}"),
                        templates.name(("pcsg", group.name), group.name),
                        config[1] if config else None,
                    )
            else:
                slot = ("leaf", "", i)
            leaf = Group(
                fit_label(pg["name"]),
                templates.name(_leaf_identity(inst), inst.template.name),
                int(pg["minReplicas"]),
                _pack(pg.get("topologyConstraint"))[0],
            )
            slots.setdefault(slot, []).append(leaf)
        ordered: list[Node] = []
        for slot, leaves in slots.items():
            if slot in nested:
                name, template, key = nested[slot]
                ordered.append(Composite(name, template, key, tuple(leaves)))
            else:
                ordered.extend(leaves)
        plan = GangPlan(view.name, Composite(fit_label(view.name), root_tmpl, view.key, tuple(ordered)))
        plan.notes += _template_limits(view, plan.root)
    plan.notes += _preferred_notes(view)
    return _dedupe(plan)


def _leaf_identity(inst: CliqueInstance) -> tuple[str, ...]:
    return ("clique", inst.group.name if inst.group is not None else "", inst.template.name)


def _template_limits(view: _GangView, root: Node) -> list[Note]:
    notes: list[Note] = []
    for node in _walk(root):
        if not isinstance(node, Composite):
            continue
        leaves = list(dict.fromkeys(c.template for c in node.children if isinstance(c, Group)))
        composites = list(dict.fromkeys(c.template for c in node.children if isinstance(c, Composite)))
        for kind, found in (("pod group", leaves), ("composite pod group", composites)):
            if len(found) > MAX_TEMPLATES:
                path = "spec.template.cliques" if kind == "pod group" else "spec.template.podCliqueScalingGroups"
                notes.append(
                    Note(
                        path,
                        f"Kubernetes 1.37 allows at most {MAX_TEMPLATES} {kind} templates under one CompositePodGroup "
                        f"template, but {view.describe()} needs {len(found)} ({', '.join(found)})",
                        error=True,
                    )
                )
    return notes


def _dedupe(plan: GangPlan) -> GangPlan:
    plan.notes = list(dict.fromkeys(plan.notes))
    return plan


# ---------------------------------------------------------------------------------------------
# Objects
# ---------------------------------------------------------------------------------------------


def _meta(name: str, podgang: Mapping[str, Any], wave: str | None) -> dict[str, Any]:
    src = podgang["metadata"]
    meta: dict[str, Any] = {"name": name, "namespace": src["namespace"]}
    if src.get("labels"):
        meta["labels"] = dict(src["labels"])
    if wave is not None:
        meta["annotations"] = {SYNC_WAVE: wave}
    return meta


def _constraints(key: str | None) -> dict[str, Any]:
    return {"schedulingConstraints": {"topology": [{"key": key}]}} if key else {}


def _gang(node: Node) -> dict[str, Any]:
    if isinstance(node, Group):
        return {"gang": {"minCount": node.min_count}}
    return {"gang": {"minGroupCount": len(node.children)}}


def _template(node: Node, seen: set[str]) -> dict[str, Any]:
    tmpl: dict[str, Any] = {"name": node.template, "schedulingPolicy": _gang(node), **_constraints(node.key)}
    if isinstance(node, Composite):
        leaves = [_template(c, seen) for c in _unique_templates(node.children, Group, seen)]
        composites = [_template(c, seen) for c in _unique_templates(node.children, Composite, seen)]
        if leaves:
            tmpl["podGroupTemplates"] = leaves
        if composites:
            tmpl["compositePodGroupTemplates"] = composites
    return tmpl


def _unique_templates(children: Iterable[Node], kind: type, seen: set[str]) -> list[Node]:
    out = []
    for child in children:
        if isinstance(child, kind) and child.template not in seen:
            seen.add(child.template)
            out.append(child)
    return out


def build_objects(plan: GangPlan, podgang: Mapping[str, Any], version: str, waves: bool) -> list[K8sObject]:
    """The Workload API objects of one PodGang, in apply order (Workload, composites, groups)."""
    info = VERSIONS[version]
    workload_name = fit_label(plan.podgang)
    controller = {"apiGroup": "scheduler.grove.io", "kind": "PodGang", "name": plan.podgang}
    root = plan.root
    spec: dict[str, Any] = {"controllerRef": controller}
    if version == "1.35":
        assert isinstance(root, Group)
        spec["podGroups"] = [{"name": root.name, "policy": _gang(root)}]
    elif isinstance(root, Composite):
        spec["compositePodGroupTemplates"] = [_template(root, set())]
    else:
        spec["podGroupTemplates"] = [_template(root, set())]
    objects: list[K8sObject] = [
        {
            "apiVersion": info.workload_api,
            "kind": "Workload",
            "metadata": _meta(workload_name, podgang, WAVE_WORKLOAD if waves else None),
            "spec": spec,
        }
    ]
    if info.podgroup_api is None:
        return objects
    composites: list[K8sObject] = []
    groups: list[K8sObject] = []
    _emit(root, None, plan, podgang, version, waves, composites, groups)
    return objects + composites + groups


def _emit(
    node: Node,
    parent: str | None,
    plan: GangPlan,
    podgang: Mapping[str, Any],
    version: str,
    waves: bool,
    composites: list[K8sObject],
    groups: list[K8sObject],
) -> None:
    info = VERSIONS[version]
    workload_name = fit_label(plan.podgang)
    spec: dict[str, Any] = {}
    if parent is not None:
        spec["parentCompositePodGroupName"] = parent
    if version == "1.36":
        spec["podGroupTemplateRef"] = {
            "workload": {"workloadName": workload_name, "podGroupTemplateName": node.template}
        }
    else:
        spec["workloadRef"] = {"workloadName": workload_name, "templateName": node.template}
    spec["schedulingPolicy"] = _gang(node)
    spec.update(_constraints(node.key))
    if isinstance(node, Composite):
        composites.append(
            {
                "apiVersion": COMPOSITE_API,
                "kind": "CompositePodGroup",
                "metadata": _meta(node.name, podgang, WAVE_COMPOSITE if waves else None),
                "spec": spec,
            }
        )
        for child in node.children:
            _emit(child, node.name, plan, podgang, version, waves, composites, groups)
        return
    groups.append(
        {
            "apiVersion": cast(str, info.podgroup_api),
            "kind": "PodGroup",
            "metadata": _meta(node.name, podgang, None),
            "spec": spec,
        }
    )
