"""First deploy of the bundled example: GitOps applies gated pods, the agent releases the
gangs, the kubelet runs them, and every slot ends Ready with its rendered pod."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.day2.applier import Mode
from tests.day2.harness import Day2Env, describe


@pytest.mark.parametrize("mode", ["argocd", "flux"])
def test_example_first_deploy_ends_ready_without_shared_hostnames(day2: Callable[..., Day2Env], mode: Mode) -> None:
    env = day2(mode=mode)
    assert len(env.desired_pods()) == 12
    desired = env.all_desired_pods()  # with the bystander PodCliqueSet's
    assert len(desired) == 16
    env.wait_until(env.converged, timeout=10, what="every slot Ready with its rendered pod")
    env.settle()
    moments = env.observer.since(0)
    assert moments[0].pods == ()  # the observer saw the namespace before the first pod
    conflicts = env.observer.hostname_conflicts()
    assert conflicts == [], describe(conflicts[0][0])
    # Each pod was created once and never deleted: a first deploy retires nothing.
    assert not [m for m in moments if m.event == "DELETED"]
    assert {m.pod for m in moments if m.event == "ADDED"} == set(desired.values())
    # The agent's pod writes: one gate removal per pod, no delete.
    assert (env.agent_requests("patch"), env.agent_requests("delete")) == (len(desired), 0)
    # The applier never wrote a pod after creating it, and the final state needs no writes.
    writes_before = env.applier.rest.writes
    env.sync()
    assert env.applier.rest.writes == writes_before
    env.assert_invariants()
