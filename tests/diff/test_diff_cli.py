"""``grove-gitops diff`` end to end: exit codes, outputs, formats, modes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from grove_gitops.diff.markdown import MARKER, PART_SEPARATOR
from grove_gitops.diff.parts import part_path, write_parts
from grove_gitops.output.layout import build_tree
from grove_gitops.output.writer import write_tree
from grove_gitops.render import render_source
from tests.diff.diffhelpers import LPX_PROFILES, clique, pcs, run_diff, source


def _tree(image: str = "nginx:1.27", scheduler: str | None = None) -> dict[str, str]:
    pod: dict[str, Any] = {"pod": {"schedulerName": scheduler}} if scheduler else {}
    return {
        "config.yaml": LPX_PROFILES,
        "app.yaml": pcs("app", [clique("router", 1, image=image, **pod), clique("worker", 2, image=image, **pod)]),
    }


def test_identical_trees_report_no_changes(tmp_path: Path) -> None:
    base = source(tmp_path, "base", _tree())
    head = source(tmp_path, "head", _tree())
    for fmt in ("markdown", "text"):
        result = run_diff([str(base), str(head), "--output", fmt])
        assert result.exit_code == 0, result.output
        assert "No changes: the rendered output is identical" in result.stdout.replace("**", "")
        assert "no changes" in result.stderr
    md = run_diff([str(base), str(head)]).stdout
    assert md.startswith(MARKER + "\n<!-- grove-gitops-diff key=default part=1/1 -->\n")


def test_invalid_head_exits_1_naming_the_file(tmp_path: Path) -> None:
    base = source(tmp_path, "base", _tree())
    bad = _tree()
    bad["broken.yaml"] = (
        "apiVersion: grove.io/v1alpha1\nkind: PodCliqueSet\nmetadata: {name: x, namespace: ml}\nspec: {replicas: 1}\n"
    )
    head = source(tmp_path, "head", bad)
    result = run_diff([str(base), str(head)])
    assert result.exit_code == 1
    assert result.stdout == ""
    assert "error: head: broken.yaml:4:1: spec.template" in result.stderr
    assert "1 error in head" in result.stderr
    assert "base" not in result.stderr.replace("head", "")


def test_both_sides_invalid_are_both_reported(tmp_path: Path) -> None:
    bad = {"p.yaml": "apiVersion: grove.io/v1alpha1\nkind: PodCliqueSet\nmetadata: {name: x}\nspec: {replicas: 1}\n"}
    result = run_diff([str(source(tmp_path, "base", bad)), str(source(tmp_path, "head", bad))])
    assert result.exit_code == 1
    assert "error: base: p.yaml" in result.stderr and "error: head: p.yaml" in result.stderr


def test_missing_source_path_is_an_input_error(tmp_path: Path) -> None:
    base = source(tmp_path, "base", _tree())
    result = run_diff([str(base), str(tmp_path / "nope")])
    assert result.exit_code == 1
    assert "error: head:" in result.stderr and "does not exist" in result.stderr


def test_text_format_has_same_information_without_html(tmp_path: Path) -> None:
    base = source(tmp_path, "base", _tree())
    head = source(tmp_path, "head", _tree(scheduler="lpx-scheduler"))
    result = run_diff([str(base), str(head), "--output", "text", "--base-label", "main", "--head-label", "pr"])
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert text.startswith("grove-gitops render diff: base main -> head pr\n")
    assert "<" not in text.replace("<none>", "")  # no HTML
    assert "Scheduler switch: default-scheduler → lpx-scheduler" in text
    assert "Pods replaced (3), by hostname: app-0-router-0, app-0-worker-0, app-0-worker-1" in text
    assert "changed fields: spec.schedulerName" in text
    assert "+  schedulerName: lpx-scheduler" in text
    assert "-  schedulerName: default-scheduler" in text
    assert "### ⇄ Pod ml/app-0-worker-1-" in text


def test_out_file_and_parts(tmp_path: Path) -> None:
    base = source(tmp_path, "base", _tree())
    head = source(tmp_path, "head", _tree(image="nginx:1.28"))
    out = tmp_path / "out" / "diff.md"
    stale = part_path(out, 7)
    stale.parent.mkdir(parents=True)
    stale.write_text(MARKER + "\nold part\n")
    keep = part_path(out, 9)
    keep.write_text("not ours\n")
    result = run_diff([str(base), str(head), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert f"to {out}" in result.stderr
    assert out.read_text() == (tmp_path / "out" / "diff.1.md").read_text()
    assert not stale.exists()
    assert keep.exists()  # never delete a file that is not one of our parts
    assert "spec.containers[main].image" in out.read_text()


def test_write_parts_naming(tmp_path: Path) -> None:
    assert part_path(tmp_path / "diff.md", 2).name == "diff.2.md"
    assert part_path(tmp_path / "comment", 1).name == "comment.1.md"
    paths = write_parts(tmp_path / "d.md", [MARKER + "\none", MARKER + "\ntwo"])
    assert [p.name for p in paths] == ["d.1.md", "d.2.md"]
    assert (tmp_path / "d.md").read_text() == f"{MARKER}\none\n{PART_SEPARATOR}\n{MARKER}\ntwo"
    write_parts(tmp_path / "d.md", [MARKER + "\nonly"])
    assert not (tmp_path / "d.2.md").exists()


def test_rendered_mode_compares_output_trees(tmp_path: Path) -> None:
    outs = []
    for side, tree in (("base", _tree()), ("head", _tree(image="nginx:1.28"))):
        out = tmp_path / f"rendered-{side}"
        write_tree(build_tree(render_source(source(tmp_path, side, tree))), out)
        outs.append(str(out))
    result = run_diff(["--rendered", *outs, "--output", "text"])
    assert result.exit_code == 0, result.output
    assert "Pods replaced (3)" in result.stdout
    assert "changed fields: spec.containers[main].image" in result.stdout
    # Identical to rendering the sources directly.
    direct = run_diff(
        [
            str(tmp_path / "base"),
            str(tmp_path / "head"),
            "--format",
            "text",
            "--base-label",
            outs[0],
            "--head-label",
            outs[1],
        ]
    )
    assert direct.stdout == result.stdout


def test_rendered_mode_rejects_garbage(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "x.yaml").write_text("just: a mapping\n")
    result = run_diff(["--rendered", str(tmp_path / "a"), str(tmp_path / "b")])
    assert result.exit_code == 1
    assert "x.yaml: not a Kubernetes object" in result.stderr
    result = run_diff(["--rendered", str(tmp_path / "a"), str(tmp_path / "missing")])
    assert result.exit_code == 1 and "not a directory" in result.stderr


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    assert run_diff(["--rendered", "--repo", str(tmp_path), "a", "b"]).exit_code == 2
    assert run_diff(["--source-path", "x", "a", "b"]).exit_code == 2
    assert run_diff(["--key", "bad key!", "a", "b"]).exit_code == 2
    assert run_diff(["--max-chars", "10", "a", "b"]).exit_code == 2
    assert run_diff(["a"]).exit_code == 2


def test_title_and_key_reach_the_markers(tmp_path: Path) -> None:
    base = source(tmp_path, "base", _tree())
    head = source(tmp_path, "head", _tree(image="nginx:1.28"))
    result = run_diff([str(base), str(head), "--title", "cluster eu-1", "--key", "eu-1"])
    assert result.stdout.startswith(f"{MARKER}\n<!-- grove-gitops-diff key=eu-1 part=1/1 -->\n## cluster eu-1 (base ")
