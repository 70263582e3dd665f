"""Issue 37, point 2: a Failed pod of the agent's (a replica above the floor) is deleted and
re-created by the agent, and released into its gang again.

In the soak, ``llm-as-1-prefill-3-pworker-0`` (replica 3, above the floor of 2) was marked
Failed; the agent deleted it and logged that the GitOps tool would re-create it from Git. No
GitOps tool holds it: four minutes later its PodGang still listed the missing pod. The agent
re-creates every missing pod it owns as on scale-out, and the failed-pod Event says who
re-creates the pod.
"""

from __future__ import annotations

from collections.abc import Callable

from tests.day2 import scaling as S
from tests.day2.harness import Day2Env, describe


def test_a_failed_pod_above_the_floor_is_re_created_by_the_agent_and_released(day2: Callable[..., Day2Env]) -> None:
    env = day2(sync_interval=1.0, edit=S.prefill_floor(1))
    env.set_counts(S.counts(1))
    S.wait_matches(env, "the first deploy at the floor (1)")
    env.wait_until(lambda: S.target(env) is not None, timeout=10, what="the agent's scale target")
    S.scale(env, 3)
    S.wait_matches(env, "the pods and PodGangs of count 3")
    slot = ("inference", "llama-disagg-0-prefill-2-pworker-1")  # replica 2: the agent's
    name = env.desired_pods()[slot]
    (old,) = [v for v in env.views() if v.name == name]
    owned = env.rest.request("GET", f"/api/v1/namespaces/inference/pods/{name}")["metadata"].get("ownerReferences")
    assert owned and owned[0]["kind"] == "PodCliqueSet", "the pod is the agent's, not Git's"
    mark = env.observer.mark()
    env.kubelet.fail("inference", name)
    env.wait_until(
        lambda: any(v.name == name and v.uid != old.uid and v.available for v in env.views()),
        timeout=20,
        what=f"{name} re-created by the agent, released and Ready",
    )
    S.wait_matches(env, "every pod of count 3 Ready and released", timeout=20)
    moments = env.observer.since(mark)
    assert [m.pod for m in moments if m.event == "DELETED"] == [name]  # only the failed pod
    new = env.rest.request("GET", f"/api/v1/namespaces/inference/pods/{name}")
    assert new["metadata"].get("ownerReferences", [{}])[0].get("uid") == owned[0]["uid"]
    assert not new["spec"].get("schedulingGates"), "released into its initialized gang"
    events = env.rest.request("GET", "/apis/events.k8s.io/v1/namespaces/inference/events").get("items") or []
    notes = [e["note"] for e in events if e.get("reason") == "FailedPodDeleted" and name in e.get("note", "")]
    assert notes and "the agent re-creates it" in notes[0] and "GitOps tool" not in notes[0], notes
    others = [s for s in env.desired_pods() if s != slot]
    worst, at = env.observer.max_unavailable(others, since=mark)
    assert worst == 0, describe(at)
    env.assert_invariants()
