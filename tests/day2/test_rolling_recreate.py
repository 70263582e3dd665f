"""RollingRecreate of the bundled example after an image bump (issue 13, Tests)."""

from __future__ import annotations

import time
from collections.abc import Callable

from tests.day2.harness import Day2Env, describe, metric_samples


def test_image_bump_rolls_one_unit_at_a_time(day2: Callable[..., Day2Env]) -> None:
    env = day2()
    env.wait_until(env.converged, timeout=10, what="the first deploy")
    old = env.desired_pods()
    mark = env.observer.mark()
    env.bump_image()
    new = env.desired_pods()
    assert set(new) == set(old) and all(new[s] != old[s] for s in new)  # 12 of 12 pods renamed
    env.wait_until(env.converged, timeout=30, what="every slot Ready with its new pod")
    env.settle()

    violation = env.observer.rolling_bound_violation(new, since=mark, strict=True)
    assert violation is None, f"{violation[1]}\n{describe(violation[0])}"
    conflicts = env.observer.hostname_conflicts(mark)
    assert conflicts == [], describe(conflicts[0][0])
    worst, at = env.observer.max_unavailable(new, since=mark)
    assert worst == 4, describe(at)  # the measured bound: one prefill replica (leader + 3 workers)
    # Every old pod was retired once, by the agent (GitOps never pruned a pod).
    deleted = {m.pod for m in env.observer.since(mark) if m.event == "DELETED"}
    assert deleted == set(old.values())


    def rolling() -> dict[str, str] | None:
        gang = env.podgang("llama-disagg-0")
        assert gang is not None
        found: dict[str, str] | None = {c["type"]: c for c in gang["status"]["conditions"]}.get("RollingUpdate")
        return found

    # Written in the background right after the last step: within a moment of convergence.
    env.wait_until(lambda: (rolling() or {}).get("status") == "False", timeout=5, what="RollingUpdate=False")
    done = rolling()
    assert done is not None and (done["status"], done["reason"]) == ("False", "UpdateComplete"), done
    _assert_idle_when_converged(env)
    _assert_progress_metrics(env, retired=len(old))
    env.assert_invariants()


def _assert_idle_when_converged(env: Day2Env) -> None:
    """Once every slot holds its Ready new pod, the agent only resyncs: no pass triggers the
    next (a background write that changed nothing must not mark its workload dirty)."""
    assert env.agent is not None
    agent = env.agent.impl
    before, began = agent.passes, time.monotonic()
    time.sleep(1.0)
    resyncs = (time.monotonic() - began) / agent.config.resync
    assert agent.passes - before <= resyncs + 3, (agent.passes - before, resyncs)


def _assert_progress_metrics(env: Day2Env, retired: int) -> None:
    """What an operator reads on /metrics after the rollout: every old pod retired by a step,
    nothing outdated, and the pass timings in step with each other."""
    agent = env.agent
    assert agent is not None
    env.stop_agent()  # a pass records its two timings one after the other: read between passes
    metrics = metric_samples(agent.impl.registry.render())
    assert metrics['grove_gitops_agent_pods_deleted_total{reason="PodRetired"}'] == retired
    assert not any(k.startswith("grove_gitops_agent_pods_deleted_total") and "PodRetired" not in k for k in metrics)
    outdated = [v for k, v in metrics.items() if k.startswith("grove_gitops_agent_outdated_pods{")]
    assert outdated and all(v == 0 for v in outdated), outdated
    passes = metrics["grove_gitops_agent_pass_seconds_count"]
    assert passes > 0 and metrics["grove_gitops_agent_decide_seconds_count"] == passes
    assert 0 < metrics["grove_gitops_agent_decide_seconds_sum"] <= metrics["grove_gitops_agent_pass_seconds_sum"]
    assert metrics["grove_gitops_agent_pass_longest_seconds"] <= metrics["grove_gitops_agent_pass_seconds_sum"]


def test_a_clique_only_change_touches_only_its_slots(day2: Callable[..., Day2Env]) -> None:
    env = day2()
    env.wait_until(env.converged, timeout=10, what="the first deploy")
    old = env.desired_pods()
    mark = env.observer.mark()
    env.bump_image(cliques=("router",))
    new = env.desired_pods()
    changed = {s for s in new if new[s] != old[s]}
    assert {h for _, h in changed} == {"llama-disagg-0-router-0", "llama-disagg-0-router-1"}
    env.wait_until(env.converged, timeout=20, what="the routers replaced")
    env.settle()
    violation = env.observer.rolling_bound_violation(new, since=mark, strict=True)
    assert violation is None, f"{violation[1]}\n{describe(violation[0])}"
    worst, at = env.observer.max_unavailable(new, since=mark)
    assert worst == 1, describe(at)
    deleted = {m.pod for m in env.observer.since(mark) if m.event == "DELETED"}
    assert deleted == {old[s] for s in changed}
    env.assert_invariants()


def test_agent_killed_mid_rollout_resumes(day2: Callable[..., Day2Env]) -> None:
    env = day2()
    old, mark, new = env.bump_mid_rollout()
    env.stop_agent()
    env.settle()
    env.start_agent()
    env.wait_until(env.converged, timeout=30, what="the rollout finished by the restarted agent")
    env.settle()
    violation = env.observer.rolling_bound_violation(new, since=mark, strict=True)
    assert violation is None, f"{violation[1]}\n{describe(violation[0])}"
    assert {m.pod for m in env.observer.since(mark) if m.event == "DELETED"} == set(old.values())
    env.assert_invariants()
