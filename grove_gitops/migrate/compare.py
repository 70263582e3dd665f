"""The live Grove workload against the render of the same PodCliqueSet (pure).

A migration replaces each running Grove pod by the rendered pod of the same slot (namespace +
hostname ``<podclique>-<index>``), one unit at a time. That is only the rolling update it
claims to be when the cluster runs what the render describes, so anything else refuses, with
every reason listed and nothing changed:

- **shape**: the same PodCliques, scaling groups and PodGangs by name, the same replicas of the
  PodCliqueSet, of every PodClique and of every scaling group (Grove's names are the render's,
  ``spec/grove-desired-state.md`` §3);
- **slots**: every live pod of the PodCliqueSet is Grove's pod of a slot the render has (its
  PodClique, index and replica labels and its hostname agree, Grove's PodClique of that name
  owns it) or a pod already handed over or rendered; no slot holds two; no rendered pod exists
  while a Grove pod is not handed over yet (the render was applied too early: the agent, which
  does not see Grove's pods, would release the rendered pod beside it);
- **settled** (before the first pod is handed over): every slot holds one Ready, scheduled,
  ungated Grove pod, no pod is terminating, every PodGang is ``Initialized``, and the
  PodCliqueSet is not mid-rollout (``status.updateProgress`` without ``updateEndedAt``);
- **not autoscaled**: the live count of an HPA-driven workload is not the render's floor (a
  later version may carry it over; today such a workload moves as docs/migration.md §3b/§3c).

Once a migration has started (a pod handed over, or a rendered pod running) the settled rules
no longer apply: the workload is *meant* to be mid-rollout, and ``migrate apply`` may be run
again to finish an interrupted hand-over. The slot rules always apply.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from grove_gitops.expand import ownership
from grove_gitops.migrate.live import Live
from grove_gitops.readmodel import adoption
from grove_gitops.readmodel import gangs as G
from grove_gitops.readmodel.snapshot import Day2, parse_day2

Raw = Mapping[str, Any]
PODCLIQUE = "grove.io/podclique"
POD_INDEX = "grove.io/podclique-pod-index"
REPLICA = "grove.io/podcliqueset-replica-index"
PCSG = "grove.io/podcliquescalinggroup"
PCSG_REPLICA = "grove.io/podcliquescalinggroup-replica-index"
MAX_LISTED = 5  # names listed per kind of mismatch; the rest counted

GROVE, ADOPTED, REPLACED, EMPTY = "grove", "adopted", "replaced", "empty"


@dataclass(frozen=True)
class SlotPlan:
    """One slot: the rendered pod that will hold it and what holds it now."""

    hostname: str
    podclique: str
    index: int
    replica: int
    scaling_group: str | None
    scaling_group_replica: int | None
    role: str  # the clique's template name (``group/clique`` in a scaling group)
    rendered: str  # the rendered pod's name
    state: str  # GROVE, ADOPTED (handed over, not yet replaced), REPLACED or EMPTY
    live: str | None = None  # the pod holding it (a Grove pod's name, or the rendered pod)
    ready: bool = False


@dataclass
class Comparison:
    namespace: str
    name: str
    strategy: str = "RollingRecreate"
    replicas: int = 0
    slots: list[SlotPlan] = field(default_factory=list)
    min_available: dict[str, int] = field(default_factory=dict)  # PodClique FQN -> minAvailable
    group_min_available: dict[str, int] = field(default_factory=dict)  # PCSG FQN -> minAvailable
    refusals: list[str] = field(default_factory=list)
    started: bool = False
    #: The Grove pods still to hand over, each verified as its slot's.
    to_adopt: list[Raw] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.refusals


def _meta(obj: Raw) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _labels(obj: Raw) -> Mapping[str, Any]:
    labels = _meta(obj).get("labels")
    return labels if isinstance(labels, Mapping) else {}


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, str) and value.isdigit() and len(value) <= 6 else None


def _listed(names: Iterable[str]) -> str:
    items = sorted(names)
    shown = ", ".join(items[:MAX_LISTED])
    return shown + (f" and {len(items) - MAX_LISTED} more" if len(items) > MAX_LISTED else "")


def ready(pod: Raw) -> bool:
    """Running, Ready, scheduled, ungated and not terminating."""
    status = pod.get("status") if isinstance(pod.get("status"), Mapping) else {}
    spec = pod.get("spec") if isinstance(pod.get("spec"), Mapping) else {}
    assert isinstance(status, Mapping) and isinstance(spec, Mapping)
    conditions = status.get("conditions") or []
    is_ready = any(isinstance(c, Mapping) and c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    return (is_ready and status.get("phase") == "Running" and not spec.get("schedulingGates")
            and not _meta(pod).get("deletionTimestamp") and bool(spec.get("nodeName")))


def is_grove_pod(pod: Raw) -> bool:
    """A pod as Grove's operator makes it: labelled ``managed-by: grove-operator`` and
    controlled by the ``grove.io`` PodClique its ``grove.io/podclique`` label names."""
    labels = _labels(pod)
    if labels.get(adoption.MANAGED_BY) != adoption.GROVE:
        return False
    owners = [o for o in _meta(pod).get("ownerReferences") or [] if isinstance(o, Mapping) and o.get("controller")]
    return len(owners) == 1 and owners[0].get("apiVersion") == "grove.io/v1alpha1" and owners[0].get("kind") == "PodClique" \
        and owners[0].get("name") == labels.get(PODCLIQUE) and isinstance(labels.get(PODCLIQUE), str)


def _role(pcs: str, replica: int, podclique: str, group: str | None, group_replica: int | None) -> str:
    prefix = f"{pcs}-{replica}-"
    if group is None or group_replica is None:
        return podclique[len(prefix):] if podclique.startswith(prefix) else podclique
    short = group[len(prefix):] if group.startswith(prefix) else group
    member = f"{group}-{group_replica}-"
    return f"{short}/{podclique[len(member):] if podclique.startswith(member) else podclique}"


def _day2s(rendered: Sequence[Raw]) -> dict[int, Day2]:
    out: dict[int, Day2] = {}
    for obj in rendered:
        if obj.get("kind") == "PodGang":
            try:
                day2 = parse_day2(obj)
            except G.MalformedPodGang:
                continue
            if day2 is not None:
                out.setdefault(day2.replica, day2)
    return out


def compare(live: Live, rendered: Sequence[Raw], strategy: str = "RollingRecreate") -> Comparison:
    """Compare; ``rendered``: every object the render of ``live``'s PodCliqueSet wrote."""
    out = Comparison(live.namespace, live.name, strategy)
    where = f"PodCliqueSet {live.namespace}/{live.name}"
    pods = [o for o in rendered if o.get("kind") == "Pod"]
    if not pods:
        out.refusals.append(f"{where} is not in the render (no rendered pod): nothing to migrate to")
        return out
    if any(o.get("kind") == "HorizontalPodAutoscaler" for o in rendered) or live.hpas:
        out.refusals.append(f"{where} is autoscaled (HorizontalPodAutoscalers): its live count is not carried over by a "
                            "migration yet; move it as docs/migration.md §3b or §3c says")
    day2s = _day2s(rendered)
    out.replicas = len(day2s)
    for day2 in day2s.values():
        for clique in day2.cliques:
            out.min_available[clique.name] = clique.min_available
        for spec in day2.scaling_groups:
            out.group_min_available[spec.name] = spec.min_available
    for gang in rendered:
        if gang.get("kind") != "PodGang":
            continue
        for podgroup in (gang.get("spec") or {}).get("podgroups") or []:
            if isinstance(podgroup, Mapping) and isinstance(podgroup.get("name"), str) \
                    and isinstance(podgroup.get("minReplicas"), int):
                out.min_available.setdefault(podgroup["name"], podgroup["minReplicas"])

    slots: dict[str, dict[str, Any]] = {}
    for pod in pods:
        labels, pod_spec = _labels(pod), pod.get("spec") or {}
        host = pod_spec.get("hostname")
        replica, index = _int(labels.get(REPLICA)), _int(labels.get(POD_INDEX))
        if not isinstance(host, str) or replica is None or index is None or not isinstance(labels.get(PODCLIQUE), str):
            out.refusals.append(f"rendered pod {_meta(pod).get('name')} lacks a hostname or Grove's labels")
            continue
        group = labels.get(PCSG) if isinstance(labels.get(PCSG), str) else None
        slots[host] = {"hostname": host, "podclique": labels[PODCLIQUE], "index": index, "replica": replica,
                       "scaling_group": group, "scaling_group_replica": _int(labels.get(PCSG_REPLICA)),
                       "rendered": str(_meta(pod).get("name"))}

    _shape(live, rendered, slots, out)
    holders: dict[str, list[tuple[str, Raw]]] = {}
    strays: list[str] = []
    terminating: list[str] = []
    rendered_names = {s["rendered"] for s in slots.values()}
    rendered_live: list[str] = []
    for pod in live.pods:
        meta = _meta(pod)
        name = str(meta.get("name"))
        if meta.get("deletionTimestamp"):
            terminating.append(name)
            continue
        host = (pod.get("spec") or {}).get("hostname")
        slot = slots.get(host) if isinstance(host, str) else None
        if name in rendered_names and ownership.verify(pod):
            rendered_live.append(name)
            if slot is not None and slot["rendered"] == name and not (pod.get("spec") or {}).get("schedulingGates"):
                holders.setdefault(host, []).append((REPLACED, pod))  # type: ignore[arg-type]
            continue  # gated: not running yet (and a rendered pod of a superseded slot is the agent's)
        found = adoption.claim(pod)
        kind = ADOPTED if found is not None else GROVE if is_grove_pod(pod) else None
        if kind is None:
            strays.append(name)
            continue
        labels = _labels(pod)
        if slot is None or not (labels.get(PODCLIQUE) == slot["podclique"] and _int(labels.get(POD_INDEX)) == slot["index"]
                                and _int(labels.get(REPLICA)) == slot["replica"]):
            out.refusals.append(f"pod {live.namespace}/{name} (hostname {host!r}) holds no slot of the render with its "
                                "PodClique, index and replica")
            continue
        holders.setdefault(slot["hostname"], []).append((kind, pod))
    if strays:
        out.refusals.append(f"pods labelled app.kubernetes.io/part-of={live.name} that are neither Grove's, handed over, "
                            f"nor rendered: {_listed(strays)} (never touched; remove or relabel them first)")
    out.started = any(kind in (ADOPTED, REPLACED) for held in holders.values() for kind, _ in held)
    grove_held = sorted(host for host, held in holders.items() if any(kind == GROVE for kind, _ in held))
    if rendered_live and grove_held:
        # The agent does not see a pod Grove still owns: it would release the rendered pod of
        # that slot beside it (two pods on one hostname, twice the capacity).
        out.refusals.append(f"rendered pods exist ({_listed(rendered_live)}) while Grove's pods are not handed over "
                            f"(slots {_listed(grove_held)}): the render was applied before `migrate apply`. Suspend "
                            "its sync, delete the rendered pods of those slots, and run again")

    for host, slot in sorted(slots.items()):
        held = holders.get(host, [])
        old = [(k, p) for k, p in held if k != REPLACED]
        if len(old) > 1:
            out.refusals.append(f"slot {live.namespace}/{host} is held by {len(old)} pods "
                                f"({_listed(str(_meta(p).get('name')) for _, p in old)}); a slot has one")
            continue
        kind, pod = (old[0] if old else held[0]) if held else (EMPTY, {})
        role = _role(live.name, slot["replica"], slot["podclique"], slot["scaling_group"], slot["scaling_group_replica"])
        out.slots.append(SlotPlan(host, slot["podclique"], slot["index"], slot["replica"], slot["scaling_group"],
                                  slot["scaling_group_replica"], role, slot["rendered"], kind,
                                  str(_meta(pod).get("name")) if pod else None, ready(pod) if pod else False))
        if kind == GROVE:
            out.to_adopt.append(pod)

    if not out.started:
        _settled(live, out, terminating)
    return out


