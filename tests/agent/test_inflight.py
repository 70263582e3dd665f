"""A DELETE the agent has sent but the cache has not seen yet counts as terminating.

The loop does not wait for its pod writes: a pass can run while the last step's DELETE is
still under way. Such a pod must already look terminating to the rollout, or it would see
nothing of the replica in flight and start the next step too (two pods of one PodClique
down at once: caught by the update-during-update scenario before this existed).
"""

from __future__ import annotations

from grove_gitops.agent import rollout
from grove_gitops.agent.actions import DeletePod, Memory
from grove_gitops.readmodel.snapshot import Views, build
from tests.agent.builders import NS, Clique, world

NOW = 1_900_000_000.0


def _deletes(actions: list[object]) -> list[str]:
    return [a.name for a in actions if isinstance(a, DeletePod)]


def test_a_pod_being_deleted_blocks_the_next_step() -> None:
    w = world(cliques=(Clique("router", 3, 1),))
    for k in range(3):
        w.set(f"p-0-router-{k}", gated=True, ready=False, phase="Pending", scheduled=False)
        w.add_old(f"p-0-router-{k}")
    memory = Memory()
    first, _ = rollout.rollout(w.wl(), memory, NOW, grace=60.0, breached=set())
    assert _deletes(first) == ["p-0-router-0-h0"]  # step 1: one old router

    views = Views()
    in_flight = {(NS, "p-0-router-0-h0")}
    snap = build(w.pods, w.gangs, views_of=views, deleting=in_flight)
    again, _ = rollout.rollout(snap.workloads[(NS, "p")], memory, NOW + 0.01, grace=60.0, breached=set())
    assert _deletes(again) == []  # the step is under way: nothing more until it ends
    assert snap.pods[(NS, "p-0-router-0-h0")].terminating

    # The parsed view kept across passes is not changed by that: once the DELETE has ended
    # (here: failed, the pod unchanged), the next pass sees the pod as it is and retries it.
    snap = build(w.pods, w.gangs, views_of=views)
    assert not snap.pods[(NS, "p-0-router-0-h0")].terminating
    retry, _ = rollout.rollout(snap.workloads[(NS, "p")], memory, NOW + 0.02, grace=60.0, breached=set())
    assert _deletes(retry) == ["p-0-router-0-h0"]
