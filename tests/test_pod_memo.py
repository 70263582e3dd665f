"""The two expansions of an autoscaled PodCliqueSet share the pods they have in common
(issue 35.4, ``expand.workload.ExpansionMemo``): the same objects, and Git's objects unchanged."""

from __future__ import annotations

from grove_gitops.api.podcliqueset import PodCliqueSet
from grove_gitops.expand.context import ExpandContext
from grove_gitops.expand.gitsplit import bumped_counts, git_objects
from grove_gitops.expand.workload import ExpansionMemo, expand_pcs
from grove_gitops.render import plan_source
from tests.support import PROJECT


def _context() -> tuple[PodCliqueSet, ExpandContext]:
    plan = plan_source(PROJECT / "examples")
    (item,) = plan.items
    pcs = item.pcs
    assert pcs is not None
    return pcs, plan.context_for(pcs)


def test_the_render_above_the_floor_reuses_the_floors_pods() -> None:
    pcs, ctx = _context()
    memo = ExpansionMemo()
    floor = expand_pcs(pcs, ctx, memo=memo)
    above = expand_pcs(pcs, ctx, bumped_counts(pcs), memo)
    floor_pods = {p["metadata"]["name"]: p for p in floor.objects if p["kind"] == "Pod"}
    above_pods = {p["metadata"]["name"]: p for p in above.objects if p["kind"] == "Pod"}
    # The bump adds prefill replica 2's pods; every pod of the floor is in both, as one object.
    assert set(floor_pods) < set(above_pods)
    assert all(above_pods[name] is pod for name, pod in floor_pods.items())


def test_git_objects_are_the_same_with_and_without_the_memo() -> None:
    pcs, ctx = _context()
    shared = git_objects(pcs, ctx, memo=ExpansionMemo())
    fresh_floor = expand_pcs(pcs, ctx)
    fresh_above = {(o["kind"], o["metadata"]["name"]): o for o in expand_pcs(pcs, ctx, bumped_counts(pcs)).objects}
    expected = [o for o in fresh_floor.objects if fresh_above.get((o["kind"], o["metadata"]["name"])) == o]
    assert shared == expected
    assert any(o["kind"] == "Pod" for o in shared)