def _shape(live: Live, rendered: Sequence[Raw], slots: Mapping[str, Mapping[str, Any]], out: Comparison) -> None:
    """Same PodCliques, scaling groups, PodGangs and replicas (names are Grove's and the render's)."""
    want_cliques: dict[str, int] = {}
    want_groups: dict[str, set[int]] = {}
    for slot in slots.values():
        want_cliques[slot["podclique"]] = want_cliques.get(slot["podclique"], 0) + 1
        if slot["scaling_group"] is not None and slot["scaling_group_replica"] is not None:
            want_groups.setdefault(slot["scaling_group"], set()).add(slot["scaling_group_replica"])
    pcs = live.pcs
    if pcs is not None:
        replicas = (pcs.get("spec") or {}).get("replicas")
        if replicas != out.replicas:
            out.refusals.append(f"replicas differ: the live PodCliqueSet has {replicas}, the render {out.replicas}")
    if live.podcliques or pcs is not None:
        have = {str(_meta(p).get("name")): (p.get("spec") or {}).get("replicas") for p in live.podcliques}
        if set(have) != set(want_cliques):
            _differ(out, "PodCliques", set(have), set(want_cliques))
        for name in sorted(set(have) & set(want_cliques)):
            if have[name] != want_cliques[name]:
                out.refusals.append(f"replicas of PodClique {name} differ: live {have[name]}, render {want_cliques[name]}")
    if live.scaling_groups or (pcs is not None and want_groups):
        groups = {str(_meta(g).get("name")): (g.get("spec") or {}).get("replicas") for g in live.scaling_groups}
        if set(groups) != set(want_groups):
            _differ(out, "PodCliqueScalingGroups", set(groups), set(want_groups))
        for name in sorted(set(groups) & set(want_groups)):
            if groups[name] != len(want_groups[name]):
                out.refusals.append(f"replicas of PodCliqueScalingGroup {name} differ: live {groups[name]}, "
                                    f"render {len(want_groups[name])}")
    gangs = {str(_meta(g).get("name")) for g in live.podgangs}
    want_gangs = {str(_meta(o).get("name")) for o in rendered if o.get("kind") == "PodGang"}
    if (gangs or live.pcs is not None) and gangs != want_gangs:
        _differ(out, "PodGangs", gangs, want_gangs)


