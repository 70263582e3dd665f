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
