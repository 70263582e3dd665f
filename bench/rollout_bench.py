"""Rollout benchmark: an image bump of P pods in G gangs, rolled by the agent (issue 13).

    python -m bench.rollout_bench --gangs 50 --pods 1000

The world of the day-2 scenario tests (tests/day2: fake API server over HTTP, the GitOps
applier, a kubelet that makes a released pod Ready at once), with G single-gang PodCliqueSets
of ``bench.lifter_bench.workload`` in one namespace. The agent runs as it runs in a cluster:
its own process (``grove-gitops agent --kubeconfig ...``), so the simulators and the server
never share its interpreter; its figures are read from its ``/metrics``. After the first
deploy every container image is bumped, so every pod is replaced, one step (one pod) at a
time per PodCliqueSet, the G PodCliqueSets in parallel. One JSON line on stdout:

- ``cpu_ms``: the agent process's CPU time (user + system, from /proc; watches, decisions,
  HTTP) during the rollout over the steps taken: its own cost, whatever else runs;
- ``step_ms``: the agent's wall time per step: the sum of its passes during the rollout (API
  round trips and waiting for a CPU included) over the steps taken; ``decide_ms``: the part
  of it spent deriving state and deciding, without API calls; ``passes_over_50ms`` and
  ``passes_over_1s``: passes during the rollout longer than that (from the histogram);
  ``pass_ms_max_since_start``: its longest pass, the first deploy included;
- ``writes_per_pod``: every agent API write (pod DELETEs, pod PATCHes, PodGang status
  PATCHes, Event POSTs) over the pods replaced, and each kind apart (``pod_writes_per_pod``,
  ``status_writes``, ``events``);
- ``ready_to_next_s``: per PodCliqueSet, from a replacement turning Ready to the next old
  pod's deletion (median, 95th and 99th percentile, max, and the steps over 300 ms and 1 s),
  as this process's observer saw both events; ``server_ready_to_next_s``: the same steps as
  the fake API server committed them (the Ready status write, or the replacement's create if
  later, to the DELETE), so the observer's own delays are not in it;
- ``agent_gc_pause_ms_max``: the agent's longest garbage-collector pause (its metric,
  ``agent/gcpause.py``); ``world_gc_pause_ms_max`` and ``world_gc_pauses_over_100ms``: this
  process's (the fake API server's and the simulators'), during the rollout.

Issue 35.1 found the steps over 1 s in the benchmark's world, not the agent: this process
(server, applier, kubelet, observer) ran full collections of ~270,000 tracked objects, 230-660
ms each, every second or two, and every request and watch event of the agent waited for them.
So the world keeps its own collector pauses short the way the agent does (``--world-gc
freeze``, the default: ``GcPauses`` in a thread of this process); ``--world-gc python`` leaves
CPython's defaults, as before, to compare.

``--trace DIR`` splits every step over 100 ms into its phases (``bench.rollout_trace``). What
it found next (issue 35.1, second round): the agent's DELETEs waited in the fake server behind
lists that copied every pod under the store's lock (now copied outside it), and this process
read the rendered tree and listed every pod every 0.25 s to see whether the rollout was done
(now it asks the observer's copy, and lists once at the end).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.lifter_bench import workload, write_source


def _percentile(values: list[float], q: float) -> float:
    return round(values[int(q * (len(values) - 1))], 3) if values else 0.0


@contextlib.contextmanager
def world_collector(mode: str) -> Iterator[Any]:
    """This process's collector pauses (the benchmark's world: server and simulators), measured
    (a ``GcPauses``); ``mode`` ``freeze`` also keeps them short, ``python`` leaves CPython's."""
    import threading

    from grove_gitops.agent.gcpause import GcPauses
    from grove_gitops.metrics import Registry

    world = GcPauses(Registry())
    stop = threading.Event()
    thread = None
    if mode == "freeze":
        thread = threading.Thread(target=world.run, args=(stop,), name="world-gc", daemon=True)
        thread.start()
    else:
        world.install()
    try:
        yield world
    finally:
        stop.set()
        if thread is not None:
            thread.join(timeout=10)
        world.uninstall()


