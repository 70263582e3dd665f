"""The two expansions of an autoscaled PodCliqueSet share the pods they have in common
(issue 35.4, ``expand.workload.ExpansionMemo``): the same objects, and Git's objects unchanged."""

from __future__ import annotations

from dataclasses import replace

from grove_gitops.api.podcliqueset import PodCliqueSet
from grove_gitops.expand.context import ExpandContext
from grove_gitops.expand.gitsplit import bumped_counts, git_objects
from grove_gitops.expand.plan import CliqueInstance, Planner
from grove_gitops.expand.pods import build_pods
from grove_gitops.expand.resourceclaims import ClaimRef
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


def _prefill_worker(pcs: PodCliqueSet, counts: dict[tuple[int, str], int] | None = None) -> CliqueInstance:
    return next(i for i in Planner(pcs, counts).instances(0) if i.group is not None and i.pods > 1)


def test_a_clique_memo_is_not_fooled_by_other_claims_counts_or_template_hashes() -> None:
    """Each input of a PodClique's pods decides: the memo's pods are always build_pods' pods."""
    pcs, ctx = _context()
    memo = ExpansionMemo()
    inst = _prefill_worker(pcs)
    hash_ = "h1"
    first = memo.pods(pcs, inst, ctx, hash_, 3, [[]] * inst.pods)
    assert first == build_pods(pcs, inst, ctx, hash_, 3, [[]] * inst.pods)
    claims = [[ClaimRef(f"c-{k}")] for k in range(inst.pods)]
    variants = [
        (inst, hash_, 3, claims),  # other claims
        (replace(inst, pods=inst.pods + 2), hash_, 3, [[]] * (inst.pods + 2)),  # more pods
        (replace(inst, pods=1), hash_, 3, [[]]),  # fewer pods
        (inst, "h2", 3, [[]] * inst.pods),  # another template hash
        (inst, hash_, 4, [[]] * inst.pods),  # another scaling-group pod count
        (inst, hash_, 3, [[]] * inst.pods),  # back to the first
    ]
    for variant, h, num, mounts in variants:
        assert memo.pods(pcs, variant, ctx, h, num, mounts) == build_pods(pcs, variant, ctx, h, num, mounts)
    again = memo.pods(pcs, replace(inst, pods=inst.pods + 1), ctx, hash_, 3, [[]] * (inst.pods + 1))
    back = memo.pods(pcs, inst, ctx, hash_, 3, [[]] * inst.pods)
    assert all(a is b for a, b in zip(again[: len(back)], back, strict=True))


def test_a_count_that_grows_reuses_every_pod_it_had() -> None:
    pcs, ctx = _context()
    memo = ExpansionMemo()
    inst = _prefill_worker(pcs)
    small = memo.pods(pcs, inst, ctx, "h", 3, [])
    large = memo.pods(pcs, replace(inst, pods=inst.pods + 3), ctx, "h", 3, [])
    assert len(large) == len(small) + 3
    assert all(a is b for a, b in zip(small, large[: len(small)], strict=True))
    assert large == build_pods(pcs, replace(inst, pods=inst.pods + 3), ctx, "h", 3, [])
