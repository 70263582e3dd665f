"""PodGangs: the gang description every scheduler backend translates (§5).

Deliberate differences from Grove: ``podReferences`` are filled at render time (Grove fills
them as pods appear; our pod names are known up front), no status is written (the
gate-lifter sets ``Initialized``), and no ``ownerReferences``.
"""

from __future__ import annotations

from grove_gitops.api.base import ObjectMeta
from grove_gitops.api.podcliqueset import PodCliqueSet
from grove_gitops.api.podgang import (
    NamespacedName,
    PodGang,
    PodGangSpec,
    PodGroup,
    TopologyConstraintGroupConfig,
)
from grove_gitops.expand import labels as L
from grove_gitops.expand import names
from grove_gitops.expand.plan import CliqueInstance
from grove_gitops.expand.topology import Translator


def _metadata(pcs: PodCliqueSet, name: str, scheduler: str) -> ObjectMeta:
    labels = {k: v for k, v in (pcs.metadata.labels or {}).items() if not k.startswith("grove.io/")}
    labels.update(L.default_labels(pcs.name))
    labels[L.COMPONENT] = L.COMPONENT_PODGANG
    labels[L.SCHEDULER_NAME] = scheduler
    annotations = {k: v for k, v in (pcs.metadata.annotations or {}).items() if not k.startswith("grove.io/")}
    return ObjectMeta(name=name, namespace=pcs.namespace, labels=labels, annotations=annotations or None)


def build_podgangs(
    pcs: PodCliqueSet,
    replica: int,
    instances: list[CliqueInstance],
    pod_names: dict[str, list[str]],
    scheduler: str,
    translator: Translator,
) -> list[PodGang]:
    """Base gang ``P-i`` first, then the scaled gangs of each scaling group in order."""
    by_gang: dict[str, list[CliqueInstance]] = {}
    for inst in instances:
        by_gang.setdefault(inst.podgang, []).append(inst)
    base = names.base_podgang_name(pcs.name, replica)
    tmpl = pcs.spec.template
    gangs: list[PodGang] = []
    for gang_name, members in by_gang.items():
        podgroups = [
            PodGroup(
                name=inst.fqn,
                podReferences=[NamespacedName(namespace=pcs.namespace, name=n) for n in sorted(pod_names[inst.fqn])],
                minReplicas=inst.template.spec.minAvailable or 0,
                topologyConstraint=translator.translate(inst.template.topologyConstraint),
            )
            for inst in members
        ]
        spec = PodGangSpec(podgroups=podgroups, priorityClassName=tmpl.priorityClassName or None)
        if gang_name == base:
            spec.topologyConstraint = translator.translate(tmpl.topologyConstraint)
            configs = []
            if translator.enabled:
                for group in pcs.scaling_groups:
                    if group.topologyConstraint is None:
                        continue
                    for j in range(group.minAvailable or 1):
                        gfqn = f"{names.pcsg_name(pcs.name, replica, group.name)}-{j}"
                        configs.append(
                            TopologyConstraintGroupConfig(
                                name=gfqn,
                                podGroupNames=[f"{gfqn}-{c}" for c in group.cliqueNames],
                                topologyConstraint=translator.translate(group.topologyConstraint),
                            )
                        )
            spec.topologyConstraintGroupConfigs = configs or None
        else:
            group_cfg = members[0].group
            own = group_cfg.topologyConstraint if group_cfg is not None else None
            spec.topologyConstraint = translator.translate(own if own is not None else tmpl.topologyConstraint)
        meta = _metadata(pcs, gang_name, scheduler)
        translated = (
            spec.topologyConstraint is not None
            or any(pg.topologyConstraint is not None for pg in podgroups)
            or any(c.topologyConstraint is not None for c in spec.topologyConstraintGroupConfigs or [])
        )
        if translated and translator.topology_name:
            meta.annotations = {**(meta.annotations or {}), L.TOPOLOGY_NAME: translator.topology_name}
        gangs.append(PodGang(metadata=meta, spec=spec))
    return gangs
