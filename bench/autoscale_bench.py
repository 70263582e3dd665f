"""Autoscaling benchmark: one ``/scale`` write takes a scaling group from 2 to 50 replicas (issue 23).

    python -m bench.autoscale_bench --low 2 --high 50 --repeat 3

The world of the day-2 scenario tests (fake API server over HTTP, the GitOps applier re-syncing
every second, a kubelet that makes a released pod Ready at once, an observer of every pod
event) with one PodCliqueSet whose scaling group ``model`` (leader 1 + workers 3: 4 pods per
replica, KAI gang backend so every gang also has a PodGroup) is autoscaled with floor ``low``
and maximum ``high``; Git holds the floor. The agent runs as it runs in a cluster, in its own
process (``grove-gitops agent --kubeconfig ...``), so its CPU time is its own. Per run, on a
fresh world:

1. one ``/scale`` write (the official client's ``patch_namespaced_custom_object_scale``) sets
   the count to ``high``; ``release_s`` is the time from that write to the last new gang
   released (the last gate removal, as the observer saw it, of the new gangs' pods); every
   new pod is Ready and the PodGangs are exactly the render's at ``high`` before it counts;
2. the agent's writes in that scale-out, counted on the API server by verb and resource
   (every request the server logged minus the simulators' own, so the agent's): pod creates
   and gate patches per new pod, and all writes (PodGangs, PodGroups, scale-target and
   workload status, Events) per new pod, counted until the world is quiet (1 s after the last
   new gang is released);
3. ``cpu_ms_per_gang``: the agent process's CPU time (user + system, /proc/<pid>/stat) over
   the same window, divided by the new gangs (``high - low``);
4. one write back to ``low``: ``scale_in_s`` from it to the last new pod deleted (the kubelet
   removes a deleted pod at once);
5. the API floor of the scale-out (issue 35), side by side in the same run: the same number of
   bare writes of the same kinds (pod creates, gate patches, PodGang and PodGroup creates,
   PodGang / scale-target / workload status patches, Events) sent one after the other by one
   client (the agent's, ``grove_gitops.agent.kube.Kube``) to the same server, on copies of the
   scale-out's own objects in a namespace no agent watches; ``release_over_floor`` is
   ``release_s`` over it, and ``status_writes_per_gang`` counts every status write of the
   scale-out per new gang.

One JSON line on stdout: every run, and the median and worst of each figure.

``--shape`` (issue 35.2: outside harnesses count on shapes this one did not run): ``default``
is the workload above; the others change one thing each (see :data:`SHAPES`): ``small`` (1 ->
3, where the per-pass writes weigh most), ``two-groups`` (two scaling groups of one
PodCliqueSet, both scaled in the same second), ``pcs-replicas`` (a PodCliqueSet of 2 replicas,
the group of each replica scaled: PodCliqueSet ``replicas`` themselves stay Git-owned, see
docs/autoscaling.md), ``volcano`` (the same 2 -> 50 with Volcano as the gang backend) and
``two-workloads`` (two PodCliqueSets scaled at once), ``slow-ready`` (pods Ready 2 s after
their binding, so the scale-out outlasts the 5 s a target's progress is held back) and
``hpa-steps`` (2 -> 4 -> 8 -> 16 -> 32 -> 50, one ``/scale`` write a second, as an HPA steps
up). A shape other than ``default`` adds to
each run the scaled targets and workloads and ``status_over_bound``: the status writes over
"one per new gang + one per scaled target + one per workload".

``--world-gc`` (issue 35): this process (server and simulators) keeps its collector pauses short
as the agent does (``freeze``, the default) or runs CPython's defaults (``python``); either
way ``world_gc_pause_ms_max`` reports its longest pause in the scale-out (see
``bench.rollout_bench``: full collections of this process paused every request of the agent).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from bench.rollout_bench import _agent_process, world_collector

NS = "bench"
#: The floor's namespace: the agent (``--namespace bench``) never sees its objects.
FLOOR_NS = "bench-floor"
PCS = "autoscaled"
GROUP = "model"
TARGET = f"{PCS}-0-{GROUP}"
PODS_PER_REPLICA = 4
GATE = "grove.io/podgang-pending-creation"
WRITE_VERBS = ("create", "update", "patch", "delete")
#: Seconds the agent gets after the last release for its trailing status writes.
QUIET = 1.0


def source(root: Path, low: int, high: int, namespace: str = NS, name: str = PCS) -> Path:
    """A PodCliqueSet with one autoscaled scaling group (leader 1 + workers 3), KAI as the
    gang backend, Git at the floor ``low``. The day-2 status-writes test writes the same
    source into its own namespace, so the shape it counts is the one this bench measures."""

    def clique(name: str, replicas: int) -> dict[str, Any]:
        return {"name": name, "spec": {
            "roleName": name, "replicas": replicas, "minAvailable": replicas,
            "podSpec": {"containers": [{"name": "main", "image": "busybox:1.36",
                                        "resources": {"requests": {"cpu": "100m"}}}]},
        }}

    pcs = {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueSet",
        "metadata": {"name": name, "namespace": namespace, "labels": {"kai.scheduler/queue": "default"}},
        "spec": {"replicas": 1, "template": {
            "cliques": [clique("leader", 1), clique("worker", 3)],
            "podCliqueScalingGroups": [{"name": GROUP, "cliqueNames": ["leader", "worker"], "replicas": low,
                                        "minAvailable": 1, "scaleConfig": {"minReplicas": low, "maxReplicas": high}}],
        }},
    }
    opcfg = {"apiVersion": "operator.config.grove.io/v1alpha1", "kind": "OperatorConfiguration",
             "scheduler": {"defaultProfileName": "kai-scheduler", "profiles": [{"name": "kai-scheduler"}]}}
    render = {"apiVersion": "gitops.grove.io/v1alpha1", "kind": "RenderConfiguration", "kubernetesVersion": "1.35",
              "gitops": "argocd"}
    root.mkdir(parents=True)
    (root / "workload.yaml").write_text(yaml.safe_dump_all([pcs, opcfg, render], sort_keys=False))
    return root


@dataclasses.dataclass(frozen=True)
class Workload:
    """One PodCliqueSet of a shape: ``replicas`` PodCliqueSet replicas, each with the scaling
    groups ``groups`` (each leader 1 + workers 3, autoscaled from the shape's low to high)."""

    name: str
    groups: tuple[str, ...] = (GROUP,)
    replicas: int = 1
    #: Autoscaled standalone cliques (one pod a replica, ``autoScalingConfig``): their pods
    #: join the replica's base PodGang, no new gang.
    cliques: tuple[str, ...] = ()

    def targets(self) -> list[tuple[int, str]]:
        return [(i, u) for i in range(self.replicas) for u in (*self.cliques, *self.groups)]


@dataclasses.dataclass(frozen=True)
class Shape:
    """What one run scales: every scale target of every workload goes from ``low`` to ``high``
    (one ``/scale`` write each, back to back); ``backend``: the gang scheduler's profile."""

    low: int
    high: int
    workloads: tuple[Workload, ...] = (Workload(PCS),)
    backend: str = "kai-scheduler"
    #: Seconds from a pod's binding to its Ready (the kubelet's; 0: at once).
    ready_delay: float = 0.0
    #: Counts written before ``high``, :data:`STEP_GAP` apart (as an HPA steps up).
    steps: tuple[int, ...] = ()

    def targets(self) -> list[tuple[str, int, str]]:
        return [(w.name, i, g) for w in self.workloads for i, g in w.targets()]


#: The shapes of ``--shape``; every one creates 48 new gangs but ``small`` (2).
SHAPES: dict[str, Shape] = {
    "default": Shape(2, 50),
    "small": Shape(1, 3),
    "two-groups": Shape(2, 26, (Workload(PCS, (GROUP, "draft")),)),
    "pcs-replicas": Shape(2, 26, (Workload(PCS, replicas=2),)),
    "volcano": Shape(2, 50, backend="volcano"),
    "two-workloads": Shape(2, 26, (Workload(PCS), Workload(f"{PCS}-b"))),
    "slow-ready": Shape(2, 50, ready_delay=2.0),
    "hpa-steps": Shape(2, 50, steps=(4, 8, 16, 32)),
    "clique": Shape(2, 50, (Workload(PCS, groups=(), cliques=("router",)),)),
}
#: Seconds between the counts of a shape's ``steps``.
STEP_GAP = 1.0
#: The backend gang object's resource in the fake server, by scheduler profile.
GANG_OBJECTS = {"kai-scheduler": "podgroups.scheduling.run.ai", "volcano": "podgroups.scheduling.volcano.sh"}


def shape_source(root: Path, shape: Shape, namespace: str = NS) -> Path:
    """The source of ``shape``: :func:`source`'s PodCliqueSet per workload, with its groups
    (each its own leader and workers) and replicas, and the shape's gang backend."""

    def clique(name: str, replicas: int) -> dict[str, Any]:
        return {"name": name, "spec": {
            "roleName": name, "replicas": replicas, "minAvailable": replicas,
            "podSpec": {"containers": [{"name": "main", "image": "busybox:1.36",
                                        "resources": {"requests": {"cpu": "100m"}}}]},
        }}

    docs: list[dict[str, Any]] = []
    for w in shape.workloads:
        cliques: list[dict[str, Any]] = []
        for c in w.cliques:
            cliques.append(clique(c, shape.low))
            cliques[-1]["spec"]["autoScalingConfig"] = {"minReplicas": shape.low, "maxReplicas": shape.high}
        groups: list[dict[str, Any]] = []
        for g in w.groups:
            names = ["leader", "worker"] if g == GROUP else [f"{g}-leader", f"{g}-worker"]
            cliques += [clique(names[0], 1), clique(names[1], 3)]
            groups.append({"name": g, "cliqueNames": names, "replicas": shape.low, "minAvailable": 1,
                           "scaleConfig": {"minReplicas": shape.low, "maxReplicas": shape.high}})
        labels = {"kai.scheduler/queue": "default"} if shape.backend == "kai-scheduler" else {}
        docs.append({"apiVersion": "grove.io/v1alpha1", "kind": "PodCliqueSet",
                     "metadata": {"name": w.name, "namespace": namespace, "labels": labels},
                     "spec": {"replicas": w.replicas, "template": {"cliques": cliques,
                                                                   "podCliqueScalingGroups": groups}}})
    docs.append({"apiVersion": "operator.config.grove.io/v1alpha1", "kind": "OperatorConfiguration",
                 "scheduler": {"defaultProfileName": shape.backend, "profiles": [{"name": shape.backend}]}})
    if shape.backend == "volcano":
        docs.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "default"},
                     "spec": {"weight": 1}})
    docs.append({"apiVersion": "gitops.grove.io/v1alpha1", "kind": "RenderConfiguration",
                 "kubernetesVersion": "1.35", "gitops": "argocd"})
    root.mkdir(parents=True)
    (root / "workload.yaml").write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return root


