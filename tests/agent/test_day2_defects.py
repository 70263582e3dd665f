"""Issue 22's four day-2 defects, at the level of the agent's decisions.

Each test here fails on the agent before the fix (0e4cb57); the scenarios in ``tests/day2``
show the same behaviours end to end, with the agent in its own loop against the fake API
server.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grove_gitops.agent import decide, intent, release, rollout, scalein
from grove_gitops.agent.actions import Action, DeletePod, Event, Memories, Memory, SetCondition
from grove_gitops.expand import ownership
from grove_gitops.readmodel.snapshot import build
from tests.agent.builders import NS, T0, Clique, Group, World, world

GRACE = 30.0
ROLLING = {"type": "RollingUpdate", "status": "True", "reason": "RollingReplica", "message": "step 0 of 1"}


def _deletes(actions: list[Action]) -> list[str]:
    return sorted(a.name for a in actions if isinstance(a, DeletePod))


# --------------------------------------------------------------------------- 1. memory per workload


def _cluster() -> World:
    """Three PodCliqueSets in one namespace: ``p`` and ``q`` each lose a slot to a scale-in
    (``q``'s only after T0 + 50), ``r`` was removed from Git (its pods stay, no PodGang)."""
    w = world(cliques=(Clique("router", 3, 1),))
    for other in (world(pcs="q", cliques=(Clique("router", 2, 1),)), world(pcs="r", cliques=(Clique("fe", 2, 1),))):
        w.pods.update(other.pods)
        w.gangs.update(other.gangs)
    _drop(w, "p-0", "p-0-router-2-h1")
    del w.gangs[(NS, "r-0")]
    return w


def _drop(w: World, gang: str, name: str) -> None:
    for group in w.gang(gang)["spec"]["podgroups"]:
        group["podReferences"] = [r for r in group["podReferences"] if r["name"] != name]


def _pass(w: World, memories: Memories, key: tuple[str, str], now: float, deleted: dict[str, float]) -> None:
    """One loop pass over one workload: its own objects only (as ``loop._snapshot`` reads
    them), deletions applied at once (a DELETE without finalizer)."""
    def mine(obj: dict[str, Any]) -> bool:
        return bool(obj["metadata"]["labels"].get("app.kubernetes.io/part-of") == key[1])

    snap = build({k: p for k, p in w.pods.items() if mine(p)}, {k: g for k, g in w.gangs.items() if mine(g)})
    actions, _ = decide.day2_actions(snap, memories, now, GRACE)
    for a in actions:
        if isinstance(a, DeletePod):
            deleted.setdefault(a.name, now)
            w.pods.pop((a.namespace, a.name), None)


def _run(passes: list[tuple[int, float]], only: str | None = None) -> dict[str, float]:
    """Run ``passes`` (workload index, seconds since the last pass) and return the deletions
    (pod -> time); ``only``: skip every pass of the other workloads."""
    w = _cluster()
    memories = Memories()
    deleted: dict[str, float] = {}
    keys = [(NS, "p"), (NS, "q"), (NS, "r")]
    now = T0
    changed = False
    for index, step in passes:
        now += step
        if now >= T0 + 50 and not changed:
            _drop(w, "q-0", "q-0-router-1-h1")  # q's scale-in lands (whoever's pass comes next)
            changed = True
        if only is None or keys[index][1] == only:
            _pass(w, memories, keys[index], now, deleted)
    return deleted


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 2), st.sampled_from([0.0, 1.0, 5.0, 20.0, 40.0])), min_size=1, max_size=40))
def test_any_interleaving_of_workloads_deletes_what_each_workload_alone_deletes(passes: list[tuple[int, float]]) -> None:
    """Issue 22 (1): with a shared memory each pass dropped the timers its own snapshot did
    not list, so the other workloads' passes reset every grace period and, with a resync
    over all workloads, nothing was ever deleted."""
    together = _run(passes)
    for pcs in ("p", "q", "r"):
        alone = _run(passes, only=pcs)
        assert {n: t for n, t in together.items() if n.startswith(pcs + "-")} == alone, pcs


def test_scale_in_and_removal_beside_other_workloads_delete_after_the_grace_period() -> None:
    """The issue's numbers, in miniature: a resync every 2 s over three workloads."""
    passes = [(i % 3, 2.0 / 3) for i in range(3 * 60)]  # 60 s of resyncs
    deleted = _run(passes)
    assert set(deleted) == {"p-0-router-2-h1", "q-0-router-1-h1", "r-0-fe-0-h1", "r-0-fe-1-h1"}
    assert deleted["p-0-router-2-h1"] - T0 <= GRACE + 2


