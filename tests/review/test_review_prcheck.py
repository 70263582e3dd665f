"""Issue 33.1 done-when: the PR check of a review-only repository (grove.io PodCliqueSets that
Grove's operator reconciles) runs on a real git repository and its plan is in Grove's order,
with two units down at once where Grove rolls them together (spec/grove-day2.md §2.2)."""

from __future__ import annotations

from pathlib import Path

from grove_gitops.prcheck.compose import Options, compose
from grove_gitops.prcheck.verdict import failures
from tests.prcheck.prhelpers import without_feasibility_shim
from tests.review.reviewsource import review_repo


def test_review_only_pr_check_plans_in_groves_order(tmp_path: Path) -> None:
    repo, base, head = review_repo(tmp_path)
    opts = Options(repo=repo, base=base, head=head, source_path="deploy", cli=without_feasibility_shim(tmp_path))
    result = compose(opts)
    assert result.status.diff == "ok" and result.status.plan == "ok", result.status
    assert result.status.errors == 0
    assert failures(result.status, "outage") == []  # two routers, two prefill replicas: no outage
    text = "".join(result.parts)
    # it says who rolls out: Grove's operator, no agent expected
    assert "Review-only mode (RenderConfiguration `mode: review`)" in text
    assert "no grove-gitops agent is expected" in text
    assert "RollingRecreate; Grove's order; 16 pods replaced in 8 steps (4 rounds); at most 4 unavailable at once" in text
    # round 1 of replica 0: the scaling group's replica 0 and the router's first pod, together
    assert "| 1 | 1 | 0 | `scaling group serve-0-prefill replica 0` |" in text
    assert "| 2 | 1 | 0 | `podclique serve-0-router` | `serve-0-router-0` |" in text
    assert "| 3 | 2 | 0 | `scaling group serve-0-prefill replica 1` |" in text
    # replica 1 only after replica 0 (one PodCliqueSet replica at a time)
    assert "| 5 | 3 | 1 | `scaling group serve-1-prefill replica 0` |" in text
    # where it differs from the agent, which is serial
    assert "grove-gitops' agent would take the same 8 steps one at a time, at most 3 down at once" in text


def test_the_same_repo_in_full_mode_plans_the_agents_order(tmp_path: Path) -> None:
    """Without ``mode: review`` the plan is the agent's, one step at a time (the contrast the
    review-mode plan is measured against)."""
    config = "apiVersion: gitops.grove.io/v1alpha1\nkind: RenderConfiguration\nmetadata:\n  name: full\n"
    repo, base, head = review_repo(tmp_path, config=config)
    opts = Options(repo=repo, base=base, head=head, source_path="deploy", cli=without_feasibility_shim(tmp_path))
    text = "".join(compose(opts).parts)
    assert "Review-only mode" not in text and "Grove's order" not in text
    assert "16 pods replaced in 8 steps; at most 3 unavailable at once" in text
    assert "| 1 | 0 | `podclique serve-0-router` | `serve-0-router-0` |" in text
