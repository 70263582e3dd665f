"""How a ``grove-gitops`` process ends once its command has finished (issue 35.4).

Why: after the last byte is written, CPython's own shutdown still tears down every module the
command imported (pydantic's schemas, jsonschema, click, the render path), object by object.
That is about 70 ms of CPU and wall time of every invocation on the bench machine, a twentieth
of a mid-size render, and it does nothing a finished command needs. So the console script and
``python -m`` run the command, then do what the shutdown would do that matters (non-daemon
threads joined, ``atexit`` handlers such as logging's and multiprocessing's run, stdout and
stderr flushed) and end the process with the command's exit status via ``os._exit``.

Only an integer status (or none) ends this way: any other exit (a message given to
``SystemExit``, an uncaught exception, a thread still running) takes the ordinary path. In-process
callers (tests, click's runner) call :data:`grove_gitops.cli.main` and never come here.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import NoReturn

from grove_gitops.cli.main import main

#: The status CPython exits with when it cannot flush stdout at shutdown (``Py_FinalizeEx``).
FLUSH_FAILED = 120


def run() -> NoReturn:
    """The ``grove-gitops`` console script: :data:`main`, then :func:`finish` with its status."""
    try:
        main(prog_name="grove-gitops")
    except SystemExit as exc:
        code = exc.code
    else:  # pragma: no cover - click's standalone mode always raises SystemExit
        code = 0
    if code is None or (isinstance(code, int) and not isinstance(code, bool)):
        finish(code or 0)
    raise SystemExit(code)


def finish(status: int) -> NoReturn:
    """End this process with ``status`` as a normal shutdown would, without tearing it down."""
    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        raise SystemExit(status)  # the interpreter joins them first; so does the ordinary path
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # closed or broken (a pipe whose reader left): as CPython does
            status = status or FLUSH_FAILED
    os._exit(status)
