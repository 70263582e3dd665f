"""Raw pods and PodGangs, shaped as the renderer writes them, for the agent's pure tests.

:func:`world` lays out one PodCliqueSet (standalone PodCliques and scaling groups, per
replica) the way ``grove_gitops/expand`` does: pod ``<hostname>-<hash>`` with hostname
``<podclique>-<index>``, base PodGang ``P-i`` holding the standalone PodCliques and the first
``minAvailable`` scaling-group replicas, scaled PodGangs ``P-i-g-(j-m)``, and the
``gitops.grove.io/day2`` annotation on every PodGang of a replica. Tests then change pod state
with :meth:`World.set`, add old pods with :meth:`World.add_old`, and build the snapshot.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from grove_gitops.expand import ownership
from grove_gitops.readmodel.gangs import GATE
from grove_gitops.readmodel.snapshot import Snapshot, Workload, build

Key = tuple[str, str]
NS = "ml"
T0 = 1_800_000_000.0  # 2027-01-15T08:00:00Z: a fixed "now" for clocks


@dataclass(frozen=True)
class Clique:
    name: str
    replicas: int
    min_available: int


@dataclass(frozen=True)
class Group:
    name: str
    replicas: int
    min_available: int
    cliques: tuple[Clique, ...]


def pod(
    hostname: str,
    *,
    pcs: str = "p",
    replica: int = 0,
    podclique: str | None = None,
    index: int | None = None,
    podgang: str | None = None,
    base_podgang: str | None = None,
    pcsg: str | None = None,
    pcsg_replica: int | None = None,
    template_hash: str = "h1",
    managed: bool = True,
    rendered: bool = True,
    with_hostname: bool = True,
    created: str = "2026-11-24T10:00:00Z",
    **state: Any,
) -> dict[str, Any]:
    """One rendered pod named ``<hostname>-<hash>``, by default Running, scheduled and Ready.

    ``rendered``: it carries the render's ``gitops.grove.io/rendered-by`` proof (computed with
    the product's function, as the renderer stamps it); False for a pod someone else made."""
    labels = {
        "app.kubernetes.io/part-of": pcs,
        "grove.io/podcliqueset-replica-index": str(replica),
        "grove.io/podclique": podclique or hostname.rsplit("-", 1)[0],
        "grove.io/podclique-pod-index": str(index if index is not None else int(hostname.rsplit("-", 1)[1])),
        "grove.io/pod-template-hash": template_hash,
        "grove.io/podgang": podgang or f"{pcs}-{replica}",
    }
    if managed:
        labels["app.kubernetes.io/managed-by"] = "grove-gitops"
    if pcsg is not None:
        labels["grove.io/podcliquescalinggroup"] = pcsg
        labels["grove.io/podcliquescalinggroup-replica-index"] = str(pcsg_replica)
    if base_podgang is not None:
        labels["grove.io/base-podgang"] = base_podgang
    name = f"{hostname}-{template_hash}"
    proof = ownership.proof(NS, name, labels) if rendered else None
    obj: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}", "labels": labels,
                     "annotations": {ownership.RENDERED_BY: proof} if proof else {},
                     "creationTimestamp": created},
        "spec": {"containers": [{"name": "c", "image": "img"}]},
        "status": {},
    }
    if with_hostname:
        obj["spec"]["hostname"] = hostname
    set_state(obj, **state)
    return obj