def run(gangs: int, pods: int, resync: float = 2.0, world_gc: str = "freeze",
        trace: Path | None = None) -> dict[str, Any]:
    with world_collector(world_gc) as world:
        return _run(gangs, pods, resync, world, trace)


def _run(gangs: int, pods: int, resync: float, world: Any, trace: Path | None) -> dict[str, Any]:
    from tests.day2.harness import bump_image, day2_env

    pcss = workload(gangs, pods)
    for pcs in pcss:
        pcs["metadata"]["namespace"] = "bench"
    from bench.rollout_trace import CommitClock, WorldTrace

    clock = CommitClock()
    world_trace = WorldTrace() if trace is not None else None
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as undo:
        clock.install()
        undo.callback(clock.uninstall)
        if trace is not None and world_trace is not None:
            trace.mkdir(parents=True, exist_ok=True)
            world_trace.install()
            undo.callback(world_trace.uninstall)
        source = write_source(Path(tmp) / "source", pcss)
        with day2_env(Path(tmp) / "world", source=source, namespace="bench", ready_delay=0.0,
                      termination_delay=None, sync_interval=0.5, agent=False, bystander=False) as env, \
                _agent_process(env.server, Path(tmp) / "kubeconfig", resync,
                               trace / "agent.json" if trace else None) as agent:
            env.wait_until(env.converged, timeout=300, what="the first deploy", interval=0.25)
            old = env.all_desired_pods()
            mark = env.observer.mark()
            kinds = [("delete", "pods"), ("patch", "pods"), ("patch", "podgangs/status"), ("patch", "podgangs"),
                     ("post", "events")]
            before = {v: env.agent_requests(*v) for v in kinds}
            start_metrics = agent.metrics()
            cpu_before = agent.cpu()
            world.report()
            world_before = world.registry.get("grove_gitops_agent_gc_pause_seconds_count") or 0.0
            world_slow_before = world.registry.get("grove_gitops_agent_gc_pause_seconds_bucket", le="0.1") or 0.0
            world.longest = 0.0
            started = time.monotonic()
            bump_image(env.source)  # every PodCliqueSet of the bench
            env.render()
            new = env.all_desired_pods()
            # Polled on the observer's copy of the pods, every 0.25 s: env.converged reads the
            # rendered tree and lists every pod each time, and that work of this process, on
            # the measured agent's API server, delayed the steps it measures (issue 35.1).
            # Then once on a fresh list, to be sure.
            env.wait_until(lambda: _rolled(env, new), timeout=900, what="every pod replaced", interval=0.25)
            env.wait_until(env.converged, timeout=60, what="every pod replaced", interval=0.25)
            env.wait_until(lambda: not set(old.values()) & {v.name for v in env.views()}, timeout=60,
                           what="old pods gone", interval=0.25)
            elapsed = time.monotonic() - started
            world.report()
            world_pauses = (world.registry.get("grove_gitops_agent_gc_pause_seconds_count") or 0.0) - world_before
            world_fast = ((world.registry.get("grove_gitops_agent_gc_pause_seconds_bucket", le="0.1") or 0.0)
                          - world_slow_before)
            end_metrics = agent.metrics()
            cpu = agent.cpu() - cpu_before
            writes = {v: env.agent_requests(*v) - n for v, n in before.items()}
            steps_seen = _ready_to_next(env, mark, old, new)
            gaps = sorted(s["bench_s"] for s in steps_seen)
            server = sorted(clock.at[s["to_rv"]] - clock.at[s["from_rv"]] for s in steps_seen
                            if s["from_rv"] in clock.at and s["to_rv"] in clock.at)

            def spent(name: str) -> float:
                return end_metrics.get(name, 0.0) - start_metrics.get(name, 0.0)

            steps = len(old)
            figures: dict[str, Any] = {
                "gangs": gangs,
                "pods": len(new),
                "rollout_s": round(elapsed, 2),
                "steps": steps,
                "passes": int(spent("grove_gitops_agent_pass_seconds_count")),
                "step_ms": round(1000 * spent("grove_gitops_agent_pass_seconds_sum") / steps, 2),
                "cpu_ms": round(1000 * cpu / steps, 2),
                "decide_ms": round(1000 * spent("grove_gitops_agent_decide_seconds_sum") / steps, 2),
                "pass_ms_max_since_start": round(1000 * end_metrics.get("grove_gitops_agent_pass_longest_seconds", 0.0), 1),
                "passes_over_50ms": int(spent("grove_gitops_agent_pass_seconds_count")
                                        - spent('grove_gitops_agent_pass_seconds_bucket{le="0.05"}')),
                "passes_over_1s": int(spent("grove_gitops_agent_pass_seconds_count")
                                      - spent('grove_gitops_agent_pass_seconds_bucket{le="1"}')),
                "writes_per_pod": round(sum(writes.values()) / steps, 3),
                "pod_writes_per_pod": round((writes["delete", "pods"] + writes["patch", "pods"]) / steps, 3),
                "status_writes": writes["patch", "podgangs/status"] + writes["patch", "podgangs"],
                "events": writes["post", "events"],
                "ready_to_next_s_median": round(statistics.median(gaps), 3) if gaps else 0.0,
                "ready_to_next_s_p95": _percentile(gaps, 0.95),
                "ready_to_next_s_p99": _percentile(gaps, 0.99),
                "ready_to_next_s_max": round(gaps[-1], 3) if gaps else 0.0,
                "ready_to_next_over_300ms": sum(1 for g in gaps if g > 0.3),
                "ready_to_next_over_1s": sum(1 for g in gaps if g > 1.0),
                "agent_gc_pause_ms_max": round(1000 * end_metrics.get("grove_gitops_agent_gc_pause_longest_seconds", -0.001), 1),
                "world_gc_pause_ms_max": round(1000 * world.longest, 1),
                "world_gc_pauses_over_100ms": int(world_pauses - world_fast),
                "ready_to_next_count": len(gaps),
                "server_ready_to_next_s_median": round(statistics.median(server), 3) if server else 0.0,
                "server_ready_to_next_s_p95": _percentile(server, 0.95),
                "server_ready_to_next_s_p99": _percentile(server, 0.99),
                "server_ready_to_next_s_max": round(server[-1], 3) if server else 0.0,
                "server_ready_to_next_over_300ms": sum(1 for g in server if g > 0.3),
                "server_ready_to_next_count": len(server),
            }
    if trace is not None and world_trace is not None:
        figures.update(_traced(trace, world_trace, steps_seen))
    return figures


