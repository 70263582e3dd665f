"""``fail-on`` as a list of gates the workflow sets (issue 34.2).

``pr-check verdict --fail-on`` (and the Action's ``fail-on`` input) takes
``error,outage,infeasible,warning``, comma-separated, repeated or both; ``infeasible`` gates on
the node inventory whatever the source tree under review says: its ``feasibility`` mode, or
an inventory the pull request deletes.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from grove_gitops.cli.prcheck import pr_check
from grove_gitops.prcheck.compose import Options, Status, compose, write_results
from grove_gitops.prcheck.verdict import failures, parse_fail_on
from tests.prcheck.prhelpers import bump_image, git, make_repo

OUTAGE = Status(diff="ok", plan="ok", outages=["ml/x: decode (scaling group): step 1"])
INFEASIBLE = Status(diff="ok", plan="ok", feasibility="checked", infeasible=True)
WARNED = Status(diff="ok", plan="ok", warnings=2)
CLEAN = Status(diff="ok", plan="ok", feasibility="checked")


def _verdict(tmp_path: Path, status: Status, *args: str) -> tuple[int, str]:
    write_results(tmp_path, ["x"], status)
    result = CliRunner().invoke(pr_check, ["verdict", *args, "--out-dir", str(tmp_path)])
    return result.exit_code, result.output


def test_fail_on_parses_a_list_in_any_spelling() -> None:
    assert parse_fail_on("outage,infeasible") == ("infeasible", "outage")
    assert parse_fail_on(["outage", "infeasible , warning"]) == ("infeasible", "outage", "warning")
    assert parse_fail_on("error,error") == ("error",)
    assert parse_fail_on("outage\ninfeasible\n") == ("infeasible", "outage")  # a multi-line Action input
    for bad, said in (("sometimes", "'sometimes'"), ("never,outage", "'never' cannot be combined"), (" , ", "empty")):
        with pytest.raises(ValueError, match=said):
            parse_fail_on(bad)


@pytest.mark.parametrize(
    ("status", "args", "fails"),
    [
        (OUTAGE, ["--fail-on", "outage,infeasible"], True),
        (INFEASIBLE, ["--fail-on", "outage,infeasible"], True),
        (CLEAN, ["--fail-on", "outage,infeasible"], False),
        # repeated: every value counts, not the last
        (OUTAGE, ["--fail-on", "outage", "--fail-on", "infeasible"], True),
        (INFEASIBLE, ["--fail-on", "outage", "--fail-on", "infeasible"], True),
        (WARNED, ["--fail-on", "error,outage,infeasible,warning"], True),
        (WARNED, ["--fail-on", "error,outage,infeasible"], False),
        (OUTAGE, [], False),  # the default is error alone
    ],
)
def test_verdict_fails_when_any_gate_does(tmp_path: Path, status: Status, args: list[str], fails: bool) -> None:
    code, output = _verdict(tmp_path, status, *args)
    assert code == (1 if fails else 0), output
    if fails:
        assert output.startswith("::error::grove-gitops PR check (fail-on: ")


def test_both_findings_are_reported_under_a_combined_gate(tmp_path: Path) -> None:
    both = Status(diff="ok", plan="ok", feasibility="checked", infeasible=True, outages=OUTAGE.outages)
    code, output = _verdict(tmp_path, both, "--fail-on", "outage,infeasible")
    assert code == 1
    assert "(fail-on: infeasible,outage): a gang does not fit the node inventory" in output
    assert "(fail-on: infeasible,outage): rollout outage: ml/x: decode" in output


def test_a_bad_gate_is_a_usage_error(tmp_path: Path) -> None:
    code, output = _verdict(tmp_path, CLEAN, "--fail-on", "outage,sometimes")
    assert code == 2 and "'sometimes'" in output
    code, output = _verdict(tmp_path, CLEAN, "--fail-on", "never", "--fail-on", "outage")
    assert code == 2 and "'never' cannot be combined" in output


RENDER_CONFIG = "deploy/config/render-configuration.yaml"
INVENTORY = "deploy/cluster/node-inventory.yaml"


def _shrink(repo: Path) -> None:
    inventory = repo / INVENTORY
    inventory.write_text(inventory.read_text().replace("count: 4", "count: 1"))


def _pr(tmp_path: Path, change: str) -> tuple[Path, str, str]:
    """Base has ``feasibility: enforce`` and an inventory the example fits; the PR bumps an
    image and, in the same commit, turns the gate of the tree off one way or another."""
    repo, _, _ = make_repo(tmp_path, lambda s: s)
    git(repo, "checkout", "-q", "main")
    config = repo / RENDER_CONFIG
    config.write_text(config.read_text() + "feasibility: enforce\n")
    git(repo, "commit", "-qam", "enforce feasibility")
    base = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-qb", "pr2")
    wl = repo / "deploy/workloads/llm-inference/llama-disagg.yaml"
    wl.write_text(bump_image(wl.read_text()))
    config.write_text(config.read_text().replace("feasibility: enforce", "feasibility: warn"))
    if change == "shrink":
        _shrink(repo)
    else:
        (repo / INVENTORY).unlink()
    git(repo, "commit", "-qam", "bump, and switch the gate off")
    return repo, base, git(repo, "rev-parse", "HEAD")


@pytest.mark.parametrize("change", ["shrink", "delete"])
def test_fail_on_infeasible_gates_whatever_the_tree_under_review_says(tmp_path: Path, change: str) -> None:
    """A PR that sets ``feasibility: warn`` (and shrinks the cluster) or deletes the inventory
    still fails ``--fail-on infeasible``: the gate is the workflow's, not the tree's."""
    repo, base, head = _pr(tmp_path, change)
    result = compose(Options(repo, base, head, "deploy"))
    assert result.status.errors == 0 and result.status.diff == "ok"
    out = tmp_path / "out"
    write_results(out, result.parts, result.status)
    reasons = failures(result.status, "outage,infeasible")
    expected = "a gang does not fit" if change == "shrink" else "drops the node inventory its merge base has"
    assert any(expected in r for r in reasons), reasons
    assert failures(result.status, "error") == []
    result_cli = CliRunner().invoke(pr_check, ["verdict", "--fail-on", "infeasible", "--out-dir", str(out)])
    assert result_cli.exit_code == 1 and expected in result_cli.output
