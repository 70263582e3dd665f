"""Two agents with leader election: only the Lease holder acts, and a hand-over mid-rollout
takes no step twice (issue 13, Tests)."""

from __future__ import annotations

import threading
from collections.abc import Callable

import kubernetes

from grove_gitops.agent.kube import Kube
from grove_gitops.agent.leader import LeaderElector
from grove_gitops.agent.loop import Agent, AgentConfig
from grove_gitops.metrics import Registry
from tests.day2.harness import Day2Env, describe


class Replica:
    """One agent process: an elector and an agent that acts only while it leads."""

    def __init__(self, env: Day2Env, identity: str) -> None:
        api = env.server.api_client()
        self.elector = LeaderElector(
            kubernetes.client.CoordinationV1Api(api), "inference", "grove-gitops-agent", identity,
            lease_duration=2.0, renew_deadline=1.5, retry_period=0.2,
        )
        config = AgentConfig(namespace="inference", recheck=0.05, resync=0.2, grace=1.0, watch_read_timeout=0.5)
        self.agent = Agent(Kube(api), config, Registry(), lambda: self.elector.is_leader)
        self.stop = threading.Event()
        self.threads = [
            threading.Thread(target=self.elector.run, args=(self.stop,), daemon=True),
            threading.Thread(target=self.agent.run, args=(self.stop,), daemon=True),
        ]
        for t in self.threads:
            t.start()

    def kill(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(timeout=10)


def test_hand_over_mid_rollout_takes_no_step_twice(day2: Callable[..., Day2Env]) -> None:
    env = day2(agent=False)
    replicas = {name: Replica(env, name) for name in ("agent-a", "agent-b")}
    try:
        env.wait_until(env.converged, timeout=20, what="the first deploy")
        old = env.desired_pods()
        mark = env.observer.mark()
        deletes_before = env.agent_requests("delete")
        env.bump_image()
        new = env.desired_pods()
        env.wait_until(
            lambda: 0 < sum(v.name in new.values() and v.available for v in env.views()) < len(new),
            timeout=15,
            what="the rollout under way",
        )
        leader = next(r for r in replicas.values() if r.elector.is_leader)
        leader.kill()
        env.wait_until(env.converged, timeout=40, what="the rollout finished by the other replica")
        env.settle()
        survivor = next(r for r in replicas.values() if r is not leader)
        assert survivor.elector.acquired.is_set()
        violation = env.observer.rolling_bound_violation(new, since=mark, strict=True)
        assert violation is None, f"{violation[1]}\n{describe(violation[0])}"
        deleted = [m.pod for m in env.observer.since(mark) if m.event == "DELETED"]
        assert sorted(deleted) == sorted(old.values())  # each old pod retired exactly once
        # No step taken twice: one DELETE per old pod across both agents.
        assert env.agent_requests("delete") - deletes_before == len(old)
        env.assert_invariants()
    finally:
        for r in replicas.values():
            r.kill()
