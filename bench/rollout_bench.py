"""Rollout benchmark: an image bump of P pods in G gangs, rolled by the agent (issue 13).

    python -m bench.rollout_bench --gangs 50 --pods 1000

The world of the day-2 scenario tests (tests/day2: fake API server over HTTP, the GitOps
applier, a kubelet that makes a released pod Ready at once, the agent), with G single-gang
PodCliqueSets of ``bench.lifter_bench.workload`` in one namespace. After the first deploy
every container image is bumped, so every pod is replaced, one step (one pod) at a time per
PodCliqueSet, the G PodCliqueSets in parallel. One JSON line on stdout:

- ``step_ms``: the agent's own time per step (the sum of its passes during the rollout over
  the steps taken); ``pass_ms_max``: its longest single pass;
- ``writes_per_pod``: the agent's API writes (pod DELETEs, pod PATCHes, PodGang status
  PATCHes, Event POSTs) over the pods replaced;
- ``ready_to_next_s``: per PodCliqueSet, from a replacement turning Ready to the next old
  pod's deletion (median and max).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.lifter_bench import workload, write_source


def run(gangs: int, pods: int) -> dict[str, float | int]:
    from tests.day2.harness import day2_env

    pcss = workload(gangs, pods)
    for pcs in pcss:
        pcs["metadata"]["namespace"] = "bench"
    with tempfile.TemporaryDirectory() as tmp:
        source = write_source(Path(tmp) / "source", pcss)
        with day2_env(Path(tmp) / "world", source=source, namespace="bench", ready_delay=0.0,
                      termination_delay=None, sync_interval=0.5, agent_config={"resync": 2.0}) as env:
            env.wait_until(env.converged, timeout=300, what="the first deploy")
            assert env.agent is not None
            agent = env.agent.impl
            registry = agent.registry
            old = env.desired_pods()
            mark = env.observer.mark()
            before = {v: env.agent_requests(*v) for v in [("delete", "pods"), ("patch", "pods"), ("patch", "podgangs"), ("post", "events")]}
            passes_before = _pass_sum(registry)
            agent.pass_max = 0.0
            started = time.monotonic()
            env.bump_image()
            new = env.desired_pods()
            env.wait_until(env.converged, timeout=600, what="every pod replaced")
            env.wait_until(lambda: not set(old.values()) & {v.name for v in env.views()}, timeout=60, what="old pods gone")
            elapsed = time.monotonic() - started
            writes = sum(env.agent_requests(*v) - n for v, n in before.items())
            agent_s = _pass_sum(registry) - passes_before
            gaps = _ready_to_next(env, mark, old, new)
            return {
                "gangs": gangs,
                "pods": len(new),
                "rollout_s": round(elapsed, 2),
                "steps": len(old),
                "step_ms": round(1000 * agent_s / len(old), 2),
                "pass_ms_max": round(1000 * agent.pass_max, 1),
                "writes_per_pod": round(writes / len(old), 2),
                "ready_to_next_s_median": round(statistics.median(gaps), 3) if gaps else 0.0,
                "ready_to_next_s_max": round(max(gaps), 3) if gaps else 0.0,
            }


def _pass_sum(registry: Any) -> float:
    return float(registry.get("grove_gitops_agent_pass_seconds_sum") or 0.0)


def _ready_to_next(env: Any, mark: int, old: dict[Any, str], new: dict[Any, str]) -> list[float]:
    """Per PodCliqueSet: from a new pod turning Ready to the next old pod of that PodCliqueSet deleted."""
    new_names = set(new.values())
    old_names = set(old.values())
    pcs_of = {name: slot[1].rsplit("-", 3)[0] for side in (old, new) for slot, name in side.items()}
    last_ready: dict[str, float] = {}
    ready_seen: set[str] = set()
    gaps: list[float] = []
    for moment in env.observer.since(mark):
        if moment.event == "DELETED" and moment.pod in old_names:
            pcs = pcs_of[moment.pod]
            if pcs in last_ready:
                gaps.append(moment.time - last_ready.pop(pcs))
        elif (
            moment.pod in new_names
            and moment.pod not in ready_seen
            and any(p.name == moment.pod and p.available for p in moment.pods)
        ):
            ready_seen.add(moment.pod)
            last_ready[pcs_of[moment.pod]] = moment.time
    return gaps


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gangs", type=int, default=50)
    parser.add_argument("--pods", type=int, default=1000)
    args = parser.parse_args(argv)
    print(json.dumps(run(args.gangs, args.pods), sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
