"""Which PodCliques exist, which PodGang each belongs to, and what each waits for.

Grove creates PodClique objects and lets their controller make pods; we never emit
PodCliques (they are operator internals), but every Grove name, label and dependency is
derived from them, so the plan keeps one :class:`CliqueInstance` per PodClique Grove would
have created (``spec/grove-desired-state.md`` §4.1, §4.6).

Deliberate fix: Grove finds a PodClique's template with ``strings.HasSuffix`` on the FQN,
taking the first match, so with cliques ``[worker, pworker]`` the PodClique ``P-0-pworker``
is built from ``worker`` (§3, surprise 8). We use the template the PodClique was created
from.
"""

from __future__ import annotations

from dataclasses import dataclass

from grove_gitops.api.podcliqueset import (
    EXPLICIT,
    IN_ORDER,
    PodCliqueScalingGroupConfig,
    PodCliqueSet,
    PodCliqueTemplateSpec,
)
from grove_gitops.expand import names
from grove_gitops.expand.scaling import CountOf, Counts


@dataclass(frozen=True)
class Dependency:
    fqn: str
    min_available: int


@dataclass(frozen=True)
class CliqueInstance:
    pcs_replica: int
    template: PodCliqueTemplateSpec
    fqn: str
    podgang: str
    base_podgang: str | None
    group: PodCliqueScalingGroupConfig | None
    group_replica: int
    starts_after: tuple[Dependency, ...]
    group_fqn: str | None = None
    #: Pods of this PodClique: the template's replicas, or the live count of an autoscaled
    #: standalone clique (:mod:`.scaling`).
    pods: int = 0


def _min_available(t: PodCliqueTemplateSpec) -> int:
    return t.spec.minAvailable or 0


def _group_min(g: PodCliqueScalingGroupConfig) -> int:
    return g.minAvailable if g.minAvailable is not None else 1


def _group_replicas(g: PodCliqueScalingGroupConfig) -> int:
    return g.replicas if g.replicas is not None else 1


class Planner:
    def __init__(self, pcs: PodCliqueSet, counts: Counts | None = None) -> None:
        self.pcs = pcs
        self.count = CountOf(pcs, counts)
        self.by_name = {c.name: c for c in pcs.cliques}
        self.index = {c.name: i for i, c in enumerate(pcs.cliques)}
        self.group_of: dict[str, PodCliqueScalingGroupConfig] = {}
        for g in pcs.scaling_groups:
            for c in g.cliqueNames:
                self.group_of.setdefault(c, g)
        self.startup = pcs.spec.template.cliqueStartupType

    def _base(self, replica: int, dep: str) -> list[Dependency]:
        """All base-gang PodCliques of ``dep``: every base replica when it is in a PCSG."""
        template = self.by_name.get(dep)
        if template is None:
            return []
        group = self.group_of.get(dep)
        if group is None:
            return [Dependency(names.pclq_name(self.pcs.name, replica, dep), _min_available(template))]
        return [
            Dependency(names.pcsg_pclq_name(self.pcs.name, replica, group.name, j, dep), _min_available(template))
            for j in range(_group_min(group))
        ]

    def _deps(
        self,
        replica: int,
        template: PodCliqueTemplateSpec,
        group: PodCliqueScalingGroupConfig | None,
        group_replica: int,
        scaled: bool,
    ) -> tuple[Dependency, ...]:
        if self.startup == IN_ORDER:
            position = self.index[template.name]
            wanted = [self.pcs.cliques[position - 1].name] if position > 0 else []
        elif self.startup == EXPLICIT:
            wanted = [d for d in template.spec.startsAfter or [] if d]
        else:
            return ()
        out: list[Dependency] = []
        for dep in wanted:
            if scaled:
                assert group is not None
                if dep in group.cliqueNames:
                    out.append(
                        Dependency(
                            names.pcsg_pclq_name(self.pcs.name, replica, group.name, group_replica, dep),
                            _min_available(self.by_name[dep]),
                        )
                    )
            else:
                out.extend(self._base(replica, dep))
        return tuple(out)

    def instances(self, replica: int) -> list[CliqueInstance]:
        """Every PodClique of one PCS replica, in base-PodGang podgroup order, then scaled."""
        pcs = self.pcs.name
        base_gang = names.base_podgang_name(pcs, replica)
        out: list[CliqueInstance] = []
        for template in self.pcs.cliques:
            if template.name in self.group_of:
                continue
            out.append(
                CliqueInstance(
                    replica,
                    template,
                    names.pclq_name(pcs, replica, template.name),
                    base_gang,
                    None,
                    None,
                    0,
                    self._deps(replica, template, None, 0, scaled=False),
                    pods=self.count(replica, template.name, template.spec.replicas),
                )
            )
        for group in self.pcs.scaling_groups:
            minimum = _group_min(group)
            for j in range(self.count(replica, group.name, _group_replicas(group))):
                scaled = j >= minimum
                gang = names.scaled_podgang_name(pcs, replica, group.name, j - minimum) if scaled else base_gang
                for cname in group.cliqueNames:
                    template = self.by_name[cname]
                    out.append(
                        CliqueInstance(
                            replica,
                            template,
                            names.pcsg_pclq_name(pcs, replica, group.name, j, cname),
                            gang,
                            base_gang if scaled else None,
                            group,
                            j,
                            self._deps(replica, template, group, j, scaled),
                            names.pcsg_name(pcs, replica, group.name),
                            template.spec.replicas,
                        )
                    )
        return out
