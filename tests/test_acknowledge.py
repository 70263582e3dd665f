"""Issue 34.10: warnings have stable codes, and a PodCliqueSet acknowledges codes for itself
(``gitops.grove.io/acknowledge``); an acknowledged warning is reported once as acknowledged,
never as a warning, and never hides another workload's warning."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from grove_gitops.backendapi import available_backends
from grove_gitops.cli import main
from grove_gitops.diff.markdown import markdown_blocks
from grove_gitops.diff.model import load_objects
from grove_gitops.diff.report import Side, build_report
from grove_gitops.diff.text import render_text
from grove_gitops.load.source import Sourced
from grove_gitops.problems import WarningSink
from grove_gitops.render import plan_source
from grove_gitops.validation.acknowledge import workload_acknowledgements
from grove_gitops.warningcodes import CODE_RE, CORE_CODES, UNCODED, code_of, known_codes, parse_codes
from tests.support import PROJECT, pcs_yaml, write_source

UNDECLARED = "namespace-undeclared"


def acknowledging(name: str, value: str) -> str:
    return pcs_yaml(name).replace(
        "  namespace: ml\n", f"  namespace: ml\n  annotations:\n    gitops.grove.io/acknowledge: {value}\n", 1
    )


def _run(*args: str) -> Any:
    return CliRunner().invoke(main, list(args))


def _problems(src: Path) -> list[dict[str, Any]]:
    result = _run("validate", str(src), "--output", "json")
    assert result.exit_code == 0, result.output
    problems: list[dict[str, Any]] = json.loads(result.stdout)["problems"]
    return problems


def test_every_code_is_well_formed_and_unique() -> None:
    codes = known_codes()
    assert len(codes) == len(set(codes))
    assert all(CODE_RE.match(c) for c in codes), codes
    for backend in available_backends().values():
        assert all(CODE_RE.match(c) for c in backend.warning_codes)
    assert UNCODED not in codes


def test_warnings_carry_their_code_in_text_and_json(tmp_path: Path) -> None:
    src = write_source(tmp_path / "src", {"a.yaml": pcs_yaml("alpha")})
    (problem,) = _problems(src)
    assert problem["code"] == UNDECLARED and "acknowledged" not in problem
    result = _run("validate", str(src))
    assert re.search(r"^warning: a\.yaml: metadata\.namespace: .* \[namespace-undeclared\]$", result.stderr, re.M)


def test_the_annotation_acknowledges_its_workloads_warning_once(tmp_path: Path) -> None:
    src = write_source(tmp_path / "src", {"a.yaml": acknowledging("alpha", UNDECLARED), "b.yaml": pcs_yaml("beta")})
    result = _run("validate", str(src))
    assert result.exit_code == 0
    lines = result.stderr.splitlines()
    # b.yaml's own warning is untouched: a's annotation acknowledges only a's
    assert [line.split(": metadata")[0] for line in lines] == ["warning: b.yaml", "acknowledged [namespace-undeclared]: a.yaml"]
    problems = {p["file"]: p for p in _problems(src)}
    assert problems["a.yaml"]["acknowledged"] is True and problems["a.yaml"]["code"] == UNDECLARED
    assert "acknowledged" not in problems["b.yaml"]
    quiet = _run("validate", str(src), "-q")
    assert "a.yaml" not in quiet.stderr and "warning: b.yaml" in quiet.stderr


def test_another_code_acknowledges_nothing(tmp_path: Path) -> None:
    src = write_source(tmp_path / "src", {"a.yaml": acknowledging("alpha", "hpa-counts-pods")})
    (problem,) = _problems(src)
    assert problem["code"] == UNDECLARED and "acknowledged" not in problem


def test_a_file_of_two_workloads_needs_both_to_acknowledge(tmp_path: Path) -> None:
    both = acknowledging("alpha", UNDECLARED) + "---\n" + pcs_yaml("beta")
    src = write_source(tmp_path / "src", {"a.yaml": both})
    assert plan_source(src).acknowledged_codes == {}
    both = acknowledging("alpha", UNDECLARED) + "---\n" + acknowledging("beta", f"{UNDECLARED},hpa-counts-pods")
    src = write_source(tmp_path / "src2", {"a.yaml": both})
    assert plan_source(src).acknowledged_codes == {"a.yaml": frozenset({UNDECLARED})}


def test_an_unknown_code_is_warned_about_with_a_suggestion(tmp_path: Path) -> None:
    src = write_source(tmp_path / "src", {"a.yaml": acknowledging("alpha", "namespace-undeclard, Bad Code")})
    messages = sorted(p["message"] for p in _problems(src) if "acknowledge]" in p["field"])
    assert messages == [
        '"Bad Code" is not a warning code; ignored',
        '"namespace-undeclard" is no warning code (docs/authoring.md lists them); ignored; '
        "did you mean namespace-undeclared?",
    ]


@pytest.mark.parametrize("value", ["x" * 5000, ",".join(f"c{i}" for i in range(500))])
def test_a_huge_annotation_is_bounded(tmp_path: Path, value: str) -> None:
    src = write_source(tmp_path / "src", {"a.yaml": acknowledging("alpha", value)})
    problems = _problems(src)
    assert len(problems) <= 60  # the namespace warning and at most 50 entries of the annotation (+1 line)
    assert any(p["code"] == UNDECLARED and "acknowledged" not in p for p in problems)


def test_parse_codes_splits_and_rejects() -> None:
    assert parse_codes(" a-b ,, c ,D") == (["a-b", "c"], ["D"])


def test_every_core_code_names_a_message_the_project_writes() -> None:
    """A pattern matches only the text it was written for: no warning gets two codes' words."""
    samples = {
        "namespace-undeclared": 'a.yaml: metadata.namespace: namespace "x" is not created by the source (no v1 ...',
        "starts-after-unknown": "a.yaml: spec.template.cliques[1].spec.startsAfter: names no clique of this PodCliqueSet: x",
        "infeasible": "a.yaml: PodGang ml/a-0 does not fit the node inventory: the gang needs 24 GPUs",
    }
    for code, text in samples.items():
        assert code in CORE_CODES and code_of(text) == code
    assert code_of("something nobody wrote") == UNCODED