def _traced(trace: Path, world_trace: Any, steps: list[dict[str, Any]]) -> dict[str, Any]:
    """The per-phase split of the slow steps (bench.rollout_trace), written to ``trace``."""
    from bench.rollout_trace import phases

    agent = json.loads((trace / "agent.json").read_text())
    world = [list(r) for r in world_trace.records]
    split = phases(world, agent, steps)
    (trace / "steps.json").write_text(json.dumps(split, indent=1))
    server = sorted(r["server_s"] for r in split["steps"])
    return {"trace_" + k: v for k, v in split["summary"].items()} | {"trace_server_s_max": server[-1] if server else 0.0}


def _rolled(env: Any, desired: dict[Any, str]) -> bool:
    """``env.converged`` as the observer last saw the pods: every slot holds exactly its
    rendered pod, available and ungated, and no other pod is left."""
    views = env.observer.now().pods
    if sorted(v.name for v in views) != sorted(desired.values()):
        return False
    return all(v.available and not v.gated and desired.get(v.slot) == v.name for v in views)


class AgentProcess:
    """The running agent: its /metrics and its CPU time."""

    def __init__(self, proc: subprocess.Popen[str], port: int) -> None:
        self.proc = proc
        self.port = port

    def metrics(self) -> dict[str, float]:
        """Samples of its /metrics, ``name{labels}`` -> value."""
        from tests.day2.harness import metric_samples

        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=10) as response:
            return metric_samples(response.read().decode())

    def cpu(self) -> float:
        """CPU seconds (user + system) so far, from /proc (a BENCH_AGENT_PREFIX wrapper's own, if set)."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def _agent_process(server: Any, kubeconfig: Path, resync: float, trace: Path | None = None) -> Iterator[AgentProcess]:
    """``grove-gitops agent`` in its own process against ``server`` (``None``: ``kubeconfig`` is
    written already, e.g. a real control plane's, see bench.server_bench); with ``trace``, under
    bench.rollout_trace, which writes the agent's moments there when it stops."""
    if server is not None:
        kubeconfig.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "fake",
            "clusters": [{"name": "fake", "cluster": {"server": server.url}}],
            "users": [{"name": "u", "user": {"token": "t"}}],
            "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "u"}}],
        }))
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    env = {k: v for k, v in os.environ.items() if k != "POD_NAME"}
    log = kubeconfig.with_name("agent.log").open("w+")  # a file, never a pipe that fills and blocks the agent
    # BENCH_AGENT_PREFIX wraps the agent, e.g. "py-spy record -o agent.svg --" to profile it.
    proc = subprocess.Popen(
        [*shlex.split(os.environ.get("BENCH_AGENT_PREFIX", "")), sys.executable, "-m",
         *(["bench.rollout_trace", "agent", str(trace), "--"] if trace else ["grove_gitops.cli", "agent"]),
         "--kubeconfig", str(kubeconfig), "--namespace", "bench", "--identity", "bench", "--lease-namespace", "bench", "--metrics-address", f"127.0.0.1:{port}",
         "--resync", str(resync)],
        env=env, stdout=subprocess.DEVNULL, stderr=log, text=True,
    )
    agent = AgentProcess(proc, port)
    keep = os.environ.get("BENCH_AGENT_LOG")  # copy the agent's log here at the end
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                agent.metrics()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    raise RuntimeError(f"the agent did not start: {log.read()[-2000:]}") from None
                time.sleep(0.1)
        yield agent
    finally:
        proc.send_signal(signal.SIGINT)  # the agent stops on it as on SIGTERM; a profiler writes its file
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if keep:
            log.seek(0)
            Path(keep).write_text(log.read())
        log.close()


