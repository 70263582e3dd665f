"""Scale-in and removal decisions (grove_gitops/agent/scalein.py, spec/grove-day2.md §6.1)."""

from __future__ import annotations

import pytest

from grove_gitops.agent import intent, scalein
from grove_gitops.agent.actions import Action, DeletePod, Memories, Memory
from grove_gitops.readmodel.snapshot import pod_view
from tests.agent.builders import NS, T0, Clique, World, day2, pod, podgang, set_state, world

GRACE = 30.0


def run(w: World, memory: Memory | Memories, now: float, grace: float = GRACE) -> list[DeletePod]:
    """One pass over every workload of ``w`` as the agent makes it: each workload with its
    own memory (a bare :class:`Memory` is used for a world of one workload)."""
    snap = w.snap()
    out: list[Action] = []
    for wl in snap.workloads.values():
        own = memory.of(wl.key) if isinstance(memory, Memories) else memory
        intent.observe(wl, own, now)
        out += scalein.unwanted_pods(wl, own, now, grace, snap)
    assert all(isinstance(a, DeletePod) for a in out)
    return [a for a in out if isinstance(a, DeletePod)]


def names(actions: list[DeletePod]) -> list[str]:
    return [a.name for a in actions]


def scaled_in(w: World, hostname: str) -> None:
    """The render dropped this slot: the PodGang no longer lists its pod."""
    name = f"{hostname}-h1"
    for gang in w.gangs.values():
        for group in gang["spec"]["podgroups"]:
            group["podReferences"] = [r for r in group["podReferences"] if r["name"] != name]


def test_unwanted_pod_is_deleted_only_after_the_grace_period() -> None:
    w = world(cliques=(Clique("router", 3, 1),))
    scaled_in(w, "p-0-router-2")
    memory = Memory()
    assert run(w, memory, T0) == []
    assert run(w, memory, T0 + GRACE - 1) == []
    (a,) = run(w, memory, T0 + GRACE)
    assert (a.name, a.uid, a.reason, a.gang) == ("p-0-router-2-h1", "uid-p-0-router-2-h1", "UnwantedPodDeleted", (NS, "p-0"))
    assert "listed by no PodGang" in a.message


def test_pod_wanted_again_is_forgotten_and_its_grace_restarts() -> None:
    w = world(cliques=(Clique("router", 3, 1),))
    refs = [dict(r) for r in w.gang("p-0")["spec"]["podgroups"][0]["podReferences"]]
    scaled_in(w, "p-0-router-2")
    memory = Memory()
    run(w, memory, T0)
    w.gang("p-0")["spec"]["podgroups"][0]["podReferences"] = refs  # e.g. the PodGang was late
    assert run(w, memory, T0 + 10) == []
    assert memory.unwanted_since == {}
    scaled_in(w, "p-0-router-2")
    assert run(w, memory, T0 + GRACE + 5) == []  # unwanted again since T0 + 35 only
    assert names(run(w, memory, T0 + 2 * GRACE + 5)) == ["p-0-router-2-h1"]


def test_pod_applied_before_its_podgang_survives_the_grace_period() -> None:
    """A GitOps tool may apply the pods of a new replica before its PodGang."""
    w = world(cliques=(Clique("router", 1, 1),))
    new = w.add(pod("p-1-router-0", replica=1, podgang="p-1"))
    memory = Memory()
    assert run(w, memory, T0) == []
    w.gangs[(NS, "p-1")] = podgang("p-1", "p", day2("p", 1, (Clique("router", 1, 1),), (), 60.0),
                                   [("p-1-router", [new["metadata"]["name"]], 1)])
    assert run(w, memory, T0 + 10 * GRACE) == []


def test_removed_podcliqueset_pods_all_go_in_groves_order() -> None:
    w = world(cliques=(Clique("router", 2, 1), Clique("worker", 3, 1)))
    w.gangs.clear()  # the PodCliqueSet was removed from Git
    set_state(w.new("p-0-router-0"), created="2026-11-24T10:00:05Z")  # Running, Ready, newer
    set_state(w.new("p-0-router-1"), ready=False)  # Running, not Ready
    set_state(w.new("p-0-worker-0"), scheduled=False, ready=False)  # unassigned, Pending
    set_state(w.new("p-0-worker-1"), phase="Unknown", ready=False, node="node-b")
    set_state(w.new("p-0-worker-2"), phase="Failed", ready=False, node="node-b")  # Failed ranks with Pending
    memory = Memory()
    assert run(w, memory, T0) == []
    actions = run(w, memory, T0 + GRACE)
    assert names(actions) == [
        "p-0-worker-0-h1",  # unassigned first
        "p-0-worker-2-h1",  # assigned, phase rank 0 (Failed ranks with Pending)
        "p-0-worker-1-h1",  # Unknown
        "p-0-router-1-h1",  # Running, not Ready
        "p-0-router-0-h1",  # Running, Ready
    ]
    assert all(a.gang is None for a in actions)  # no PodGang left to attach an Event to


