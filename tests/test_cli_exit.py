"""How a ``grove-gitops`` process ends (issue 35.4, :mod:`grove_gitops.cli.entry`): once the
command has finished, the interpreter's teardown of every imported module is skipped, while
what a normal shutdown does that matters still happens: the exit status, flushed output,
``atexit`` handlers, non-daemon threads joined. Each case runs a real process."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from tests.support import PROJECT, pcs_yaml, write_source


def _python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args], cwd=PROJECT, capture_output=True, text=True, timeout=120
    )


#: A module-level object whose finaliser runs only in the interpreter's teardown.
_PROBE = """
import atexit, os, sys, threading
class Probe:
    def __del__(self, write=os.write):  # unbuffered: stderr's buffer is flushed before teardown
        write(2, b"teardown ran\\n")
probe = Probe()
atexit.register(lambda: sys.stderr.write("atexit ran\\n"))
"""


def test_a_finished_command_skips_the_teardown_but_runs_exit_handlers() -> None:
    done = _python(_PROBE + "from grove_gitops.cli.entry import run\nsys.argv[0] = 'grove-gitops'\nrun()\n", "--version")
    assert done.returncode == 0
    assert done.stdout == "grove-gitops, version " + done.stdout.split("version ")[1]
    assert "atexit ran" in done.stderr
    assert "teardown ran" not in done.stderr


def test_exit_statuses_are_the_commands(tmp_path: Path) -> None:
    runner = "from grove_gitops.cli.entry import run\nrun()\n"
    assert _python(runner, "render", str(tmp_path / "missing"), "--out", str(tmp_path / "o")).returncode == 1
    assert _python(runner, "no-such-command").returncode == 2
    assert _python("import sys\n" + runner, "--help").returncode == 0


def test_a_render_through_python_m_writes_everything_and_prints_it_all(tmp_path: Path) -> None:
    src = write_source(tmp_path / "src", {"w.yaml": pcs_yaml("w")})
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "grove_gitops.cli", "render", str(src), "--out", str(out), "--output", "json"],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip().endswith("}")  # the whole JSON report, flushed before the exit
    assert (out / "kustomization.yaml").is_file()


def test_a_running_thread_takes_the_ordinary_exit_and_finishes() -> None:
    code = _PROBE + """
looked = threading.Event()
listed = threading.enumerate
def enumerate_and_tell():  # the thread is still waiting when the exit looks for threads
    threads = listed()
    looked.set()
    return threads
threading.enumerate = enumerate_and_tell
def late():
    looked.wait()
    sys.stdout.write("thread finished\\n")
threading.Thread(target=late).start()
from grove_gitops.cli.entry import run
run()
"""
    done = _python(code, "--version")
    assert done.returncode == 0
    assert "thread finished" in done.stdout
    assert "teardown ran" in done.stderr  # the ordinary path, teardown included


def test_stdout_that_cannot_be_flushed_exits_120_as_cpython_does() -> None:
    code = """
import sys
class Broken:
    def write(self, text): return len(text)
    def flush(self): raise BrokenPipeError(32, "Broken pipe")
from grove_gitops.cli import entry
sys.stdout = Broken()
entry.finish(0)
"""
    assert _python(code).returncode == 120
