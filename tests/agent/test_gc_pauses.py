"""The agent process's collector pauses (issue 35.1, grove_gitops/agent/gcpause.py): what
survived is frozen so automatic full collections stay short, cyclic garbage is still
collected within ``full_every``, and every pause is reported."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from grove_gitops.agent.gcpause import GcPauses
from grove_gitops.metrics import Registry


class Node:
    def __init__(self) -> None:
        self.me = self  # a cycle: only the collector frees it


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def pauses() -> Iterator[tuple[GcPauses, Registry, Clock]]:
    registry, clock = Registry(), Clock()
    p = GcPauses(registry, interval=1.0, full_every=60.0, clock=clock)
    p.install()
    try:
        yield p, registry, clock
    finally:
        p.uninstall()
        gc.unfreeze()


def test_a_tick_freezes_what_survived(pauses: tuple[GcPauses, Registry, Clock]) -> None:
    p, _, _ = pauses
    gc.unfreeze()
    assert gc.get_freeze_count() == 0
    p.tick()
    assert gc.get_freeze_count() > 0  # the automatic full collections no longer walk these


def test_cyclic_garbage_of_frozen_objects_is_collected_at_the_full_round(
        pauses: tuple[GcPauses, Registry, Clock]) -> None:
    p, _, clock = pauses
    node = Node()
    ref = weakref.ref(node)
    p.tick()  # frozen while alive
    del node
    gc.collect()
    assert ref() is not None  # frozen: an ordinary collection leaves it
    clock.now = 30.0
    p.tick()
    assert ref() is not None and p.full_collections == 0
    clock.now = 61.0
    p.tick()
    assert ref() is None and p.full_collections == 1


def test_every_pause_is_reported(pauses: tuple[GcPauses, Registry, Clock]) -> None:
    p, registry, clock = pauses
    clock.now = 61.0
    p.tick()  # a full collection, at least
    assert (registry.get("grove_gitops_agent_gc_collections_total", generation="2") or 0) >= 1
    text = registry.render()
    assert "grove_gitops_agent_gc_pause_seconds_count" in text
    assert (registry.get("grove_gitops_agent_gc_pause_longest_seconds") or 0) > 0


def test_the_bounds_are_checked() -> None:
    with pytest.raises(ValueError):
        GcPauses(Registry(), interval=10.0, full_every=5.0)


def test_the_metrics_exist_before_the_first_round() -> None:
    """A short-lived agent's pauses are read too: the loop reports once as it starts."""
    import threading

    registry, stop = Registry(), threading.Event()
    p = GcPauses(registry, interval=60.0, full_every=600.0)
    stop.set()  # the loop ends at once, before any round
    try:
        p.run(stop)
    finally:
        gc.unfreeze()
    assert registry.get("grove_gitops_agent_gc_pause_longest_seconds") is not None
    assert p._hook not in gc.callbacks  # uninstalled on the way out


def test_while_it_runs_cpython_starts_no_full_collection_of_its_own() -> None:
    """Issue 35.1: with everything frozen at each tick, CPython still started full
    collections between ticks (its trigger counts young collections): 220 ms pauses in the
    rollout benchmark. While :meth:`GcPauses.run` runs, only its ticks collect generation 2."""
    import threading

    full: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and info.get("generation") == 2:
            full.append(1)

    before = gc.get_threshold()
    stop = threading.Event()
    registry = Registry()
    p = GcPauses(registry, interval=3600.0, full_every=7200.0)  # no tick during the test
    runner = threading.Thread(target=p.run, args=(stop,), daemon=True)
    runner.start()
    gc.callbacks.append(count)
    try:
        for _ in range(10_000):  # run() has started: its first report is out (its settings come first)
            if registry.get("grove_gitops_agent_gc_pause_longest_seconds") is not None:
                break
            stop.wait(0.001)
        else:
            raise AssertionError("GcPauses.run never reported")
        kept = [[Node() for _ in range(10)] for _ in range(30_000)]  # 330,000 survivors
        assert len(kept) == 30_000
    finally:
        gc.callbacks.remove(count)
        stop.set()
        runner.join()
    assert full == []  # CPython's defaults run several full collections for as many survivors
    assert gc.get_threshold() == before  # and they are back once it stops
