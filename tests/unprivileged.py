"""Test support: run the CLI as a user that is not root, so permission bits really apply.

Root ignores a folder's mode 000, so a permission test run as root (CI containers, this
project's own sandbox) would test nothing. When the tests run as root, :func:`invoke_as_nobody`
forks, the child drops to ``nobody`` (65534) and runs the CLI in process through click's
``CliRunner``; its outcome comes back through a pipe. The interpreter may live where
``nobody`` cannot read (``/root/.pyenv``), and so may the checkout with its ``.venv`` (a clone
under ``mktemp -d`` or ``/root``, mode 700), so nothing the child needs may be read from
there after the fork: the modules a command imports are imported before it by a warm-up run
(:func:`warm_up`), and the installed packages' entry points (the scheduler backends, which
``importlib.metadata`` finds by listing ``site-packages`` on every call) are listed before it
and handed to the child. As any other user the CLI runs directly.
"""

from __future__ import annotations

import os
import pickle
import shutil
import stat
import tempfile
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path

from click.testing import CliRunner

from grove_gitops import backendapi
from grove_gitops.cli import main
from tests.support import PROJECT

NOBODY = 65534


@dataclass(frozen=True)
class Outcome:
    exit_code: int
    output: str
    #: The uncaught exception's traceback ("" when the command ended with an exit code).
    traceback: str


def _invoke(args: list[str]) -> Outcome:
    result = CliRunner().invoke(main, args)
    exc = result.exception
    trace = "" if exc is None or isinstance(exc, SystemExit) else "".join(traceback.format_exception(exc))
    return Outcome(result.exit_code, result.output, trace)


def warm_up(folder: Path) -> None:
    """Run ``validate`` and ``render`` once on the examples, importing what they import."""
    _invoke(["validate", str(PROJECT / "examples")])
    _invoke(["render", str(PROJECT / "examples"), "--out", str(folder / "warm-up")])
    shutil.rmtree(folder / "warm-up", ignore_errors=True)


def invoke_as_nobody(args: list[str]) -> Outcome:
    """``grove-gitops ARGS`` as a user whom file modes bind (see the module docstring)."""
    if os.geteuid() != 0:
        return _invoke(args)
    listed = entry_points()  # as root: site-packages may be unreadable to nobody
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        try:
            os.close(read)
            backendapi.entry_points = lambda **selection: listed.select(**selection)  # type: ignore[assignment]
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            data = pickle.dumps(_invoke(args))
        except BaseException as exc:
            data = pickle.dumps(Outcome(-1, "", "".join(traceback.format_exception(exc))))
        try:
            os.write(write, data)
        finally:
            os._exit(0)
    os.close(write)
    chunks = []
    while chunk := os.read(read, 1 << 16):
        chunks.append(chunk)
    os.close(read)
    os.waitpid(pid, 0)
    outcome: Outcome = pickle.loads(b"".join(chunks))
    return outcome


@contextmanager
def shared_folder() -> Iterator[Path]:
    """A fresh folder every user may enter and write (pytest's own tmp_path is root's 0700)."""
    folder = Path(tempfile.mkdtemp(prefix="grove-gitops-perm-"))
    os.chmod(folder, 0o777)
    try:
        yield folder
    finally:
        for parent, dirs, _ in os.walk(folder):
            for name in dirs:
                os.chmod(os.path.join(parent, name), stat.S_IRWXU)
        shutil.rmtree(folder, ignore_errors=True)


def open_to_all(root: Path) -> None:
    """Let every user read and write everything below ``root``."""
    for parent, dirs, files in os.walk(root):
        os.chmod(parent, 0o777)
        for name in dirs:
            os.chmod(os.path.join(parent, name), 0o777)
        for name in files:
            os.chmod(os.path.join(parent, name), 0o666)
