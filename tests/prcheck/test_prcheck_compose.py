"""Composing the PR report: feasibility section, failure reports, formats, splitting, fail-on."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from grove_gitops.cli.prcheck import pr_check
from grove_gitops.diff.markdown import MARKER
from grove_gitops.diff.split import pack
from grove_gitops.prcheck.compose import Options, Status, compose, read_parts, read_status, write_results
from grove_gitops.prcheck.sections import feasibility_blocks, text_blocks
from grove_gitops.prcheck.verdict import failures
from tests.prcheck.prhelpers import (
    FEASIBILITY_DOC,
    WORKLOAD,
    break_replicas,
    bump_image,
    feasibility_shim,
    make_repo,
    without_feasibility_shim,
)

PART_RE = re.compile(r"<!-- grove-gitops-diff key=([A-Za-z0-9._-]+) part=(\d+)/(\d+) -->")


def _text(doc: dict[str, object]) -> str:
    return "".join(b.text for b in feasibility_blocks(doc))


def test_feasibility_section_from_the_json_contract() -> None:
    text = _text(FEASIBILITY_DOC)
    assert text.startswith("### Gang feasibility\n\n❌ **1 of 2 gang(s) do not fit** the node inventory.\n")
    assert "<sub>Placement: first-fit decreasing with per-domain search;" in text
    # the reason in the user's terms, inert: the table and HTML kept intact
    assert (
        "| `inference/llama-disagg` |" not in text
        and "| inference/llama-disagg | llama-disagg-0 | base | llm-0: podgroup llm-0-pworker needs 24 nvidia.com/gpu "
        "inside one rack; the largest rack has 16 allocatable &#124; &#60;b&#62; |"
        in text
    )
    assert "<details><summary>1 gang(s) that fit</summary>" in text
    assert "| inference/llama-disagg | llama-disagg-0-sga-0 | scaled |" in text
    assert "<details><summary>Capacity per topology domain (2)</summary>" in text
    assert (
        "| level | domain | gpu | cpu | memory |" in text and "| rack | rack-a | 16/16 | 90/128 | 1.0Ti/2Ti |" in text
    )


def test_feasibility_section_when_everything_fits_or_there_is_no_inventory() -> None:
    doc = copy.deepcopy(FEASIBILITY_DOC)
    doc["gangs"] = [{**g, "fits": True, "reason": None} for g in doc["gangs"]]
    assert "✅ All 2 gang(s) fit the node inventory." in _text(doc)
    assert "do not fit" not in _text(doc)
    empty = {"heuristic": "ffd", "gangs": [], "domains": [], "fits": True}
    assert "Not checked: the source tree holds no node inventory" in _text(empty)


def test_a_long_feasibility_section_splits_between_whole_tables() -> None:
    doc = copy.deepcopy(FEASIBILITY_DOC)
    doc["gangs"] = [
        {"podCliqueSet": f"ns/pcs-{i}", "name": f"pcs-{i}-0", "kind": "base", "fits": i % 3 != 0, "reason": "x" * 80}
        for i in range(300)
    ]
    parts = pack(feasibility_blocks(doc), 6000, lambda i, n: f"{MARKER}\npart {i}/{n}\n")
    assert len(parts) > 3
    for text in parts:
        assert len(text) < 6000
        # every table row sits below its own header in the same part; every <details> closes
        rows = [line for line in text.splitlines() if line.startswith("| ")]
        assert not rows or rows[1].startswith("| ---")
        assert text.count("<details>") == text.count("</details>")
    assert any(p.split("\n", 2)[2].startswith("### Gang feasibility (continued)") for p in parts[1:])


def test_text_format_cuts_at_objects_and_keeps_fences_closed() -> None:
    text = (
        "title\n\nShards changed\n\nns/a\n====\n  summary\n### ~ Pod x\n--- a\n+++ b\n```nested```\n### + Pod y\n+y\n"
    )
    blocks = text_blocks(text)
    assert [b.text.splitlines()[1] for b in blocks] == ["title", "ns/a", "### ~ Pod x", "### + Pod y"]
    assert blocks[2].text.startswith("````diff\n") and blocks[2].text.rstrip().endswith("````")
    assert blocks[0].text.startswith("```text\n")
    assert blocks[0].shrink is not None
    long_piece = text_blocks("### ~ Pod z\n" + "".join(f"+line {i}\n" for i in range(100)))[0]
    assert long_piece.shrink is not None
    small = long_piece.shrink(300)
    assert len(small) <= 300 and small.count("```") == 2 and "+line 0\n" in small and "truncated" in small


def _opts(repo: Path, base: str, head: str, **kw: object) -> Options:
    return Options(repo=repo, base=base, head=head, source_path="deploy", **kw)  # type: ignore[arg-type]


def test_compose_without_the_feasibility_command(tmp_path: Path) -> None:
    repo, base, head = make_repo(tmp_path, bump_image)
    result = compose(_opts(repo, base, head, cli=without_feasibility_shim(tmp_path)))
    assert result.annotations == []
    assert result.status.feasibility == "absent" and not result.status.infeasible
    assert result.status.errors == 0 and result.status.diff == "ok"
    (text,) = result.parts
    assert text.startswith(f"{MARKER}\n<!-- grove-gitops-diff key=default part=1/1 -->\n## grove-gitops PR check")
    assert "ℹ️ Not checked: this grove-gitops has no `feasibility` command" in text
    assert "### Rollout plan" in text and "registry.example.com/" in text
    # the merge base, not main's tip: the commit that landed on main later is not in the diff
    assert "NOTES" not in text and f"merge base {result.status.merge_base[:7]}" in text
    assert result.status.merge_base != base


def test_compose_with_an_infeasible_gang(tmp_path: Path) -> None:
    repo, base, head = make_repo(tmp_path, bump_image)
    result = compose(_opts(repo, base, head, cli=feasibility_shim(tmp_path, FEASIBILITY_DOC, 3)))
    assert result.status.feasibility == "checked" and result.status.infeasible
    text = result.parts[0]
    # right after the overview, before the plan and the diffs
    assert text.index("Legend:") < text.index("### Gang feasibility") < text.index("### Rollout plan")
    assert "needs 24 nvidia.com/gpu inside one rack" in text


def test_feasibility_is_shown_even_when_nothing_changed(tmp_path: Path) -> None:
    repo, base, head = make_repo(tmp_path, lambda s: s)
    fits = {**FEASIBILITY_DOC, "gangs": [FEASIBILITY_DOC["gangs"][1]], "fits": True}
    result = compose(_opts(repo, base, head, cli=feasibility_shim(tmp_path, fits, 0)))
    (text,) = result.parts
    assert "**No changes:**" in text and "✅ All 1 gang(s) fit" in text
    assert result.status.feasibility == "checked" and not result.status.infeasible


def test_feasibility_command_failing_is_reported_not_fatal(tmp_path: Path) -> None:
    repo, base, head = make_repo(tmp_path, bump_image)
    broken = {
        "ok": False,
        "problems": [{"file": "inv.yaml", "field": "spec", "message": "bad inventory", "severity": "error"}],
    }
    result = compose(_opts(repo, base, head, cli=feasibility_shim(tmp_path, broken, 1)))
    assert result.status.feasibility == "failed" and not result.status.infeasible
    assert "⚠️ Not checked: `grove-gitops feasibility` failed (exit 1): bad inventory" in result.parts[0]


def test_head_that_does_not_render(tmp_path: Path) -> None:
    repo, base, head = make_repo(tmp_path, break_replicas)
    result = compose(_opts(repo, base, head))
    assert result.status.errors >= 1 and result.status.diff == "head-invalid"
    assert result.status.feasibility == "skipped"
    (text,) = result.parts
    assert "❌ The source tree does not render at head; nothing was compared." in text
    assert "`workloads/llm-inference/llama-disagg.yaml` `spec.replicas`: head: Invalid value: -1" in text
    line = (repo / WORKLOAD).read_text().split("\n").index("  replicas: -1") + 1
    assert result.annotations[0].startswith(f"::error file={WORKLOAD},line={line},")


def test_base_that_does_not_render_is_reported_but_is_not_heads_error(tmp_path: Path) -> None:
    repo, base, head = make_repo(tmp_path, lambda s: s.replace("replicas: -1", "replicas: 1"), base_edit=break_replicas)
    result = compose(_opts(repo, base, head))
    assert result.status.errors == 0 and result.status.diff == "base-invalid"
    assert "does not render at base" in result.parts[0]
    assert failures(result.status, "error") == []


def test_a_long_diff_splits_below_the_limit_with_sticky_markers(tmp_path: Path) -> None:
    repo, base, head = make_repo(tmp_path, lambda s: s.replace("image: ", "image: r.example.com/"))
    for fmt in ("markdown", "text"):
        parts = compose(_opts(repo, base, head, max_chars=2500, fmt=fmt, key="eu-1")).parts
        assert len(parts) > 2, fmt
        for i, text in enumerate(parts, start=1):
            assert len(text) < 2500
            assert text.startswith(MARKER)
            m = PART_RE.search(text)
            assert m is not None and m.groups() == ("eu-1", str(i), str(len(parts)))
            assert text.count("```") % 2 == 0 or fmt == "markdown"


def test_no_merge_base_is_a_clear_error(tmp_path: Path) -> None:
    repo, _, head = make_repo(tmp_path, bump_image)
    from tests.prcheck.prhelpers import git

    git(repo, "checkout", "-q", "--orphan", "other")
    git(repo, "commit", "-qm", "unrelated", "--allow-empty")
    other = git(repo, "rev-parse", "HEAD")
    out = tmp_path / "out"
    result = CliRunner().invoke(
        pr_check,
        ["run", "--repo", str(repo), "--base", other, "--head", head, "--source-path", "deploy", "--out-dir", str(out)],
    )
    assert result.exit_code == 1
    assert "have no merge base here: check out the full history (actions/checkout with fetch-depth: 0)" in result.output
    assert "Traceback" not in result.output
    # the comment says so too, instead of leaving the previous push's report standing
    (text,) = read_parts(out)
    assert text.startswith(MARKER) and "❌ The grove-gitops PR check failed:" in text


def test_run_command_writes_parts_status_outputs_and_summary(tmp_path: Path) -> None:
    repo, base, head = make_repo(tmp_path, break_replicas)
    out = tmp_path / "out"
    (out).mkdir()
    (out / "comment.9.md").write_text("stale from a longer run")
    gh_out, summary = tmp_path / "gh_output", tmp_path / "summary.md"
    env = {"GITHUB_OUTPUT": str(gh_out), "GITHUB_STEP_SUMMARY": str(summary)}
    args = [
        "run",
        "--repo",
        str(repo),
        "--base",
        base,
        "--head",
        head,
        "--source-path",
        "deploy",
        "--out-dir",
        str(out),
    ]
    result = CliRunner().invoke(pr_check, args, env=env)
    assert result.exit_code == 0, result.output
    assert result.output.startswith("::error file=deploy/workloads/llm-inference/llama-disagg.yaml,line=")
    assert sorted(p.name for p in out.iterdir()) == ["comment.1.md", "report.md", "status.json"]
    status = read_status(out)
    assert status.errors >= 1 and status.parts == 1
    assert "errors=" in gh_out.read_text() and "feasibility=skipped\n" in gh_out.read_text()
    assert "does not render at head" in summary.read_text()
    assert json.loads((out / "status.json").read_text())["diff"] == "head-invalid"


@pytest.mark.parametrize(
    ("errors", "feasibility", "infeasible", "diff", "fail_on", "fails"),
    [
        (0, "checked", False, "ok", "error", False),
        (0, "checked", True, "ok", "error", False),
        (2, "skipped", False, "head-invalid", "error", True),
        (0, "checked", False, "ok", "infeasible", False),
        (0, "checked", True, "ok", "infeasible", True),
        (2, "skipped", False, "head-invalid", "infeasible", True),
        (0, "absent", False, "ok", "infeasible", False),  # no command: nothing to fail on
        (0, "no-inventory", False, "ok", "infeasible", False),
        (0, "checked", False, "base-invalid", "error", False),  # the base is not the PR's doing
        (2, "skipped", False, "head-invalid", "never", False),
        (0, "checked", True, "ok", "never", False),
        (0, "failed", False, "failed", "never", False),
        # the check could not establish that head is valid: never a pass
        (0, "checked", False, "head-invalid", "error", True),  # validate said nothing, head did not render
        (0, "failed", False, "failed", "error", True),
        (0, "absent", False, "unknown", "error", True),
        (0, "absent", False, "what", "infeasible", True),
        (0, "failed", False, "ok", "infeasible", True),  # the feasibility check itself failed
        (0, "failed", False, "ok", "error", False),
    ],
)
def test_fail_on_matrix(
    tmp_path: Path, errors: int, feasibility: str, infeasible: bool, diff: str, fail_on: str, fails: bool
) -> None:
    status = Status(errors=errors, feasibility=feasibility, infeasible=infeasible, diff=diff)
    assert bool(failures(status, fail_on)) is fails
    write_results(tmp_path, ["x"], status)
    result = CliRunner().invoke(pr_check, ["verdict", "--fail-on", fail_on, "--out-dir", str(tmp_path)])
    assert result.exit_code == (1 if fails else 0), result.output
    if fails:
        assert result.output.startswith(f"::error::grove-gitops PR check (fail-on: {fail_on}): ")


def test_a_status_nobody_filled_in_or_of_another_shape_fails(tmp_path: Path) -> None:
    assert failures(Status(), "error")  # the defaults never pass
    write_results(tmp_path, ["x"], Status(diff="ok"))
    data = json.loads((tmp_path / "status.json").read_text())
    for field, value in (("errors", "0"), ("errors", None), ("diff", ["ok"]), ("infeasible", 0)):
        (tmp_path / "status.json").write_text(json.dumps({**data, field: value}))
        result = CliRunner().invoke(pr_check, ["verdict", "--out-dir", str(tmp_path)])
        assert result.exit_code == 1 and f"status.json: {field}: expected" in result.output, (field, result.output)


def test_verdict_without_a_status_and_with_a_bad_fail_on(tmp_path: Path) -> None:
    result = CliRunner().invoke(pr_check, ["verdict", "--out-dir", str(tmp_path)])
    assert result.exit_code == 1 and "cannot read the check's status" in result.output
    result = CliRunner().invoke(pr_check, ["verdict", "--fail-on", "sometimes", "--out-dir", str(tmp_path)])
    assert result.exit_code == 2
    with pytest.raises(ValueError, match="fail-on"):
        failures(Status(), "sometimes")
