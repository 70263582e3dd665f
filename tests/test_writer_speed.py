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


def test_directories_the_writer_made_are_not_resolved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A directory made by the writer's own ``mkdir`` (which fails on anything already there)
    holds only what it made: writing 3 shards resolves no path (issue 35.4)."""
    resolved: list[Path] = []
    real_resolve = Path.resolve

    def resolve(self: Path, strict: bool = False) -> Path:
        resolved.append(self)
        return real_resolve(self, strict)

    monkeypatch.setattr(Path, "resolve", resolve)
    files = {f"ns/p{i}/{n}.yaml": b"x" for i in range(3) for n in "ab"} | {"README.md": b"r", "ns/k.yaml": b"k"}
    write_tree(Tree(files=files), tmp_path / "out", fsync=False)
    assert resolved == []
    assert {p.relative_to(tmp_path / "out").as_posix() for p in (tmp_path / "out").rglob("*.yaml")} == {
        f for f in files if f.endswith(".yaml")
    }


@pytest.mark.parametrize("planted", ["dir", "symlink"])
def test_an_entry_planted_in_the_staging_tree_fails_the_write(tmp_path: Path, planted: str) -> None:
    """What the writer did not make is never written into: a directory in the way fails the
    write, a symlink leading out is refused by name; no output, nothing outside."""
    from grove_gitops.output.writer import TreeWriter

    outside = tmp_path / "outside"
    outside.mkdir()
    writer = TreeWriter(tmp_path / "out", fsync=False)
    assert writer.tmp is not None
    writer.write({"ns/first/a.yaml": b"a"})
    if planted == "dir":
        (writer.tmp / "ns" / "second").mkdir()
    else:
        os.symlink(outside, writer.tmp / "ns" / "second")
    with pytest.raises(OutputError, match="resolves outside" if planted == "symlink" else "File exists"):
        writer.write({"ns/second/b.yaml": b"b"})
    assert list(outside.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["outside"]
