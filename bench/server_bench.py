"""The agent's release and rollout on the project's fake API server and on a real kube-apiserver,
measured the same way on both (issue 32: "the agent's release and rollout figures on the real
apiserver beside those on the fake").

    python -m bench.server_bench --server fake|real [--gangs 6] [--pods 48]

One world per run, one JSON line on stdout. G single-gang PodCliqueSets of
``bench.lifter_bench.workload`` (all on the default-scheduler profile without resource requests,
so the real kube-scheduler binds every pod on the simulated nodes) are rendered; the GitOps
applier of tests/day2 syncs the tree (Argo CD mode, every 0.5 s) while ``grove-gitops agent`` runs
as its own process; then every image is bumped and the tree re-rendered. The clock and every
figure are taken from outside, through the API, identically on both servers:

- ``release_s``: from the first sync until no pod is gated any more; ``deploy_s``: until every
  pod is Running and Ready;
- ``rollout_s``: from the re-render until every new pod is Ready and every old one gone;
  ``step_s``: that over the steps of one PodCliqueSet (the PodCliqueSets roll in parallel);
- ``agent_cpu_ms_per_step`` and ``agent_pass_ms_per_step``: the agent's CPU (from /proc) and
  its passes' wall time (from its /metrics) during the rollout, over the pods replaced.

The worlds differ in what must differ: the fake world is tests/fakeserver with the day-2
kubelet simulator (binds and runs a released pod at once); the real world is
scripts/control-plane.sh (etcd, kube-apiserver, controller manager, kube-scheduler) with the
node simulator, the agent under the admin kubeconfig (its RBAC is the tier's business). The real
plane's start and CRD install are not timed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from bench.lifter_bench import workload, write_source
from bench.rollout_bench import AgentProcess, _agent_process

NAMESPACE = "bench"
POLL = 0.25


def _plain(pcss: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every PodCliqueSet on the default scheduler, without requests: the real scheduler places
    them on any simulated node, as the fake's kubelet does."""
    for pcs in pcss:
        pcs["metadata"]["namespace"] = NAMESPACE
        pcs["metadata"].get("labels", {}).pop("kai.scheduler/queue", None)
        for clique in pcs["spec"]["template"]["cliques"]:
            spec = clique["spec"]["podSpec"]
            spec.pop("schedulerName", None)
            for container in spec["containers"]:
                container.pop("resources", None)
    return pcss


@contextlib.contextmanager
def _fake_world(tmp: Path) -> Iterator[tuple[Any, Callable[[Path], contextlib.AbstractContextManager[AgentProcess]]]]:
    from tests.day2.kubelet import Kubelet, KubeletConfig
    from tests.fakeserver import FakeApiServer
    from tests.fakeserver.server import DEFAULT_NAMESPACES

    with FakeApiServer(namespaces=(*DEFAULT_NAMESPACES, NAMESPACE)) as server:
        kubelet = Kubelet(server.api_client(), KubeletConfig(namespace=NAMESPACE, ready_delay=0.0, termination_delay=None)).start()
        try:
            yield server.api_client(), lambda kubeconfig: _agent_process(server, kubeconfig, 2.0)
        finally:
            kubelet.stop()


@contextlib.contextmanager
def _real_world(tmp: Path) -> Iterator[tuple[Any, Callable[[Path], contextlib.AbstractContextManager[AgentProcess]]]]:
    import functools

    from tests.controlplane.plane import all_crds, apply_all, crd_established, start, stop, wait_until

    directory = tmp / "plane"
    directory.mkdir()
    try:
        plane = start(directory)
        kube = plane.kube()
        apply_all(kube, all_crds())
        for crd in all_crds():
            wait_until("CRDs established", functools.partial(crd_established, kube, crd["metadata"]["name"]))
        apply_all(kube, [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}])

        def agent(kubeconfig: Path) -> contextlib.AbstractContextManager[AgentProcess]:
            shutil.copy(plane.kubeconfig, kubeconfig)  # the admin's (its RBAC is the tier's business)
            return _agent_process(None, kubeconfig, 2.0)

        yield plane.api_client(), agent
    finally:
        stop(directory)


