"""Huge diffs split into comment-sized parts; no object is cut in half or lost."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from grove_gitops.diff.markdown import GITHUB_COMMENT_LIMIT, MARKER, PART_SEPARATOR
from grove_gitops.diff.split import Block, pack, shrink_lines
from tests.diff.diffhelpers import clique, pcs, run_diff, source, write_rendered

PART_RE = re.compile(r"^<!-- grove-gitops-diff key=default part=(\d+)/(\d+) -->$", re.M)


def _check_parts(parts: list[str], max_chars: int) -> None:
    n = len(parts)
    for i, part in enumerate(parts, start=1):
        assert len(part) < max_chars and len(part) < GITHUB_COMMENT_LIMIT
        assert part.startswith(MARKER + "\n")
        assert PART_RE.findall(part) == [(str(i), str(n))]
        if n > 1:
            assert f"· part {i}/{n}" in part.splitlines()[2]
        # Every object block is whole: details and fences balance inside each part.
        assert part.count("<details>") == part.count("</details>")
        assert len(re.findall(r"^```", part, re.M)) % 2 == 0


def _pcs_tree(n: int, image: str) -> dict[str, str]:
    return {
        f"app-{i:02d}.yaml": pcs(f"app-{i:02d}", [clique("router", 1, image=image), clique("worker", 3, image=image)])
        for i in range(n)
    }


def test_sixty_podcliquesets_split_into_parts(tmp_path: Path) -> None:
    base = source(tmp_path, "base", _pcs_tree(60, "img:1"))
    head = source(tmp_path, "head", _pcs_tree(60, "img:2"))
    out = tmp_path / "diff.md"
    result = run_diff([str(base), str(head), "--out", str(out)])
    assert result.exit_code == 0, result.output
    files = sorted(tmp_path.glob("diff.*.md"), key=lambda p: int(p.name.split(".")[1]))
    parts = [p.read_text() for p in files]
    assert len(parts) > 1
    _check_parts(parts, 60_000)
    assert out.read_text() == f"\n{PART_SEPARATOR}\n".join(parts)
    everything = "".join(parts)
    assert "Diff truncated" not in everything
    # Every changed object of every PodCliqueSet is in some part: 60 PodGangs, 240 pods.
    for i in range(60):
        assert f"ml/app-{i:02d}-0 · modified" in everything
        for host in ("router-0", "worker-0", "worker-1", "worker-2"):
            assert re.search(rf"⇄ <code>Pod</code> ml/app-{i:02d}-0-{host}-\w{{8}} · replaces", everything)
    # A part opening in the middle of a shard says which shard it continues.
    assert any(re.search(r"^### `ml/app-\d\d` \(continued\)$", p, re.M) for p in parts[1:])


def test_hundreds_of_pods_and_stdout_separator(tmp_path: Path) -> None:
    base = source(tmp_path, "base", {"big.yaml": pcs("big", [clique("worker", 300, image="img:1")])})
    head = source(tmp_path, "head", {"big.yaml": pcs("big", [clique("worker", 300, image="img:2")])})
    result = run_diff([str(base), str(head), "--max-chars", "30000"])
    assert result.exit_code == 0, result.output
    parts = result.stdout.split(f"\n{PART_SEPARATOR}\n")
    assert len(parts) >= 10
    _check_parts(parts, 30_000)
    everything = "".join(parts)
    assert everything.count("⇄ <code>Pod</code>") == 300
    assert "**Pods replaced (300), by hostname:**" in parts[0]
    assert "and 290 more; changed fields: `spec.containers[main].image`" in parts[0]
    assert "in " in result.stderr and "parts" in result.stderr


def test_single_block_over_the_limit_is_truncated_with_a_note(tmp_path: Path) -> None:
    data = {f"key{i}": "x" * 60 for i in range(400)}
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "huge", "namespace": "ml"}, "data": data}
    small = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "small", "namespace": "ml"},
        "data": {"a": "1"},
    }
    base = write_rendered(tmp_path / "b", {"ml/_resources/small.yaml": small})
    head = write_rendered(
        tmp_path / "h", {"ml/_resources/huge.yaml": cm, "ml/_resources/small.yaml": {**small, "data": {"a": "2"}}}
    )
    result = run_diff(["--rendered", str(base), str(head), "--max-chars", "8000"])
    assert result.exit_code == 0, result.output
    parts = result.stdout.split(f"\n{PART_SEPARATOR}\n")
    _check_parts(parts, 8000)
    everything = "".join(parts)
    assert re.search(
        r"⚠️ Diff truncated: \d+ of \d+ lines shown\. Run `grove-gitops diff --rendered .* --output text` for the full diff\.",
        everything,
    )
    assert "ml/small · modified" in everything  # the next object is still there, whole
    assert "+  key0: " in everything


def test_pack_keeps_blocks_whole_and_marks_continuations() -> None:
    blocks = [Block("intro\n" * 10)]
    blocks += [Block(f"### s{s}\n", f"s{s}", f"### s{s} (continued)\n") for s in range(1)]
    blocks += [Block(f"<obj {i}>\n" + "line\n" * 40, "s0", "### s0 (continued)\n") for i in range(20)]
    parts = pack(blocks, 1200, lambda i, n: f"H{i}/{n}\n")
    assert len(parts) > 3
    for part in parts:
        assert len(part) < 1200
    joined = "".join(parts)
    for i in range(20):
        assert joined.count(f"<obj {i}>\n" + "line\n" * 40) == 1
    assert all(p.split("\n", 1)[1].startswith("### s0 (continued)\n") for p in parts[1:])
    assert parts[-1].startswith(f"H{len(parts)}/{len(parts)}\n")


def test_pack_refuses_a_limit_smaller_than_its_header() -> None:
    with pytest.raises(ValueError):
        pack([Block("x")], 100, lambda i, n: "H" * 90)


def test_shrink_lines() -> None:
    text = "".join(f"line {i}\n" for i in range(100))
    out = shrink_lines(text, 200)
    assert len(out) <= 200 and out.startswith("line 0\n") and "truncated" in out
    assert shrink_lines("short\n", 200) == "short\n"
