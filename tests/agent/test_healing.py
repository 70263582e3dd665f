"""Self-healing decisions (grove_gitops/agent/healing.py, spec/grove-day2.md §5), without a server.

Each test drives the pure functions pass by pass over raw pods and PodGangs, applying the
actions with a minimal executor (``builders.apply``) so the persisted condition is what the
next pass reads, as in the cluster.
"""

from __future__ import annotations

from typing import Any

import pytest

from grove_gitops.agent import healing
from grove_gitops.agent.actions import Action, DeletePod, Event, Memory, SetCondition
from tests.agent.builders import NS, T0, Clique, Group, World, apply, condition, pod, world

DELAY = 60.0


def deletes(actions: list[Action]) -> list[str]:
    return sorted(a.name for a in actions if isinstance(a, DeletePod))


def conds(actions: list[Action], kind: str) -> list[SetCondition]:
    return [a for a in actions if isinstance(a, SetCondition) and a.type == kind]


def run(w: World, memory: Memory, now: float, rolling: set[int] | None = None) -> list[Action]:
    """One agent pass of the healing module; its actions are applied to ``w``."""
    actions = healing.gang_termination(w.wl(), memory, now, rolling or set())
    apply(w, actions, now)
    return actions


def crash(w: World, hostname: str) -> None:
    """A crash-looping container: scheduled, not Ready, non-zero lastState (Grove's 'errored')."""
    w.set(hostname, ready=False, crashing=True)


# --------------------------------------------------------------------------- Failed pods


def test_failed_new_pod_is_deleted_so_gitops_recreates_it() -> None:
    w = world()
    w.set("p-0-router-0", phase="Failed", ready=False, reason="Evicted")
    actions = healing.failed_pods(w.wl())
    assert deletes(actions) == ["p-0-router-0-h1"]
    (a,) = actions
    assert isinstance(a, DeletePod)
    assert (a.reason, a.gang, a.uid) == ("FailedPodDeleted", (NS, "p-0"), "uid-p-0-router-0-h1")
    assert "Evicted" in a.message and "re-creates it from Git" in a.message


def test_succeeded_pod_is_deleted_too() -> None:
    w = world()
    w.set("p-0-router-1", phase="Succeeded", ready=False)
    assert deletes(healing.failed_pods(w.wl())) == ["p-0-router-1-h1"]


def test_failed_old_pod_is_deleted_so_the_slot_frees() -> None:
    w = world()
    w.set("p-0-router-0", gated=True, scheduled=False, ready=False)
    w.add_old("p-0-router-0", phase="Failed", ready=False)
    actions = healing.failed_pods(w.wl())
    assert deletes(actions) == ["p-0-router-0-h0"]
    assert "p-0-router-0-h1 is released" in actions[0].message  # type: ignore[union-attr]


def test_running_pending_and_terminating_pods_are_untouched() -> None:
    w = world()
    w.set("p-0-router-0", phase="Failed", ready=False, terminating=True)  # already going
    w.set("p-0-router-1", scheduled=False, ready=False, gated=True)
    w.add_old("p-0-router-1")  # Running old pod: the rollout's business, not healing's
    assert healing.failed_pods(w.wl()) == []


def test_failed_pods_of_an_ambiguous_slot_are_never_deleted() -> None:
    w = world()
    w.set("p-0-router-0", phase="Failed", ready=False)
    w.add_old("p-0-router-0", template_hash="h0", phase="Failed", ready=False)
    w.add_old("p-0-router-0", template_hash="hx", phase="Failed", ready=False)
    assert w.wl().slots["p-0-router-0"].ambiguous
    assert healing.failed_pods(w.wl()) == []


