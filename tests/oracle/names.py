"""Compare the names and managed-resource labels of a render with Grove's own functions.

:class:`Expected` indexes what the oracle (Grove's ``common/namegen.go`` and ``common/labels.go``)
answers for one PodCliqueSet; :class:`Comparison` walks rendered objects and records each value
it compares, and each difference with Grove's value and ours side by side. Pods' names carry a
generated suffix in both (Grove: ``generateName``; grove-gitops: ``-<index>-<hash8>``, README
"Where grove-gitops differs"), so for a pod the deterministic part is compared: the PodClique
name Grove generates, followed by ``-``. ``app.kubernetes.io/managed-by`` is ``grove-gitops``
where Grove writes ``grove-operator``: the one documented difference among these labels.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

#: The documented difference (docs/grove-differences.md): our objects are not Grove's.
OUR_MANAGED_BY = "grove-gitops"
GROVE_MANAGED_BY = "grove-operator"


@dataclass(frozen=True)
class CliqueSlot:
    """Where Grove puts one PodClique: its PodCliqueSet replica, scaling group, PodGang."""

    name: str
    template: str
    pcs_replica: int
    pcsg: str | None
    pcsg_replica: int | None
    podgang: str


@dataclass
class Expected:
    """Grove's names for one PodCliqueSet, indexed for lookups."""

    pcs: str
    namespace: str
    names: dict[str, Any]
    cliques: dict[str, CliqueSlot] = field(default_factory=dict)
    scaling_groups: dict[str, int] = field(default_factory=dict)  # fqn -> PCS replica
    base_gangs: dict[str, int] = field(default_factory=dict)  # name -> PCS replica
    scaled_gangs: dict[str, int] = field(default_factory=dict)  # name -> PCS replica
    services: dict[int, str] = field(default_factory=dict)
    addresses: dict[int, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for rep in self.names["replicas"]:
            r = rep["index"]
            self.services[r] = rep["headlessService"]
            self.addresses[r] = rep["headlessServiceAddress"]
            self.base_gangs[rep["basePodGang"]] = r
            for c in rep["podCliques"]:
                self.cliques[c["name"]] = CliqueSlot(c["name"], c["template"], r, None, None, c["podGang"])
            for sg in rep["scalingGroups"]:
                self.scaling_groups[sg["name"]] = r
                for c in sg["podCliques"]:
                    slot = CliqueSlot(c["name"], c["template"], r, sg["name"], c["replica"], c["podGang"])
                    self.cliques[c["name"]] = slot
                for gang in sg["scaledPodGangs"]:
                    self.scaled_gangs[gang] = r

    @property
    def gangs(self) -> set[str]:
        return set(self.base_gangs) | set(self.scaled_gangs)

    def base_gang_of(self, pcs_replica: int) -> str:
        return next(name for name, r in self.base_gangs.items() if r == pcs_replica)

    def label(self, key: str) -> str:
        return str(self.names["labelKeys"][key])

    def component(self, kind: str) -> str:
        return str(self.names["componentLabels"][kind])


@dataclass
class Comparison:
    """Counts of what was compared, and the differences (Grove's value beside ours)."""

    objects: int = 0
    names: int = 0
    fields: int = 0
    differences: list[str] = field(default_factory=list)

    def name(self, where: str, grove: object, ours: object) -> None:
        self.names += 1
        if grove != ours:
            self.differences.append(f"{where}: Grove {grove!r} | grove-gitops {ours!r}")

    def member(self, where: str, grove: Iterable[str], ours: str) -> None:
        self.names += 1
        options = sorted(grove)
        if ours not in options:
            self.differences.append(f"{where}: Grove generates one of {options} | grove-gitops {ours!r}")

    def value(self, where: str, grove: object, ours: object) -> None:
        self.fields += 1
        if grove != ours:
            self.differences.append(f"{where}: Grove {grove!r} | grove-gitops {ours!r}")

    def sets(self, where: str, grove: Iterable[str], ours: Iterable[str]) -> None:
        g, o = set(grove), set(ours)
        self.names += len(g | o)
        if g != o:
            self.differences.append(f"{where}: only Grove {sorted(g - o)} | only grove-gitops {sorted(o - g)}")


def _meta(obj: dict[str, Any]) -> tuple[str, dict[str, str]]:
    meta = obj["metadata"]
    return str(meta["name"]), dict(meta.get("labels") or {})


def _common_labels(cmp: Comparison, exp: Expected, where: str, labels: dict[str, str], kind: str | None) -> None:
    """The default labels of managed resources (GetDefaultLabelsForPodCliqueSetManagedResources)
    and, for ``kind``, Grove's component label."""
    defaults = exp.names["defaultLabels"]
    part_of, managed_by = exp.label("partOf"), exp.label("managedBy")
    cmp.value(f"{where} label {part_of}", defaults[part_of], labels.get(part_of))
    # the documented difference: Grove's value is grove-operator, ours grove-gitops
    cmp.value(f"{where} label {managed_by} (Grove's value)", GROVE_MANAGED_BY, defaults[managed_by])
    cmp.value(f"{where} label {managed_by} (documented difference)", OUR_MANAGED_BY, labels.get(managed_by))
    if kind is not None:
        key = exp.label("component")
        cmp.value(f"{where} label {key}", exp.component(kind), labels.get(key))


def _env(container: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e["value"] for e in container.get("env") or [] if "value" in e}


def compare_pod(cmp: Comparison, exp: Expected, obj: dict[str, Any]) -> str | None:
    """One Pod; returns the PodClique Grove would own it by, or None when it has none."""
    name, labels = _meta(obj)
    where = f"Pod {exp.namespace}/{name}"
    key = exp.label("podClique")
    clique = labels.get(key)
    cmp.member(f"{where} label {key}", exp.cliques, str(clique))
    slot = exp.cliques.get(str(clique))
    if slot is None:
        return None
    cmp.value(f"{where} name (deterministic part: the PodClique's name and '-')", True, name.startswith(slot.name + "-"))
    _common_labels(cmp, exp, where, labels, "PodCliqueInGroup" if slot.pcsg else "PodClique")
    cmp.value(f"{where} label {exp.label('podGang')}", slot.podgang, labels.get(exp.label("podGang")))
    cmp.value(f"{where} label {exp.label('pcsReplicaIndex')}", str(slot.pcs_replica), labels.get(exp.label("pcsReplicaIndex")))
    if slot.pcsg is not None:
        cmp.value(f"{where} label {exp.label('pcsg')}", slot.pcsg, labels.get(exp.label("pcsg")))
        cmp.value(
            f"{where} label {exp.label('pcsgReplicaIndex')}",
            str(slot.pcsg_replica),
            labels.get(exp.label("pcsgReplicaIndex")),
        )
    cmp.name(f"{where} label {exp.label('appName')}", slot.name, labels.get(exp.label("appName")))
    # a scaled scaling-group replica's PodClique (and so its pods) names its base PodGang
    base = exp.base_gang_of(slot.pcs_replica)
    grove_base = base if slot.podgang != base else None
    cmp.name(f"{where} label {exp.label('basePodGang')}", grove_base, labels.get(exp.label("basePodGang")))
    spec = obj["spec"]
    cmp.name(f"{where} spec.subdomain (headless Service)", exp.services[slot.pcs_replica], spec.get("subdomain"))
    secrets = [v["secret"]["secretName"] for v in spec.get("volumes") or [] if "secret" in v]
    if spec.get("initContainers"):
        cmp.member(f"{where} init-container token Secret", [exp.names["initContainerSATokenSecret"]], ",".join(secrets))
        for init in spec["initContainers"]:
            for arg in init.get("args") or []:
                if arg.startswith("--podcliques="):
                    for item in arg.removeprefix("--podcliques=").split(","):
                        cmp.member(f"{where} init container {arg}", exp.cliques, item.rsplit(":", 1)[0])
    for container in spec["containers"]:
        env = _env(container)
        cw = f"{where} container {container['name']} env"
        cmp.name(f"{cw} GROVE_PCS_NAME", exp.pcs, env.get("GROVE_PCS_NAME"))
        cmp.value(f"{cw} GROVE_PCS_INDEX", str(slot.pcs_replica), env.get("GROVE_PCS_INDEX"))
        cmp.name(f"{cw} GROVE_PCLQ_NAME", slot.name, env.get("GROVE_PCLQ_NAME"))
        cmp.name(f"{cw} GROVE_HEADLESS_SERVICE", exp.addresses[slot.pcs_replica], env.get("GROVE_HEADLESS_SERVICE"))
    return slot.name


def compare_podgang(cmp: Comparison, exp: Expected, obj: dict[str, Any]) -> None:
    name, labels = _meta(obj)
    where = f"PodGang {exp.namespace}/{name}"
    cmp.member(f"{where} name", exp.gangs, name)
    _common_labels(cmp, exp, where, labels, "PodGang")
    for group in obj["spec"]["podgroups"]:
        slot = exp.cliques.get(group["name"])
        cmp.member(f"{where} podgroup", exp.cliques, group["name"])
        if slot is None:
            continue
        cmp.name(f"{where} podgroup {group['name']}: the PodGang of its PodClique", slot.podgang, name)
        for ref in group.get("podReferences") or []:
            cmp.value(f"{where} podReference {ref['name']} starts with its PodClique's name", True,
                      ref["name"].startswith(slot.name + "-"))


def compare_named(cmp: Comparison, exp: Expected, obj: dict[str, Any]) -> None:
    """Service, ServiceAccount, Role, RoleBinding, Secret, HPA and the agent's scale targets."""
    kind = obj["kind"]
    name, labels = _meta(obj)
    where = f"{kind} {exp.namespace}/{name}"
    n = exp.names
    if kind == "Service":
        cmp.member(f"{where} name", exp.services.values(), name)
        _common_labels(cmp, exp, where, labels, "Service")
    elif kind in ("ServiceAccount", "Role", "RoleBinding", "Secret"):
        grove = {"ServiceAccount": n["serviceAccount"], "Role": n["role"], "RoleBinding": n["roleBinding"],
                 "Secret": n["initContainerSATokenSecret"]}[kind]
        cmp.name(f"{where} name", grove, name)
        _common_labels(cmp, exp, where, labels, kind)
        if kind == "RoleBinding":
            cmp.name(f"{where} roleRef.name", n["role"], obj["roleRef"]["name"])
            for subject in obj.get("subjects") or []:
                cmp.name(f"{where} subject", n["serviceAccount"], subject["name"])
        if kind == "Secret":
            annotations = obj["metadata"].get("annotations") or {}
            sa = annotations.get("kubernetes.io/service-account.name")
            cmp.name(f"{where} service-account.name annotation", n["serviceAccount"], sa)
    elif kind == "HorizontalPodAutoscaler":
        _common_labels(cmp, exp, where, labels, "HorizontalPodAutoscaler")
        ref = obj["spec"]["scaleTargetRef"]
        targets = exp.cliques if ref["kind"] == "PodClique" else exp.scaling_groups
        cmp.member(f"{where} scaleTargetRef ({ref['kind']})", targets, ref["name"])
    elif kind in ("PodClique", "PodCliqueScalingGroup"):  # the agent's gitops.grove.io scale targets
        targets = exp.cliques if kind == "PodClique" else exp.scaling_groups
        cmp.member(f"{where} name", targets, name)


def compare_record(cmp: Comparison, exp: Expected, obj: dict[str, Any]) -> None:
    """The gitops.grove.io PodCliqueSet record: its scale targets name Grove's objects."""
    for target in obj["spec"].get("scaleTargets") or []:
        targets = exp.cliques if target["kind"] == "PodClique" else exp.scaling_groups
        cmp.member(f"PodCliqueSet record {exp.namespace}/{exp.pcs} scaleTarget", targets, target["name"])