def _differ(out: Comparison, kind: str, have: set[str], want: set[str]) -> None:
    parts = []
    if have - want:
        parts.append(f"live only: {_listed(have - want)}")
    if want - have:
        parts.append(f"render only: {_listed(want - have)}")
    out.refusals.append(f"the shape differs: {kind} " + "; ".join(parts))


def _settled(live: Live, out: Comparison, terminating: list[str]) -> None:
    """Before the first hand-over: Grove's workload runs complete and is not mid-rollout."""
    if live.pcs is None:
        out.refusals.append(f"no grove.io PodCliqueSet {live.namespace}/{live.name} runs, and no migration of it has started")
        return
    if _meta(live.pcs).get("deletionTimestamp"):
        out.refusals.append(f"the grove.io PodCliqueSet {live.namespace}/{live.name} is being deleted")
    progress = (live.pcs.get("status") or {}).get("updateProgress")
    if isinstance(progress, Mapping) and not progress.get("updateEndedAt"):
        out.refusals.append("the workload is mid-rollout (status.updateProgress has no updateEndedAt): "
                            "run again when Grove's rolling update is done")
    if terminating:
        out.refusals.append(f"pods are terminating: {_listed(terminating)}; run again when the workload is settled")
    empty = [s.hostname for s in out.slots if s.state == EMPTY]
    if empty:
        out.refusals.append(f"slots without a running Grove pod: {_listed(empty)}")
    unready = [s.live or s.hostname for s in out.slots if s.state == GROVE and not s.ready]
    if unready:
        out.refusals.append(f"pods not Ready (Running, scheduled, ungated): {_listed(unready)}; "
                            "a migration starts from a workload whose every pod is Ready")
    pending = [str(_meta(g).get("name")) for g in live.podgangs if not _initialized(g)]
    if pending:
        out.refusals.append(f"PodGangs not Initialized: {_listed(pending)}")


def _initialized(gang: Raw) -> bool:
    conditions = (gang.get("status") or {}).get("conditions") or []
    return any(isinstance(c, Mapping) and c.get("type") == "Initialized" and c.get("status") == "True" for c in conditions)
