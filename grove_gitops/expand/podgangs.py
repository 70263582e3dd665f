"""PodGangs: the gang description every scheduler backend translates (§5).

Deliberate differences from Grove: ``podReferences`` are filled at render time (Grove fills
them as pods appear; our pod names are known up front), no status is written (the
in-cluster agent sets ``Initialized``), and no ``ownerReferences``.

Every PodGang also carries ``gitops.grove.io/day2`` (:func:`day2_annotation`, added by
``expand.workload`` after the backend translated the gang, like ``gitops.grove.io/gang-objects``,
so backend objects that copy PodGang annotations stay as Grove makes them): the agent
rolls updates, terminates gangs and scales in without a PodCliqueSet in the cluster, so the
few PodCliqueSet facts it needs travel on the gangs of each replica (docs/day2.md).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from grove_gitops.api.podcliqueset import PodCliqueSet
from grove_gitops.api.podgang import API_VERSION
from grove_gitops.expand import labels as L
from grove_gitops.expand import names
from grove_gitops.expand.plan import CliqueInstance
from grove_gitops.expand.scaling import scale_units
from grove_gitops.expand.topology import Translator
from grove_gitops.fields.k8snames import parse_go_duration
from grove_gitops.validation.defaulting import DEFAULT_TERMINATION_DELAY

#: Grove's strategy when ``spec.updateStrategy`` (or its ``type``) is absent.
DEFAULT_UPDATE_STRATEGY = "RollingRecreate"


def termination_delay_seconds(pcs: PodCliqueSet) -> int:
    """The template's ``terminationDelay`` in whole seconds, Grove's 4 h when absent.

    Rounded up, so the agent never terminates a gang earlier than the user asked. Validation
    has already rejected a delay that does not parse or is not positive.
    """
    text = pcs.spec.template.terminationDelay or DEFAULT_TERMINATION_DELAY
    seconds = parse_go_duration(text)
    if seconds is None or seconds <= 0:  # validation rejects these before render
        seconds = parse_go_duration(DEFAULT_TERMINATION_DELAY) or 0.0
    return math.ceil(seconds)


def day2_annotation(pcs: PodCliqueSet, replica: int) -> str:
    """The ``gitops.grove.io/day2`` value of every PodGang of PodCliqueSet replica ``replica``.

    Compact JSON with sorted keys, so the same source always renders the same bytes:
    ``podCliqueSet``, ``replicaIndex``, ``updateStrategy``, ``terminationDelaySeconds``,
    ``cliques`` (the standalone PodCliques ``P-i-<clique>``: name, minAvailable, replicas) and
    ``scalingGroups`` (``P-i-<group>``: name, minAvailable, replicas and the template clique
    names; replica ``j``'s PodClique of clique ``c`` is ``<name>-<j>-<c>``). An autoscaled
    entry says ``"scaleTarget": true`` and its ``replicas`` is the floor: the live count is
    on the scale target of the same name, so the annotation, and every PodGang carrying it, is
    the same at every count (docs/autoscaling.md).
    """
    floors = {u.name: u.min_replicas for u in scale_units(pcs)}
    grouped = {c for g in pcs.scaling_groups for c in g.cliqueNames}
    strategy = pcs.spec.updateStrategy.type if pcs.spec.updateStrategy is not None else None
    value = {
        "podCliqueSet": pcs.name,
        "replicaIndex": replica,
        "updateStrategy": strategy or DEFAULT_UPDATE_STRATEGY,
        "terminationDelaySeconds": termination_delay_seconds(pcs),
        "cliques": [
            {
                "name": names.pclq_name(pcs.name, replica, c.name),
                "minAvailable": c.spec.minAvailable if c.spec.minAvailable is not None else c.spec.replicas,
                "replicas": floors.get(c.name, c.spec.replicas),
                **({"scaleTarget": True} if c.name in floors else {}),
            }
            for c in pcs.cliques
            if c.name not in grouped
        ],
        "scalingGroups": [
            {
                "name": names.pcsg_name(pcs.name, replica, g.name),
                "minAvailable": g.minAvailable if g.minAvailable is not None else 1,
                "replicas": floors.get(g.name, g.replicas if g.replicas is not None else 1),
                "cliques": list(g.cliqueNames),
                **({"scaleTarget": True} if g.name in floors else {}),
            }
            for g in pcs.scaling_groups
        ],
    }
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _metadata(pcs: PodCliqueSet, name: str, scheduler: str) -> dict[str, Any]:
    labels = {k: v for k, v in (pcs.metadata.labels or {}).items() if not k.startswith("grove.io/")}
    labels.update(L.default_labels(pcs.name))
    labels[L.COMPONENT] = L.COMPONENT_PODGANG
    labels[L.SCHEDULER_NAME] = scheduler
    meta: dict[str, Any] = {"name": name, "namespace": pcs.namespace, "labels": labels}
    annotations = {k: v for k, v in (pcs.metadata.annotations or {}).items() if not k.startswith("grove.io/")}
    if annotations:
        meta["annotations"] = annotations
    return meta


def build_podgangs(
    pcs: PodCliqueSet,
    replica: int,
    instances: list[CliqueInstance],
    pod_names: dict[str, list[str]],
    scheduler: str,
    translator: Translator,
) -> list[dict[str, Any]]:
    """Base gang ``P-i`` first, then the scaled gangs of each scaling group in order."""
    return [
        build_podgang(pcs, replica, gang_name, members, pod_names, scheduler, translator)
        for gang_name, members in gang_members(instances).items()
    ]


def gang_members(instances: list[CliqueInstance]) -> dict[str, list[CliqueInstance]]:
    """The PodCliques of each PodGang of one PodCliqueSet replica, gangs in first-seen order."""
    by_gang: dict[str, list[CliqueInstance]] = {}
    for inst in instances:
        by_gang.setdefault(inst.podgang, []).append(inst)
    return by_gang


def build_podgang(
    pcs: PodCliqueSet,
    replica: int,
    gang_name: str,
    members: list[CliqueInstance],
    pod_names: Mapping[str, list[str]],
    scheduler: str,
    translator: Translator,
) -> dict[str, Any]:
    """PodGang ``gang_name`` of PodCliqueSet replica ``replica``: a function of these arguments
    alone (``pod_names`` read for ``members`` only), which lets an expansion memo reuse it.

    Built as the object itself, in the field order and with the absent fields of
    :class:`~grove_gitops.api.podgang.PodGang` dumped with ``exclude_none`` (Go's ``omitempty``):
    a model per pod reference cost a tenth of a mid-size render's expansion (issue 35.4);
    tests/test_podgang_objects.py holds the two to each other."""
    base = names.base_podgang_name(pcs.name, replica)
    tmpl = pcs.spec.template
    ns = pcs.namespace
    podgroups = []
    for inst in members:
        group: dict[str, Any] = {
            "name": inst.fqn,
            "podReferences": [{"namespace": ns, "name": n} for n in sorted(pod_names[inst.fqn])],
            "minReplicas": inst.template.spec.minAvailable or 0,
        }
        constraint = translator.translate(inst.template.topologyConstraint)
        if constraint is not None:
            group["topologyConstraint"] = constraint
        podgroups.append(group)
    spec: dict[str, Any] = {"podgroups": podgroups}
    configs: list[dict[str, Any]] = []
    if gang_name == base:
        gang_constraint = translator.translate(tmpl.topologyConstraint)
        if translator.enabled:
            for scaling_group in pcs.scaling_groups:
                if scaling_group.topologyConstraint is None:
                    continue
                for j in range(scaling_group.minAvailable or 1):
                    gfqn = f"{names.pcsg_name(pcs.name, replica, scaling_group.name)}-{j}"
                    pod_groups = [f"{gfqn}-{c}" for c in scaling_group.cliqueNames]
                    config: dict[str, Any] = {"name": gfqn, "podGroupNames": pod_groups}
                    constraint = translator.translate(scaling_group.topologyConstraint)
                    if constraint is not None:
                        config["topologyConstraint"] = constraint
                    configs.append(config)
    else:
        group_cfg = members[0].group
        own = group_cfg.topologyConstraint if group_cfg is not None else None
        gang_constraint = translator.translate(own if own is not None else tmpl.topologyConstraint)
    if gang_constraint is not None:
        spec["topologyConstraint"] = gang_constraint
    if configs:
        spec["topologyConstraintGroupConfigs"] = configs
    if tmpl.priorityClassName:
        spec["priorityClassName"] = tmpl.priorityClassName
    meta = _metadata(pcs, gang_name, scheduler)
    translated = (
        gang_constraint is not None
        or any("topologyConstraint" in pg for pg in podgroups)
        or any("topologyConstraint" in c for c in configs)
    )
    if translated and translator.topology_name:
        meta["annotations"] = {**meta.get("annotations", {}), L.TOPOLOGY_NAME: translator.topology_name}
    return {"apiVersion": API_VERSION, "kind": "PodGang", "metadata": meta, "spec": spec}
