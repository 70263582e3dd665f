"""Scale-out and scale-in of PodCliqueSet, scaling-group and clique replicas; a PodCliqueSet
removed from Git (issue 13, Tests).

Each runs alone and beside a second, unrelated PodCliqueSet (issue 22, defect 1: the grace
period of an unwanted pod was kept per pass, and the other workload's pass wiped it, so with
a second PodCliqueSet nothing was ever deleted). The bound for the deletes is generous (30 s
for a 1 s grace period); the bystander's pods are never touched (``assert_invariants``).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.day2.harness import EXAMPLE_PCS, Day2Env, describe
from tests.day2.rest import Raw


def _pcs_replicas(n: int) -> Callable[[Raw], None]:
    def change(pcs: Raw) -> None:
        pcs["spec"]["replicas"] = n

    return change


def _group_replicas(group: str, n: int) -> Callable[[Raw], None]:
    def change(pcs: Raw) -> None:
        (pcsg,) = [g for g in pcs["spec"]["template"]["podCliqueScalingGroups"] if g["name"] == group]
        pcsg["replicas"] = n

    return change


def _clique_replicas(clique: str, n: int) -> Callable[[Raw], None]:
    def change(pcs: Raw) -> None:
        (spec,) = [c["spec"] for c in pcs["spec"]["template"]["cliques"] if c["name"] == clique]
        spec["replicas"] = n

    return change


SCALES = {
    "podcliqueset": (_pcs_replicas(2), _pcs_replicas(1), 12),
    "scaling-group": (_group_replicas("prefill", 3), _group_replicas("prefill", 2), 4),
    "clique": (_clique_replicas("router", 3), _clique_replicas("router", 2), 1),
}


BYSTANDER = pytest.mark.parametrize("bystander", [False, True], ids=["alone", "beside-another-pcs"])


@BYSTANDER
@pytest.mark.parametrize("what", sorted(SCALES))
def test_scale_out_then_in(day2: Callable[..., Day2Env], what: str, bystander: bool) -> None:
    out, back, added = SCALES[what]
    env = day2(bystander=bystander)
    env.wait_until(env.converged, timeout=10, what="the first deploy")
    # converged() reads the server; the observer may still be taking the last Ready events
    # (seen once on a loaded machine: 3 slots "unavailable" before the scale-out began).
    env.settle()
    before = env.desired_pods()
    mark = env.observer.mark()
    env.edit_pcs(out)
    grown = env.desired_pods()
    assert {s: grown[s] for s in before} == before  # existing pods keep their names
    assert len(grown) - len(before) == added
    env.wait_until(env.converged, timeout=15, what="the new slots Ready")
    env.settle()
    assert [m for m in env.observer.since(mark) if m.event == "DELETED"] == []
    assert env.observer.max_unavailable(before, since=mark)[0] == 0  # scale-out disturbs nobody

    mark = env.observer.mark()
    env.edit_pcs(back)
    assert env.desired_pods() == before
    env.wait_until(env.converged, timeout=30, what="the removed slots' pods deleted")
    env.settle()
    deleted = {m.pod for m in env.observer.since(mark) if m.event == "DELETED"}
    assert deleted == set(grown.values()) - set(before.values())  # highest indices, nothing else
    assert env.observer.max_unavailable(before, since=mark)[0] == 0
    conflicts = env.observer.hostname_conflicts()
    assert conflicts == [], describe(conflicts[0][0])
    env.assert_invariants()


@BYSTANDER
def test_podcliqueset_removed_from_git(day2: Callable[..., Day2Env], bystander: bool) -> None:
    env = day2(bystander=bystander)
    env.wait_until(env.converged, timeout=10, what="the first deploy")
    pods = set(env.desired_pods().values())
    mark = env.observer.mark()
    (env.source / EXAMPLE_PCS.relative_to(EXAMPLE_PCS.parents[2])).unlink()
    env.render()
    assert env.desired_pods() == {}
    env.wait_until(lambda: env.views(env.primary) == [], timeout=30,
                   what="every pod of the removed PodCliqueSet deleted")
    env.settle()
    assert {m.pod for m in env.observer.since(mark) if m.event == "DELETED"} == pods
    assert env.podgang("llama-disagg-0") is None  # GitOps pruned the gangs
    # ... and the agent forgets it: nothing of the removed PodCliqueSet stays in its memory
    # (the bystander's may: it is still deployed).
    assert env.agent is not None
    memories = env.agent.impl.memory
    env.wait_until(lambda: not [k for k in memories.workloads if k[1] == "llama-disagg"],
                   timeout=5, what="the agent's memory of the removed PodCliqueSet cleared on resync")
    assert env.converged()  # the bystander's pods still all there and Ready
    env.assert_invariants()
