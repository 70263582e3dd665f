"""The step count of a rollout's progress messages: steps done / steps of the whole rollout
(issue 37, defect 3: after a restart the logs read "step 1 of 9", "step 1 of 8", ...).

A restarted agent takes the steps done from the ``RollingUpdate`` condition the last one
wrote and counts on from there; steps added mid-rollout (a scale-out, another update) grow the
total, and the step number never goes back.
"""

from __future__ import annotations

import re

from grove_gitops.agent import rollout
from grove_gitops.agent.actions import DeletePod, Memory
from tests.agent.builders import NS, T0, Clique, World, apply, condition, pod, world

STEP = re.compile(r"step (\d+) of (\d+)")


def _rolling(routers: int, workers: int) -> World:
    w = world(cliques=(Clique("router", routers, routers - 1), Clique("worker", workers, workers - 1)))
    for clique, n in (("router", routers), ("worker", workers)):
        for k in range(n):
            w.set(f"p-0-{clique}-{k}", gated=True, ready=False, phase="Pending", scheduled=False)
            w.add_old(f"p-0-{clique}-{k}")
    return w


def _pass(w: World, memory: Memory, now: float) -> list[tuple[int, int]]:
    """One pass; the retired pods go and their slots' new pods run (as the kubelet would)."""
    actions, _ = rollout.rollout(w.wl(), memory, now, breached=set(), grace=60.0)
    steps = []
    for a in actions:
        if isinstance(a, DeletePod):
            found = STEP.search(a.message)
            assert found is not None, a.message
            steps.append((int(found.group(1)), int(found.group(2))))
            del w.pods[(a.namespace, a.name)]
            w.set(a.name.rsplit("-", 1)[0], gated=False, ready=True, phase="Running", scheduled=True)
    apply(w, [a for a in actions if not isinstance(a, DeletePod)], now)
    return steps


def test_a_restarted_agent_counts_on_from_the_condition() -> None:
    w = _rolling(4, 5)
    memory = Memory()
    seen = [s for n in range(4) for s in _pass(w, memory, T0 + n)]
    assert seen == [(1, 9), (2, 9), (3, 9), (4, 9)]
    cond = condition(w, "p-0", "RollingUpdate")
    assert cond is not None and cond["message"] == "rolling replica 0, step 4 of 9"
    memory = Memory()  # the restart
    seen = [s for n in range(6) for s in _pass(w, memory, T0 + 10 + n)]
    assert seen == [(5, 9), (6, 9), (7, 9), (8, 9), (9, 9)]


def test_steps_added_mid_rollout_grow_the_total_and_the_count_goes_on() -> None:
    """The soak's case: the condition said "step 2 of 4" when further updates piled up 9 steps
    (here: a restart finds 7 steps left); the count went "1 of 9", "1 of 8" ... before."""
    w = _rolling(3, 4)
    memory = Memory()
    assert [s for n in range(2) for s in _pass(w, memory, T0 + n)] == [(1, 7), (2, 7)]
    for gang in w.gangs.values():  # the last agent wrote a count the cluster has outgrown since
        for c in gang["status"]["conditions"]:
            if c["type"] == "RollingUpdate":
                c["message"] = "rolling replica 0, step 2 of 4"
    memory = Memory()
    seen = [s for n in range(8) for s in _pass(w, memory, T0 + 10 + n)]
    assert seen == [(3, 7), (4, 7), (5, 7), (6, 7), (7, 7)]


def test_a_scale_out_mid_rollout_adds_to_the_total() -> None:
    w = _rolling(3, 2)
    memory = Memory()
    assert _pass(w, memory, T0) == [(1, 5)]
    # Two more old worker pods show up in slots the PodGang wants (count 2 -> 4 mid-rollout).

    gang = w.gang("p-0")
    for k in (2, 3):
        new = w.add(pod(f"p-0-worker-{k}", gated=True, ready=False, phase="Pending", scheduled=False))
        w.add_old(f"p-0-worker-{k}")
        group = next(g for g in gang["spec"]["podgroups"] if g["name"] == "p-0-worker")
        group["podReferences"].append({"namespace": NS, "name": new["metadata"]["name"]})
    seen = [s for n in range(8) for s in _pass(w, memory, T0 + 1 + n)]
    assert seen == [(2, 7), (3, 7), (4, 7), (5, 7), (6, 7), (7, 7)]
