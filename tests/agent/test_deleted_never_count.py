"""A pod the agent deleted never counts towards its gang's completeness (issue 22, defect 2),
with the agent's real executor against the fake API server over HTTP.

The watch can deliver an event written before the DELETE after the DELETE's answer: the
cache then shows the deleted pod running again for a moment. Before the fix the whole-gang
decision read that cache, found the terminated gang complete and marked it ``Initialized``
again, after which every re-created pod was released on its own (a partial gang).
"""

from __future__ import annotations

import copy

from grove_gitops.agent.actions import DeletePod
from grove_gitops.agent.kube import Kube
from grove_gitops.agent.loop import Agent, AgentConfig
from grove_gitops.metrics import Registry
from tests.agent.builders import NS, Clique, world
from tests.fakeserver import FakeApiServer


def _initialized(agent: Agent) -> str | None:
    gang = agent.cache.podgangs[(NS, "p-0")]
    cond = next((c for c in gang.get("status", {}).get("conditions", []) if c["type"] == "Initialized"), None)
    return None if cond is None else str(cond["status"])


def test_a_stale_watch_event_of_a_deleted_pod_does_not_complete_the_gang() -> None:
    w = world(cliques=(Clique("router", 2, 2),))
    w.gang("p-0")["status"]["conditions"] = [{"type": "Initialized", "status": "False", "reason": "GangTerminated"}]
    with FakeApiServer() as server:
        agent = Agent(Kube(server.api_client()), AgentConfig(), Registry())
        try:
            live = [server.put_object(copy.deepcopy(p)) for p in w.pods.values()]
            gang = server.put_object(copy.deepcopy(w.gang("p-0")))
            agent.cache.replace("pods", copy.deepcopy(live))
            agent.cache.replace("podgangs", [gang])
            # The gang termination's deletes (no finalizer: the pods are gone at once).
            agent._run_actions([DeletePod(NS, p["metadata"]["name"], p["metadata"]["uid"], "GangTerminated", "test")
                                for p in live], wait=True)
            assert agent.cache.pods == {}
            assert all(server.get_object("pods", NS, p["metadata"]["name"]) is None for p in live)
            # Watch events from before the DELETEs arrive late and re-add the pods, running.
            for pod in live:
                agent.cache.apply("pods", "MODIFIED", copy.deepcopy(pod))
            done = agent.sync_gangs([(NS, "p-0")])
            assert done == {(NS, "p-0"): False}
            assert _initialized(agent) == "False"
            decision = agent.evaluate((NS, "p-0"))
            assert not decision.complete and decision.whole_gang
        finally:
            agent._pool.shutdown()
