"""The breach units derived once per workload and pass (issue 35.2).

:func:`healing.workload_units` is computed once in :func:`decide.day2_actions` and handed to
both :func:`healing.gang_termination` and :func:`healing.breached_replicas`, which derived the
same units each before. These tests drive both paths side by side over passes in which pods
crash, recover and are terminated, and check that the shared units decide exactly what the
plain path decides (actions, memory, breached replicas), and that units derived from one
state are never those of another.
"""

from __future__ import annotations

import copy
from types import SimpleNamespace
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from grove_gitops.agent import healing
from grove_gitops.agent.actions import Memory
from tests.agent.builders import T0, Clique, Group, World, apply, world

DELAY = 60.0


def two_tier(replicas: int = 2) -> World:
    return world(
        cliques=(Clique("router", 2, 2),),
        groups=(Group("prefill", 2, 1, (Clique("leader", 1, 1), Clique("worker", 2, 1))),),
        replicas=replicas,
        delay=DELAY,
    )


def both_paths(w: World, memory: Memory, now: float, rolling: set[int]) -> set[int]:
    """One pass both ways from the same memory; asserts they agree, applies the actions."""
    plain_memory, shared_memory = copy.deepcopy(memory), copy.deepcopy(memory)
    wl = w.wl()
    plain = healing.gang_termination(wl, plain_memory, now, rolling)
    plain_breached = healing.breached_replicas(wl, plain_memory, now, rolling)
    units = healing.workload_units(wl)
    shared = healing.gang_termination(wl, shared_memory, now, rolling, units)
    shared_breached = healing.breached_replicas(wl, shared_memory, now, rolling, units)
    assert shared == plain
    assert shared_breached == plain_breached
    assert shared_memory == plain_memory
    memory.__dict__.update(copy.deepcopy(plain_memory.__dict__))
    apply(w, plain, now)
    return plain_breached


def test_workload_units_are_each_replicas_own_units() -> None:
    w = two_tier(replicas=3)
    w.set("p-1-router-1", ready=False, crashing=True)
    wl = w.wl()
    units = healing.workload_units(wl)
    assert sorted(units) == sorted(wl.replicas)
    for i, day2 in wl.replicas.items():
        assert units[i] == healing.replica_units(wl, day2)


def test_shared_units_decide_what_the_plain_path_decides_through_a_breach_and_termination() -> None:
    w = two_tier()
    memory = Memory()
    assert both_paths(w, memory, T0, set()) == set()  # healthy: seen once-healthy
    w.set("p-0-router-1", ready=False, crashing=True)
    w.set("p-1-prefill-1-worker-0", scheduled=False, ready=False)
    w.set("p-1-prefill-1-worker-1", scheduled=False, ready=False)
    assert both_paths(w, memory, T0 + 1, set()) == {0}
    assert both_paths(w, memory, T0 + 2, {0}) == set()  # rolling replica: never breached
    both_paths(w, memory, T0 + 3, set())
    both_paths(w, memory, T0 + 62, set())  # expired: terminated, the same deletes both ways
    w.set("p-0-router-1", ready=True, crashing=False)
    both_paths(w, memory, T0 + 63, set())


def test_units_of_one_state_are_not_those_of_the_next() -> None:
    # Two snapshots that differ in one pod: their units differ, and each decides as the plain
    # path over its own snapshot does (nothing carried over from the earlier state).
    w = two_tier()
    memory = Memory()
    both_paths(w, memory, T0, set())
    before = healing.workload_units(w.wl())
    w.set("p-1-router-0", ready=False, crashing=True)
    after = healing.workload_units(w.wl())
    assert before != after
    assert [u.breach for u in before[1] if u.name == "p-1-router"] == [None]
    assert [u.breach for u in after[1] if u.name == "p-1-router"] != [None]
    assert both_paths(w, memory, T0 + 1, set()) == {1}


# --------------------------------------------------------------------------- one walk per clique

POD = st.builds(
    SimpleNamespace, scheduled=st.booleans(), errored=st.booleans(), started_not_ready=st.booleans(),
    terminating=st.booleans(),
)
SLOT = st.builds(SimpleNamespace, new=st.none() | POD, old=st.lists(POD, max_size=3))


def _grove_breach(pods: list[Any], min_available: int) -> str | None:
    """Grove's MinAvailableBreached (spec grove-day2.md §5.3 rows 2-4), written out plainly."""
    scheduled = sum(p.scheduled for p in pods)
    if scheduled < min_available:
        return healing.SCHEDULED_BELOW
    if scheduled - sum(p.errored for p in pods) - sum(p.started_not_ready for p in pods) < min_available:
        return healing.INSUFFICIENT_READY
    return None


@given(slots=st.lists(SLOT, max_size=6), min_available=st.integers(0, 8))
def test_one_walk_per_clique_is_grove_formula_over_all_and_over_live_pods(slots: list[Any], min_available: int) -> None:
    pods = [p for s in slots for p in ([s.new] if s.new is not None else []) + s.old]
    live = [p for p in pods if not p.terminating]
    state = healing._clique(slots, min_available)
    assert state.breach == _grove_breach(pods, min_available)
    assert state.fresh_breach == _grove_breach(live, min_available)
    assert state.healthy == (sum(p.scheduled for p in live) >= min_available)