def test_failed_unmanaged_or_hostless_pods_are_never_deleted() -> None:
    w = world()
    unmanaged = w.new("p-0-router-0")
    del unmanaged["metadata"]["labels"]["app.kubernetes.io/managed-by"]
    w.set("p-0-router-0", phase="Failed", ready=False)
    hostless = w.new("p-0-router-1")
    del hostless["spec"]["hostname"]  # referenced, so in a slot by its name; still bad input
    w.set("p-0-router-1", phase="Failed", ready=False)
    stray = w.add(pod("p-0-router-7", with_hostname=False, phase="Failed", ready=False))
    assert stray["metadata"]["name"] not in deletes(healing.failed_pods(w.wl()))
    assert healing.failed_pods(w.wl()) == []


# --------------------------------------------------------------------------- the breach formula


def units(w: World) -> dict[str, healing.Unit]:
    wl = w.wl()
    return {u.name: u for u in healing.replica_units(wl, wl.replicas[0])}


@pytest.mark.parametrize(
    ("states", "expected"),
    [
        ({}, None),
        ({"p-0-router-1": {"scheduled": False, "ready": False, "gated": True}}, "ScheduledReplicasBelowMinAvailable"),
        ({"p-0-router-1": {"ready": False, "crashing": True}}, "InsufficientReadyPods"),
        ({"p-0-router-1": {"ready": False, "starting": True}}, "InsufficientReadyPods"),
        # scheduled but still initialising / pulling: counts as available in Grove (§5.3)
        ({"p-0-router-1": {"ready": False}}, None),
        # terminating and Failed pods are counted (Grove counts all pods of the PodClique)
        ({"p-0-router-1": {"terminating": True}}, None),
        ({"p-0-router-1": {"phase": "Failed", "ready": False}}, None),
    ],
)
def test_min_available_breached_is_groves_formula(states: dict[str, dict[str, Any]], expected: str | None) -> None:
    w = world(cliques=(Clique("router", 2, 2),))
    for host, state in states.items():
        w.set(host, **state)
    assert units(w)["p-0-router"].breach == expected


def test_old_pods_of_the_slots_count_for_the_podclique() -> None:
    w = world(cliques=(Clique("router", 2, 2),))
    w.set("p-0-router-1", scheduled=False, ready=False, gated=True)
    w.add_old("p-0-router-1")  # still Running: the PodClique is not breached
    assert units(w)["p-0-router"].breach is None


def test_scaling_group_breach_counts_complete_unbreached_replicas() -> None:
    w = world(cliques=(), groups=(Group("prefill", 3, 2, (Clique("leader", 1, 1), Clique("worker", 2, 2))),))
    crash(w, "p-0-prefill-2-worker-0")
    u = units(w)
    assert u["p-0-prefill-2-worker"].breach == "InsufficientReadyPods"
    assert u["p-0-prefill"].breach is None  # 2 of 3 replicas available, minAvailable 2
    crash(w, "p-0-prefill-1-leader-0")
    assert units(w)["p-0-prefill"].breach == "InsufficientAvailablePodCliqueScalingGroupReplicas"


def test_scaling_group_replica_without_its_podgang_is_incomplete() -> None:
    w = world(cliques=(), groups=(Group("prefill", 2, 1, (Clique("leader", 1, 1),)),))
    del w.gangs[(NS, "p-0-prefill-0")]  # the scaled gang of replica 1 is not applied
    u = units(w)
    assert "p-0-prefill-1-leader" not in u  # its minAvailable is unknown: no unit
    assert u["p-0-prefill"].breach is None  # replica 0 alone meets minAvailable 1


def test_min_available_of_a_scaling_group_podclique_comes_from_its_podgroup() -> None:
    w = world(cliques=(Clique("router", 1, 1),), groups=(Group("prefill", 2, 1, (Clique("worker", 3, 2),)),))
    wl = w.wl()
    assert wl.min_available("p-0-router") == 1
    assert wl.min_available("p-0-prefill-1-worker") == 2
    assert wl.min_available("p-0-prefill-9-worker") is None


# --------------------------------------------------------------------------- gang termination


