"""What one pass decides first, and when a resync slice gives way (issue 35.1).

A resync re-derives every workload, a slice of it per pass. A replacement pod turning Ready
(the next rollout step) marks its workload dirty; if that pass also carried a resync slice,
the step's DELETE waited until every workload of the slice had been decided, and an event
arriving while a slice was being decided waited for the whole slice and the next pass. Now a
pass decides the workloads an event touched first and sends their writes, then the resync's
one by one, giving the rest of the slice back to the front of the queue as soon as another
event is waiting.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from grove_gitops.agent.cache import Key, WorkloadKey
from grove_gitops.agent.kube import Kube
from grove_gitops.agent.loop import Agent, AgentConfig
from grove_gitops.metrics import Registry
from grove_gitops.readmodel.snapshot import Snapshot
from tests.fakeserver import FakeApiServer

NS = "roll"
MANAGED = {"app.kubernetes.io/managed-by": "grove-gitops"}


def gang(name: str) -> dict[str, Any]:
    """A PodGang of workload ``name`` listing three pods that do not exist (nothing to do)."""
    refs = [{"name": f"{name}-{k}", "namespace": NS} for k in range(3)]
    return {
        "apiVersion": "scheduler.grove.io/v1alpha1",
        "kind": "PodGang",
        "metadata": {"name": name, "namespace": NS, "labels": {**MANAGED, "app.kubernetes.io/part-of": name}},
        "spec": {"podgroups": [{"name": "g", "minReplicas": 1, "podReferences": refs}]},
    }


class Recorded:
    def __init__(self) -> None:
        self.decided: list[WorkloadKey] = []
        self.released: list[Key] = []


@pytest.fixture
def agent() -> Iterator[Agent]:
    with FakeApiServer() as server:
        a = Agent(Kube(server.api_client()), AgentConfig(), Registry())
        try:
            a.cache.replace("podgangs", [gang(f"w-{i}") for i in range(6)])
            a.cache.dirty.clear()
            yield a
        finally:
            a._pool.shutdown()


def _record(agent: Agent, monkeypatch: pytest.MonkeyPatch, on_decide: Any = None) -> Recorded:
    seen = Recorded()
    snapshot = agent._snapshot

    def traced(wl: WorkloadKey) -> Snapshot:
        seen.decided.append(wl)
        if on_decide is not None:
            on_decide(wl)
        return snapshot(wl)

    def sync_gangs(keys: list[Key], *_: Any) -> None:
        seen.released.extend(keys)

    monkeypatch.setattr(agent, "_snapshot", traced)
    monkeypatch.setattr(agent, "sync_gangs", sync_gangs)
    return seen


def test_the_workload_of_an_event_is_decided_before_the_resync_slice(
        agent: Agent, monkeypatch: pytest.MonkeyPatch) -> None:
    wl = [(NS, f"w-{i}") for i in range(6)]
    agent._resync.extend(wl[:5])
    seen = _record(agent, monkeypatch)
    agent.sync_workloads(agent._this_pass({wl[5]}), wait=False)
    assert seen.decided == [wl[5], *wl[:5]]  # the event's workload first, though it sorts last
    assert set(seen.released) == {(NS, f"w-{i}") for i in range(6)}


def test_a_resync_slice_gives_way_to_an_event_that_comes_while_it_is_decided(
        agent: Agent, monkeypatch: pytest.MonkeyPatch) -> None:
    wl = [(NS, f"w-{i}") for i in range(6)]
    agent._resync.extend(wl[:5])

    def event_during(decided: WorkloadKey) -> None:
        if decided == wl[0]:  # a replacement of w-5 turns Ready while w-0 is being re-derived
            with agent.cache.lock:
                agent.cache.dirty.add(wl[5])

    seen = _record(agent, monkeypatch, event_during)
    agent.sync_workloads(agent._this_pass(set()), wait=False)
    assert seen.decided == [wl[0]]  # the rest of the slice waits for the event's pass
    assert list(agent._resync) == wl[1:5]  # given back, in its order, at the front
    assert seen.released == [(NS, "w-0")]  # the release step skips what was given back too
    seen.decided.clear()
    with agent.cache.lock:
        batch = set(agent.cache.dirty)
        agent.cache.dirty.clear()
    agent.sync_workloads(agent._this_pass(batch), wait=False)
    assert seen.decided == [wl[5], *wl[1:5]]  # the event's pass, then the slice goes on
    assert not agent._resync


def test_the_loop_sends_a_workloads_writes_as_soon_as_it_is_decided(
        agent: Agent, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 35.1: a pass of twenty dirty workloads decided all twenty before the first
    DELETE left. In the loop's passes (``wait=False``, the writes run in the pool) each
    workload's writes go out right after its own decision."""
    from grove_gitops.agent.actions import Action, DeletePod

    wl = [(NS, f"w-{i}") for i in range(3)]
    order: list[tuple[str, str]] = []
    snapshot = agent._snapshot

    def traced(key: WorkloadKey) -> Snapshot:
        order.append(("decide", key[1]))
        return snapshot(key)

    def day2_actions(snap: Snapshot, now: float) -> list[Action]:
        name = order[-1][1]
        return [DeletePod(NS, f"{name}-old", f"uid-{name}", "PodRetired", "a step", (NS, name))]

    def run_actions(actions: list[Action], wait: bool = True) -> int:
        order.extend(("write", a.name.removesuffix("-old")) for a in actions if isinstance(a, DeletePod))
        return 0

    monkeypatch.setattr(agent, "_snapshot", traced)
    monkeypatch.setattr(agent, "day2_actions", day2_actions)
    monkeypatch.setattr(agent, "_run_actions", run_actions)
    monkeypatch.setattr(agent, "sync_gangs", lambda *_: None)
    agent.sync_workloads(agent._this_pass(set(wl)), wait=False)
    assert order == [("decide", "w-0"), ("write", "w-0"), ("decide", "w-1"), ("write", "w-1"),
                     ("decide", "w-2"), ("write", "w-2")]


def test_events_that_never_stop_still_leave_the_resync_a_workload_per_pass(
        agent: Agent, monkeypatch: pytest.MonkeyPatch) -> None:
    """The resync is what expires grace periods and timers without an event: a workload with
    a pod that changes all the time must not hold it back for good."""
    wl = [(NS, f"w-{i}") for i in range(6)]
    agent._resync.extend(wl[:5])

    def always(_: WorkloadKey) -> None:
        with agent.cache.lock:
            agent.cache.dirty.add(wl[5])

    seen = _record(agent, monkeypatch, always)
    for _ in range(5):
        always(wl[5])  # an event is waiting before every pass's slice
        with agent.cache.lock:
            batch = set(agent.cache.dirty)
            agent.cache.dirty.clear()
        agent.sync_workloads(agent._this_pass(batch), wait=False)
    assert [w for w in seen.decided if w != wl[5]] == wl[:5]  # one per pass, in order
    assert not agent._resync