def set_state(
    obj: dict[str, Any],
    *,
    phase: str | None = None,
    ready: bool | None = None,
    scheduled: bool | None = None,
    terminating: bool | None = None,
    gated: bool | None = None,
    node: str | None = None,
    crashing: bool | None = None,
    starting: bool | None = None,
    reason: str | None = None,
    created: str | None = None,
) -> dict[str, Any]:
    """Change a pod's observed state; unset arguments keep the current (or default) value."""
    status = obj["status"]
    conds = {c["type"]: c["status"] == "True" for c in status.get("conditions", [])}
    is_ready = conds.get("Ready", True) if ready is None else ready
    is_scheduled = conds.get("PodScheduled", True) if scheduled is None else scheduled
    if phase is not None:
        status["phase"] = phase
    elif scheduled is not None or "phase" not in status:
        status["phase"] = "Running" if is_scheduled else "Pending"
    status["conditions"] = [
        {"type": "PodScheduled", "status": "True" if is_scheduled else "False"},
        {"type": "Ready", "status": "True" if is_ready else "False"},
    ]
    if crashing is not None or starting is not None:
        cs: dict[str, Any] = {"name": "c", "ready": is_ready, "started": bool(starting) or is_ready}
        if crashing:
            cs["lastState"] = {"terminated": {"exitCode": 137}}
            cs["started"] = False
        status["containerStatuses"] = [cs]
    if reason is not None:
        status["reason"] = reason
    if node is not None:
        obj["spec"]["nodeName"] = node
    elif is_scheduled and "nodeName" not in obj["spec"]:
        obj["spec"]["nodeName"] = "node-a"
    if not is_scheduled:
        obj["spec"].pop("nodeName", None)
    if terminating:
        obj["metadata"]["deletionTimestamp"] = "2026-11-24T11:00:00Z"
    elif terminating is False:
        obj["metadata"].pop("deletionTimestamp", None)
    if gated:
        obj["spec"]["schedulingGates"] = [{"name": GATE}]
    elif gated is False:
        obj["spec"].pop("schedulingGates", None)
    if created is not None:
        obj["metadata"]["creationTimestamp"] = created
    return obj


def day2(pcs: str, replica: int, cliques: tuple[Clique, ...], groups: tuple[Group, ...], delay: float,
         strategy: str = "RollingRecreate") -> str:
    data = {
        "podCliqueSet": pcs,
        "replicaIndex": replica,
        "updateStrategy": strategy,
        "terminationDelaySeconds": delay,
        "cliques": [{"name": f"{pcs}-{replica}-{c.name}", "minAvailable": c.min_available, "replicas": c.replicas}
                    for c in cliques],
        "scalingGroups": [{"name": f"{pcs}-{replica}-{g.name}", "minAvailable": g.min_available,
                           "replicas": g.replicas, "cliques": [c.name for c in g.cliques]} for g in groups],
    }
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


def podgang(name: str, pcs: str, annotation: str, groups: list[tuple[str, list[str], int]],
            conditions: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "scheduler.grove.io/v1alpha1",
        "kind": "PodGang",
        "metadata": {"name": name, "namespace": NS, "labels": {"app.kubernetes.io/part-of": pcs},
                     "annotations": {"gitops.grove.io/day2": annotation}},
        "spec": {"podgroups": [
            {"name": g, "minReplicas": m, "podReferences": [{"namespace": NS, "name": n} for n in refs]}
            for g, refs, m in groups
        ]},
        "status": {"conditions": conditions if conditions is not None else [{"type": "Initialized", "status": "True"}]},
    }
    return obj