def two_tier() -> World:
    """router (standalone, min 2 of 2) + prefill (PCSG, 2 replicas, min 1): base gang p-0
    holds router and prefill replica 0, scaled gang p-0-prefill-0 holds prefill replica 1."""
    return world(
        cliques=(Clique("router", 2, 2),),
        groups=(Group("prefill", 2, 1, (Clique("leader", 1, 1), Clique("worker", 2, 1))),),
        delay=DELAY,
    )


def test_breach_held_past_termination_delay_terminates_the_pcs_replica() -> None:
    w = two_tier()
    memory = Memory()
    assert run(w, memory, T0) == []  # healthy: seen healthy once, nothing written
    crash(w, "p-0-router-1")
    first = run(w, memory, T0 + 1)
    assert deletes(first) == []
    (breached,) = conds(first, "MinAvailableBreached")
    assert (breached.gang, breached.status, breached.reason, breached.since) == (
        (NS, "p-0"), "True", "InsufficientReadyPods", T0 + 1)
    assert "PodClique p-0-router since" in breached.message
    assert run(w, memory, T0 + 30) == []  # condition unchanged: no write
    assert deletes(run(w, memory, T0 + 60.5)) == []  # 59.5 s of breach
    actions = run(w, memory, T0 + 61)
    assert deletes(actions) == sorted(k[1] for k in w.pods)  # every pod of replica 0
    assert all(a.reason == "GangTerminated" for a in actions if isinstance(a, DeletePod))
    resets = conds(actions, "Initialized")
    assert sorted(r.gang[1] for r in resets) == ["p-0", "p-0-prefill-0"]
    assert all((r.status, r.reason) == ("False", "GangTerminated") for r in resets)
    (event,) = [a for a in actions if isinstance(a, Event)]
    assert (event.gang, event.reason) == ((NS, "p-0"), "GangTerminated")
    (cleared,) = conds(actions, "MinAvailableBreached")
    assert (cleared.status, cleared.reason) == ("False", "GangTerminated")
    # the Initialized resets come before any delete, so no re-created pod is released alone
    first_delete = next(n for n, a in enumerate(actions) if isinstance(a, DeletePod))
    assert all(actions.index(r) < first_delete for r in resets)
    assert not any(u.startswith(f"{NS}/p/PodClique/p-0-router") for u in memory.ever_healthy | set(memory.breach_since))


def test_breach_that_recovers_before_the_delay_does_nothing() -> None:
    w = two_tier()
    memory = Memory()
    run(w, memory, T0)
    crash(w, "p-0-router-1")
    run(w, memory, T0 + 1)
    w.set("p-0-router-1", ready=True, crashing=False)
    actions = run(w, memory, T0 + 50)
    assert deletes(actions) == []
    (cleared,) = conds(actions, "MinAvailableBreached")
    assert (cleared.status, cleared.reason) == ("False", "SufficientReadyPods")
    crash(w, "p-0-router-1")  # a new breach starts a new clock
    run(w, memory, T0 + 55)
    assert deletes(run(w, memory, T0 + 100)) == []
    assert deletes(run(w, memory, T0 + 115)) != []


def test_terminated_gang_is_not_terminated_again_until_healthy_once() -> None:
    w = two_tier()
    memory = Memory()
    run(w, memory, T0)
    crash(w, "p-0-router-1")
    run(w, memory, T0 + 1)
    assert deletes(run(w, memory, T0 + 61))
    # the cache still shows the old condition True (lag), and the pods are terminating
    for obj in w.gangs.values():
        for c in obj["status"]["conditions"]:
            if c["type"] == "MinAvailableBreached":
                c.update(status="True", reason="InsufficientReadyPods", message="minAvailable breached: PodClique p-0-router since 2027-01-15T08:00:01Z")
    again = run(w, memory, T0 + 62)
    assert not any(isinstance(a, Event) for a in again) and conds(again, "Initialized") == []  # not terminated again
    assert [(c.status, c.reason) for c in conds(again, "MinAvailableBreached")] == [("False", "SufficientReadyPods")]
    # GitOps re-creates the pods; they stay gated (gang not re-initialized) and never get healthy
    for key in list(w.pods):
        w.pods[key] = pod(key[1].rsplit("-", 1)[0], **_labels_of(w.pods[key]), scheduled=False, ready=False, gated=True)
    assert deletes(run(w, memory, T0 + 1000)) == []


