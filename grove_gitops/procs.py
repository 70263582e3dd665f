"""How many worker processes a stage may use, and how to start them (issue 10).

Shared by the two stages that fan out: parsing the source files (:mod:`grove_gitops.load.files`)
and expanding and serialising PodCliqueSets (:mod:`grove_gitops.output.parallel`). Both are
pure Python, so threads would share one interpreter lock.
"""

from __future__ import annotations

import os
import sys
import threading

#: Threads named so only call ``os.open``/``os.fsync``/``os.close`` (the writer's fsync pool):
#: they hold no lock a forked worker could need, so they do not rule out ``fork``.
FORK_SAFE_THREAD_PREFIX = "grove-gitops-fsync"


def default_jobs() -> int:
    """The CPUs this process may run on (a container's affinity mask, not the host's count)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def start_method() -> str:
    """``fork`` where it is safe: a single-threaded process on Linux (macOS system libraries
    are not fork-safe, which is why Python defaults to ``spawn`` there); ``spawn`` otherwise."""
    others = [t for t in threading.enumerate() if not t.name.startswith(FORK_SAFE_THREAD_PREFIX)]
    if sys.platform.startswith("linux") and len(others) == 1:
        return "fork"
    return "spawn"
