"""How many worker processes a stage may use, and how to start them (issue 10).

Shared by the two stages that fan out: parsing the source files (:mod:`grove_gitops.load.files`)
and expanding and serialising PodCliqueSets (:mod:`grove_gitops.output.parallel`). Both are
pure Python, so threads would share one interpreter lock.
"""

from __future__ import annotations

import gc
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

#: Threads named so only call ``os.open``/``os.fsync``/``os.close`` (the writer's fsync pool):
#: they hold no lock a forked worker could need, so they do not rule out ``fork``.
FORK_SAFE_THREAD_PREFIX = "grove-gitops-fsync"


def default_jobs() -> int:
    """The CPUs this process may run on (a container's affinity mask, not the host's count)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def free_cpus(loadavg: str | None = None, cpus: int | None = None) -> int:
    """The CPUs no other process is running on right now (at least 1): :func:`default_jobs`
    minus the other runnable tasks of ``/proc/loadavg`` (its fourth field, ``running/total``,
    counts this process too). Workers on a CPU another process keeps busy only add their
    start-up and the cost of splitting the work (issue 35.4: ``--jobs 2`` slower than
    ``--jobs 1`` on a loaded machine); without ``/proc`` every CPU counts as free."""
    cpus = default_jobs() if cpus is None else cpus
    if loadavg is None:
        try:
            with open("/proc/loadavg", encoding="ascii") as f:
                loadavg = f.read(200)
        except OSError:
            return cpus
    fields = loadavg.split()
    running = fields[3].partition("/")[0] if len(fields) >= 4 else ""
    if not running.isdigit():
        return cpus
    return max(1, min(cpus, cpus - (int(running) - 1)))


def start_method() -> str:
    """``fork`` where it is safe: a single-threaded process on Linux (macOS system libraries
    are not fork-safe, which is why Python defaults to ``spawn`` there); ``spawn`` otherwise."""
    others = [t for t in threading.enumerate() if not t.name.startswith(FORK_SAFE_THREAD_PREFIX)]
    if sys.platform.startswith("linux") and len(others) == 1:
        return "fork"
    return "spawn"


#: Allocations between two collections of the youngest generation during a batch render
#: (Python's default is 700). See :func:`batch_gc`.
BATCH_GC_YOUNG = 10_000


@contextmanager
def batch_gc(young: int = BATCH_GC_YOUNG) -> Iterator[None]:
    """The collector tuned for one render of a short-lived command (``render``, ``validate``),
    restored afterwards.

    A render allocates millions of small containers that reference counting frees (JSON-shaped
    objects have no cycles), yet at Python's default the collector ran about 600 times during a
    mid-size render, a full collection among them scanning every object the imports and the
    plan hold: 0.16-0.23 s of a 2.2 s render's CPU (issue 35.4, measured with
    ``gc.callbacks``). Collecting the young generation every ``young`` allocations instead ran
    it 86 times and never fully, 0.03-0.05 s. Cycles are still collected, 14 times less often;
    the garbage that can wait is a few thousand objects. Workers forked inside inherit it.
    """
    before = gc.get_threshold()
    gc.set_threshold(max(young, before[0]), *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)
