"""The gangs as placement sees them: a tree of scopes, each packing its pods into one domain.

A PodGang becomes a root scope (the gang's own ``pack`` constraint) whose children are the
scaling-group replicas of ``topologyConstraintGroupConfigs`` and the podgroups outside them;
a podgroup is a leaf holding its pods. Only the first ``minReplicas`` pods of a podgroup are
needed for the gang to fit; the others are ``extra`` and placed best-effort at the end.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from grove_gitops.feasibility.demand import NodeFilter


@dataclass(frozen=True)
class Run:
    """``count`` pods with the same requests and node filter."""

    requests: tuple[tuple[str, int], ...]
    node_filter: NodeFilter
    count: int


@dataclass
class Scope:
    label: str
    required: str | None = None
    preferred: str | None = None
    children: list[Scope] = field(default_factory=list)
    runs: list[Run] = field(default_factory=list)
    extra: list[Run] = field(default_factory=list)

    def demand(self) -> dict[str, int]:
        """Total requests of the pods the gang needs (``minReplicas`` per podgroup)."""
        out: dict[str, int] = {}
        for run in self.runs:
            for name, amount in run.requests:
                out[name] = out.get(name, 0) + amount * run.count
        for child in self.children:
            for name, amount in child.demand().items():
                out[name] = out.get(name, 0) + amount
        return out

    def leaves(self) -> list[Scope]:
        return ([self] if self.runs or self.extra else []) + [leaf for c in self.children for leaf in c.leaves()]

    def pods(self) -> int:
        return sum(r.count for r in self.runs) + sum(c.pods() for c in self.children)

    def extra_pods(self) -> int:
        return sum(r.count for r in self.extra) + sum(c.extra_pods() for c in self.children)


@dataclass
class Gang:
    namespace: str
    name: str
    pcs: str
    #: ``base`` or ``scaled``; a scaled gang names its base gang.
    kind: str
    base: str | None
    file: str
    scope: Scope

    @property
    def key(self) -> tuple[str, str]:
        return (self.namespace, self.name)
