"""``fail-on: outage`` and the outage banner at the top of the PR comment (issue 25)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from grove_gitops.cli.prcheck import pr_check
from grove_gitops.prcheck.compose import Options, Status, compose, read_status, write_results
from grove_gitops.prcheck.verdict import FAIL_ON, failures
from tests.prcheck.prhelpers import bump_image, make_repo, without_feasibility_shim


def bump_vllm(text: str) -> str:
    return text.replace("vllm:0.9.1", "vllm:0.9.2")


def _opts(repo: Path, base: str, head: str, tmp: Path, **kw: object) -> Options:
    return Options(repo=repo, base=base, head=head, source_path="deploy", cli=without_feasibility_shim(tmp), **kw)  # type: ignore[arg-type]


def test_outage_is_a_fail_on_choice() -> None:
    assert "outage" in FAIL_ON


@pytest.mark.parametrize(
    ("status", "fail_on", "fails"),
    [
        (Status(diff="ok", plan="ok", outages=["ml/x: decode (scaling group): step 1"]), "outage", True),
        (Status(diff="ok", plan="ok", outages=["ml/x: decode (scaling group): step 1"]), "error", False),
        (Status(diff="ok", plan="ok", outages=["ml/x: decode (scaling group): step 1"]), "infeasible", False),
        (Status(diff="ok", plan="ok"), "outage", False),
        (Status(diff="ok", plan="failed"), "outage", True),  # no plan, no proof there is no outage
        (Status(errors=1, diff="head-invalid"), "outage", True),  # outage includes error
        (Status(diff="ok", plan="ok", outages=["x"]), "never", False),
    ],
)
def test_fail_on_outage_matrix(tmp_path: Path, status: Status, fail_on: str, fails: bool) -> None:
    assert bool(failures(status, fail_on)) is fails
    write_results(tmp_path, ["x"], status)
    assert read_status(tmp_path) == status
    result = CliRunner().invoke(pr_check, ["verdict", "--fail-on", fail_on, "--out-dir", str(tmp_path)])
    assert result.exit_code == (1 if fails else 0), result.output
    if fails and status.outages:
        assert "::error::grove-gitops PR check (fail-on: outage): rollout outage: ml/x: decode" in result.output


def test_a_status_with_outages_of_another_shape_fails(tmp_path: Path) -> None:
    write_results(tmp_path, ["x"], Status(diff="ok", plan="ok"))
    data = json.loads((tmp_path / "status.json").read_text())
    (tmp_path / "status.json").write_text(json.dumps({**data, "outages": "decode"}))
    result = CliRunner().invoke(pr_check, ["verdict", "--fail-on", "outage", "--out-dir", str(tmp_path)])
    assert result.exit_code == 1 and "status.json: outages: expected list" in result.output


def test_the_examples_vllm_bump_puts_the_outage_at_the_top_of_the_comment(tmp_path: Path) -> None:
    repo, base, head = make_repo(tmp_path, bump_vllm)
    result = compose(_opts(repo, base, head, tmp_path))
    assert result.status.plan == "ok"
    assert result.status.outages == ["inference/llama-disagg: decode (scaling group): step 1"]
    assert failures(result.status, "outage") and not failures(result.status, "error")
    text = result.parts[0]
    body = text.split("\n## ", 1)[1].split("\n", 1)[1].lstrip("\n")
    assert body.startswith("### 🛑 Rollout outage\n"), body[:300]
    assert "🛑 **OUTAGE of `decode`** (scaling group) in `inference/llama-disagg`: step 1" in body
    assert body.index("### 🛑 Rollout outage") < body.index("Legend:") < body.index("### Rollout plan")


def test_a_change_without_outage_has_no_banner_and_passes_outage(tmp_path: Path) -> None:
    repo, base, head = make_repo(tmp_path, bump_image)  # the router: two pods
    result = compose(_opts(repo, base, head, tmp_path))
    assert result.status.plan == "ok" and result.status.outages == []
    assert "Rollout outage" not in "".join(result.parts)
    assert failures(result.status, "outage") == []


def test_text_format_puts_the_banner_first_too(tmp_path: Path) -> None:
    repo, base, head = make_repo(tmp_path, bump_vllm)
    result = compose(_opts(repo, base, head, tmp_path, fmt="text"))
    body = result.parts[0].split("\n## ", 1)[1].split("\n", 1)[1].lstrip("\n")
    assert body.startswith("### 🛑 Rollout outage\n")