# --------------------------------------------------------------------------- 2. gang completeness


def _terminated(groups: bool = False) -> World:
    w = world(cliques=(Clique("router", 2, 2),), groups=(Group("sg", 1, 1, (Clique("w", 2, 2),)),) if groups else ())
    w.gang("p-0")["status"]["conditions"] = [{"type": "Initialized", "status": "False", "reason": "GangTerminated"}]
    return w


def test_pods_being_deleted_never_make_a_terminated_gang_complete() -> None:
    """Issue 22 (2): right after a gang termination the cache still showed the pods being
    deleted as running; the whole-gang decision read the raw cache, found the gang complete
    and marked it Initialized again, so the re-created pods were released one by one."""
    w = _terminated(groups=True)
    deleting = set(w.pods)  # every DELETE under way (or done, with the cache not yet told)
    snap = build(w.pods, w.gangs, deleting=deleting)
    decision = release.decide_all([(NS, "p-0")], snap, w.pods, w.gangs, lambda _ref: True)[(NS, "p-0")]
    assert isinstance(decision, release.GangRelease)
    assert not decision.complete and decision.whole_gang
    assert decision.to_ungate == []
    assert any("p-0-router-0-h1" in m for m in decision.waiting_for)


def test_a_terminated_gang_is_released_only_when_every_recreated_pod_exists() -> None:
    w = _terminated()
    for k in (0, 1):
        w.set(f"p-0-router-{k}", gated=True, ready=False, scheduled=False)
    withheld = w.pods.pop((NS, "p-0-router-1-h1"))  # the kubelet / GitOps tool holds one back
    snap = build(w.pods, w.gangs)
    decision = release.decide_all([(NS, "p-0")], snap, w.pods, w.gangs, lambda _ref: True)[(NS, "p-0")]
    assert isinstance(decision, release.GangRelease) and not decision.complete and decision.to_ungate == []
    w.pods[(NS, "p-0-router-1-h1")] = withheld
    snap = build(w.pods, w.gangs)
    decision = release.decide_all([(NS, "p-0")], snap, w.pods, w.gangs, lambda _ref: True)[(NS, "p-0")]
    assert isinstance(decision, release.GangRelease) and decision.complete
    assert sorted(n for n, _ in decision.to_ungate) == ["p-0-router-0-h1", "p-0-router-1-h1"]


# --------------------------------------------------------------------------- 3. replacements first


def _update_with_podgangs_first(groups: bool = False) -> World:
    """A rolling update as Argo CD's shipped order applies it: the PodGangs (wave 0) already
    list the new pods, which the pod wave (10) has not created yet."""
    w = world(cliques=(Clique("router", 2, 1),), groups=(Group("sg", 2, 1, (Clique("w", 2, 2),)),) if groups else ())
    for key in list(w.pods):
        host = w.pods[key]["spec"]["hostname"]
        w.add_old(host)  # the running old pod (hash h0)
        del w.pods[key]  # its replacement (h1) is not applied yet
    w.gang("p-0")["status"]["conditions"].append(dict(ROLLING))
    return w


def test_no_old_pod_is_retired_before_its_replacement_exists() -> None:
    """Issue 22 (3): the agent acted on the PodGang change alone and emptied the slot for the
    whole gap between the waves (indefinitely if the pod wave failed)."""
    w = _update_with_podgangs_first(groups=True)
    memory = Memory()
    for t in (T0, T0 + 5):
        actions, progress = rollout.rollout(w.wl(), memory, t, breached=set(), grace=GRACE)
        assert _deletes(actions) == []
        assert any("does not exist yet" in m for m in progress.waiting)
    # Not-Ready old pods are retired at once only when their replacement exists, too.
    old = w.pods[(NS, "p-0-router-0-h0")]
    old["status"]["conditions"][1]["status"] = "False"
    actions, _ = rollout.rollout(w.wl(), memory, T0 + 6, breached=set(), grace=GRACE)
    assert _deletes(actions) == []


