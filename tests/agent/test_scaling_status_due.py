"""When the autoscaling loop writes a scale target's or the workload's status (issue 35.2).

A scale in flight writes its progress once, when it settles (or once a change has waited
``STATUS_INTERVAL``), not at its start and again at its end; anything that is not progress (a
refusal, the selector, a problem) is written at once. Clock values are passed in: no waiting.
"""

from __future__ import annotations

from typing import Any

from grove_gitops.agent.scaling.scaler import STATUS_INTERVAL, status_due

GEN = 3


def _ready(status: bool, reason: str, message: str = "") -> dict[str, Any]:
    return {"type": "Ready", "status": "True" if status else "False", "reason": reason, "message": message,
            "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": GEN}


def _blocked(on: bool) -> dict[str, Any]:
    return {"type": "ScaleBlocked", "status": "True" if on else "False",
            "reason": "QuotaExceeded" if on else "GangsCreated",
            "message": "exceeded quota: q" if on else "every gang of the count was created",
            "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": GEN}


def _target(replicas: int, ready: int, generation: int = GEN, blocked: bool = False) -> dict[str, Any]:
    return {"replicas": replicas, "readyReplicas": ready, "updatedReplicas": ready, "availableReplicas": ready,
            "selector": "app.kubernetes.io/part-of=w", "observedGeneration": generation,
            "conditions": [_blocked(blocked)]}


def test_a_scale_in_flight_writes_its_progress_once_when_it_settles() -> None:
    held: dict[str, float] = {}
    written = _target(2, 2, generation=GEN - 1)  # before the /scale write
    passes = [(0.0, _target(2, 2)), (0.5, _target(10, 2)), (1.0, _target(30, 12)), (2.0, _target(50, 40)),
              (3.0, _target(50, 50))]
    writes = []
    for now, new in passes:
        settled = new["replicas"] == new["readyReplicas"] == 50
        if status_due(held, "t", written, new, settled, STATUS_INTERVAL, now):
            writes.append(now)
            written = new
    assert writes == [3.0]  # the observedGeneration bump and the moving counts went out with the end
    assert written == _target(50, 50) and held == {}


def test_a_long_scale_refreshes_its_progress_once_per_interval() -> None:
    held: dict[str, float] = {}
    written = _target(2, 2)
    writes = []
    for tick in range(25):  # a pass every 0.5 s, counts moving, never settled within 12 s
        now, new = tick * 0.5, _target(50, 2 + tick)
        if status_due(held, "t", written, new, False, STATUS_INTERVAL, now):
            writes.append(now)
            written = new
    assert writes == [5.0, 10.5]  # held since 0.0, then since the next change at 5.5


def test_a_refusal_while_in_flight_is_written_at_once() -> None:
    held = {"t": 0.0}
    assert status_due(held, "t", _target(2, 2), _target(10, 2, blocked=True), False, STATUS_INTERVAL, 0.1)
    assert held == {}
    # and its end too, though the counts still move
    assert status_due(held, "t", _target(10, 2, blocked=True), _target(12, 4), False, STATUS_INTERVAL, 0.2)


def test_a_new_selector_is_written_at_once() -> None:
    fresh: dict[str, Any] = {}
    assert status_due({}, "t", fresh, _target(0, 0), False, STATUS_INTERVAL, 0.0)


def test_the_workloads_ready_flipping_while_pods_start_is_progress_and_a_problem_is_not() -> None:
    def workload(ready: dict[str, Any], available: int) -> dict[str, Any]:
        return {"observedGeneration": GEN, "replicas": 1, "availableReplicas": available, "updatedReplicas": available,
                "conditions": [ready, _blocked(False)]}

    ok = workload(_ready(True, "Available", "1 of 1 replicas have every pod Ready"), 1)
    starting = workload(_ready(False, "ReplicasNotReady", "0 of 1 replicas available (each standalone PodClique and scaling group at its minAvailable)"), 0)
    held: dict[str, float] = {}
    assert not status_due(held, "w", ok, starting, False, STATUS_INTERVAL, 0.0)
    assert not status_due(held, "w", ok, ok, True, STATUS_INTERVAL, 1.0)  # back where it was: nothing to write
    assert held == {}
    broken = workload(_ready(False, "InvalidWorkload", "w: bad"), 0)
    assert status_due(held, "w", ok, broken, False, STATUS_INTERVAL, 2.0)
    assert status_due(held, "w", broken, starting, False, STATUS_INTERVAL, 3.0)  # leaving a problem shows too


def test_an_unchanged_status_is_never_written() -> None:
    held = {"t": 0.0}
    assert not status_due(held, "t", _target(50, 50), _target(50, 50), True, STATUS_INTERVAL, 100.0)
    assert held == {}