def _labels_of(obj: dict[str, Any]) -> dict[str, Any]:
    labels = obj["metadata"]["labels"]
    kw: dict[str, Any] = {"podgang": labels["grove.io/podgang"]}
    if "grove.io/podcliquescalinggroup" in labels:
        kw["pcsg"] = labels["grove.io/podcliquescalinggroup"]
        kw["pcsg_replica"] = int(labels["grove.io/podcliquescalinggroup-replica-index"])
    if "grove.io/base-podgang" in labels:
        kw["base_podgang"] = labels["grove.io/base-podgang"]
    return kw


def test_never_healthy_unit_is_not_terminated() -> None:
    w = two_tier()
    w.set("p-0-router-1", scheduled=False, ready=False, gated=True)  # never scheduled
    memory = Memory()
    for t in (T0, T0 + 61, T0 + 10 * DELAY):
        actions = run(w, memory, t)
        assert deletes(actions) == []
        assert conds(actions, "MinAvailableBreached") == []  # not a candidate: nothing persisted


def test_crash_looping_from_the_start_counts_as_once_healthy_as_in_grove() -> None:
    """PodCliqueScheduled is True (scheduled >= minAvailable), so Grove's filter passes (§5.4)."""
    w = two_tier()
    crash(w, "p-0-router-1")
    memory = Memory()
    run(w, memory, T0)
    assert deletes(run(w, memory, T0 + DELAY)) != []


def test_only_scaling_group_replica_breached_terminates_that_replica() -> None:
    w = world(
        cliques=(Clique("router", 2, 1),),
        groups=(Group("prefill", 3, 1, (Clique("leader", 1, 1), Clique("worker", 2, 1))),),
        delay=DELAY,
    )
    memory = Memory()
    run(w, memory, T0)
    w.set("p-0-prefill-2-worker-0", scheduled=False, ready=False)
    w.set("p-0-prefill-2-worker-1", scheduled=False, ready=False)
    run(w, memory, T0 + 1)
    actions = run(w, memory, T0 + 61)
    # only replica 2's PodCliques; the unscheduled pods are deleted too (live, not terminating)
    assert deletes(actions) == ["p-0-prefill-2-leader-0-h1", "p-0-prefill-2-worker-0-h1", "p-0-prefill-2-worker-1-h1"]
    assert [r.gang[1] for r in conds(actions, "Initialized")] == ["p-0-prefill-1"]
    (event,) = [a for a in actions if isinstance(a, Event)]
    assert event.gang == (NS, "p-0") and "PodCliqueScalingGroup p-0-prefill replica 2" in event.message
    # the other units keep their clocks and health
    assert f"{NS}/p/PodClique/p-0-router" in memory.ever_healthy
    assert f"{NS}/p/PodClique/p-0-prefill-2-worker" not in memory.ever_healthy


def test_base_gang_scaling_group_replica_resets_the_base_gang() -> None:
    w = world(cliques=(), groups=(Group("prefill", 2, 1, (Clique("leader", 1, 1),)),), delay=DELAY)
    memory = Memory()
    run(w, memory, T0)
    crash(w, "p-0-prefill-0-leader-0")
    run(w, memory, T0 + 1)
    actions = run(w, memory, T0 + 61)
    assert deletes(actions) == ["p-0-prefill-0-leader-0-h1"]
    assert [r.gang[1] for r in conds(actions, "Initialized")] == ["p-0"]


def test_scaling_group_below_min_available_terminates_the_pcs_replica() -> None:
    w = world(
        cliques=(Clique("router", 1, 1),),
        groups=(Group("prefill", 2, 2, (Clique("leader", 1, 1),)),),
        delay=DELAY,
    )
    memory = Memory()
    run(w, memory, T0)
    crash(w, "p-0-prefill-1-leader-0")
    first = run(w, memory, T0 + 1)
    (breached,) = conds(first, "MinAvailableBreached")
    assert "PodCliqueScalingGroup p-0-prefill since" in breached.message
    actions = run(w, memory, T0 + 61)
    assert deletes(actions) == sorted(k[1] for k in w.pods)


