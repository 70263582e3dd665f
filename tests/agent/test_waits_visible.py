"""Waits are visible (issue 37): a rollout or gang that waits longer than the threshold says
why, per workload: ``RolloutBlocked`` on the PodGang and the ``gitops.grove.io`` PodCliqueSet,
``grove_gitops_rollout_blocked_seconds`` by workload and reason, one log line per change of
reason. The agent runs against the fake API server with an injected clock (no sleeps).
"""

from __future__ import annotations

import copy
import logging
from typing import Any

import pytest

from grove_gitops.agent import blocked
from grove_gitops.agent.kube import Kube
from grove_gitops.agent.loop import Agent, AgentConfig
from grove_gitops.expand.scaling import API_VERSION, PCS_KIND
from grove_gitops.metrics import Registry
from tests.agent.builders import NS, T0, Clique, set_state, world
from tests.agent.test_rollout_wedge import _create
from tests.fakeserver import FakeApiServer

WL = (NS, "p")


def _cond(obj: dict[str, Any] | None, kind: str = blocked.ROLLOUT_BLOCKED) -> dict[str, Any] | None:
    conds = ((obj or {}).get("status") or {}).get("conditions") or []
    return next((c for c in conds if c.get("type") == kind), None)


def _lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "blocked for" in r.getMessage() or "moves again" in r.getMessage()]