@dataclass
class World:
    """One PodCliqueSet's live pods and PodGangs (all pods healthy unless changed)."""

    pcs: str
    pods: dict[Key, dict[str, Any]] = field(default_factory=dict)
    gangs: dict[Key, dict[str, Any]] = field(default_factory=dict)

    def snap(self) -> Snapshot:
        return build(self.pods, self.gangs)

    def wl(self) -> Workload:
        return self.snap().workloads[(NS, self.pcs)]

    def new(self, hostname: str) -> dict[str, Any]:
        """The referenced pod of a slot (hash ``h1``)."""
        return self.pods[(NS, f"{hostname}-h1")]

    def set(self, hostname: str, **state: Any) -> dict[str, Any]:
        return set_state(self.new(hostname), **state)

    def add(self, obj: dict[str, Any]) -> dict[str, Any]:
        self.pods[(NS, obj["metadata"]["name"])] = obj
        return obj

    def add_old(self, hostname: str, template_hash: str = "h0", **state: Any) -> dict[str, Any]:
        """An old pod in the slot: the same labels as the new one, another hash, not referenced."""
        labels = self.new(hostname)["metadata"]["labels"]
        kw: dict[str, Any] = {
            "pcs": labels["app.kubernetes.io/part-of"],
            "replica": int(labels["grove.io/podcliqueset-replica-index"]),
            "podgang": labels["grove.io/podgang"],
        }
        if "grove.io/podcliquescalinggroup" in labels:
            kw["pcsg"] = labels["grove.io/podcliquescalinggroup"]
            kw["pcsg_replica"] = int(labels["grove.io/podcliquescalinggroup-replica-index"])
        return self.add(pod(hostname, template_hash=template_hash, **kw, **state))

    def remove(self, hostname: str) -> None:
        del self.pods[(NS, f"{hostname}-h1")]

    def gang(self, name: str) -> dict[str, Any]:
        return self.gangs[(NS, name)]

    def hostnames(self, prefix: str) -> list[str]:
        return sorted(p["spec"]["hostname"] for p in self.pods.values()
                      if p["spec"].get("hostname", "").startswith(prefix))


def world(
    pcs: str = "p",
    replicas: int = 1,
    cliques: tuple[Clique, ...] = (Clique("router", 2, 1),),
    groups: tuple[Group, ...] = (),
    delay: float = 60.0,
    strategy: str = "RollingRecreate",
) -> World:
    """A PodCliqueSet laid out as the renderer does (module docstring), every pod Ready."""
    w = World(pcs)
    for i in range(replicas):
        note = day2(pcs, i, cliques, groups, delay, strategy)
        base = f"{pcs}-{i}"
        by_gang: dict[str, list[tuple[str, list[str], int]]] = {base: []}
        for c in cliques:
            fqn = f"{pcs}-{i}-{c.name}"
            refs = [w.add(pod(f"{fqn}-{k}", pcs=pcs, replica=i))["metadata"]["name"] for k in range(c.replicas)]
            by_gang[base].append((fqn, refs, c.min_available))
        for g in groups:
            gfqn = f"{pcs}-{i}-{g.name}"
            for j in range(g.replicas):
                gang = base if j < g.min_available else f"{gfqn}-{j - g.min_available}"
                extra: dict[str, Any] = {} if gang == base else {"base_podgang": base}
                for c in g.cliques:
                    fqn = f"{gfqn}-{j}-{c.name}"
                    refs = [
                        w.add(pod(f"{fqn}-{k}", pcs=pcs, replica=i, podgang=gang, pcsg=gfqn, pcsg_replica=j, **extra))[
                            "metadata"]["name"]
                        for k in range(c.replicas)
                    ]
                    by_gang.setdefault(gang, []).append((fqn, refs, c.min_available))
        for name, podgroups in by_gang.items():
            w.gangs[(NS, name)] = podgang(name, pcs, note, podgroups)
    return w


def _iso(t: float) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def apply(w: World, actions: list[Any], now: float) -> None:
    """A minimal executor for pure tests: conditions land on the PodGangs (the transition time
    changes only with the status, ``since`` when given), deleted pods become terminating."""
    from grove_gitops.agent.actions import DeletePod, SetCondition

    for a in actions:
        if isinstance(a, SetCondition):
            conds = w.gangs[a.gang].setdefault("status", {}).setdefault("conditions", [])
            old = next((c for c in conds if c["type"] == a.type), None)
            ltt = old["lastTransitionTime"] if old is not None and old["status"] == a.status else _iso(
                a.since if a.since is not None else now)
            new = {"type": a.type, "status": a.status, "reason": a.reason, "message": a.message,
                   "lastTransitionTime": ltt}
            conds[:] = [c for c in conds if c["type"] != a.type] + [new]
        elif isinstance(a, DeletePod):
            set_state(w.pods[(a.namespace, a.name)], terminating=True)


def condition(w: World, gang: str, kind: str) -> dict[str, Any] | None:
    return next((c for c in w.gang(gang)["status"].get("conditions", []) if c["type"] == kind), None)