def test_a_step_starts_once_its_replacements_exist_and_a_long_wait_is_reported_once() -> None:
    w = _update_with_podgangs_first()
    memory = Memory()
    rollout.rollout(w.wl(), memory, T0, breached=set(), grace=GRACE)
    actions, _ = rollout.rollout(w.wl(), memory, T0 + rollout.REPORT_MISSING_AFTER, breached=set(), grace=GRACE)
    events = [a for a in actions if isinstance(a, Event)]
    assert [(e.reason, e.type) for e in events] == [(rollout.REPLACEMENT_POD_MISSING, "Warning")]
    assert "p-0-router-0-h1" in events[0].message and "GitOps tool" in events[0].message
    conds = [a for a in actions if isinstance(a, SetCondition) and a.type == rollout.ROLLING_UPDATE]
    assert [c.reason for c in conds] == [rollout.WAITING_FOR_REPLACEMENT]
    again, _ = rollout.rollout(w.wl(), memory, T0 + 60, breached=set(), grace=GRACE)
    assert not [a for a in again if isinstance(a, Event)]  # once, not every pass
    # The pod wave lands: gated new pods in both slots. Step 1 retires one old router.
    for k in (0, 1):
        fresh = copy.deepcopy(w.pods[(NS, f"p-0-router-{k}-h0")])
        fresh["metadata"]["name"] = f"p-0-router-{k}-h1"
        fresh["metadata"]["uid"] = f"uid-p-0-router-{k}-h1"
        fresh["metadata"]["labels"]["grove.io/pod-template-hash"] = "h1"
        fresh["metadata"]["annotations"][ownership.RENDERED_BY] = ownership.proof(
            NS, fresh["metadata"]["name"], fresh["metadata"]["labels"])
        fresh["spec"]["schedulingGates"] = [{"name": "grove.io/podgang-pending-creation"}]
        w.pods[(NS, fresh["metadata"]["name"])] = fresh
    actions, _ = rollout.rollout(w.wl(), memory, T0 + 61, breached=set(), grace=GRACE)
    assert _deletes(actions) == ["p-0-router-0-h0"]
    assert memory.missing_since == {} and memory.missing_message is None


# --------------------------------------------------------------------------- 4. ahead is not unwanted


def _ahead(w: World, hostname: str, template_hash: str = "h2") -> str:
    """A new pod the GitOps tool applied before the PodGang that will list it (gated)."""
    obj = w.add_old(hostname, template_hash=template_hash, gated=True, ready=False, scheduled=False)
    return str(obj["metadata"]["name"])


def test_pods_applied_before_their_podgangs_are_never_deleted_while_the_sync_stalls() -> None:
    """Issue 22 (4): a stall longer than the grace period deleted every new gated pod (as
    superseded in a wanted slot, as unwanted in a new one)."""
    w = world(cliques=(Clique("router", 2, 1),))
    memories = Memories()
    deleted: list[str] = []
    names = [_ahead(w, "p-0-router-0"), _ahead(w, "p-0-router-1")]
    new_slot = w.add_old("p-0-router-0", template_hash="h3", gated=True, ready=False, scheduled=False)
    new_slot["spec"]["hostname"] = "p-0-router-2"  # scale-out 2 -> 3, its PodGang not applied yet
    for t in range(0, 1200, 15):
        actions, _ = decide.day2_actions(w.snap(), memories, T0 + t, GRACE)
        deleted += _deletes(actions)
    assert deleted == []
    # The PodGang arrives and lists them: nothing to delete, ever.
    for k, name in enumerate(names):
        w.gang("p-0")["spec"]["podgroups"][0]["podReferences"][k]["name"] = name
    w.pods.pop((NS, "p-0-router-0-h1"))
    w.pods.pop((NS, "p-0-router-1-h1"))
    actions, _ = decide.day2_actions(w.snap(), memories, T0 + 1300, GRACE)
    assert _deletes(actions) == []


def test_a_gated_pod_the_podgangs_dropped_after_it_appeared_goes_after_the_grace_period() -> None:
    """The other reading: the PodGangs changed after the pod appeared and do not list it (an
    update overtaken by a second one before it ran): superseded, deleted after the grace."""
    w = world(cliques=(Clique("router", 2, 1),))
    memories = Memories()
    name = _ahead(w, "p-0-router-0")
    decide.day2_actions(w.snap(), memories, T0, GRACE)
    w.gang("p-0")["spec"]["podgroups"][0]["podReferences"][0]["name"] = "p-0-router-0-h9"  # a newer target
    actions, _ = decide.day2_actions(w.snap(), memories, T0 + 10, GRACE)
    assert _deletes(actions) == []
    actions, _ = decide.day2_actions(w.snap(), memories, T0 + 10 + GRACE, GRACE)
    assert _deletes(actions) == [name]
    assert any(isinstance(a, DeletePod) and a.reason == rollout.SUPERSEDED and "changed" in a.message for a in actions)


