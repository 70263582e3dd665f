"""Gate-lifter benchmark: release G gangs of P gated pods in total on the fake API server.

    python -m bench.lifter_bench --gangs 50 --pods 1000

One measurement per process (a fresh ``FakeApiServer``), one JSON line on stdout.

The workload is rendered, not synthesised: G single-gang PodCliqueSets of ``bench.generate``
(its "frontend + engine" shape, so no scaled PodGangs, whose release would wait for a
scheduler) with the scheduler rotation of the generator (KAI, Volcano, default), and engine
replicas nudged by one at a time until the pods add up to exactly P. Everything the render
produced except the PodGangs is POSTed (in sync-wave order, as Argo CD's first sync would)
while a ``Agent`` runs; once the lifter's cache holds every pod, the G PodGangs are
POSTed back to back and the clock runs until every pod's gate is gone. Reported: the time
from the first PodGang's creation (the strict figure) and from the last one's, the PATCH
requests to pods per released pod, and the CPU time of this process (server, lifter and
client share it) over that window. For scale, the same pod patches sent one by one by a bare
client to the same server (before the lifter starts) give the API floor.

``--agent process`` (issue 35.3) runs the agent as it runs in a cluster instead: its own
process (``grove-gitops agent``, every loop on, as ``bench.rollout_bench`` starts it), every
object in namespace ``bench``, so the agent does not share the server's interpreter; the
lifter's cache is known full from the agent's ``grove_gitops_agent_cached_pods`` gauge.
Reported besides: ``release_after_last_over_floor`` (last PodGang -> all released over the
floor of the same number of bare PATCHes) and ``agent_peak_rss_mib`` (the agent process's
``VmHWM``). ``--pods 10000 --gangs 500`` is the large point, 20 pods per gang as at 1,000.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from bench.generate import BINDINGS, OPERATOR_CONFIG, RENDER_CONFIG, podcliqueset

WAVE = "argocd.argoproj.io/sync-wave"
GATE = "grove.io/podgang-pending-creation"


def _pods_of(pcs: dict[str, Any]) -> int:
    return sum(int(c["spec"]["replicas"]) for c in pcs["spec"]["template"]["cliques"])


def workload(gangs: int, pods: int) -> list[dict[str, Any]]:
    """``gangs`` single-gang PodCliqueSets with exactly ``pods`` pods in total."""
    chosen = [podcliqueset(i) for i in range(2, 3 * gangs, 3)]  # index % 3 == 2: frontend + engine, no groups
    assert len(chosen) == gangs and all(len(p["spec"]["template"]["cliques"]) == 2 for p in chosen)
    if not 2 * gangs < pods <= 66 * gangs:
        raise ValueError(f"{pods} pods cannot be spread over {gangs} gangs (3..66 pods each)")
    delta, k = pods - sum(map(_pods_of, chosen)), 0
    while delta:
        engine = chosen[k % gangs]["spec"]["template"]["cliques"][1]["spec"]
        step = 1 if delta > 0 else -1
        if 1 <= engine["replicas"] + step <= 64:
            engine["replicas"] += step
            delta -= step
        k += 1
    return chosen


def write_source(root: Path, pcss: list[dict[str, Any]]) -> Path:
    def dump(data: Any) -> str:
        return yaml.dump(data, Dumper=yaml.CSafeDumper, sort_keys=False)

    (root / "config").mkdir(parents=True)
    (root / "config" / "operator.yaml").write_text(dump(OPERATOR_CONFIG))
    (root / "config" / "render.yaml").write_text(dump(RENDER_CONFIG))
    (root / "config" / "topology.yaml").write_text(yaml.dump_all(BINDINGS, Dumper=yaml.CSafeDumper, sort_keys=False))
    for pcs in pcss:
        (root / f"{pcs['metadata']['name']}.yaml").write_text(dump(pcs))
    return root


def rendered_objects(source: Path) -> list[dict[str, Any]]:
    """The objects as Argo CD reads them from the rendered files, in wave then file order."""
    from grove_gitops.output.layout import build_tree
    from grove_gitops.render import render_source

    tree = build_tree(render_source(source))
    objs = [
        yaml.load(data, Loader=yaml.CSafeLoader)
        for rel, data in sorted(tree.files.items())
        if rel.endswith(".yaml") and not rel.endswith("kustomization.yaml")
    ]
    return sorted(objs, key=lambda o: int(o["metadata"].get("annotations", {}).get(WAVE, "0")))


def _path(kube: Any, obj: dict[str, Any]) -> str:
    api = obj["apiVersion"]
    plural = kube.plural(api, obj["kind"])
    if not plural:
        raise RuntimeError(f"{api} {obj['kind']} is not served by the fake API server")
    base = f"/apis/{api}" if "/" in api else f"/api/{api}"
    ns = obj["metadata"].get("namespace")
    return f"{base}/namespaces/{ns}/{plural}" if ns else f"{base}/{plural}"


def api_floor(server: Any, kube: Any, pods: list[dict[str, Any]]) -> float:
    """Seconds for one bare client to send the same pod JSON patches one after the other.

    Copies of the pods (``-f`` suffix, ``managed-by: bench-floor`` so no lifter would see them)
    are created untimed, then each gets the lifter's patch (``test`` + ``remove`` of the gate),
    timed, then they are deleted directly from the store. The lifter has to beat the API
    server's own cost per request; this is that cost on the same server in the same process.
    """
    copies = []
    for pod in pods:
        copy = json.loads(json.dumps(pod))
        copy["metadata"]["name"] += "-f"
        copy["metadata"]["labels"]["app.kubernetes.io/managed-by"] = "bench-floor"
        copies.append(copy)
    for copy in copies:
        kube.raw("POST", _path(kube, copy), copy)
    t0 = time.perf_counter()
    for copy in copies:
        gates = [g.get("name") for g in copy["spec"]["schedulingGates"]]
        index = gates.index(GATE)
        ops = [
            {"op": "test", "path": f"/spec/schedulingGates/{index}/name", "value": GATE},
            {"op": "remove", "path": f"/spec/schedulingGates/{index}"},
        ]
        kube.patch_pod_json(copy["metadata"]["namespace"], copy["metadata"]["name"], ops)
    seconds = time.perf_counter() - t0
    for copy in copies:
        server.delete_object("pods", copy["metadata"]["namespace"], copy["metadata"]["name"])
    server.clear_requests()
    return seconds


class _InThread:
    """The agent in a thread of this process (the default: server, agent and client share it)."""

    def __init__(self, server: Any) -> None:
        from grove_gitops.agent.kube import Kube
        from grove_gitops.agent.loop import Agent, AgentConfig
        from grove_gitops.metrics import Registry

        self.agent = Agent(Kube(server.api_client()), AgentConfig(), Registry())
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self.agent.run, args=(self._stop,), name="lifter", daemon=True)

    def __enter__(self) -> _InThread:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=15)

    def cached_pods(self) -> int:
        return len(self.agent.pods) if self.agent.ready() else -1

    def patch_counter(self) -> int:
        return self.agent.patches

    def peak_rss_mib(self) -> float | None:
        return None  # shared with the server: not the agent's own


class _InProcess:
    """``grove-gitops agent`` in its own process (``bench.rollout_bench``'s way of starting it)."""

    def __init__(self, server: Any, tmp: Path) -> None:
        from bench.rollout_bench import _agent_process

        self._context = _agent_process(server, tmp / "kubeconfig", 2.0)
        self.proc: Any = None
        self.expected = 0
        self._passes: tuple[float, float] | None = None

    def __enter__(self) -> _InProcess:
        self.proc = self._context.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._context.__exit__(None, None, None)

    def cached_pods(self) -> int:
        metrics = self.proc.metrics()
        if "grove_gitops_agent_cached_pods" in metrics:
            return int(metrics["grove_gitops_agent_cached_pods"])
        # An agent from before the gauge (a before/after pair): its cache is taken as full once
        # its passes stopped for a second (every pod's ADDED event ends in a pass).
        passes = metrics.get("grove_gitops_agent_pass_seconds_count", 0.0)
        now = time.monotonic()
        if self._passes is None or passes != self._passes[0]:
            self._passes = (passes, now)
            return -1
        return self.expected if passes and now - self._passes[1] >= 1.0 else -1

    def patch_counter(self) -> int:
        return -1  # counted on the server (pod_patches)

    def peak_rss_mib(self) -> float | None:
        for line in Path(f"/proc/{self.proc.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
        return None


def measure(gangs: int, pods: int, timeout: float, agent: str = "thread") -> dict[str, Any]:
    from grove_gitops.agent.kube import Kube
    from tests.fakeserver import FakeApiServer
    from tests.fakeserver.server import DEFAULT_NAMESPACES

    pcss = workload(gangs, pods)
    if agent == "process":
        for pcs in pcss:
            pcs["metadata"]["namespace"] = "bench"  # the agent process watches this namespace
    tmp = Path(tempfile.mkdtemp(prefix="grove-bench-lifter-"))
    try:
        objs = rendered_objects(write_source(tmp / "src", pcss))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    podgangs = [o for o in objs if o["kind"] == "PodGang"]
    rest = [o for o in objs if o["kind"] != "PodGang"]
    pod_names = {(o["metadata"]["namespace"], o["metadata"]["name"]) for o in objs if o["kind"] == "Pod"}
    if len(podgangs) != gangs or len(pod_names) != pods:
        raise RuntimeError(f"rendered {len(podgangs)} PodGangs and {len(pod_names)} pods, wanted {gangs} and {pods}")
    namespaces = sorted({o["metadata"]["namespace"] for o in objs if o["metadata"].get("namespace")})

    with FakeApiServer(namespaces=(*DEFAULT_NAMESPACES, *namespaces)) as server, \
            tempfile.TemporaryDirectory(prefix="grove-bench-lifter-agent-") as agent_tmp:
        kube = Kube(server.api_client())
        floor_s = api_floor(server, kube, [o for o in objs if o["kind"] == "Pod"])
        lifter: _InThread | _InProcess = _InThread(server) if agent == "thread" else _InProcess(server, Path(agent_tmp))
        if isinstance(lifter, _InProcess):
            lifter.expected = pods
        with lifter:
            t_apply = time.perf_counter()
            for obj in rest:
                kube.raw("POST", _path(kube, obj), obj)
            apply_s = time.perf_counter() - t_apply
            if not server.wait_for(lambda: lifter.cached_pods() == pods, timeout=timeout, interval=0.1):
                raise RuntimeError(f"the lifter's cache never held all {pods} pods ({lifter.cached_pods()})")
            early = server.requests_count(verb="patch", resource="pods")
            if early:
                raise RuntimeError(f"{early} pods were patched before any PodGang existed")
            server.clear_requests()

            cpu0, t0 = time.process_time(), time.perf_counter()
            for gang in podgangs:
                kube.raw("POST", _path(kube, gang), gang)
            t_last = time.perf_counter()
            done = server.wait_for(
                lambda: server.requests_count(verb="patch", resource="pods", status=200) >= pods,
                timeout=timeout,
                interval=0.005,
            )
            t_end, cpu_end = time.perf_counter(), time.process_time()
            gated = [
                (p["metadata"]["namespace"], p["metadata"]["name"])
                for p in server.store.list_objects("pods")
                if any(g.get("name") == GATE for g in (p.get("spec") or {}).get("schedulingGates") or [])
            ]
            if not done or gated:
                raise RuntimeError(f"{len(gated)} of {pods} pods still gated after {timeout}s")
            records = server.requests
            rss = lifter.peak_rss_mib()
        patches = [r for r in records if r.verb == "patch" and r.resource == "pods"]
        released = len({(r.namespace, r.name) for r in patches if r.status < 300} & pod_names)
        statuses = Counter(str(r.status) for r in patches)
        if server.internal_errors:
            raise RuntimeError(f"fake API server bugs: {server.internal_errors[:1]}")

    backends = Counter(str(g["metadata"]["labels"].get("grove.io/scheduler-name", "?")) for g in podgangs)
    return {
        "gangs": gangs,
        "pods": pods,
        "objects_applied_first": len(rest),
        "schedulers": dict(backends),
        "apply_s": apply_s,
        "post_podgangs_s": t_last - t0,
        "release_s": t_end - t0,
        "release_after_last_s": t_end - t_last,
        "cpu_s": cpu_end - cpu0,
        "api_floor_s": floor_s,
        "release_over_api_floor": (t_end - t0) / floor_s,
        "release_after_last_over_floor": (t_end - t_last) / floor_s,
        "agent": agent,
        "agent_peak_rss_mib": rss,
        "pod_patches": len(patches),
        "pod_patch_statuses": dict(statuses),
        "released_pods": released,
        "patches_per_released_pod": len(patches) / released if released else float("inf"),
        "lifter_patch_counter": lifter.patch_counter(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.lifter_bench", description=__doc__.splitlines()[0])
    parser.add_argument("--gangs", type=int, default=50)
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--timeout", type=float, default=120.0, help="give up on the release after this many seconds")
    parser.add_argument("--agent", choices=("thread", "process"), default="thread",
                        help="the agent in a thread of this process, or in its own (issue 35.3)")
    parser.add_argument("--world-gc", choices=("freeze", "python"), default="python",
                        help="this process's collector (bench.rollout_bench): CPython's defaults (default) or kept short")
    args = parser.parse_args(argv)
    from bench.rollout_bench import world_collector

    with world_collector(args.world_gc) as world:
        result = measure(args.gangs, args.pods, args.timeout, args.agent)
        world.report()
    result["world_gc"] = args.world_gc
    result["world_gc_pause_ms_max"] = round(1000 * world.longest, 1)
    result["mode"] = "lifter"
    print(json.dumps(result, sort_keys=True), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