Writes = Counter[tuple[str, str]]


def _writes(env: Any) -> tuple[Writes, Writes]:
    """Writes by (verb, resource) so far: every one the server logged, and the simulators' own."""
    served: Writes = Counter((r.verb, r.resource) for r in env.server.requests if r.verb in WRITE_VERBS)
    ours: Writes = Counter()
    for rest in (env.rest, env.applier.rest, env.kubelet.rest, env.observer.rest):
        ours.update({k: v for k, v in rest.requests.items() if k[0] in WRITE_VERBS})
    return served, ours


def _agent_writes(before: tuple[Writes, Writes], after: tuple[Writes, Writes]) -> Writes:
    """The agent's writes between two :func:`_writes` snapshots (the server's minus the simulators')."""
    out = after[0] - before[0]
    out.subtract(after[1] - before[1])
    return +out


_SERVER_FIELDS = ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "ownerReferences",
                  "deletionTimestamp", "deletionGracePeriodSeconds", "finalizers")


def _copy(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` as a client would create it in the floor's namespace (no server fields, no status)."""
    out: dict[str, Any] = json.loads(json.dumps(obj))
    out.pop("status", None)
    meta = out["metadata"]
    for key in _SERVER_FIELDS:
        meta.pop(key, None)
    meta["namespace"] = FLOOR_NS
    if out.get("kind") == "Pod":  # as the agent creates it: gated, not bound
        out["spec"].pop("nodeName", None)
        out["spec"]["schedulingGates"] = [{"name": GATE}]
    return out


def api_floor(env: Any, snapshot: dict[str, list[dict[str, Any]]], writes: Writes) -> tuple[float, Writes]:
    """Seconds for one bare client to send the scale-out's writes, kind by kind, one after the
    other; and the writes it sent (kinds it cannot replay, such as Lease renewals, are left out).

    ``snapshot``: the scale-out's new pods, PodGangs and PodGroups and its scale target and
    workload, as stored (untimed reads). The status patches go to copies created untimed."""
    from grove_gitops.agent.kube import Kube

    kube = Kube(env.server.api_client())
    kube.raw("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": FLOOR_NS}})
    holders = {k: kube.create(_copy(snapshot[k][0])) for k in ("target", "workload")}  # untimed
    sent: Writes = Counter()
    pods = [_copy(p) for p in snapshot["pods"]]
    gangs = [_copy(g) for g in snapshot["podgangs"]]
    groups = [_copy(g) for g in snapshot["podgroups"]]
    status = {"phase": "Pending", "conditions": [{
        "type": "Initialized", "status": "True", "reason": "PodGangPodsCreated", "message": "PodGang is fully initialized",
        "lastTransitionTime": "2026-01-01T00:00:00Z"}]}

    def n(verb: str, resource: str, have: int) -> int:
        return min(writes[verb, resource], have)

    t0 = time.perf_counter()
    for pod in pods[:n("create", "pods", len(pods))]:
        kube.create(pod)
        sent["create", "pods"] += 1
    for pod in pods[:n("patch", "pods", len(pods))]:
        kube.patch_pod_json(FLOOR_NS, pod["metadata"]["name"], [
            {"op": "test", "path": "/spec/schedulingGates/0/name", "value": GATE},
            {"op": "remove", "path": "/spec/schedulingGates/0"}])
        sent["patch", "pods"] += 1
    for resource, objs in (("podgangs", gangs), ("podgroups", groups)):
        for obj in objs[:n("create", resource, len(objs))]:
            kube.create(obj)
            sent["create", resource] += 1
    for i in range(n("patch", "podgangs/status", len(gangs) if gangs else 0)):
        gang = gangs[i % len(gangs)]
        kube.patch_object(gang["apiVersion"], "PodGang", FLOOR_NS, gang["metadata"]["name"], {"status": status},
                          subresource="status")
        sent["patch", "podgangs/status"] += 1
    for key, resource in (("target", "podcliquescalinggroups/status"), ("target", "podcliques/status"),
                          ("workload", "podcliquesets/status")):
        live = holders[key]
        for i in range(writes[("patch", resource)]):
            kube.patch_object(live["apiVersion"], live["kind"], FLOOR_NS, live["metadata"]["name"],
                              {"status": {"replicas": i}}, subresource="status")
            sent["patch", resource] += 1
    for i in range(writes[("create", "events")]):
        kube.emit_event(FLOOR_NS, holders["target"], "Floor", f"bare write {i}", "Normal")
        sent["create", "events"] += 1
    return time.perf_counter() - t0, sent


def _snapshot(env: Any, new_pods: set[str], new_gangs: set[str], shape: Shape) -> dict[str, list[dict[str, Any]]]:
    """The scale-out's own objects as stored, for :func:`api_floor` (the first target and
    workload stand for every one: the floor's status patches all go to copies of them)."""
    store = env.server.store
    first = shape.workloads[0]
    return {
        "pods": [p for p in store.list_objects("pods", NS) if p["metadata"]["name"] in new_pods],
        "podgangs": [g for g in store.list_objects("podgangs.scheduler.grove.io", NS)
                     if g["metadata"]["name"] in new_gangs],
        "podgroups": [g for g in store.list_objects(GANG_OBJECTS[shape.backend], NS)
                      if g["metadata"]["name"] in new_gangs],
        "target": [_target_object(env, _target_name(first.name, *first.targets()[0]))],
        "workload": [env.server.get_object("podcliquesets.gitops.grove.io", NS, first.name)],
    }


def _target_name(pcs: str, index: int, group: str) -> str:
    return f"{pcs}-{index}-{group}"


def _target_object(env: Any, name: str) -> dict[str, Any]:
    """A scale target as stored: a scaling group's, or a standalone clique's."""
    found = env.server.get_object("podcliquescalinggroups.gitops.grove.io", NS, name)
    return found if found is not None else env.server.get_object("podcliques.gitops.grove.io", NS, name)


def _counts(shape: Shape, count: int) -> dict[str, dict[tuple[int, str], int]]:
    return {w.name: {t: count for t in w.targets()} for w in shape.workloads}


def run_once(low: int, high: int, world_gc: str = "freeze", shape: Shape | None = None) -> dict[str, Any]:
    with world_collector(world_gc) as world:
        return _run_once(low, high, world, shape)


def _run_once(low: int, high: int, world: Any, shape: Shape | None = None) -> dict[str, Any]:
    from kubernetes.client import CustomObjectsApi
    from kubernetes.client.exceptions import ApiException

    from tests.day2.harness import day2_env

    default = shape is None
    shape = Shape(low, high) if shape is None else dataclasses.replace(
        shape, low=low, high=high, steps=tuple(c for c in shape.steps if low < c < high))
    targets = [_target_name(*t) for t in shape.targets()]
    with tempfile.TemporaryDirectory() as tmp:
        src = source(Path(tmp) / "source", low, high) if default else shape_source(Path(tmp) / "source", shape)
        with day2_env(Path(tmp) / "world", source=src, namespace=NS, ready_delay=shape.ready_delay,
                      termination_delay=None,
                      sync_interval=1.0, agent=False, bystander=False) as env, \
                _agent_process(env.server, Path(tmp) / "kubeconfig", 2.0) as agent:
            env.primary = PCS
            env.set_counts_of(_counts(shape, low))
            api = CustomObjectsApi(env.server.api_client())

            def plural(name: str) -> str:
                return "podcliques" if any(name.endswith(f"-{c}") for w in shape.workloads for c in w.cliques) \
                    else "podcliquescalinggroups"

            def target(name: str = TARGET) -> dict[str, Any] | None:
                try:
                    return dict(api.get_namespaced_custom_object("gitops.grove.io", "v1alpha1", NS, plural(name),
                                                                 name))
                except ApiException:  # not created yet
                    return None

            def all_gangs() -> set[str]:
                return {o["metadata"]["name"] for w in shape.workloads
                        for o in env.objects_at(env.counts if w.name == PCS else env.counts_of[w.name], w.name)
                        if o["kind"] == "PodGang"}

            def scale(count: int) -> None:
                for name in targets:
                    api.patch_namespaced_custom_object_scale("gitops.grove.io", "v1alpha1", NS, plural(name), name,
                                                             {"spec": {"replicas": count}})

            env.wait_until(lambda: all(target(t) is not None for t in targets) and env.converged(), timeout=120,
                           what="the first deploy", interval=0.1)
            before_pods = {v.name for v in env.views()}
            time.sleep(QUIET)  # the agent's first-deploy status writes land before the count starts
            env.settle()
            writes_before = _writes(env)
            cpu_before = agent.cpu()
            mark = env.observer.mark()
            gangs_at_low = all_gangs()
            env.set_counts_of(_counts(shape, high))
            wanted_gangs = all_gangs()
            world.report()
            world.longest = 0.0
            started = time.monotonic()
            for step in shape.steps:
                scale(step)
                time.sleep(STEP_GAP)
            scale(high)

            def gangs() -> set[str]:
                listed = env.rest.request("GET", f"/apis/scheduler.grove.io/v1alpha1/namespaces/{NS}/podgangs")
                return {g["metadata"]["name"] for g in listed.get("items") or []}

            # Polled slowly: each look lists every pod, and the API server it loads is the one the
            # agent is writing to. The times come from the observer's event stamps, not the poll.
            env.wait_until(lambda: env.converged() and gangs() == wanted_gangs, timeout=300,
                           what=f"count {high} Ready", interval=0.5)
            env.settle()
            new_pods = {v.name for v in env.views()} - before_pods
            releases = [m.time for m in env.observer.since(mark) if m.event == "MODIFIED" and m.pod in new_pods
                        and m.before is not None and m.after is not None and m.before.gated and not m.after.gated]
            release_s = max(releases) - started
            time.sleep(QUIET)
            world.report()
            world_pause = world.longest
            cpu = agent.cpu() - cpu_before
            writes_after = _writes(env)
            writes = _agent_writes(writes_before, writes_after)
            # The simulators' own writes in the same window (the kubelet's pod status, the
            # applier's syncs): the server serves them beside the agent's; the floor has none.
            simulator_writes = sum((writes_after[1] - writes_before[1]).values())
            # the benchmark's own /scale writes
            for name in targets:
                writes["patch", f"{plural(name)}/scale"] -= len(shape.steps) + 1
            writes = +writes
            for name in targets:
                count = target(name)
                assert count is not None and count["spec"]["replicas"] == high
            before_gangs = {n for n in wanted_gangs if n not in gangs_at_low}
            snapshot = _snapshot(env, new_pods, before_gangs, shape)

            mark = env.observer.mark()
            env.set_counts_of(_counts(shape, low))
            started = time.monotonic()
            scale(low)
            env.wait_until(lambda: not new_pods & {v.name for v in env.views()}, timeout=300,
                           what=f"count {low}: the new pods deleted", interval=0.5)
            env.settle()
            deleted = [m.time for m in env.observer.since(mark) if m.event == "DELETED" and m.pod in new_pods]
            scale_in_s = max(deleted) - started
            problems = env.invariant_problems()
            floor_s, floor_writes = api_floor(env, snapshot, writes)
            status_writes = sum(v for (verb, resource), v in writes.items() if resource.endswith("/status"))
            gangs_new = len(before_gangs)
            per_gang = max(gangs_new, 1)  # (``clique`` creates no gang: its figures per run)
            pods_new = len(new_pods)
            extra: dict[str, Any] = {} if default else {
                "scaled_targets": len(targets),
                "workloads": len(shape.workloads),
                "status_writes": status_writes,
                "status_over_bound": status_writes - (gangs_new + len(targets) + len(shape.workloads)),
                "new_pods_per_new_gang": round(pods_new / gangs_new, 3) if gangs_new else None,
            }
            return {**extra,
                "new_gangs": gangs_new,
                "new_pods": pods_new,
                "release_s": round(release_s, 3),
                "scale_in_s": round(scale_in_s, 3),
                "cpu_ms_per_gang": round(1000 * cpu / per_gang, 2),
                "pod_creates_per_pod": round(writes["create", "pods"] / pods_new, 3),
                "gate_patches_per_pod": round(writes["patch", "pods"] / pods_new, 3),
                "pod_writes_per_pod": round((writes["create", "pods"] + writes["patch", "pods"]) / pods_new, 3),
                "writes_per_pod": round(sum(writes.values()) / pods_new, 3),
                "writes": {f"{verb} {resource}": n for (verb, resource), n in sorted(writes.items()) if n},
                "status_writes_per_gang": round(status_writes / per_gang, 3),
                "api_floor_s": round(floor_s, 3),
                "simulator_writes_per_pod": round(simulator_writes / pods_new, 3),
                "release_over_floor": round(release_s / floor_s, 3),
                "floor_writes": {f"{verb} {resource}": k for (verb, resource), k in sorted(floor_writes.items()) if k},
                "invariant_problems": len(problems),
                "world_gc_pause_ms_max": round(1000 * world_pause, 1),
            }


FIGURES = ("release_s", "scale_in_s", "cpu_ms_per_gang", "pod_creates_per_pod", "gate_patches_per_pod",
           "pod_writes_per_pod", "writes_per_pod", "status_writes_per_gang", "api_floor_s", "release_over_floor")


def run(low: int, high: int, repeat: int, world_gc: str = "freeze", shape: str = "default") -> dict[str, Any]:
    if not 1 <= low < high <= 500:
        raise ValueError(f"need 1 <= low < high <= 500, got {low} and {high}")
    if shape not in SHAPES:
        raise ValueError(f"unknown shape {shape!r}; one of {', '.join(SHAPES)}")
    chosen = None if shape == "default" else SHAPES[shape]
    runs = [run_once(low, high, world_gc, chosen) for _ in range(repeat)]
    figures = FIGURES if chosen is None else (*FIGURES, "status_over_bound")
    summary = {k: {"median": statistics.median(r[k] for r in runs), "worst": max(r[k] for r in runs)}
               for k in figures}
    out: dict[str, Any] = {"low": low, "high": high, "pods_per_replica": PODS_PER_REPLICA, "repeat": repeat,
                           "runs": runs, "summary": summary}
    if chosen is not None:
        out["shape"] = shape
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", choices=tuple(SHAPES), default="default",
                        help="what is scaled (default: one group of one PodCliqueSet); see the module's doc")
    parser.add_argument("--low", type=int, default=None,
                        help="the floor (Git's count) and the count scaled back to (default: the shape's, 2)")
    parser.add_argument("--high", type=int, default=None,
                        help="the count of each target's /scale write (default: the shape's, 50)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--world-gc", choices=("freeze", "python"), default="freeze",
                        help="this process's collector: kept short as the agent's (default) or CPython's defaults")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    try:
        chosen = SHAPES[args.shape]
        low = chosen.low if args.low is None else args.low
        high = chosen.high if args.high is None else args.high
        print(json.dumps(run(low, high, args.repeat, args.world_gc, args.shape), sort_keys=True))
    except ValueError as exc:
        parser.error(str(exc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
