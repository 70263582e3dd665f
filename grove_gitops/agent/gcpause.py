"""The agent process's garbage-collector pauses: measured, and kept short (issue 35.1).

Why: the agent's cache holds every managed pod and PodGang as decoded JSON (tens of tracked
containers each), and a rollout replaces them all. CPython's full (generation 2) collection
walks every tracked object while holding the GIL, so every thread of the agent stood still
for it: 150-840 ms per full collection in the rollout benchmark of 1,000 pods, long enough to
show as a slow rollout step.

What: :class:`GcPauses` runs in its own thread of the agent process (``service.run_agent``;
never in a process the agent shares, such as a test's). Every ``interval`` seconds it runs a
young collection (generations 0 and 1: cheap, it frees what just became cyclic garbage) and
then :func:`gc.freeze`, which moves every object that survived into the permanent generation:
the automatic full collections then walk only what is newer than the last freeze. Objects
that die later are still freed at once by reference counting (the decoded JSON holds no
cycles); only cyclic garbage that reached the old generation before becoming garbage waits,
so every ``full_every`` seconds the freeze is undone and one full collection runs at a moment
the agent chose (and is measured like every other). Memory stays bounded by that period.

While it runs, CPython's own full collections are off (the third threshold is
:data:`NO_AUTOMATIC_FULL`; the first two are left alone): with the freeze, the old generation
only holds what survived since the last one, yet CPython still started full collections of it
on its own, at any moment (its trigger counts young collections, not the objects it would
walk): 220 ms pauses in the middle of the rollout benchmark, a Ready event waiting for them
(issue 35.1). The young collections stay automatic and short; the full one is the agent's.

Every pause is recorded by a :data:`gc.callbacks` hook (a list append: the hook runs inside
whatever thread the collector interrupted, possibly one holding the metrics lock, so it never
takes a lock) and reported as ``grove_gitops_agent_gc_pause_seconds`` (a histogram) and
``grove_gitops_agent_gc_pause_longest_seconds``.
"""

from __future__ import annotations

import collections
import gc
import threading
import time
from collections.abc import Callable
from typing import Any

from grove_gitops.metrics import Registry

#: Seconds between two freezes (the agent's default resync: its loop's own cadence).
INTERVAL = 2.0
#: Seconds between two full collections with nothing frozen.
FULL_EVERY = 600.0
BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0)
#: Pauses kept until the next report (bounded: a burst of young collections cannot grow it).
MAX_KEPT = 10_000
#: The third collector threshold while :meth:`GcPauses.run` runs: CPython starts a full
#: collection only after this many young (generation 1) ones, i.e. never between two ticks.
NO_AUTOMATIC_FULL = 1_000_000_000


class GcPauses:
    """Measures collector pauses and keeps the full ones short (see the module's comment)."""

    def __init__(self, registry: Registry, *, interval: float = INTERVAL, full_every: float = FULL_EVERY,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if not 0 < interval <= full_every:
            raise ValueError("need 0 < interval <= full_every")
        self.registry = registry
        self.interval = interval
        self.full_every = full_every
        self.clock = clock
        self.longest = 0.0
        self.full_collections = 0
        self._pauses: collections.deque[tuple[int, float]] = collections.deque(maxlen=MAX_KEPT)
        self._began = 0.0
        self._last_full = clock()

    # -- measuring ---------------------------------------------------------------------
    def _hook(self, phase: str, info: dict[str, Any]) -> None:
        # No lock, no allocation beyond a tuple: this runs inside an interrupted thread.
        if phase == "start":
            self._began = time.perf_counter()
        else:
            self._pauses.append((int(info.get("generation", 0)), time.perf_counter() - self._began))

    def install(self) -> None:
        if self._hook not in gc.callbacks:
            gc.callbacks.append(self._hook)

    def uninstall(self) -> None:
        if self._hook in gc.callbacks:
            gc.callbacks.remove(self._hook)

    def report(self) -> None:
        """Move the pauses recorded since the last report into the metrics."""
        while self._pauses:
            generation, seconds = self._pauses.popleft()
            self.longest = max(self.longest, seconds)
            self.registry.observe("grove_gitops_agent_gc_pause", "Garbage-collector pauses of the agent process "
                                  "(every thread stands still)", seconds, BUCKETS)
            self.registry.inc("grove_gitops_agent_gc_collections_total", "Garbage collections by generation",
                              generation=str(generation))
        self.registry.set("grove_gitops_agent_gc_pause_longest_seconds", "The longest garbage-collector pause so far",
                          self.longest)

    # -- keeping them short ------------------------------------------------------------
    def tick(self) -> None:
        """One round: freeze what survived a young collection, or, once per ``full_every``,
        unfreeze everything and collect it all."""
        now = self.clock()
        if now - self._last_full >= self.full_every:
            gc.unfreeze()
            gc.collect()
            self.full_collections += 1
            self._last_full = now
        else:
            gc.collect(1)
        gc.freeze()
        self.report()

    def run(self, stop: threading.Event) -> None:
        young, middle, full = gc.get_threshold()
        gc.set_threshold(young, middle, NO_AUTOMATIC_FULL)  # full collections are the ticks' alone
        self.install()
        self.report()  # the metrics exist from the start (a short-lived agent is read too)
        try:
            while not stop.wait(self.interval):
                self.tick()
        finally:
            gc.set_threshold(young, middle, full)
            self.uninstall()
            gc.unfreeze()
