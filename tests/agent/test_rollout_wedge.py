"""A rollout never waits on something only the agent's memory holds (issue 37, defect 1).

The soak's wedge: a rollout step's DELETE was answered with the pod terminating, but the
watch had already said DELETED (a pod that never ran, or a kubelet that finished at once, is
removed before the answer is read). The answer put the pod back into the watch cache,
terminating, and nothing ever removed it: every later pass saw "old pod of <slot> is
terminating" and waited, for 21 minutes, until a restart re-listed. These tests run the real
agent and executor against the fake API server and play that interleaving exactly.
"""

from __future__ import annotations

import copy
from typing import Any

from grove_gitops.agent import rollout
from grove_gitops.agent.actions import DeletePod
from grove_gitops.agent.kube import Kube
from grove_gitops.agent.loop import Agent, AgentConfig
from grove_gitops.metrics import Registry
from tests.agent.builders import NS, Clique, set_state, world
from tests.fakeserver import FakeApiServer


def _watch_first(agent: Agent) -> list[str]:
    """Make the agent's DELETEs end as on a loaded real cluster: the pod is gone, the watch's
    DELETED reaches the cache first, then the answer (the pod, terminating) is read."""
    kube = agent.kube
    real = kube.delete_pod
    deleted: list[str] = []

    def delete_pod(namespace: str, name: str, uid: str) -> dict[str, Any] | None:
        before = copy.deepcopy(agent.cache.pods[(namespace, name)])
        real(namespace, name, uid)
        agent.cache.apply("pods", "DELETED", before)  # the watch was faster
        answer = copy.deepcopy(before)
        answer["metadata"]["deletionTimestamp"] = "2026-11-24T11:00:00Z"
        answer["metadata"]["deletionGracePeriodSeconds"] = 0
        deleted.append(name)
        return answer

    kube.delete_pod = delete_pod  # type: ignore[method-assign]
    return deleted


def _create(server: FakeApiServer, kube: Kube, pod: dict[str, Any]) -> dict[str, Any]:
    """Create ``pod`` through the API (defaults applied, as a GitOps tool's would be), then
    give it the observed state the builder says (as the kubelet would)."""
    body = copy.deepcopy(pod)
    body["metadata"].pop("uid", None)
    status = body.pop("status")
    created = kube.raw("POST", f"/api/v1/namespaces/{NS}/pods", body)
    created["status"] = status
    return server.put_object(created)


def test_a_deleted_pod_never_comes_back_from_its_delete_answer() -> None:
    w = world(cliques=(Clique("router", 1, 1),))
    with FakeApiServer() as server:
        agent = Agent(Kube(server.api_client()), AgentConfig(), Registry())
        try:
            live = [server.put_object(copy.deepcopy(p)) for p in w.pods.values()]
            agent.cache.replace("pods", copy.deepcopy(live))
            deleted = _watch_first(agent)
            pod = live[0]["metadata"]
            assert agent.executor.delete(DeletePod(NS, pod["name"], pod["uid"], "PodRetired", "test"))
            assert deleted == [pod["name"]]
            assert agent.cache.pods == {}  # before the fix: the pod, terminating, for good
            # Nor does a late event of it (an older version) bring it back.
            agent.cache.apply("pods", "MODIFIED", copy.deepcopy(live[0]))
            assert agent.cache.pods == {}
        finally:
            agent._pool.shutdown()


def test_the_rollout_takes_its_next_step_after_such_a_delete() -> None:
    w = world(cliques=(Clique("router", 3, 2),))
    for k in range(3):
        w.set(f"p-0-router-{k}", gated=True, ready=False, phase="Pending", scheduled=False)
        w.add_old(f"p-0-router-{k}")
    w.gang("p-0")["status"]["conditions"] = [{"type": "Initialized", "status": "True", "reason": "PodGangPodsCreated",
                                              "message": "ready", "lastTransitionTime": "2026-11-24T10:00:00Z"}]
    with FakeApiServer() as server:
        server.put_object({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
        agent = Agent(Kube(server.api_client()), AgentConfig(), Registry())
        try:
            live = {(NS, p["metadata"]["name"]): _create(server, agent.kube, p) for p in w.pods.values()}
            gang = server.put_object(copy.deepcopy(w.gang("p-0")))
            agent.cache.replace("pods", copy.deepcopy(list(live.values())))
            agent.cache.replace("podgangs", [gang])
            deleted = _watch_first(agent)
            for step in range(3):
                agent.sync_workloads([(NS, "p")], wait=True)
                assert deleted == [f"p-0-router-{k}-h0" for k in range(step + 1)], (step, deleted)
                # The kubelet runs the released new pod of the slot freed: Ready.
                key = (NS, f"p-0-router-{step}-h1")
                pod = server.get_object("pods", NS, key[1])
                assert pod is not None and not pod["spec"].get("schedulingGates"), "the new pod is released"
                ready = server.put_object(set_state(copy.deepcopy(pod), ready=True, phase="Running", scheduled=True))
                agent.cache.apply("pods", "MODIFIED", ready)
            snap = agent._snapshot((NS, "p"))
            _, progress = rollout.rollout(snap.workloads[(NS, "p")], agent.memory.of((NS, "p")), agent.clock(),
                                          breached=set(), grace=60.0)
            assert progress.waiting == [] and progress.outdated == 0
        finally:
            agent._pool.shutdown()


def test_forgetting_a_gone_pod_keeps_the_pod_now_under_its_name() -> None:
    """A DELETE or gate patch answered 404 names a pod by uid; Git may have re-created the
    name since (a new uid). Dropping that new pod from the cache left its slot "missing" until a
    restart: the rollout waited for a replacement that existed (found by the chaos test)."""
    w = world(cliques=(Clique("router", 1, 1),))
    with FakeApiServer() as server:
        agent = Agent(Kube(server.api_client()), AgentConfig(), Registry())
        try:
            (first,) = [copy.deepcopy(p) for p in w.pods.values()]
            first["metadata"]["resourceVersion"] = "5"
            again = copy.deepcopy(first)
            again["metadata"].update(uid="uid-again", resourceVersion="9")
            agent.cache.apply("pods", "ADDED", again)  # the re-created pod, already in the cache
            agent.cache.forget_pod((NS, first["metadata"]["name"]), first["metadata"]["uid"])
            assert agent.cache.pods[(NS, first["metadata"]["name"])]["metadata"]["uid"] == "uid-again"
            # The gone pod's late events are not taken; the new pod's are.
            agent.cache.apply("pods", "MODIFIED", first)
            assert agent.cache.pods[(NS, first["metadata"]["name"])]["metadata"]["uid"] == "uid-again"
            newer = copy.deepcopy(again)
            newer["metadata"]["resourceVersion"] = "12"
            agent.cache.apply("pods", "MODIFIED", newer)
            assert agent.cache.pods[(NS, first["metadata"]["name"])]["metadata"]["resourceVersion"] == "12"
        finally:
            agent._pool.shutdown()
