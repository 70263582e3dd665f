"""The kubelet simulator and the observer, on the example's pods (no agent, no periodic sync)."""

from __future__ import annotations

import copy
import time
from collections.abc import Callable

from tests.day2.harness import Day2Env
from tests.day2.observer import Unit, rolling_bound_problem
from tests.day2.rest import JSON_PATCH, Raw, resource_of

GATE = "grove.io/podgang-pending-creation"


def _router(env: Day2Env, index: int = 0) -> Raw:
    (pod,) = [p for p in env.pods() if p["spec"]["hostname"] == f"llama-disagg-0-router-{index}"]
    return pod


def _ungate(env: Day2Env, pod: Raw) -> None:
    env.rest.request(
        "PATCH",
        f"/api/v1/namespaces/{env.namespace}/pods/{pod['metadata']['name']}",
        [{"op": "test", "path": "/spec/schedulingGates/0/name", "value": GATE},
         {"op": "remove", "path": "/spec/schedulingGates/0"}],
        JSON_PATCH,
    )


def _view(env: Day2Env, name: str) -> Raw:
    return env.rest.request("GET", f"/api/v1/namespaces/{env.namespace}/pods/{name}")


def test_kubelet_runs_released_pods_and_terminates_deleted_ones_gracefully(day2: Callable[..., Day2Env]) -> None:
    env = day2(agent=False, background_sync=False, ready_delay=0.1, termination_delay=0.4)
    pod = _router(env)
    name = pod["metadata"]["name"]
    time.sleep(0.2)
    assert not _view(env, name)["spec"].get("nodeName")  # a gated pod is never bound
    _ungate(env, pod)
    env.wait_until(lambda: any(v.name == name and v.available for v in env.views()), what="router-0 Ready")
    live = _view(env, name)
    assert live["spec"]["nodeName"] == "sim-node-0"
    assert live["metadata"]["finalizers"] == ["day2.test/kubelet-termination"]
    conditions = {c["type"]: c["status"] for c in live["status"]["conditions"]}
    assert conditions["PodScheduled"] == conditions["Ready"] == conditions["ContainersReady"] == "True"
    assert [(s["started"], s["ready"]) for s in live["status"]["containerStatuses"]] == [(True, True)]

    deleted_at = time.monotonic()
    env.delete_pod(name)
    assert _view(env, name)["metadata"]["deletionTimestamp"]  # terminating, not gone
    env.wait_until(lambda: name not in {v.name for v in env.views()}, timeout=5, what="the pod to go")
    assert time.monotonic() - deleted_at >= 0.4
    env.settle()
    terminating = [m for m in env.observer.since(0) if m.pod == name and any(p.terminating for p in m.pods)]
    assert terminating and all(not m.available(("inference", "llama-disagg-0-router-0")) for m in terminating)
    assert env.observer.events_for(name)[-1] == "DELETED"
    # The harness tells the agent's requests from the simulators' and the test's own.
    assert env.agent_requests("delete") == 0
    assert env.agent_requests("patch") == 0
    assert env.agent_requests("create", "pods/binding") == 0
    env.assert_invariants()


def test_fail_crash_and_set_ready(day2: Callable[..., Day2Env]) -> None:
    env = day2(agent=False, background_sync=False, termination_delay=None)
    pods = [_router(env, 0), _router(env, 1)]
    for pod in pods:
        _ungate(env, pod)
    names = [p["metadata"]["name"] for p in pods]
    env.wait_until(lambda: sum(v.available for v in env.views()) == 2, what="both routers Ready")

    failed = env.kubelet.fail(env.namespace, names[0])
    assert failed["status"]["phase"] == "Failed"
    assert failed["status"]["reason"] == "Evicted"

    crashed = env.kubelet.crash(env.namespace, names[1], exit_code=3)
    (status,) = crashed["status"]["containerStatuses"]
    assert (status["ready"], status["restartCount"], status["lastState"]["terminated"]["exitCode"]) == (False, 1, 3)
    assert {c["type"]: c["status"] for c in crashed["status"]["conditions"]}["Ready"] == "False"
    time.sleep(0.2)
    assert not _view(env, names[1])["status"]["containerStatuses"][0]["ready"]  # stays crashed
    ready = env.kubelet.set_ready(env.namespace, names[1])
    assert {c["type"]: c["status"] for c in ready["status"]["conditions"]}["Ready"] == "True"
    assert ready["status"]["containerStatuses"][0]["lastState"]["terminated"]["exitCode"] == 3

    env.rest.request("DELETE", f"/api/v1/namespaces/{env.namespace}/pods/{names[0]}")
    assert names[0] not in {v.name for v in env.views()}  # no finalizer: deleted at once


