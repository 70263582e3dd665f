"""Autoscaling under GitOps, end to end (issue 23, "Tests and benchmark").

Each scenario runs the example's ``llama-disagg`` (its prefill scaling group autoscaled: leader
+ 3 workers per replica) beside an unrelated PodCliqueSet, with the GitOps applier re-syncing
Git the whole time and the agent in process. Counts are written as a scaler writes them:
through the scale target's ``/scale`` subresource with the official client. At every observed
moment (``assert_invariants``): no gang released partially, no wanted slot emptied before its
replacement existed (the slots the agent materialises at the live count included), the
bystander's pods never touched.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from kubernetes.client.exceptions import ApiException

from tests.day2 import scaling as S
from tests.day2.harness import BYSTANDER, Day2Env
from tests.day2.rest import Raw

NS = "inference"


def _replicas_after_resyncs(env: Day2Env, resyncs: int = 2) -> list[int | None]:
    """The scale target's ``spec.replicas`` read after each of the next ``resyncs`` applier syncs."""
    seen: list[int | None] = []
    for _ in range(resyncs):
        done = env.applier.syncs
        env.wait_until(lambda done=done: env.applier.syncs > done, timeout=10, what="the next GitOps re-sync")
        seen.append(S.desired_count(env))
    return seen


def _revision(n: int) -> Callable[[Raw], None]:
    """A Git edit of the PodCliqueSet that renames no pod: an annotation (it reaches the
    PodGangs, the backend PodGroups and the gitops.grove.io PodCliqueSet's source), so the
    next re-sync writes the workload object the agent reads."""

    def change(pcs: Raw) -> None:
        pcs["metadata"].setdefault("annotations", {})["example.com/revision"] = str(n)

    return change


def _terminating_index(env: Day2Env, since: int) -> dict[str, int]:
    """Pod name -> observer index of the moment it began terminating (or was deleted)."""
    out: dict[str, int] = {}
    for m in env.observer.since(since):
        if m.event == "DELETED" or (m.after is not None and m.after.terminating):
            out.setdefault(m.pod, m.index)
    return out


@pytest.mark.parametrize("mode", ["argocd", "flux"])
def test_scale_1_4_2_1_survives_every_resync(day2: Callable[..., Day2Env], mode: str) -> None:
    """Scenario 1: the count belongs to the cluster; Git's re-syncs never reset it."""
    env = day2(mode=mode, sync_interval=1.0, edit=S.prefill_floor(1))
    env.set_counts(S.counts(1))
    S.wait_matches(env, "the first deploy at the floor (1)")
    env.wait_until(lambda: S.target(env) is not None, timeout=10, what="the agent's scale target")
    live = S.target(env)
    assert live is not None
    assert live["spec"] == {"replicas": 1, "minAvailable": 1, "minReplicas": 1, "maxReplicas": 4}
    bystander = {v.name: v.uid for v in env.views(BYSTANDER)}

    previous = 1
    for n in (4, 2, 1):
        before = S.pod_names(env)
        gangs_before = S.gangs(env, env.primary)
        mark = env.observer.mark()
        S.scale(env, n)
        S.wait_matches(env, f"the pods and PodGangs of count {n}")
        assert _replicas_after_resyncs(env) == [n, n], "a GitOps re-sync changed the live count"
        env.edit_pcs(_revision(n))  # a Git change the next re-sync applies to the workload object
        assert _replicas_after_resyncs(env) == [n, n], "a GitOps re-sync with a Git change reset the live count"
        assert S.matches(env), f"the world drifted from count {n} after re-syncs"
        status = (S.target(env) or {}).get("status") or {}
        assert status.get("replicas") == n and status.get("selector"), status
        env.settle()
        moments = env.observer.since(mark)
        if n > previous:
            assert [m.pod for m in moments if m.event == "DELETED"] == []  # scale-out deletes nothing
            added = {S.replica_of(name) for name in set(S.pod_names(env)) - set(before)}
            assert added == set(range(previous, n))
        else:
            # Exactly the highest replicas went, pods before their PodGang.
            gone = set(before) - set(S.pod_names(env))
            assert {S.replica_of(p) for p in gone} == set(range(n, previous)), sorted(gone)
            assert len(gone) == (previous - n) * S.PODS_PER_PREFILL
            # Their PodGangs (Grove names a scaled gang by replica - minAvailable) went too, each
            # only after its last pod was gone.
            gone_gangs = {before[p].podgang for p in gone}
            assert gangs_before - S.gangs(env, env.primary) == gone_gangs
            history = env.observer.gang_history()
            for gang in gone_gangs:
                (deleted,) = [e.resource_version for e in history.of(NS, gang) if e.event == "DELETED"]
                last_pod = max(m.resource_version for m in moments
                               if m.event == "DELETED" and before[m.pod].podgang == gang)
                assert last_pod < deleted, f"PodGang {gang} was deleted before its last pod"
            # Highest index first: a lower replica's pods never began going before a higher one's.
            started = _terminating_index(env, mark)
            first = {i: min(v for p, v in started.items() if S.replica_of(p) == i) for i in range(n, previous)}
            assert list(first) == sorted(first, key=lambda i: first[i], reverse=True) or len(first) == 1, first
        previous = n

    assert {v.name: v.uid for v in env.views(BYSTANDER)} == bystander
    env.assert_invariants()


