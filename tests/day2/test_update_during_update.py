"""A second image bump while the first rollout is under way (issue 13, Tests).

Grove abandons the current replica and may roll two at once (spec §4, §8.6); the agent
finishes the current replica first. With one PodCliqueSet replica, what we can observe is that
the bound holds across both updates, every slot ends on the *second* target, and the pods of
the first target that were created but never reached (gated) are cleaned up.
"""

from __future__ import annotations

from collections.abc import Callable

from tests.day2.harness import Day2Env, describe


def test_second_bump_mid_rollout_converges_to_the_second_target(day2: Callable[..., Day2Env]) -> None:
    env = day2()
    first_pods, mark, middle = env.bump_mid_rollout()
    env.bump_image()
    final = env.desired_pods()
    assert all(final[s] != middle[s] for s in final)
    env.wait_until(env.converged, timeout=40, what="every slot Ready on the second target")
    env.wait_until(
        lambda: {v.name for v in env.views()} == set(env.all_desired_pods().values()),
        timeout=15,
        what="no pod of an earlier target left (superseded gated pods deleted after the grace period)",
    )
    env.settle()
    violation = env.observer.rolling_bound_violation(final, since=mark, strict=True)
    assert violation is None, f"{violation[1]}\n{describe(violation[0])}"
    conflicts = env.observer.hostname_conflicts(mark)
    assert conflicts == [], describe(conflicts[0][0])
    # Every pod of the first deploy was retired exactly once.
    deleted = [m.pod for m in env.observer.since(mark) if m.event == "DELETED"]
    assert set(first_pods.values()) <= set(deleted)
    assert len(deleted) == len(set(deleted))
    env.assert_invariants()