def test_waiting_scaling_group_replicas_keep_it_from_the_replica_scope() -> None:
    """Grove §5.4 A.2: replicas − expired − waiting < minAvailable → the PCSG scope does nothing."""
    w = world(cliques=(Clique("router", 1, 1),), groups=(Group("prefill", 3, 2, (Clique("leader", 1, 1),)),),
              delay=DELAY)
    memory = Memory()
    run(w, memory, T0)
    crash(w, "p-0-prefill-2-leader-0")
    run(w, memory, T0 + 1)
    crash(w, "p-0-prefill-1-leader-0")  # now the group is breached too, 40 s later
    run(w, memory, T0 + 41)
    # replica 2 expired, replica 1 waiting: 3 - 1 - 1 < 2, so no replica-scope termination
    assert deletes(run(w, memory, T0 + 61)) == []
    # the group's own breach expires 60 s after it began: the whole PCS replica goes
    assert deletes(run(w, memory, T0 + 101)) == sorted(k[1] for k in w.pods)


def test_rolling_replica_is_suppressed_and_its_clock_restarts_after() -> None:
    w = world(cliques=(Clique("router", 2, 2),), replicas=2, delay=DELAY)
    memory = Memory()
    run(w, memory, T0)
    crash(w, "p-0-router-1")
    crash(w, "p-1-router-1")
    run(w, memory, T0 + 1)
    actions = run(w, memory, T0 + 100, rolling={0})
    assert deletes(actions) == ["p-1-router-0-h1", "p-1-router-1-h1"]  # replica 1 is not rolling
    (unknown,) = [c for c in conds(actions, "MinAvailableBreached") if c.gang == (NS, "p-0")]
    assert (unknown.status, unknown.reason) == ("Unknown", "UpdateInProgress")
    assert deletes(run(w, memory, T0 + 200, rolling={0})) == []
    # the update ends: the clock starts again, as Grove's Unknown -> True transition does
    assert deletes(run(w, memory, T0 + 201)) == []
    assert deletes(run(w, memory, T0 + 250)) == []
    assert deletes(run(w, memory, T0 + 261)) == ["p-0-router-0-h1", "p-0-router-1-h1"]


def test_restarted_agent_resumes_the_clock_from_the_persisted_condition() -> None:
    w = two_tier()
    memory = Memory()
    run(w, memory, T0)
    crash(w, "p-0-router-1")
    run(w, memory, T0 + 1)
    cond = condition(w, "p-0", "MinAvailableBreached")
    assert cond is not None and cond["status"] == "True" and cond["lastTransitionTime"] == "2027-01-15T08:00:01Z"
    restarted = Memory()  # the agent restarts 60 s into the breach
    assert deletes(run(w, restarted, T0 + 61)) != []


def test_restarted_agent_without_a_persisted_breach_starts_a_new_clock() -> None:
    w = two_tier()
    crash(w, "p-0-router-1")
    memory = Memory()
    assert deletes(run(w, memory, T0 + 61)) == []
    assert memory.breach_since[f"{NS}/p/PodClique/p-0-router"] == T0 + 61