def test_scale_out_during_a_rolling_update(day2: Callable[..., Day2Env]) -> None:
    """Scenario 2: new replicas written mid-rollout come at the new template; the update ends."""
    env = day2(edit=S.prefill_floor(1), ready_delay=0.3)
    env.set_counts(S.counts(2))
    env.wait_until(lambda: S.target(env) is not None, timeout=10, what="the agent's scale target")
    S.scale(env, 2)
    S.wait_matches(env, "count 2 (one replica above the floor) Ready")
    old = env.desired_pods()
    mark = env.observer.mark()
    changed = env.bump_image()
    new = env.desired_pods()
    assert all(new[s] != old[s] for s in old)  # every pod renamed, the agent's replica 1 too
    env.wait_until(lambda: 0 < sum(v.name in new.values() and v.available for v in env.views()) < len(new),
                   timeout=20, what="the rollout under way")
    assert any(v.name in old.values() for v in env.views())  # ... and not over
    S.scale(env, 4)
    S.wait_matches(env, "the rollout done and count 4 Ready at the new template", timeout=60)
    assert S.desired_count(env) == 4
    env.settle()
    # Replicas 2 and 3 never had a pod of the old template: their first pods are new ones.
    new_images = set(changed.values())
    added = [m.after for m in env.observer.since(mark) if m.event == "ADDED" and m.after is not None
             and m.after.unit.group == S.PREFILL_TARGET and int(m.after.unit.member) >= 2]
    assert len(added) == 2 * S.PODS_PER_PREFILL, [p.name for p in added]  # each created once
    for pod in added:
        assert set(pod.images) <= new_images, f"{pod.name} created at the old template {pod.images}"
    # Every old pod was retired once; nothing of the new template was.
    deleted = {m.pod for m in env.observer.since(mark) if m.event == "DELETED"}
    assert deleted == set(old.values()) - {v.name for v in env.views()}
    assert deleted == set(old.values())
    env.assert_invariants()


def _crash_beyond_delay(change: Callable[[Raw], None]) -> Callable[[Raw], None]:
    def delay(pcs: Raw) -> None:
        change(pcs)
        pcs["spec"]["template"]["terminationDelay"] = "2s"

    return delay


def test_gang_termination_of_a_scaled_replica_keeps_the_count(day2: Callable[..., Day2Env]) -> None:
    """Scenario 3: a scaled replica's gang is terminated and re-created; the count stays (the
    scale target is not reset to the template's replicas, Grove #826)."""
    env = day2(edit=_crash_beyond_delay(S.prefill_floor(1)))
    env.set_counts(S.counts(1))
    env.wait_until(lambda: S.target(env) is not None, timeout=10, what="the agent's scale target")
    S.scale(env, 3)
    S.wait_matches(env, "count 3 Ready")
    scope = {v.name: v.uid for v in env.views(env.primary) if v.hostname.startswith(f"{S.PREFILL_TARGET}-2-")}
    assert len(scope) == S.PODS_PER_PREFILL
    env.exempt("the gang termination this test provokes", scope.values())
    mark = env.observer.mark()
    # pworker's minAvailable is its 3 replicas: one crashed worker breaches replica 2 past 2 s.
    (worker,) = [n for n in scope if "-prefill-2-pworker-0-" in n]
    env.kubelet.crash(NS, worker)
    env.wait_until(lambda: all(v.uid != scope.get(v.name) for v in env.views(env.primary)) and S.matches(env),
                   timeout=40, what="replica 2's gang terminated, re-created and Ready")
    env.settle()
    deleted = sorted(m.pod for m in env.observer.since(mark) if m.event == "DELETED")
    assert deleted == sorted(scope), deleted  # exactly that gang went
    live = S.target(env)
    assert live is not None and live["spec"]["replicas"] == 3, live  # not reset to the template's 1
    assert _replicas_after_resyncs(env) == [3, 3]
    env.assert_invariants()


def _bystander_autoscaled(pcs: Raw) -> None:
    (group,) = pcs["spec"]["template"]["podCliqueScalingGroups"]
    group["scaleConfig"] = {"minReplicas": 1, "maxReplicas": 3}


