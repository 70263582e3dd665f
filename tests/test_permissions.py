"""Issue 21 §5, second finding: a source folder that cannot be entered (mode 000, as a user
other than root) was a ``PermissionError`` traceback, and ``render --out`` where the parent
is missing or not writable a raw ``OSError`` traceback. Both are ``path: message`` errors
with exit 1 and no output, not even the folders made for OUT.

The commands run as ``nobody`` when the tests run as root (``tests/unprivileged.py``)."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from grove_gitops.cli import main
from grove_gitops.errors import OutputError
from grove_gitops.output import writer
from tests.support import PROJECT
from tests.unprivileged import invoke_as_nobody, open_to_all, shared_folder, warm_up


@pytest.fixture
def base() -> Iterator[Path]:
    with shared_folder() as folder:
        warm_up(folder)
        shutil.copytree(PROJECT / "examples", folder / "src")
        open_to_all(folder)
        yield folder


def _assert_error(args: list[str], expected: str) -> None:
    outcome = invoke_as_nobody(args)
    assert outcome.traceback == ""
    assert outcome.exit_code == 1, outcome.output
    assert [line for line in outcome.output.splitlines() if line.startswith("error:")] == [f"error: {expected}"]


@pytest.mark.parametrize("mode", [0o000, 0o666], ids=["mode-000", "readable-not-searchable"])
def test_a_source_folder_that_cannot_be_entered(mode: int, base: Path) -> None:
    os.chmod(base / "src" / "workloads", mode)
    _assert_error(["validate", str(base / "src")], "workloads: cannot read folder: Permission denied")
    _assert_error(
        ["render", str(base / "src"), "--out", str(base / "out")], "workloads: cannot read folder: Permission denied"
    )
    assert not (base / "out").exists()


def test_a_source_root_that_cannot_be_entered(base: Path) -> None:
    os.chmod(base / "src", 0o666)
    _assert_error(["validate", str(base / "src")], ".: cannot read folder: Permission denied")


def test_render_into_a_folder_that_is_not_writable(base: Path) -> None:
    (base / "ro").mkdir()
    os.chmod(base / "ro", 0o555)
    for out, denied in (
        (base / "ro" / "out", base / "ro"),  # the temporary tree next to OUT
        (base / "ro" / "missing" / "deeper" / "out", base / "ro" / "missing"),  # OUT's first missing parent
    ):
        _assert_error(
            ["render", str(base / "src"), "--out", str(out)],
            f"{out}: cannot write the output: Permission denied: {denied}",
        )
    assert os.listdir(base / "ro") == []


def test_nothing_is_read_from_a_checkout_the_child_cannot_enter(base: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 34.16: a clone under ``mktemp -d`` or ``/root`` (mode 700) holds the ``.venv``
    (``site-packages``) and the project's own metadata (``grove_gitops.egg-info``), which
    ``importlib.metadata`` lists for the scheduler backends on every call; ``nobody`` cannot
    enter it, so the child found no backend and every profile was "Unsupported value". Here
    every folder on ``sys.path`` is reached through a folder of mode 700, as in such a clone:
    the child still validates the example."""
    private = Path(tempfile.mkdtemp(prefix="grove-gitops-private-"))  # mode 700, root's
    try:
        entries = []
        for i, entry in enumerate(sys.path):
            if entry and os.path.isdir(entry):
                link = private / f"path{i}"
                link.symlink_to(entry)
                entries.append(str(link))
            else:
                entries.append(entry)
        monkeypatch.setattr(sys, "path", entries)
        outcome = invoke_as_nobody(["validate", str(base / "src")])
    finally:
        shutil.rmtree(private)
    assert outcome.traceback == ""
    assert outcome.exit_code == 0, outcome.output


def test_render_below_a_file(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    out = tmp_path / "file" / "sub" / "out"
    result = CliRunner().invoke(main, ["render", str(PROJECT / "examples"), "--out", str(out)])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == 1
    assert result.output.splitlines() == [f"error: {out}: cannot write the output: Not a directory: {tmp_path / 'file'}"]


def test_missing_parents_made_for_a_failed_render_are_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No partial output: the folders made for OUT go again when the render fails."""

    def fail(*args: object, **kwargs: object) -> object:
        raise OutputError("the render failed after the output folder was made")

    monkeypatch.setattr(writer, "build_tree_from_plan", fail)
    (tmp_path / "keep").mkdir()
    out = tmp_path / "keep" / "a" / "b" / "out"
    result = CliRunner().invoke(main, ["render", str(PROJECT / "examples"), "--out", str(out)])
    assert result.exit_code == 1
    assert "the render failed after the output folder was made" in result.output
    assert os.listdir(tmp_path / "keep") == []


def test_missing_parents_are_made_for_a_render_that_succeeds(tmp_path: Path) -> None:
    out = tmp_path / "a" / "b" / "out"
    result = CliRunner().invoke(main, ["render", str(PROJECT / "examples"), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert (out / "render.meta").is_file()
