"""A Failed (evicted) pod is deleted by the agent, re-created by GitOps and released again
because its gang is already initialized (issue 13, Tests)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.day2.harness import Day2Env, describe


@pytest.mark.parametrize("hostname", ["llama-disagg-0-router-1", "llama-disagg-0-prefill-1-pworker-2"])
def test_failed_pod_is_replaced_under_the_same_name(day2: Callable[..., Day2Env], hostname: str) -> None:
    env = day2()
    env.wait_until(env.converged, timeout=10, what="the first deploy")
    slot = ("inference", hostname)
    name = env.desired_pods()[slot]
    (old,) = [v for v in env.views() if v.name == name]
    mark = env.observer.mark()
    env.kubelet.fail("inference", name)
    env.wait_until(
        lambda: any(v.name == name and v.uid != old.uid and v.available for v in env.views()),
        timeout=15,
        what=f"{name} re-created and Ready",
    )
    env.wait_until(env.converged, timeout=5, what="every slot Ready")
    env.settle()
    moments = env.observer.since(mark)
    assert [m.pod for m in moments if m.event == "DELETED"] == [name]  # only the failed pod
    others = [s for s in env.desired_pods() if s != slot]
    worst, at = env.observer.max_unavailable(others, since=mark)
    assert worst == 0, describe(at)
    conflicts = env.observer.hostname_conflicts(mark)
    assert conflicts == [], describe(conflicts[0][0])
    env.assert_invariants()
