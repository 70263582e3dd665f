"""Which rendered objects Git holds and which the agent materialises from live counts.

The rule (docs/autoscaling.md): an object whose content depends on a live count belongs to
the cluster; everything else stays in Git. Found by expanding the same PodCliqueSet twice,
every scale unit at its floor and one above it: an object of the floor render that the second
render holds with the same content is count-independent (the count only ever adds pods,
PodCliques and gangs, or grows lists of them, so one step shows every object that changes),
and Git renders it. The rest of the floor render (a base PodGang whose ``podReferences`` list
an autoscaled clique's pods, say) and everything above the floor is the agent's. No
backend-specific rule: the backends' objects are judged the same way.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from grove_gitops.api.podcliqueset import PodCliqueSet
from grove_gitops.expand.context import ExpandContext
from grove_gitops.expand.scaling import scale_units
from grove_gitops.expand.workload import Expansion, ExpansionMemo, expand_pcs

ObjectKey = tuple[str, str, str, str]  # (apiVersion, kind, namespace, name)


def object_key(obj: dict[str, Any]) -> ObjectKey:
    meta = obj.get("metadata") or {}
    return (str(obj.get("apiVersion", "")), str(obj.get("kind", "")), str(meta.get("namespace") or ""),
            str(meta.get("name", "")))


def bumped_counts(pcs: PodCliqueSet) -> dict[tuple[int, str], int]:
    """Every scalable unit one above its floor, in every PodCliqueSet replica."""
    return {
        (i, u.name): u.min_replicas + 1 for i in range(pcs.spec.replicas) for u in scale_units(pcs) if u.scalable
    }


def git_objects(
    pcs: PodCliqueSet, ctx: ExpandContext, floor: Expansion | None = None, memo: ExpansionMemo | None = None
) -> list[dict[str, Any]]:
    """The objects of the floor render that Git holds (all of them when nothing scales).
    ``memo``: the one ``floor`` was expanded with, so the render one above reuses every
    object whose inputs the bump does not change (the same objects, compared in O(1))."""
    memo = memo if memo is not None else ExpansionMemo()
    floor = floor if floor is not None else expand_pcs(pcs, ctx, memo=memo)
    bumped = bumped_counts(pcs)
    if not bumped:
        return floor.objects
    above = {object_key(o): o for o in expand_pcs(pcs, ctx, bumped, memo).objects}
    return [o for o in floor.objects if _same(above.get(object_key(o)), o)]


def _same(above: dict[str, Any] | None, floor: dict[str, Any]) -> bool:
    return above is floor or above == floor


def keys(objects: Iterable[dict[str, Any]]) -> set[ObjectKey]:
    return {object_key(o) for o in objects}