def test_newest_first_among_equals_and_zero_timestamp_first() -> None:
    pods = [
        pod_view(pod("p-0-r-0", created="2026-11-24T10:00:00Z")),
        pod_view(pod("p-0-r-1", created="2026-11-24T12:00:00Z")),
        pod_view(pod("p-0-r-2", created="")),
        pod_view(pod("p-0-r-3", created="2026-11-24T11:00:00Z")),
    ]
    assert [p.hostname for p in scalein.scale_in_order(pods)] == ["p-0-r-2", "p-0-r-1", "p-0-r-3", "p-0-r-0"]


def test_terminating_unwanted_pod_is_not_deleted_again() -> None:
    w = world(cliques=(Clique("router", 2, 1),))
    scaled_in(w, "p-0-router-1")
    w.set("p-0-router-1", terminating=True)
    memory = Memory()
    run(w, memory, T0)
    assert run(w, memory, T0 + 10 * GRACE) == []


def test_pod_of_an_unreadable_podgang_is_kept() -> None:
    w = world(cliques=(Clique("router", 2, 1),))
    w.gang("p-0")["metadata"]["annotations"]["gitops.grove.io/day2"] = "{not json"
    memory = Memory()
    snap = w.snap()
    assert (NS, "p-0") in snap.malformed
    run(w, memory, T0)
    assert run(w, memory, T0 + 10 * GRACE) == []


def test_referenced_pod_is_never_deleted() -> None:
    """Even when something classes a referenced pod as unwanted, scale-in refuses."""
    w = world(cliques=(Clique("router", 2, 1),))
    snap = w.snap()
    wl = snap.workloads[(NS, "p")]
    wl.unwanted.append(snap.pods[(NS, "p-0-router-0-h1")])
    with pytest.raises(AssertionError, match="referenced"):
        scalein.unwanted_pods(wl, Memory(), T0, 0.0, snap)


def test_pod_listed_by_a_podgang_of_another_podcliqueset_is_not_deleted() -> None:
    w = world(cliques=(Clique("router", 2, 1),))
    other = world(pcs="q", cliques=(Clique("router", 1, 1),))
    w.gangs.update(other.gangs)
    w.pods.update(other.pods)
    scaled_in(w, "p-0-router-0")  # p's own gang no longer lists it...
    # ...but q's gang lists it instead of its own pod (bad input)
    w.gang("q-0")["spec"]["podgroups"][0]["podReferences"] = [{"namespace": NS, "name": "p-0-router-0-h1"}]
    memory = Memories()
    run(w, memory, T0)
    gone = names(run(w, memory, T0 + 10 * GRACE))
    assert "p-0-router-0-h1" not in gone
    assert gone == ["q-0-router-0-h1"]  # q's own pod is genuinely unwanted


def test_unmanaged_pod_is_never_deleted() -> None:
    w = world(cliques=(Clique("router", 2, 1),))
    snap = w.snap()
    wl = snap.workloads[(NS, "p")]
    stray = pod_view(pod("p-0-router-5", managed=False))
    wl.unwanted.append(stray)
    assert scalein.unwanted_pods(wl, Memory(), T0, 0.0, snap) == []


def test_memory_of_other_workloads_is_kept() -> None:
    """Issue 22: a pass over one workload must not reset another's grace clock. Before, the
    memory was shared and each pass dropped every timer its own snapshot did not list, so with
    a second PodCliqueSet in the cluster the resync passes wiped each other's timers and
    nothing was ever deleted."""
    w = world(cliques=(Clique("router", 2, 1),))
    other = world(pcs="q", cliques=(Clique("router", 2, 1),))
    w.gangs.update(other.gangs)
    w.pods.update(other.pods)
    scaled_in(w, "p-0-router-1")
    scaled_in(w, "q-0-router-1")
    memories = Memories()
    for t in (T0, T0 + GRACE / 2):  # alternating single-workload passes, as the loop makes them
        for key in ((NS, "p"), (NS, "q")):
            snap = w.snap()
            intent.observe(snap.workloads[key], memories.of(key), t)
            assert scalein.unwanted_pods(snap.workloads[key], memories.of(key), t, GRACE, snap) == []
    assert memories.of((NS, "q")).unwanted_since[(NS, "q-0-router-1-h1")] == T0
    gone = []
    for key in ((NS, "p"), (NS, "q")):
        snap = w.snap()
        gone += names(scalein.unwanted_pods(snap.workloads[key], memories.of(key), T0 + GRACE, GRACE, snap))
    assert gone == ["p-0-router-1-h1", "q-0-router-1-h1"]