def test_observer_sees_two_ungated_pods_sharing_a_hostname(day2: Callable[..., Day2Env]) -> None:
    env = day2(agent=False, background_sync=False)
    pod = _router(env)
    mark = env.observer.mark()
    twin = copy.deepcopy(pod)
    twin["metadata"] = {"name": "router-0-twin", "namespace": env.namespace, "labels": pod["metadata"]["labels"]}
    twin["spec"].pop("schedulingGates")
    twin.pop("status", None)
    env.rest.request("POST", f"/api/v1/namespaces/{env.namespace}/pods", twin)
    env.settle()
    assert env.observer.hostname_conflicts(mark) == []  # the original is still gated
    _ungate(env, pod)
    env.settle()
    conflicts = env.observer.hostname_conflicts(mark)
    assert conflicts
    assert conflicts[0][1] == {("inference", "llama-disagg-0-router-0"): sorted([pod["metadata"]["name"], "router-0-twin"])}
    slots = list(env.desired_pods())
    count, _ = env.observer.max_unavailable(slots, since=0)
    assert count == len(slots)  # at first no slot is available


def test_rolling_bound() -> None:
    def router(i: int, replica: str = "0") -> Unit:
        return Unit("p", replica, f"p-{replica}-router", f"p-{replica}-router-{i}")

    def prefill(j: int, replica: str = "0") -> Unit:
        return Unit("p", replica, f"p-{replica}-prefill", str(j))

    assert rolling_bound_problem([]) is None
    assert rolling_bound_problem([router(0), prefill(1), prefill(1)]) is None  # concurrent cliques and groups
    assert rolling_bound_problem([router(0), router(1)]) == "p: p-0-router: ['p-0-router-0', 'p-0-router-1'] unavailable at once"
    assert rolling_bound_problem([prefill(0), prefill(1)]) == "p: p-0-prefill: ['0', '1'] unavailable at once"
    assert rolling_bound_problem([router(0), router(0, "1")]) == "p: replicas ['0', '1'] unavailable at once"
    assert rolling_bound_problem([router(0), prefill(1)], strict=True) is not None
    assert rolling_bound_problem([router(0), Unit("q", "1", "q-1-a", "q-1-a-0")]) is None  # PodCliqueSets roll independently


def test_resource_of_matches_the_servers_log() -> None:
    assert resource_of("/api/v1/namespaces/ns/pods") == "pods"
    assert resource_of("/api/v1/namespaces/ns/pods/p/status?x=1") == "pods/status"
    assert resource_of("/api/v1/namespaces") == "namespaces"
    assert resource_of("/apis/scheduler.grove.io/v1alpha1/namespaces/ns/podgangs/g/status") == "podgangs/status"
    assert resource_of("/apis/grove.io/v1alpha1/clustertopologybindings/x") == "clustertopologybindings"


def test_kubelet_withholds_a_chosen_pod_until_released(day2: Callable[..., Day2Env]) -> None:
    env = day2(agent=False, background_sync=False)
    kept_pod, other = _router(env, 0), _router(env, 1)
    kept_name = kept_pod["metadata"]["name"]
    held = env.kubelet.withhold(lambda p: p["metadata"]["name"] == kept_name, "router-0")
    for pod in (kept_pod, other):
        _ungate(env, pod)
    env.wait_until(lambda: any(v.name == other["metadata"]["name"] and v.available for v in env.views()),
                   what="router-1 Ready")
    time.sleep(0.3)
    live = _view(env, kept_name)
    assert not live["spec"].get("nodeName") and live["status"].get("phase") == "Pending"  # released, not bound
    assert held.seen == {live["metadata"]["uid"]}
    held.release()
    env.wait_until(lambda: any(v.name == kept_name and v.available for v in env.views()), what="router-0 Ready")
    env.assert_invariants()
