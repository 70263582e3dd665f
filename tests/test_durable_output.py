"""Durable output and the writer's details (issue 14): every file and directory of the new
tree is fsynced before the swap and the parent after it (``--no-fsync`` skips all of it),
modes are set as things are made, and the bytes do not depend on any of it."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from grove_gitops.cli import main
from grove_gitops.output import writer
from grove_gitops.output.layout import build_tree_from_plan
from grove_gitops.output.writer import render_to
from grove_gitops.render import plan_source
from tests.support import PROJECT


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


class FsyncLog:
    """Records which paths were fsynced (``os.fsync`` only sees a descriptor)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.paths: list[Path] = []
        self.lock = threading.Lock()
        real = writer.fsync_path

        def spy(path: Path, directory: bool = False) -> None:
            with self.lock:
                self.paths.append(path)
            real(path, directory)

        self.calls = 0
        real_fsync = os.fsync

        def count(fd: int) -> None:
            with self.lock:
                self.calls += 1
            real_fsync(fd)

        monkeypatch.setattr(writer, "fsync_path", spy)
        monkeypatch.setattr(os, "fsync", count)


def test_every_file_and_directory_is_fsynced_before_the_swap(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Without syncfs (not Linux): an fsync per file and per directory, then the parent."""
    monkeypatch.setattr(writer, "SYNCFS", None)
    log = FsyncLog(monkeypatch)
    out = tmp_path / "out"
    tree = render_to(plan_source(PROJECT / "examples"), out, 1)
    dirs = {p for p in out.rglob("*") if p.is_dir()} | {out}
    # Paths were recorded inside the temporary tree; map them onto OUT by their relative path.
    new = [p for p in log.paths if p.parent != tmp_path]
    relative = {p.relative_to(p.parents[len(p.relative_to(tmp_path).parts) - 2]).as_posix() for p in new if p != out}
    assert set(tree.files) <= relative
    assert len([p for p in log.paths if p == tmp_path]) == 1  # the parent, after the rename
    assert log.paths[-1] == tmp_path
    assert log.calls == len(tree.files) + len(dirs) + 1


@pytest.mark.skipif(writer.SYNCFS is None, reason="syncfs(2) exists on Linux only")
def test_on_linux_one_syncfs_makes_the_tree_durable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """One syncfs of the new tree's filesystem before the swap, the parent's fsync after it,
    and no fsync per file (which cost a render more CPU than writing its files)."""
    log = FsyncLog(monkeypatch)
    synced: list[tuple[Path, bool]] = []
    real = writer.syncfs_path

    def spy(path: Path) -> None:
        synced.append((path, (tmp_path / "out").exists()))
        real(path)

    monkeypatch.setattr(writer, "syncfs_path", spy)
    out = tmp_path / "out"
    render_to(plan_source(PROJECT / "examples"), out, 1)
    assert len(synced) == 1
    path, swapped = synced[0]
    assert path.parent == tmp_path and path.name.startswith(".out.new-") and not swapped
    assert log.paths == [tmp_path] and log.calls == 1  # only the parent, after the rename


def test_a_failed_syncfs_keeps_the_previous_output(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    out = tmp_path / "out"
    render_to(plan_source(PROJECT / "examples"), out, 1)
    before = _tree(out)

    def broken(path: Path) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(writer, "SYNCFS", lambda fd: 0)  # present, so the writer takes this path
    monkeypatch.setattr(writer, "syncfs_path", broken)
    result = CliRunner().invoke(main, ["render", str(PROJECT / "examples"), "--out", str(out)])
    assert result.exit_code == 1
    assert "cannot write the output" in result.output and "Traceback" not in result.output
    assert _tree(out) == before
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_no_fsync_skips_every_fsync_and_writes_the_same_bytes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(writer, "SYNCFS", None)
    log = FsyncLog(monkeypatch)
    runner = CliRunner()
    fast = runner.invoke(main, ["render", str(PROJECT / "examples"), "--out", str(tmp_path / "a"), "--no-fsync"])
    assert fast.exit_code == 0, fast.output
    assert log.calls == 0 and log.paths == []
    durable = runner.invoke(main, ["render", str(PROJECT / "examples"), "--out", str(tmp_path / "b")])
    assert durable.exit_code == 0, durable.output
    assert log.calls > len(_tree(tmp_path / "b"))
    assert (
        _tree(tmp_path / "a") == _tree(tmp_path / "b") == build_tree_from_plan(plan_source(PROJECT / "examples")).files
    )


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_modes_are_set_as_files_are_written_whatever_the_umask(tmp_path: Path, umask: int) -> None:
    old = os.umask(umask)
    try:
        render_to(plan_source(PROJECT / "examples"), tmp_path / "out", 1, fsync=False)
    finally:
        os.umask(old)
    out = tmp_path / "out"
    for path in [out, *out.rglob("*")]:
        mode = path.stat().st_mode & 0o777
        assert mode == (0o755 if path.is_dir() else 0o644), (path, oct(mode))


def test_each_directory_is_made_once(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    made: list[str] = []
    real = os.mkdir

    def spy(path: str | os.PathLike[str], mode: int = 0o777, **kwargs: object) -> None:
        made.append(os.fspath(path))
        real(path, mode)

    monkeypatch.setattr(os, "mkdir", spy)
    out = tmp_path / "out"
    render_to(plan_source(PROJECT / "examples"), out, 1, fsync=False)
    dirs = [p for p in out.rglob("*") if p.is_dir()]
    inside = [m for m in made if "/" in m.partition("/.out.new-")[2]]  # not the parent nor mkdtemp's
    assert len(inside) == len(set(inside)) == len(dirs)


def test_a_failed_fsync_keeps_the_previous_output(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(writer, "SYNCFS", None)
    out = tmp_path / "out"
    render_to(plan_source(PROJECT / "examples"), out, 1)
    before = _tree(out)

    def broken(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", broken)
    runner = CliRunner()
    result = runner.invoke(main, ["render", str(PROJECT / "examples"), "--out", str(out)])
    assert result.exit_code == 1
    assert "cannot write the output" in result.output and "Traceback" not in result.output
    assert _tree(out) == before
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_chmod_only_when_the_umask_would_strip_bits(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Under the usual umask 022 the modes are right as created: no chmod per file."""
    calls: list[int] = []
    real = os.fchmod

    def spy(fd: int, mode: int) -> None:
        calls.append(mode)
        real(fd, mode)

    monkeypatch.setattr(os, "fchmod", spy)
    old = os.umask(0o022)
    try:
        render_to(plan_source(PROJECT / "examples"), tmp_path / "a", 1, fsync=False)
        assert calls == []
        os.umask(0o077)
        tree = render_to(plan_source(PROJECT / "examples"), tmp_path / "b", 1, fsync=False)
    finally:
        os.umask(old)
    assert len(calls) == len(tree.files)
    assert _tree(tmp_path / "a") == _tree(tmp_path / "b")
