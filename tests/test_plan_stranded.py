"""A topology change that strands a running gang (issue 34.3).

Decode ``pack.required: rack -> host`` on a 16-GPU scaling group over the example's 8-GPU
nodes changes the PodGang and no pod: nothing is restarted, the pods keep running, and the
gang cannot be scheduled again at its next reschedule (node loss, rollout, scale-out). The
plan, ``diff`` and the PR comment say so as a risk line, and ``fail-on: infeasible`` counts it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from click.testing import CliRunner

from grove_gitops.cli import main
from grove_gitops.prcheck.compose import Options, Status, compose
from grove_gitops.prcheck.verdict import failures
from tests.prcheck.prhelpers import make_repo
from tests.test_plan import bump_images, example, group, only, plan_json, run

GANG = "llama-disagg-0"
RESCHEDULE = "becomes unschedulable at its next reschedule (node loss, rollout, scale-out)"


def decode_pack(level: str) -> Any:
    def edit(doc: dict[str, Any]) -> None:
        group(doc, "decode")["topologyConstraint"] = {"pack": {"required": level}}

    return edit


def _sides(tmp_path: Path, *head_edits: Any) -> tuple[Path, Path]:
    return example(tmp_path, "base", decode_pack("rack")), example(tmp_path, "head", decode_pack("rack"), *head_edits)


def test_plan_says_the_running_gang_is_stranded(tmp_path: Path) -> None:
    base, head = _sides(tmp_path, decode_pack("host"))
    result = run(str(base), str(head))
    assert result.exit_code == 0, result.output
    out = " ".join(result.stdout.split())
    assert "no pod changes" in out  # still true: nothing is restarted now
    assert f"STRANDED gang {GANG}: its changed PodGang does not fit the node inventory" in out
    assert "needs 16 nvidia.com/gpu inside one host" in out
    assert f"its 8 running pods keep running, and the gang {RESCHEDULE}" in out
    p = only(plan_json(base, head))
    (stranded,) = p["stranded"]
    assert (stranded["gang"], stranded["pods"], stranded["replaced"]) == (GANG, 8, 0)
    assert RESCHEDULE in stranded["message"]


def test_a_topology_change_that_fits_strands_nothing(tmp_path: Path) -> None:
    base, head = _sides(tmp_path, decode_pack("block"))
    p = only(plan_json(base, head))
    assert p["stranded"] == []
    assert "STRANDED" not in run(str(base), str(head)).stdout


def test_a_rollout_onto_an_unfit_gang_says_its_replacements_stay_pending(tmp_path: Path) -> None:
    base, head = _sides(tmp_path, decode_pack("host"), bump_images)
    found = {g["gang"]: g for g in only(plan_json(base, head))["stranded"]}
    stranded = found[GANG]
    assert stranded["replaced"] == 8
    assert "this rollout replaces 8 of its 8 pods and the replacements cannot be scheduled" in stranded["message"]


def test_diff_shows_the_risk_in_text_and_markdown(tmp_path: Path) -> None:
    base, head = _sides(tmp_path, decode_pack("host"))
    text = CliRunner().invoke(main, ["diff", str(base), str(head), "--output", "text"], catch_exceptions=False)
    assert "Rollout risks (see grove-gitops plan):" in text.stdout
    assert f"inference/llama-disagg: STRANDED gang {GANG}" in text.stdout
    md = CliRunner().invoke(main, ["diff", str(base), str(head)], catch_exceptions=False)
    assert f"⚠️ **STRANDED gang `{GANG}`** in `inference/llama-disagg`:" in md.stdout
    assert RESCHEDULE in " ".join(md.stdout.split())


def _last_rack_to_host(text: str) -> str:
    a, _, c = text.rpartition("required: rack")
    return a + "required: host" + c


def test_the_pr_comment_leads_with_it_and_fail_on_infeasible_counts_it(tmp_path: Path) -> None:
    repo, base, head = make_repo(
        tmp_path, _last_rack_to_host, lambda t: t.replace("            required: block", "            required: rack")
    )
    result = compose(Options(repo, base, head, "deploy"))
    assert result.status.stranded and result.status.stranded[0].startswith(f"inference/llama-disagg: {GANG}: ")
    text = result.parts[0]
    assert text.index("### ⚠️ Stranded gang") < text.index("**Shards changed")
    assert failures(result.status, "error") == []
    assert any(r.startswith("stranded gang: inference/llama-disagg") for r in failures(result.status, "infeasible"))
    # counted on its own too: a stranded gang fails infeasible even when the feasibility
    # answer itself was not recorded as infeasible
    alone = Status(diff="ok", plan="ok", feasibility="checked", stranded=["ns/x: g: reason"])
    assert failures(alone, "infeasible") == ["stranded gang: ns/x: g: reason"]
    assert failures(alone, "outage") == []