def test_a_rollout_held_by_a_new_pod_that_never_gets_ready_says_why(caplog: pytest.LogCaptureFixture) -> None:
    # Step 1 retires an old router; its new pod is released and never gets Ready (a bad image).
    w = world(cliques=(Clique("router", 2, 1),))
    for k in range(2):
        w.set(f"p-0-router-{k}", gated=True, ready=False, phase="Pending", scheduled=False)
        w.add_old(f"p-0-router-{k}")
    w.gang("p-0")["status"]["conditions"] = [{"type": "Initialized", "status": "True", "reason": "PodGangPodsCreated",
                                              "message": "ready", "lastTransitionTime": "2026-11-24T10:00:00Z"}]
    now = [T0]
    with FakeApiServer() as server:
        server.put_object({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
        registry = Registry()
        agent = Agent(Kube(server.api_client()), AgentConfig(namespace=NS), registry, clock=lambda: now[0])
        try:
            live = {(NS, p["metadata"]["name"]): _create(server, agent.kube, p) for p in w.pods.values()}
            gang = server.put_object(copy.deepcopy(w.gang("p-0")))
            record = server.put_object({"apiVersion": API_VERSION, "kind": PCS_KIND,
                                        "metadata": {"name": "p", "namespace": NS},
                                        "spec": {"replicas": 1, "rendererVersion": "test"}})
            agent.cache.replace("pods", copy.deepcopy(list(live.values())))
            agent.cache.replace("podgangs", [gang])
            assert agent.scaler is not None
            agent.scaler.gitops.put(PCS_KIND, record)

            def run(at: float) -> None:
                now[0] = T0 + at
                agent.sync_workloads([WL], wait=True)
                # The pass's PodGang writes run in the background: wait until they are written.
                assert server.wait_for(lambda: not agent._gang_queues and not agent._holding, timeout=10)

            with caplog.at_level(logging.INFO, logger="grove_gitops.agent"):
                run(0)  # step 1
                run(30)  # the wait begins
                run(89)
                assert _cond(server.get_object("podgangs.scheduler.grove.io", NS, "p-0")) is None  # 59 s: under 60
                assert registry.get(blocked.METRIC, namespace=NS, podcliqueset="p", reason="NewPodNotReady") is None
                run(91)
                run(100)
            cond = _cond(server.get_object("podgangs.scheduler.grove.io", NS, "p-0"))
            assert cond is not None and cond["status"] == "True" and cond["reason"] == "NewPodNotReady"
            assert "new pod p-0-router-0-h1 is not Ready" in cond["message"]
            assert registry.get(blocked.METRIC, namespace=NS, podcliqueset="p", reason="NewPodNotReady") == 70.0
            assert blocked.METRIC in registry.render()
            assert server.wait_for(lambda: (_cond(server.get_object("podcliquesets.gitops.grove.io", NS, "p")) or {})
                                   .get("reason") == "NewPodNotReady", timeout=10)
            assert len(_lines(caplog)) == 1  # one line, not one per pass
            # Another writer of the record's status (the autoscaling half) drops the condition:
            # the next pass says it again.
            current = server.get_object("podcliquesets.gitops.grove.io", NS, "p")
            assert current is not None
            current["status"] = {"conditions": [c for c in current["status"]["conditions"]
                                                if c["type"] != blocked.ROLLOUT_BLOCKED]}
            agent.scaler.gitops.put(PCS_KIND, server.put_object(current))
            run(105)
            assert server.wait_for(lambda: (_cond(server.get_object("podcliquesets.gitops.grove.io", NS, "p")) or {})
                                   .get("reason") == "NewPodNotReady", timeout=10)
            assert len(_lines(caplog)) == 1

            # The new pod gets Ready: the next step is taken, the wait is over.
            pod = server.get_object("pods", NS, "p-0-router-0-h1")
            assert pod is not None
            running = server.put_object(set_state(copy.deepcopy(pod), ready=True, phase="Running", scheduled=True))
            agent.cache.apply("pods", "MODIFIED", running)
            with caplog.at_level(logging.INFO, logger="grove_gitops.agent"):
                run(110)
            cond = _cond(server.get_object("podgangs.scheduler.grove.io", NS, "p-0"))
            assert cond is not None and cond["status"] == "False"
            assert registry.get(blocked.METRIC, namespace=NS, podcliqueset="p", reason="NewPodNotReady") is None
            assert server.wait_for(lambda: (_cond(server.get_object("podcliquesets.gitops.grove.io", NS, "p")) or {})
                                   .get("status") == "False", timeout=10)
            assert len(_lines(caplog)) == 2 and "moves again" in _lines(caplog)[1]
        finally:
            agent._pool.shutdown()


def test_one_log_line_per_change_of_reason(caplog: pytest.LogCaptureFixture) -> None:
    registry = Registry()
    waits = blocked.Waits(registry, threshold=60.0)
    subject, wl, gang = ("rollout", NS, "p"), WL, (NS, "p-0")
    a = blocked.Wait("NewPodNotReady", "new pod p-0-router-0-h1 is not Ready yet")
    b = blocked.Wait("MinAvailable", "retiring old pod p-0-router-1-h0 would leave PodClique p-0-router below 2")
    with caplog.at_level(logging.INFO, logger="grove_gitops.agent"):
        writes = [waits.observe(subject, wl, gang, w, T0 + t) for t, w in ((0, a), (59, a), (60, a), (61, a), (70, b),
                                                                          (80, b), (90, None), (95, None))]
    assert [len(x) for x in writes] == [0, 0, 1, 0, 1, 0, 1, 0]
    assert [x[0].reason for x in writes if x] == ["NewPodNotReady", "MinAvailable", "Progressing"]
    assert writes[1] == [] and writes[4][0].since == T0  # the clock runs from the first pass of the wait
    lines = _lines(caplog)
    assert len(lines) == 3 and "(NewPodNotReady)" in lines[0] and "(MinAvailable)" in lines[1]
    assert registry.get(blocked.METRIC, namespace=NS, podcliqueset="p", reason="NewPodNotReady") is None
    assert registry.get(blocked.METRIC, namespace=NS, podcliqueset="p", reason="MinAvailable") is None


def test_the_threshold_is_an_agent_option_with_its_env_var() -> None:
    from click.testing import CliRunner

    from grove_gitops.cli import main

    result = CliRunner().invoke(main, ["agent", "--help"], terminal_width=200)
    assert "--blocked-after" in result.output and "GROVE_GITOPS_AGENT_BLOCKED_AFTER" in result.output
