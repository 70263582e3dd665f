"""Rollout progress on the PodGang costs a bounded number of writes per replica, however many
pods the replica has and however slowly they become Ready (issue 13: writes per replaced pod)."""

from __future__ import annotations

import types

import pytest

from grove_gitops.agent import execute
from grove_gitops.agent.actions import SetCondition
from grove_gitops.agent.kube import Kube
from grove_gitops.agent.loop import Agent, AgentConfig
from grove_gitops.metrics import Registry
from tests.fakeserver import FakeApiServer
from tests.gatelifter.support import rendered_objects
from tests.support import PROJECT


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def _status_writes(server: FakeApiServer) -> int:
    return server.requests_count(verb="patch", resource="podgangs/status")


@pytest.mark.parametrize(
    ("seconds_per_step", "expected"),
    [
        (0.1, 2),  # a fast rollout: the start and the end
        (6.0, 2 + 3),  # Ready after 6 s each: the start, 3 refreshes (a quarter of the steps apart), the end
        (600.0, 2 + 3),  # very slow pods: still at most PROGRESS_WRITES - 1 refreshes, not one per step
    ],
)
def test_progress_refreshes_are_bounded_per_replica(
    monkeypatch: pytest.MonkeyPatch, seconds_per_step: float, expected: int
) -> None:
    clock = Clock()
    monkeypatch.setattr(execute, "time", types.SimpleNamespace(monotonic=clock.monotonic, sleep=clock.sleep))
    gang = next(o for o in rendered_objects(PROJECT / "examples") if o["kind"] == "PodGang")
    with FakeApiServer(crd_dir=PROJECT.parent / "shared" / "crds") as server:
        agent = Agent(Kube(server.api_client()), AgentConfig(), Registry())
        try:
            stored = server.put_object(gang)
            agent.cache.replace("podgangs", [stored])
            key = (stored["metadata"]["namespace"], stored["metadata"]["name"])
            steps = 20
            for step in range(1, steps + 1):
                assert agent.executor.set_condition(
                    SetCondition(key, "RollingUpdate", "True", "RollingReplica",
                                 f"rolling replica 0, step {step} of {steps}", progress=(step, steps))
                )
                clock.now += seconds_per_step
            assert agent.executor.set_condition(
                SetCondition(key, "RollingUpdate", "False", "UpdateComplete", "replica 0 runs its current template")
            )
            assert _status_writes(server) == expected
            written = server.get_object("podgangs.scheduler.grove.io", key[0], key[1])
            assert written is not None
            rolling = {c["type"]: c for c in written["status"]["conditions"]}["RollingUpdate"]
            assert (rolling["status"], rolling["reason"]) == ("False", "UpdateComplete")
        finally:
            agent._pool.shutdown()