def test_restart_resumes_only_units_the_condition_names() -> None:
    """A unit breached but not named was not once-healthy when the condition was written."""
    w = two_tier()
    w.gang("p-0")["status"]["conditions"].append({
        "type": "MinAvailableBreached", "status": "True", "reason": "InsufficientReadyPods",
        "lastTransitionTime": "2027-01-15T07:00:00Z",
        "message": "minAvailable breached: PodClique p-0-prefill-1-worker since 2027-01-15T07:00:00Z",
    })
    w.set("p-0-router-0", scheduled=False, ready=False, gated=True)
    w.set("p-0-router-1", scheduled=False, ready=False, gated=True)
    w.set("p-0-prefill-1-worker-0", scheduled=False, ready=False)
    w.set("p-0-prefill-1-worker-1", scheduled=False, ready=False)
    actions = run(w, Memory(), T0)
    # prefill replica 1 resumed (an hour old) and terminated; router never healthy: untouched
    assert deletes(actions) == ["p-0-prefill-1-leader-0-h1", "p-0-prefill-1-worker-0-h1", "p-0-prefill-1-worker-1-h1"]


def test_breached_replicas_lists_once_healthy_breaches_not_yet_expired() -> None:
    w = world(cliques=(Clique("router", 2, 2),), replicas=3, delay=DELAY)
    memory = Memory()
    run(w, memory, T0)
    crash(w, "p-1-router-1")
    w.set("p-2-router-1", scheduled=False, ready=False, gated=True)
    memory.ever_healthy.discard(f"{NS}/p/PodClique/p-2-router")  # replica 2 never healthy
    run(w, memory, T0 + 1)
    assert healing.breached_replicas(w.wl(), memory, T0 + 30) == {1}
    assert healing.breached_replicas(w.wl(), memory, T0 + 61) == set()  # expired: terminated instead


def test_scaling_group_podclique_breach_alone_does_not_mark_the_replica_breached() -> None:
    """Grove's breachedNotExpired looks at standalone PodCliques and scaling groups only."""
    w = world(cliques=(), groups=(Group("prefill", 2, 1, (Clique("leader", 1, 1),)),), delay=DELAY)
    memory = Memory()
    run(w, memory, T0)
    crash(w, "p-0-prefill-1-leader-0")
    run(w, memory, T0 + 1)
    assert healing.breached_replicas(w.wl(), memory, T0 + 2) == set()


def test_ambiguous_slot_pods_survive_gang_termination() -> None:
    w = two_tier()
    memory = Memory()
    run(w, memory, T0)
    crash(w, "p-0-router-1")
    w.add_old("p-0-prefill-1-worker-0", template_hash="h0")
    w.add_old("p-0-prefill-1-worker-0", template_hash="hx")
    run(w, memory, T0 + 1)
    gone = deletes(run(w, memory, T0 + 61))
    assert "p-0-router-1-h1" in gone and "p-0-prefill-1-worker-1-h1" in gone
    assert not any(n.startswith("p-0-prefill-1-worker-0-") for n in gone)


def test_no_base_podgang_no_decision() -> None:
    w = two_tier()
    memory = Memory()
    run(w, memory, T0)
    crash(w, "p-0-router-1")
    del w.gangs[(NS, "p-0")]
    assert run(w, memory, T0 + 1000) == []


def test_breached_replicas_skips_the_rolling_replica() -> None:
    w = world(cliques=(Clique("router", 2, 2),), replicas=2, delay=DELAY)
    memory = Memory()
    run(w, memory, T0)
    crash(w, "p-0-router-1")
    crash(w, "p-1-router-1")
    run(w, memory, T0 + 1)
    assert healing.breached_replicas(w.wl(), memory, T0 + 2) == {0, 1}
    assert healing.breached_replicas(w.wl(), memory, T0 + 2, rolling={0}) == {1}


def test_units_of_a_scaled_in_replica_are_forgotten() -> None:
    w = world(cliques=(Clique("router", 2, 2),), replicas=2, delay=DELAY)
    memory = Memory()
    run(w, memory, T0)
    crash(w, "p-1-router-1")
    run(w, memory, T0 + 1)
    assert f"{NS}/p/PodClique/p-1-router" in memory.breach_since
    del w.gangs[(NS, "p-1")]  # replica 1 scaled in: its PodGang is gone
    run(w, memory, T0 + 2)
    assert not any("p-1-" in u for u in memory.ever_healthy | set(memory.breach_since))
    assert f"{NS}/p/PodClique/p-0-router" in memory.ever_healthy