def test_autoscaled_bystander_untouched(day2: Callable[..., Day2Env]) -> None:
    """Scenario 4: the second PodCliqueSet, itself autoscaled, keeps its pods, its scale target
    and its count while the primary scales out and in."""
    env = day2(edit=S.prefill_floor(1), bystander_edit=_bystander_autoscaled)
    env.set_counts(S.counts(1))
    other = f"{BYSTANDER}-0-model-instance"
    env.wait_until(lambda: S.target(env) is not None and S.target(env, other) is not None, timeout=10,
                   what="both workloads' scale targets")
    S.wait_matches(env, "the first deploy")
    theirs = {v.name: v.uid for v in env.views(BYSTANDER)}
    target_before = S.target(env, other)
    assert target_before is not None
    gangs_before = S.gangs(env, BYSTANDER)
    for n in (4, 1):
        S.scale(env, n)
        S.wait_matches(env, f"count {n}")
        assert S.gangs(env, BYSTANDER) == gangs_before
    after = S.target(env, other)
    assert after is not None
    assert after["metadata"]["uid"] == target_before["metadata"]["uid"]
    assert after["spec"] == target_before["spec"]
    assert {v.name: v.uid for v in env.views(BYSTANDER)} == theirs
    env.assert_invariants()


def test_git_edit_reaches_the_agents_objects_once(day2: Callable[..., Day2Env]) -> None:
    """A Git edit that renames no pod (an annotation of the PodCliqueSet) reaches the objects
    the agent created above the floor as the render at the live count has them, in one write
    each: the agent does not rewrite them on every pass."""
    env = day2(edit=S.prefill_floor(1))
    env.set_counts(S.counts(1))
    env.wait_until(lambda: S.target(env) is not None, timeout=10, what="the agent's scale target")
    S.scale(env, 3)
    S.wait_matches(env, "count 3 Ready")
    env.edit_pcs(_revision(1))
    expected = {(o["kind"], o["metadata"]["name"]): o["metadata"].get("annotations") or {}
                for o in env.objects_at(env.counts) if o["kind"] in ("PodGang", "PodGroup")}
    assert any("example.com/revision" in a for a in expected.values())

    def live_annotations() -> dict[tuple[str, str], dict[str, str]]:
        out = {}
        for api, kind in (("scheduler.grove.io/v1alpha1", "PodGang"), ("scheduling.run.ai/v2alpha2", "PodGroup")):
            for item in env.rest.request("GET", env.rest.path(api, kind, NS)).get("items") or []:
                if (item["metadata"].get("labels") or {}).get("app.kubernetes.io/part-of") == env.primary:
                    out[(kind, item["metadata"]["name"])] = item["metadata"].get("annotations") or {}
        return out

    def carried() -> bool:
        live = live_annotations()
        return set(live) == set(expected) and all(
            live[k].get("example.com/revision") == v.get("example.com/revision") for k, v in expected.items())

    env.wait_until(carried, timeout=20, what="the agent's PodGangs and PodGroups carrying Git's new annotation")
    writes = {r: env.agent_requests("patch", r) + env.agent_requests("update", r) for r in ("podgangs", "podgroups")}
    env.wait_until(lambda: False if env.agent is None else env.agent.impl.passes > 0, timeout=1)
    passes = env.agent.impl.passes if env.agent is not None else 0
    env.wait_until(lambda: env.agent is not None and env.agent.impl.passes >= passes + 10, timeout=20,
                   what="ten more agent passes")
    again = {r: env.agent_requests("patch", r) + env.agent_requests("update", r) for r in writes}
    assert again == writes, f"the agent kept rewriting objects that were already as the render wants: {writes} -> {again}"
    assert S.desired_count(env) == 3
    env.assert_invariants()


#: The CRD's CEL rules on ``spec`` of both scale-target kinds (overlays/crds, the contract).
BELOW_MIN_AVAILABLE = "replicas must be greater than or equal to minAvailable"
BELOW_FLOOR = ("replicas must be greater than or equal to minReplicas (the floor rendered in Git); "
               "lower minReplicas in Git to scale further in")
ABOVE_MAX = "replicas must be less than or equal to maxReplicas"


