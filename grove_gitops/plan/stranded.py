"""Gangs a change strands: running pods whose changed PodGang no longer fits the cluster.

A topology change (decode ``pack.required: rack -> host`` on a 16-GPU scaling group over 8-GPU
nodes) changes the PodGang's constraints and not the pods: no pod is replaced, so the plan
has no step, and the gang's pods keep running where they were placed. The scheduler reads
the PodGang again only when it places pods of the gang: at the next reschedule — a node lost,
a rollout, a scale-out — and then the gang does not fit and its pods stay Pending
(spec/grove-day2.md §2.5: a replacement pod joins the same PodGang, under its current
constraints). The PR is what makes that happen later, so the plan says so now.

The "does not fit" answer is the feasibility check's on HEAD's node inventory
(:func:`grove_gitops.feasibility.check.unfit_gangs`, carried by
:attr:`~grove_gitops.diff.report.Side.unfit_gangs`): without an inventory nothing is stranded
as far as the plan can tell. A gang is reported only when its PodGang differs between the
sides (a gang that did not fit before the PR is not the PR's doing) and it had pods on both.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # only types: pods -> terms, so no circle either way
    from grove_gitops.plan.pods import Workload

PODGANG_LABEL = "grove.io/podgang"
RESCHEDULE = "node loss, rollout, scale-out"


@dataclass(frozen=True)
class Stranded:
    """A running gang whose PodGang changes into one that does not fit the node inventory."""

    gang: str
    reason: str
    #: Its pods (slots on both sides), and how many of them this rollout replaces.
    pods: int
    replaced: int

    def sentence(self, wrap: Callable[[str], str] = str, escape: Callable[[str], str] = str) -> str:
        """What happens, in words; ``wrap`` formats the gang's name and ``escape`` the reason
        (a code span and inert text in Markdown: both come from the rendered tree)."""
        name = wrap(self.gang)
        if self.replaced:
            when = (
                f"this rollout replaces {self.replaced} of its {self.pods} pods and the replacements cannot be "
                "scheduled: they stay Pending"
            )
            if self.replaced < self.pods:
                when += f"; the other {self.pods - self.replaced} keep running until their next reschedule ({RESCHEDULE})"
        else:
            when = (
                f"its {self.pods} running pods keep running, and the gang becomes unschedulable at its next "
                f"reschedule ({RESCHEDULE})"
            )
        return f"STRANDED gang {name}: its changed PodGang does not fit the node inventory ({escape(self.reason)}); {when}"


def stranded_gangs(
    base: Workload, head: Workload, changed: Iterable[str], unfit: Mapping[tuple[str, str], str]
) -> tuple[Stranded, ...]:
    """The gangs of one PodCliqueSet its change strands (see the module doc). ``changed``
    are the slots whose pod this rollout replaces. Linear in pods plus gangs."""
    if not unfit:
        return ()
    replaced = set(changed)
    pods: dict[str, list[str]] = {}
    for host in base.pods.keys() & head.pods.keys():
        meta = head.pods[host].obj.obj.get("metadata")
        labels = meta.get("labels") if isinstance(meta, dict) else None
        gang = labels.get(PODGANG_LABEL) if isinstance(labels, dict) else None
        if isinstance(gang, str) and gang:
            pods.setdefault(gang, []).append(host)
    before = {k.name: text for k, text in base.texts.items() if k.kind == "PodGang"}
    out = []
    for key, text in sorted(head.texts.items()):
        if key.kind != "PodGang" or (key.namespace, key.name) not in unfit:
            continue
        hosts = pods.get(key.name, [])
        if key.name not in before or before[key.name] == text or not hosts:
            continue
        reason = unfit[(key.namespace, key.name)]
        out.append(Stranded(key.name, reason, len(hosts), sum(1 for h in hosts if h in replaced)))
    return tuple(out)
