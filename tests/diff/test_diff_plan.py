"""The "Rollout plan" section of ``diff``'s Markdown: built from the same plan as
``grove-gitops plan``, collapsed when long, absent when nothing rolls out."""

from __future__ import annotations

from pathlib import Path

from grove_gitops.diff.markdown import PART_SEPARATOR
from tests.diff.diffhelpers import clique, pcs, run_diff, source
from tests.test_plan import bump_images, example, rendered


def _tree(image: str = "nginx:1.27", workers: int = 2) -> dict[str, str]:
    return {"app.yaml": pcs("app", [clique("router", 1, image=image), clique("worker", workers, image=image)])}


def test_markdown_has_the_plan_after_the_overview(tmp_path: Path) -> None:
    result = run_diff([str(example(tmp_path, "base")), str(example(tmp_path, "head", bump_images))])
    assert result.exit_code == 0, result.output
    md = result.stdout
    assert md.index("Legend:") < md.index("### Rollout plan") < md.index("### `inference/llama-disagg`")
    assert (
        "**`inference/llama-disagg`** · RollingRecreate; 12 pods replaced in 5 steps; at most 4 unavailable at once"
        in md
    )
    assert "| 1 | 0 | `podclique llama-disagg-0-router` | `llama-disagg-0-router-0` |" in md
    assert "- **Restart forced by** `spec.containers[router].image` in `llama-disagg-0-router`" in md
    plan = md[md.index("### Rollout plan") : md.index("### `inference/llama-disagg`")]
    assert "<details>" not in plan  # 5 steps: shown open


def test_more_than_ten_steps_are_collapsed(tmp_path: Path) -> None:
    md = run_diff(
        [str(source(tmp_path, "base", _tree(workers=11))), str(source(tmp_path, "head", _tree("nginx:2", 11)))]
    )
    assert md.exit_code == 0, md.output
    plan = md.stdout[md.stdout.index("### Rollout plan") : md.stdout.index("### `ml/app`")]
    assert "<details><summary>12 steps</summary>" in plan and plan.count("| 12 | 0 |") == 1


def test_no_section_without_changes_and_text_format_unchanged(tmp_path: Path) -> None:
    same = run_diff([str(source(tmp_path, "base", _tree())), str(source(tmp_path, "head", _tree()))])
    assert "Rollout plan" not in same.stdout
    text = run_diff(
        [str(source(tmp_path, "b", _tree())), str(source(tmp_path, "h", _tree("nginx:2"))), "--output", "text"]
    )
    assert "Rollout plan" not in text.stdout


def test_long_plan_splits_across_parts_with_a_continuation(tmp_path: Path) -> None:
    md = run_diff(
        [
            str(source(tmp_path, "base", _tree(workers=60))),
            str(source(tmp_path, "head", _tree("nginx:2", 60))),
            "--max-chars",
            "4000",
        ]
    )
    assert md.exit_code == 0, md.output
    parts = md.stdout.split(PART_SEPARATOR)
    assert all(len(p.strip("\n")) < 4000 for p in parts)
    assert "### Rollout plan" in parts[0]
    # Too long for one part: the table keeps its first rows and stays closed.
    assert "more steps not shown: run `grove-gitops plan` for all." in md.stdout
    assert all(p.count("<details>") == p.count("</details>") for p in parts)


def test_unreadable_day2_annotation_costs_the_section_not_the_diff(tmp_path: Path) -> None:
    base = rendered(tmp_path, "base")
    head = rendered(tmp_path, "head", bump_images, day2="not json")
    result = run_diff(["--rendered", str(base), str(head)])
    assert result.exit_code == 0, result.output
    assert "⚠️ No rollout plan: inference/llama-disagg/20-podgang" in result.stdout
