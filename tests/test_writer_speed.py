"""The writer resolves each directory once instead of every file (issue 10) and keeps its
defences: a directory that resolves outside the output is still refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from grove_gitops.errors import OutputError
from grove_gitops.output.layout import Tree
from grove_gitops.output.writer import _checked_target, write_tree


def test_nested_directories_are_made_once_and_readable(tmp_path: Path) -> None:
    files = {"README.md": b"r", "a/b/c.yaml": b"1", "a/b/d.yaml": b"2", "a/e.yaml": b"3", "f/g/h/i.yaml": b"4"}
    out = tmp_path / "out"
    write_tree(Tree(files=files), out)
    assert {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()} == files
    for d in [out, *(p for p in out.rglob("*") if p.is_dir())]:
        assert (d.stat().st_mode & 0o777) == 0o755, d


def test_a_memoised_directory_outside_the_root_is_refused(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    os.symlink(outside, root / "ns")
    dirs: dict[str, Path] = {}
    assert _checked_target(root, "ok/a.yaml", dirs) == root / "ok" / "a.yaml"
    with pytest.raises(OutputError, match="resolves outside the output directory"):
        _checked_target(root, "ns/a.yaml", dirs)
    with pytest.raises(OutputError, match="resolves outside the output directory"):
        _checked_target(root, "ns/b.yaml", dirs)  # not memoised after a refusal
    assert "ns" not in dirs


@pytest.mark.parametrize("bad", ["ok/..", "ok/.", "ok/a\\b.yaml", "ok/a\0.yaml", "/ok/b.yaml", "ok/" + "x" * 256])
def test_a_bad_name_in_a_directory_already_written_is_still_refused(tmp_path: Path, bad: str) -> None:
    """Files in a directory already checked skip the directory's checks, never the name's."""
    from grove_gitops.output.writer import TreeWriter

    writer = TreeWriter(tmp_path / "out", fsync=False)
    writer.write({"ok/a.yaml": b"a"})
    with pytest.raises(OutputError, match="refusing to write"):
        writer.write({bad: b"b"})
    assert not (tmp_path / "out").exists()
    assert [p.name for p in tmp_path.iterdir()] == []  # the temporary tree is gone too