def test_scale_below_min_available_or_the_floor_is_refused(day2: Callable[..., Day2Env]) -> None:
    """Scenario 7: the API server refuses the write (422, the CRD rule's message); nothing moves.

    The example's prefill group: minAvailable 1, floor (minReplicas) 2 = its replicas, max 4."""
    env = day2()
    env.set_counts(S.counts(2))
    env.wait_until(lambda: S.target(env) is not None, timeout=10, what="the agent's scale target")
    S.wait_matches(env, "the first deploy at the floor (2)")
    before = {v.name: v.uid for v in env.views()}
    mark = env.observer.mark()
    for n, messages in ((1, [BELOW_FLOOR]), (0, [BELOW_MIN_AVAILABLE, BELOW_FLOOR]), (5, [ABOVE_MAX])):
        with pytest.raises(ApiException) as refused:
            S.scale(env, n, accepted=False)
        assert refused.value.status == 422, refused.value
        message = S.refusal(refused.value)
        for expected in messages:
            assert expected in message, message
        if n < 1:
            assert BELOW_MIN_AVAILABLE in message
        else:
            assert BELOW_MIN_AVAILABLE not in message
        assert S.desired_count(env) == 2
    assert _replicas_after_resyncs(env) == [2, 2]
    assert S.matches(env)
    assert {v.name: v.uid for v in env.views()} == before  # no pod created, deleted or re-created
    assert not [m for m in env.observer.since(mark) if m.event in ("ADDED", "DELETED")]
    env.assert_invariants()


def _pods_of_replica(env: Day2Env, i: int) -> list[str]:
    return sorted(v.name for v in env.views(env.primary)
                  if v.unit.group == S.PREFILL_TARGET and v.unit.member == str(i) and not v.terminating)


def test_quota_refusing_a_gangs_pod_leaves_no_half_gang(day2: Callable[..., Day2Env]) -> None:
    """Scenario 6: a ResourceQuota refuses the third pod of a new gang. The agent deletes the
    two it created and never creates the PodGang; the scale target says ScaleBlocked=True
    (QuotaExceeded) and a Warning Event GangCreationRefused names it; more quota, and the gang
    is created whole."""
    env = day2(edit=S.prefill_floor(1))
    env.set_counts(S.counts(1))
    env.wait_until(lambda: S.target(env) is not None, timeout=10, what="the agent's scale target")
    S.wait_matches(env, "the first deploy at the floor (1)")
    used = sum(1 for v in env.views() if v.live)
    quota = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "pods", "namespace": NS},
             "spec": {"hard": {"pods": str(used + 2)}}}
    env.rest.request("POST", f"/api/v1/namespaces/{NS}/resourcequotas", quota)
    mark = env.observer.mark()
    S.scale(env, 2)
    gang = f"{S.PREFILL_TARGET}-0"  # replica 1's PodGang (Grove: index - minAvailable)

    def blocked() -> bool:
        cond = S.condition(S.target(env), "ScaleBlocked")
        return cond.get("status") == "True" and not _pods_of_replica(env, 1)

    env.wait_until(blocked, timeout=20, what="ScaleBlocked=True and the refused gang's pods deleted again")
    cond = S.condition(S.target(env), "ScaleBlocked")
    assert cond["reason"] == "QuotaExceeded", cond
    assert "exceeded quota" in cond["message"], cond
    (event, *_) = S.events(env, "GangCreationRefused", S.PREFILL_TARGET)
    assert event["type"] == "Warning", event
    assert (event["regarding"]["kind"], event["regarding"]["apiVersion"]) == (
        "PodCliqueScalingGroup", "gitops.grove.io/v1alpha1"), event
    assert env.podgang(gang) is None
    assert S.desired_count(env) == 2  # the count is the scaler's: kept while blocked
    env.settle()
    moments = env.observer.since(mark)
    # The refused gang: at most the two pods the quota admitted at any moment, never released.
    assert any(m.event == "ADDED" and m.after is not None and m.after.unit.member == "1"
               and m.after.unit.group == S.PREFILL_TARGET for m in moments), "the agent never tried the gang"
    for m in moments:
        theirs = [p for p in m.pods if p.unit.group == S.PREFILL_TARGET and p.unit.member == "1" and p.live]
        assert len(theirs) <= 2 and all(p.gated for p in theirs), m.describe()
    assert not env.observer.gang_history().of(NS, gang), "the PodGang of a refused gang was created"

    quota["spec"]["hard"]["pods"] = str(used + S.PODS_PER_PREFILL)
    live_quota = env.rest.request("GET", f"/api/v1/namespaces/{NS}/resourcequotas/pods")
    quota["metadata"]["resourceVersion"] = live_quota["metadata"]["resourceVersion"]
    env.rest.request("PUT", f"/api/v1/namespaces/{NS}/resourcequotas/pods", quota)
    S.wait_matches(env, "the gang created whole once the quota allows it", timeout=90)
    env.wait_until(lambda: S.condition(S.target(env), "ScaleBlocked").get("status") == "False", timeout=10,
                   what="ScaleBlocked=False")
    env.assert_invariants()