def _pods(rest: Any) -> list[dict[str, Any]]:
    return list(rest.request("GET", f"/api/v1/namespaces/{NAMESPACE}/pods")["items"])


def _ready(pod: dict[str, Any]) -> bool:
    conditions = {c.get("type"): c.get("status") for c in (pod.get("status") or {}).get("conditions") or []}
    return conditions.get("Ready") == "True" and not pod["metadata"].get("deletionTimestamp")


def _wait(what: str, predicate: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(POLL)


def measure(server: str, gangs: int, pods: int) -> dict[str, Any]:
    from tests.day2.applier import Applier, read_tree
    from tests.day2.harness import bump_image, render
    from tests.day2.rest import Rest

    world = {"fake": _fake_world, "real": _real_world}[server]
    tmp = Path(tempfile.mkdtemp(prefix=f"grove-bench-{server}-"))
    try:
        source = write_source(tmp / "source", _plain(workload(gangs, pods)))
        out = tmp / "out"
        render(source, out)

        def desired() -> set[str]:
            return {o["metadata"]["name"] for o in read_tree(out) if o["kind"] == "Pod"}

        with world(tmp) as (api_client, agent_in):
            rest = Rest(api_client)
            old = desired()
            with agent_in(tmp / "kubeconfig") as agent:
                applier = Applier(api_client, out, mode="argocd", interval=0.5)
                t0 = time.monotonic()
                applier.start()
                try:
                    _wait("every pod released", lambda: (lambda ps: {p["metadata"]["name"] for p in ps} >= old
                          and not any(p["spec"].get("schedulingGates") for p in ps))(_pods(rest)), 600)
                    release_s = time.monotonic() - t0
                    _wait("every pod Ready", lambda: sum(_ready(p) for p in _pods(rest)) >= len(old), 600)
                    deploy_s = time.monotonic() - t0
                    metrics0, cpu0 = agent.metrics(), agent.cpu()
                    with applier.lock:
                        bump_image(source)
                        render(source, out)
                    t1 = time.monotonic()
                    new = desired()
                    assert not new & old, "the bump renamed every pod"

                    def rolled() -> bool:
                        live = _pods(rest)
                        names = {p["metadata"]["name"] for p in live}
                        return not names & old and sum(_ready(p) for p in live if p["metadata"]["name"] in new) == len(new)

                    _wait("every pod replaced", rolled, 1800)
                    rollout_s = time.monotonic() - t1
                    metrics1, cpu1 = agent.metrics(), agent.cpu()
                finally:
                    applier.stop()
        steps_per_pcs = max(1, round(len(old) / gangs))
        spent = metrics1.get("grove_gitops_agent_pass_seconds_sum", 0.0) - metrics0.get("grove_gitops_agent_pass_seconds_sum", 0.0)
        return {
            "server": server,
            "gangs": gangs,
            "pods": len(old),
            "release_s": round(release_s, 2),
            "deploy_s": round(deploy_s, 2),
            "rollout_s": round(rollout_s, 2),
            "step_s": round(rollout_s / steps_per_pcs, 3),
            "agent_cpu_ms_per_step": round(1000 * (cpu1 - cpu0) / len(old), 2),
            "agent_pass_ms_per_step": round(1000 * spent / len(old), 2),
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.server_bench", description=__doc__.splitlines()[0])
    parser.add_argument("--server", choices=("fake", "real"), required=True)
    parser.add_argument("--gangs", type=int, default=6)
    parser.add_argument("--pods", type=int, default=48)
    args = parser.parse_args(argv)
    if not (1 <= args.gangs <= 200 and 1 <= args.pods <= 5000):
        parser.error("--gangs must be 1..200 and --pods 1..5000")
    print(json.dumps(measure(args.server, args.gangs, args.pods), sort_keys=True), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