def test_when_the_order_is_unknown_a_gated_pod_waits_the_long_grace() -> None:
    """A pod already there when the agent started (nothing says whether it is ahead or
    behind) goes only after ``unordered_grace``, longer than a Flux interval."""
    w = world(cliques=(Clique("router", 2, 1),))
    memories = Memories()
    name = _ahead(w, "p-0-router-0")
    assert _deletes(decide.day2_actions(w.snap(), memories, T0, GRACE)[0]) == []
    almost = T0 + intent.UNORDERED_GRACE - 1
    assert _deletes(decide.day2_actions(w.snap(), memories, almost, GRACE)[0]) == []
    assert _deletes(decide.day2_actions(w.snap(), memories, T0 + intent.UNORDERED_GRACE, GRACE)[0]) == [name]
    assert intent.UNORDERED_GRACE >= 3 * 600  # three of the shipped Flux interval (10m)


def test_a_removed_workload_still_goes_released_pods_after_grace_gated_after_the_change() -> None:
    w = world(cliques=(Clique("router", 2, 1),))
    memories = Memories()
    gated = _ahead(w, "p-0-router-0")
    decide.day2_actions(w.snap(), memories, T0, GRACE)
    w.gangs.clear()  # removed from Git: the PodGangs are pruned, the pods stay (Prune=false)
    decide.day2_actions(w.snap(), memories, T0 + 1, GRACE)
    actions, _ = decide.day2_actions(w.snap(), memories, T0 + 1 + GRACE, GRACE)
    assert _deletes(actions) == sorted(["p-0-router-0-h1", "p-0-router-1-h1", gated])
    assert all(a.reason == scalein.UNWANTED_POD_DELETED for a in actions if isinstance(a, DeletePod))


def test_a_gated_pod_a_change_drops_from_the_podgangs_is_behind_it() -> None:
    """An update overtaken by a second one: the first target's pods were listed (gated, never
    released) until the second target's PodGangs replaced them. They are behind that change
    even though the agent first saw them unlisted in the same pass (found by the
    update-during-update scenario)."""
    w = world(cliques=(Clique("router", 2, 1),))
    memories = Memories()
    w.set("p-0-router-0", gated=True, ready=False, scheduled=False)  # the first target, not reached yet
    w.add_old("p-0-router-0")  # the running pod it would replace
    decide.day2_actions(w.snap(), memories, T0, GRACE)
    w.gang("p-0")["spec"]["podgroups"][0]["podReferences"][0]["name"] = "p-0-router-0-h9"  # second target
    assert _deletes(decide.day2_actions(w.snap(), memories, T0 + 1, GRACE)[0]) == []
    assert _deletes(decide.day2_actions(w.snap(), memories, T0 + 1 + GRACE, GRACE)[0]) == ["p-0-router-0-h1"]


def test_after_a_restart_a_gated_pod_older_than_its_slots_listed_pod_goes_after_the_grace() -> None:
    """An update overtaken by a second one, the agent restarted in between: the order it saw
    is lost, but the API server's creation times still say the listed pod came later."""
    w = world(cliques=(Clique("router", 2, 1),))
    w.set("p-0-router-0", gated=True, ready=False, scheduled=False, created="2026-11-24T10:05:00Z")
    old = w.add_old("p-0-router-0", template_hash="h0", gated=True, ready=False, scheduled=False,
                    created="2026-11-24T10:01:00Z")
    ahead = w.add_old("p-0-router-1", template_hash="h2", gated=True, ready=False, scheduled=False,
                      created="2026-11-24T10:09:00Z")  # newer than its slot's listed pod: ahead
    memories = Memories()  # a fresh agent
    assert _deletes(decide.day2_actions(w.snap(), memories, T0, GRACE)[0]) == []
    gone = _deletes(decide.day2_actions(w.snap(), memories, T0 + GRACE, GRACE)[0])
    assert gone == [old["metadata"]["name"]]
    assert ahead["metadata"]["name"] not in gone
