"""Which rendered objects Git holds and which the agent materialises from live counts.

The rule (docs/autoscaling.md): an object whose content depends on a live count belongs to
the cluster; everything else stays in Git. Found by expanding the same PodCliqueSet twice,
every scale unit at its floor and one above it: an object of the floor render that the second
render holds with the same content is count-independent (the count only ever adds pods,
PodCliques and gangs, or grows lists of them, so one step shows every object that changes),
and Git renders it. The rest of the floor render (a base PodGang whose ``podReferences`` list
an autoscaled clique's pods, say) and everything above the floor is the agent's. No
backend-specific rule: the backends' objects are judged the same way.

The render one above the floor is built for this comparison alone, so cheaply (issue 35.4):

- it shares with the floor's every part whose inputs the bump leaves equal
  (:class:`~.workload.ExpansionMemo`): those are the same objects, compared in O(1);
- the pods of a PodClique the floor does not have (a scaling-group replica the bump adds) are
  not built: their PodGangs list them by placeholder names
  (:func:`~.workload.placeholder_name`). That changes no verdict. Only objects at a key of the
  floor's are compared, and such a pod's key is none: a pod's name is ``<podclique>-<index>-``
  and a hash, so it belongs to one PodClique and index, which the floor lacks. Its name reaches
  nothing but the ``podReferences`` of its PodGang, and from there the backend's objects: the
  PodGang differs from any floor PodGang of its name with either name (it lists a pod no
  floor pod is, under either name), and a backend's objects read a PodGang's pod references
  only through their number (``backendapi``: ``gang_objects``; tests/test_gitsplit_memo.py
  checks it for every backend), which placeholders keep.
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
    above = {object_key(o): o for o in expand_pcs(pcs, ctx, bumped, memo, floor.pod_cliques).objects}
    return [o for o in floor.objects if _same(above.get(object_key(o)), o)]


def _same(above: dict[str, Any] | None, floor: dict[str, Any]) -> bool:
    return above is floor or above == floor


def keys(objects: Iterable[dict[str, Any]]) -> set[ObjectKey]:
    return {object_key(o) for o in objects}
