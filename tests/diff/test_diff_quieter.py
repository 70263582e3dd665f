"""A quieter review (issue 25, "Quieter"): the one-line ``gitops.grove.io/day2`` JSON shows its
changed fields, the overview's gang-settings counts have a legend, and an added gang is one
summary entry instead of a "— → value" row per field."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from grove_gitops.diff.fields import MAX_VALUE_CHARS, TRUNCATION_MARK, changed_fields, field_dicts
from grove_gitops.diff.jsonannotations import EXPANDED_NOTE, expand
from tests.diff.diffhelpers import clique, pcs, run_diff, source

DAY2 = "gitops.grove.io/day2"


def _tree(router: int, prefill: int, image: str = "nginx:1.27") -> dict[str, str]:
    return {
        "disagg.yaml": pcs(
            "disagg",
            [clique("router", router, image), clique("pleader", 1, image), clique("pworker", 2, image)],
            podCliqueScalingGroups=[
                {"name": "prefill", "cliqueNames": ["pleader", "pworker"], "replicas": prefill, "minAvailable": 1}
            ],
        )
    }


def _diff(tmp_path: Path, base: dict[str, str], head: dict[str, str], *extra: str) -> str:
    result = run_diff([str(source(tmp_path, "base", base)), str(source(tmp_path, "head", head)), *extra])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_a_replica_change_shows_the_day2_fields_not_the_whole_line(tmp_path: Path) -> None:
    text = _diff(tmp_path, _tree(2, 1), _tree(3, 1))
    lines = text.split("\n")
    assert not [line for line in lines if line.startswith(("-", "+")) and f"{DAY2}: '" in line]
    assert f"     {DAY2}: {EXPANDED_NOTE}" not in lines  # the key line is context, not a change
    assert '-            "replicas": 2' in lines and '+            "replicas": 3' in lines
    assert '-            "minAvailable": 2,' in lines
    # the files Git holds are not what the diff shows: rendered, the annotation is one line
    text_view = _diff(tmp_path / "t", _tree(2, 1), _tree(3, 1), "--output", "text")
    assert '+            "replicas": 3' in text_view


def test_an_unchanged_day2_annotation_is_not_expanded(tmp_path: Path) -> None:
    text = _diff(tmp_path, _tree(2, 1), _tree(2, 1, "nginx:1.28"))
    assert EXPANDED_NOTE not in text


def test_a_layout_the_renderer_does_not_write_is_left_alone() -> None:
    obj: dict[str, Any] = {"metadata": {"annotations": {DAY2: '{"a": 1}'}}}
    folded = f"metadata:\n  annotations:\n    {DAY2}: '{{\"a\":\n      1}}'\n"
    assert expand(folded, obj, frozenset({DAY2})) == folded
    wrong_value = f"metadata:\n  annotations:\n    {DAY2}: '{{\"a\": 2}}'\n"
    assert expand(wrong_value, obj, frozenset({DAY2})) == wrong_value
    one_line = f"metadata:\n  annotations:\n    {DAY2}: '{{\"a\": 1}}'\n"
    assert expand(one_line, obj, frozenset({DAY2})).split("\n")[2:6] == [
        f"    {DAY2}: {EXPANDED_NOTE}",
        "      {",
        '        "a": 1',
        "      }",
    ]


def test_the_overview_says_what_the_gang_settings_column_counts(tmp_path: Path) -> None:
    text = _diff(tmp_path, _tree(2, 1), _tree(3, 1))
    assert "gang settings = changed settings of gang objects present on both sides, by kind: size" in text
    assert "queue, priority (priorityClassName), topology" in text
    terminal = _diff(tmp_path / "t", _tree(2, 1), _tree(3, 1), "--output", "text")
    assert "gang settings = changed settings of gang objects" in terminal


def test_an_added_gang_is_one_summary_entry_not_a_row_per_field(tmp_path: Path) -> None:
    text = _diff(tmp_path, _tree(2, 1), _tree(2, 2))
    rows = [line for line in text.split("\n") if line.startswith("| `PodGang")]
    assert rows == []  # the new gang's settings are no "— → value" rows
    assert (
        "**Gang settings of added / removed objects** (in their diffs): "
        "`PodGang.scheduler.grove.io` `ml/disagg-0-prefill-0` (added: size 2)"
    ) in text
    assert "| `ml/disagg` | `default-scheduler` | +1 ~1 | — | — |" in text  # no settings of existing gangs moved
    terminal = _diff(tmp_path / "t", _tree(2, 1), _tree(2, 2), "--output", "text")
    assert "PodGang.scheduler.grove.io ml/disagg-0-prefill-0 (added: size 2)" in terminal
    assert "(none) ->" not in terminal


def test_the_json_still_lists_an_added_gangs_settings(tmp_path: Path) -> None:
    out = _diff(tmp_path, _tree(2, 1), _tree(2, 2), "--output", "json")
    doc = json.loads(out)
    (gang,) = [o for o in doc["shards"][0]["objects"] if o["kind"] == "PodGang" and o["change"] == "added"]
    assert [(s["path"], s.get("old"), s["new"]) for s in gang["settings"]] == [
        ("spec.podgroups[disagg-0-prefill-1-pleader].minReplicas", None, "1"),
        ("spec.podgroups[disagg-0-prefill-1-pworker].minReplicas", None, "2"),
    ]


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(JSONISH, JSONISH)
def test_changed_fields_are_empty_exactly_when_equal_and_every_value_is_bounded(a: Any, b: Any) -> None:
    found = changed_fields(a, b)
    if a != b:
        assert found
    assert changed_fields(a, copy.deepcopy(a)) == []
    rows, _ = field_dicts(found)
    for row in rows:
        for side in ("old", "new"):
            if row.get(f"{side}Truncated"):
                assert len(row[side]) == MAX_VALUE_CHARS and row[side].endswith(TRUNCATION_MARK)
            elif side in row:
                assert len(json.dumps(row[side], separators=(",", ":"), sort_keys=True)) <= MAX_VALUE_CHARS
