"""A minAvailable breach held past terminationDelay terminates the gang; one that recovers
before it does not (issue 13, Tests)."""

from __future__ import annotations

import time
from collections.abc import Callable

from tests.day2.harness import Day2Env
from tests.day2.rest import Raw

ROUTERS = ("llama-disagg-0-router-0", "llama-disagg-0-router-1")


def _delay(value: str) -> Callable[[Raw], None]:
    def change(pcs: Raw) -> None:
        pcs["spec"]["template"]["terminationDelay"] = value

    return change


def _crash_routers(env: Day2Env) -> list[str]:
    desired = env.desired_pods()
    names = [desired["inference", h] for h in ROUTERS]
    for name in names:
        env.kubelet.crash("inference", name)
    return names


def test_breach_past_termination_delay_recreates_the_replica_as_a_gang(day2: Callable[..., Day2Env]) -> None:
    env = day2(edit=_delay("1s"))
    env.wait_until(env.converged, timeout=10, what="the first deploy")
    before = {v.name: v.uid for v in env.views(env.primary)}
    env.exempt("the gang termination this test provokes", before.values())
    mark = env.observer.mark()
    crashed_at = time.monotonic()
    _crash_routers(env)  # router minAvailable 1: both down is a breach of the standalone PodClique
    env.wait_until(
        lambda: all(v.uid != before.get(v.name) for v in env.views(env.primary)) and env.converged(),
        timeout=20,
        what="the whole replica re-created and Ready",
    )
    env.settle()
    deletes = [m for m in env.observer.since(mark) if m.event == "DELETED"]
    assert {m.pod for m in deletes} == set(before)  # PCS-replica scope: every pod of replica 0
    first_delete = min(m.time for m in deletes)
    assert first_delete - crashed_at >= 1.0  # not before terminationDelay
    gang = env.podgang("llama-disagg-0")
    assert gang is not None
    conditions = {c["type"]: c for c in gang["status"]["conditions"]}
    assert conditions["Initialized"]["status"] == "True"  # released together again

    def breached() -> str:
        gang = env.podgang("llama-disagg-0") or {}
        return {c["type"]: c["status"] for c in (gang.get("status") or {}).get("conditions") or []}.get("MinAvailableBreached", "")

    # The agent states the recovery on a pass after the pods turned Ready (a loaded CI run read
    # the gang in between): eventually False, as Grove's next reconcile would write it.
    env.wait_until(lambda: breached() == "False", timeout=10, what="MinAvailableBreached False again")
    env.assert_invariants()


def test_breach_that_recovers_in_time_changes_nothing(day2: Callable[..., Day2Env]) -> None:
    env = day2(edit=_delay("2s"))
    env.wait_until(env.converged, timeout=10, what="the first deploy")
    mark = env.observer.mark()
    names = _crash_routers(env)
    time.sleep(0.5)
    gang = env.podgang("llama-disagg-0")
    assert gang is not None
    breached = {c["type"]: c for c in gang["status"]["conditions"]}.get("MinAvailableBreached")
    assert breached is not None and breached["status"] == "True", gang["status"]
    for name in names:
        env.kubelet.set_ready("inference", name)
    time.sleep(2.5)
    env.settle()
    assert [m.pod for m in env.observer.since(mark) if m.event == "DELETED"] == []
    gang = env.podgang("llama-disagg-0")
    assert gang is not None
    assert {c["type"]: c["status"] for c in gang["status"]["conditions"]}["MinAvailableBreached"] == "False"
    env.assert_invariants()
