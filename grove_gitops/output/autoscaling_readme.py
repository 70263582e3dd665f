"""What a shard README shows of an autoscaled workload: the gangs at its floor, the agent's
included, and how far each autoscaled unit grows (issue 34.6).

Git holds only what does not depend on a live count (docs/autoscaling.md). For a standalone
clique that autoscales, that leaves out the base PodGang (its ``podReferences`` list the
clique's pods): the README listed no gang and drew no diagram. Here the workload is expanded
once more, every unit at its floor (``minReplicas``), which is what the cluster holds once the
agent has caught up at the lowest count; the way up to ``maxReplicas`` is described from the
scale units, by arithmetic, never expanded: a maximum of thousands costs a few numbers, not
thousands of objects.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from grove_gitops.expand.gitsplit import object_key
from grove_gitops.expand.scaling import PCSG_KIND, ScaleUnit, floor_counts, scale_units
from grove_gitops.output import diagram
from grove_gitops.render import PlannedPCS, RenderedObject, RenderPlan

#: The sentence under the README's "Gangs at the floor" heading.
FLOOR_NOTE = (
    "This workload autoscales: Git holds the objects that do not depend on a live count, and the "
    "in-cluster agent makes the rest from the count its autoscaler sets (docs/autoscaling.md). "
    "The gangs and the diagram below are the workload at its floor (every autoscaled unit at "
    "minReplicas), where the agent starts; \"Autoscaling\" says what it adds up to maxReplicas."
)


def gang_row(obj: dict[str, Any]) -> tuple[str, str, str]:
    """A README row of a PodGang: its name, its scheduler, its podgroups with their minReplicas."""
    groups = ", ".join(f"`{g['name']}` ({g['minReplicas']})" for g in obj["spec"]["podgroups"])
    scheduler = (obj["metadata"].get("labels") or {}).get("grove.io/scheduler-name", "")
    return str(obj["metadata"]["name"]), str(scheduler), groups


@dataclass(frozen=True)
class AgentPicture:
    """An autoscaled workload at its floor, Git's objects and the agent's together."""

    replicas: int
    units: tuple[ScaleUnit, ...]
    #: Every non-Pod object at the floor, for the diagram.
    objects: tuple[dict[str, Any], ...]
    #: Every PodGang at the floor, in expansion order.
    gang_rows: tuple[tuple[str, str, str], ...]
    gang_order: dict[str, int]
    pods: int


def agent_picture(
    plan: RenderPlan, item: PlannedPCS, floor: Sequence[RenderedObject] | None = None
) -> AgentPicture | None:
    """The workload at its floor, or None when nothing in it scales (Git then holds it all).
    ``floor``: the objects at the floor when the caller has them (:meth:`RenderPlan.expand`
    hands them out with Git's), else they are expanded here."""
    pcs = item.pcs
    if pcs is None or not scalable(item):
        return None
    if floor is None:
        floor, _ = plan.expand(item, floor_counts(pcs))
    objs = [o.obj for o in floor]
    gangs = [o for o in objs if diagram.is_podgang(o)]
    return AgentPicture(
        replicas=pcs.spec.replicas,
        units=tuple(u for u in scale_units(pcs) if u.scalable),
        objects=tuple(o for o in objs if o.get("kind") != "Pod"),
        gang_rows=tuple(gang_row(g) for g in gangs),
        gang_order={str(object_key(g)[3]): i for i, g in enumerate(gangs)},
        pods=sum(1 for o in objs if o.get("kind") == "Pod"),
    )


def scalable(item: PlannedPCS) -> bool:
    """Whether some unit of ``item`` autoscales between two different bounds."""
    return item.pcs is not None and any(u.scalable for u in scale_units(item.pcs))


def _scaled_gangs(unit: ScaleUnit, count: int) -> int:
    """Scaled PodGangs one PodCliqueSet replica holds for ``unit`` at ``count``: Grove gives a
    scaling group's replicas from minAvailable on a gang each; a clique's pods stay in the base gang."""
    return max(0, count - unit.min_available) if unit.kind == PCSG_KIND else 0


def scaling_lines(agent: AgentPicture) -> list[str]:
    """The README's "Autoscaling" section: per unit its bounds and what the way from the
    floor to the maximum adds, then the whole workload at both ends."""
    lines = [
        "## Autoscaling",
        "",
        "| unit | kind | floor (minReplicas, in Git) | maximum (maxReplicas) | pods per replica | "
        "scaled PodGangs per PodCliqueSet replica: floor → maximum |",
        "| --- | --- | ---: | ---: | ---: | --- |",
    ]
    added_pods = added_gangs = 0
    for u in agent.units:
        low, high = _scaled_gangs(u, u.min_replicas), _scaled_gangs(u, u.max_replicas)
        added_pods += (u.max_replicas - u.min_replicas) * u.pods_per_replica * agent.replicas
        added_gangs += (high - low) * agent.replicas
        gangs = f"{low} → {high}" if u.kind == PCSG_KIND else "0 (its pods are in the base gang, which grows)"
        lines.append(
            f"| `{u.name}` | {u.kind} | {u.min_replicas} | {u.max_replicas} | {u.pods_per_replica} | {gangs} |"
        )
    n_gangs = len(agent.gang_rows)
    lines += [
        "",
        f"At the floor the workload has {agent.pods} pods in {n_gangs} PodGang(s); at every maximum, "
        f"{agent.pods + added_pods} pods in {n_gangs + added_gangs} PodGang(s). The agent creates and "
        "deletes what lies between (highest index first on scale-in).",
    ]
    return lines