def test_the_sink_reports_an_acknowledged_warning_once_per_run() -> None:
    warning = 'a.yaml: metadata.namespace: namespace "ml" is not created by the source (no v1 Namespace object)'
    codes = {"a.yaml": frozenset({UNDECLARED})}
    sink, lines = WarningSink(), []
    for _ in range(3):  # watch renders again and again
        sink.emit([warning], lines.append, codes=codes)
    assert lines == [f"acknowledged [{UNDECLARED}]: {warning}"]


def test_the_diff_report_lists_a_new_acknowledged_warning_as_acknowledged() -> None:
    warning = 'a.yaml: metadata.namespace: namespace "ml" is not created by the source (no v1 Namespace object)'
    other = 'b.yaml: metadata.namespace: namespace "ml" is not created by the source (no v1 Namespace object)'
    config = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: ml}\n"
    objects = load_objects({"ml/ml/_resources/v1.ConfigMap.c.yaml": config})
    head = Side("head", objects, [warning, other], acknowledged_codes={"a.yaml": frozenset({UNDECLARED})})
    report = build_report(Side("base", {}), head)
    assert not report.identical
    assert report.new_warnings() == ([other], [warning])
    markdown = "".join(b.text for b in markdown_blocks(report, title="t", key="k"))
    assert "⚠️ 1 new render warning(s) in head" in markdown and "✔️ 1 acknowledged warning(s) in head" in markdown
    assert "- acknowledged: a.yaml" in markdown
    text = render_text(report, "t")
    assert "Acknowledged warnings in head:\n  - acknowledged: a.yaml" in text


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(max_size=600), st.integers(), st.booleans(), st.lists(st.text(max_size=5), max_size=3)))
def test_any_annotation_value_acknowledges_known_codes_or_is_warned_about(value: object) -> None:
    doc = {"metadata": {"name": "a", "annotations": {"gitops.grove.io/acknowledge": value}}}
    acks, warnings = workload_acknowledgements([Sourced("a.yaml", doc)])
    assert set(acks.get("a.yaml", frozenset())) <= set(known_codes())
    assert all(w.startswith("a.yaml: metadata.annotations[gitops.grove.io/acknowledge]: ") for w in warnings)
    assert len(warnings) <= 52


def test_every_code_is_documented() -> None:
    doc = (PROJECT / "docs/authoring.md").read_text()
    table = doc[doc.index("| code | warning |") :]
    assert [c for c in known_codes() if f"`{c}`" not in table] == []