def _ready_to_next(env: Any, mark: int, old: dict[Any, str], new: dict[Any, str]) -> list[dict[str, Any]]:
    """Per PodCliqueSet: from a new pod turning Ready to the next old pod of that PodCliqueSet
    deleted, or from the moment that old pod's replacement was created if that is later.

    The agent retires an old pod only once its slot's new pod exists (issue 22), so when the
    GitOps applier creates the replacement after the previous one is Ready, the wait for the
    applier is the applier's time, not the agent's; this measures the agent's own reaction.
    """
    new_names = set(new.values())
    old_names = set(old.values())
    replacement = {old[slot]: new[slot] for slot in old if slot in new}
    pcs_of = {name: slot[1].rsplit("-", 3)[0] for side in (old, new) for slot, name in side.items()}
    last_ready: dict[str, tuple[float, int]] = {}
    created: dict[str, tuple[float, int]] = {}
    ready_seen: set[str] = set()
    steps: list[dict[str, Any]] = []
    for moment in env.observer.since(mark):
        if moment.event == "ADDED" and moment.pod in new_names:
            created.setdefault(moment.pod, (moment.time, moment.resource_version))
        if moment.event == "DELETED" and moment.pod in old_names:
            pcs = pcs_of[moment.pod]
            if pcs in last_ready:
                began = max(last_ready.pop(pcs), created.get(replacement.get(moment.pod, ""), (0.0, 0)))
                steps.append({"bench_s": moment.time - began[0], "from_rv": began[1], "to_rv": moment.resource_version,
                              "pcs": pcs, "old": moment.pod})
        elif (
            moment.pod in new_names
            and moment.pod not in ready_seen
            and any(p.name == moment.pod and p.available for p in moment.pods)
        ):
            ready_seen.add(moment.pod)
            last_ready[pcs_of[moment.pod]] = (moment.time, moment.resource_version)
    return steps


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gangs", type=int, default=50)
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--resync", type=float, default=2.0, help="the agent's --resync")
    parser.add_argument("--world-gc", choices=("freeze", "python"), default="freeze",
                        help="this process's collector: kept short as the agent's (default) or CPython's defaults")
    parser.add_argument("--trace", type=Path, default=None, metavar="DIR",
                        help="record every step's phases (bench.rollout_trace); the slow steps go to DIR/steps.json")
    args = parser.parse_args(argv)
    print(json.dumps(run(args.gangs, args.pods, args.resync, args.world_gc, args.trace), sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
