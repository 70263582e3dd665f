"""What the agent writes to make a workload hold its desired objects: a pure comparison.

Rules (docs/autoscaling.md, "What the agent creates and deletes"):

- **Create** a missing gang whole: its pods first (gated), then its backend objects, then the
  PodGang, so the day-2 loop releases it only once everything exists. When a pod create is
  refused (a ResourceQuota), the executor deletes the pods it created for that gang and does
  not create the PodGang: no half gang holds quota.
- **Replace** the spec of an object the agent owns when the render changed it (the base
  PodGang whose ``podReferences`` list an autoscaled clique's pods). Pods are immutable: a
  changed pod has a new name, and the day-2 loop retires the old one in Grove's order.
- **Delete** on scale-in: pods whose slot (``spec.hostname``) no desired pod holds, highest
  index first; a PodGang, its backend objects and other owned objects only once no pod of
  the workload still names that gang. An owned pod in a slot a desired pod holds is an old
  pod of a rolling update: the day-2 loop retires it, never this plan.

Only objects owned by the workload's ``gitops.grove.io`` PodCliqueSet (ownerReference with
its uid) are ever replaced or deleted; objects Git applied are never touched.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from grove_gitops.agent.kube import PODGANG_GROUP, PODGANG_VERSION
from grove_gitops.expand import labels as L
from grove_gitops.expand import ownership
from grove_gitops.expand.gitsplit import ObjectKey, object_key
from grove_gitops.readmodel.snapshot import hostname_of

Raw = Mapping[str, Any]
POD = ("v1", "Pod")
PODGANG_KIND = "PodGang"
PODGANG_API_VERSION = f"{PODGANG_GROUP}/{PODGANG_VERSION}"


def owned_by(obj: Raw, uid: str) -> bool:
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    return isinstance(refs, list) and any(isinstance(r, Mapping) and r.get("uid") == uid for r in refs)


def _int_label(obj: Raw, key: str) -> int:
    value = ((obj.get("metadata") or {}).get("labels") or {}).get(key)
    if not isinstance(value, str) or not value.isdigit() or len(value) > 9:
        return -1
    try:
        return int(value)
    except (TypeError, ValueError):
        return -1


def unit_of(obj: Raw, units: Collection[str]) -> tuple[str, int] | None:
    """(scale target, index of its count) of a pod of an autoscaled unit named in ``units``:
    a scaling group's pods by their group replica, a standalone clique's by their pod index;
    None for any other pod (Git's units), or labels no render writes."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    group, clique = labels.get(L.PCSG), labels.get(L.PODCLIQUE)
    if isinstance(group, str) and group in units:
        index = _int_label(obj, L.PCSG_REPLICA_INDEX)
        return (group, index) if index >= 0 else None
    if isinstance(clique, str) and clique in units:
        index = _int_label(obj, L.POD_INDEX)
        return (clique, index) if index >= 0 else None
    return None


def _is_pod(key: ObjectKey) -> bool:
    return (key[0], key[1]) == POD


def _is_gang(key: ObjectKey) -> bool:
    return key[1] == PODGANG_KIND and key[0].startswith("scheduler.grove.io/")


def gang_members(podgang: Raw) -> list[str]:
    """Names of the pods a rendered PodGang lists."""
    out: list[str] = []
    for group in (podgang.get("spec") or {}).get("podgroups") or []:
        for ref in group.get("podReferences") or []:
            if isinstance(ref, Mapping) and isinstance(ref.get("name"), str):
                out.append(ref["name"])
    return out


def gang_object_keys(podgang: Raw, namespace: str) -> list[ObjectKey]:
    raw = ((podgang.get("metadata") or {}).get("annotations") or {}).get(L.GANG_OBJECTS)
    try:
        refs = json.loads(raw) if isinstance(raw, str) else []
    except (ValueError, RecursionError):  # hand-edited: lists nothing the agent deletes
        return []
    return [
        (str(r.get("apiVersion")), str(r.get("kind")), namespace, str(r.get("name")))
        for r in refs if isinstance(r, Mapping)
    ] if isinstance(refs, list) else []


@dataclass
class GangCreate:
    """A gang to create whole: ``pods`` first, then ``objects`` (backend objects, PodGang last)."""

    name: str
    pods: list[dict[str, Any]] = field(default_factory=list)
    objects: list[dict[str, Any]] = field(default_factory=list)
    #: Its pods that exist already and are the agent's (an earlier try, cut short): a refused
    #: gang takes them back too, so no part of it holds quota.
    existing: list[Raw] = field(default_factory=list)


@dataclass
class Plan:
    #: Objects no gang needs first (ResourceClaims), created before any gang.
    loose: list[dict[str, Any]] = field(default_factory=list)
    gangs: list[GangCreate] = field(default_factory=list)
    #: Pods joining a gang that exists (an autoscaled clique's new pods), created once
    #: ``replace`` has listed them in it.
    join: list[dict[str, Any]] = field(default_factory=list)
    replace: list[dict[str, Any]] = field(default_factory=list)
    #: (key, uid) in order: pods first, highest index first, then what no pod needs any more.
    delete: list[tuple[ObjectKey, str]] = field(default_factory=list)

    def delete_waves(self) -> list[list[tuple[ObjectKey, str]]]:
        """:attr:`delete` in waves sent one after the other, each wave's deletes at once: the
        pods of one scaling-group replica (or one pod of a clique), highest first, then the
        rest. So a lower replica never starts going before a higher one."""
        waves: list[list[tuple[ObjectKey, str]]] = []
        last: object = None
        for item in self.delete:
            wave = self.wave_of.get(item[0], ("rest",))
            if not waves or wave != last or wave[0] == "pod":
                waves.append([])
            waves[-1].append(item)
            last = wave
        return waves

    #: The wave of each pod to delete: ("replica", index) for a scaling-group pod, ("pod",) for
    #: a clique's (one pod per wave).
    wave_of: dict[ObjectKey, tuple[Any, ...]] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not (self.loose or self.gangs or self.join or self.replace or self.delete)

    @property
    def new_pods(self) -> int:
        return sum(len(g.pods) for g in self.gangs) + len(self.join)


def _differs(desired: Raw, live: Raw) -> bool:
    if desired.get("spec") != live.get("spec"):
        return True
    dm, lm = desired.get("metadata") or {}, live.get("metadata") or {}
    for part in ("labels", "annotations"):
        have = lm.get(part) or {}
        if any(have.get(k) != v for k, v in (dm.get(part) or {}).items()):
            return True
    return False


def _adoptable(pod: Raw, key: ObjectKey, live: Mapping[ObjectKey, Raw], uid: str, units: Collection[str]) -> bool:
    """A pod Git applied that the agent may scale in: it carries the render's ownership proof,
    belongs to an autoscaled unit, and its PodGang is gone or the agent's. A pod Git has just
    applied (its record not yet updated, or a unit Git scales) sits in a PodGang Git applied
    first, so it is never taken."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    if labels.get(L.PCSG) not in units and labels.get(L.PODCLIQUE) not in units:
        return False
    gang = live.get((PODGANG_API_VERSION, PODGANG_KIND, key[2], str(labels.get(L.PODGANG, ""))))
    return (gang is None or owned_by(gang, uid)) and ownership.verify(pod)


def plan(desired: Mapping[ObjectKey, dict[str, Any]], live: Mapping[ObjectKey, Raw], uid: str,
         git: Collection[ObjectKey] = (), *, units: Collection[str] = ()) -> Plan:
    """The writes that take ``live`` (every object of the workload the agent can see, owned or
    not, by key) to ``desired`` (the objects the agent must hold); ``git`` are the keys Git holds.

    A pod Git applied and no longer holds (the floor was lowered, so its replica became the
    agent's) is the agent's to scale in too (:func:`_adoptable`, for the scale targets named in
    ``units``): no one else would ever delete it. With no ``units`` (the whole workload left
    Git) nothing is taken: Git's pods are then the day-2 loop's, after its grace period."""
    out = Plan()
    missing = {k: o for k, o in desired.items() if k not in live}
    claimed: set[ObjectKey] = set()
    for key, obj in desired.items():
        if not _is_gang(key):
            continue
        members = [k for k in ((*POD, key[2], n) for n in gang_members(obj)) if k in missing]
        extras = [k for k in gang_object_keys(obj, key[2]) if k in missing]
        if key in missing:
            names = gang_members(obj)
            existing = [live[k] for k in ((*POD, key[2], n) for n in names) if k in live and owned_by(live[k], uid)]
            out.gangs.append(
                GangCreate(key[3], [missing[k] for k in members], [missing[k] for k in extras] + [obj], existing)
            )
            claimed.update(members, extras, [key])
    for key, obj in missing.items():
        if key in claimed:
            continue
        if _is_pod(key):
            out.join.append(obj)
        else:
            out.loose.append(obj)
    for key, obj in desired.items():
        have = live.get(key)
        if have is not None and not _is_pod(key) and owned_by(have, uid) and _differs(obj, have):
            out.replace.append(obj)
    # Slots the render wants, the agent's and Git's: a pod in one is the old pod of a rolling
    # update (the day-2 loop retires it in Grove's order), never a scale-in victim. A rendered
    # pod is named ``<slot>-<hash8>``.
    wanted_slots = {((o.get("spec") or {}).get("hostname")) for k, o in desired.items() if _is_pod(k)}
    wanted_slots |= {hostname_of(k[3]) for k in git if _is_pod(k)}
    owned_extra = {
        k: o for k, o in live.items()
        if k not in desired
        and (owned_by(o, uid) or (units and _is_pod(k) and k not in git and _adoptable(o, k, live, uid, units)))
    }
    pods = [
        (k, o) for k, o in owned_extra.items()
        if _is_pod(k) and (o.get("spec") or {}).get("hostname") not in wanted_slots
    ]
    pods.sort(key=lambda ko: (_int_label(ko[1], L.PCSG_REPLICA_INDEX), _int_label(ko[1], L.POD_INDEX), ko[0]),
              reverse=True)
    out.delete.extend((k, _uid(o)) for k, o in pods if not _terminating(o))
    for k, o in pods:
        j = _int_label(o, L.PCSG_REPLICA_INDEX)
        out.wave_of[k] = ("replica", j) if j >= 0 else ("pod",)
    # Gangs (and what hangs off them) go once no pod of the workload names them any more.
    named = {((o.get("metadata") or {}).get("labels") or {}).get(L.PODGANG) for k, o in live.items() if _is_pod(k)}
    pods_leaving = bool(pods)
    for key, extra in owned_extra.items():
        if _is_pod(key) or _terminating(extra):
            continue
        if _is_gang(key):
            if key[3] in named:
                continue
        elif pods_leaving:
            continue
        out.delete.append((key, _uid(extra)))
    return out


def _uid(obj: Raw) -> str:
    return str((obj.get("metadata") or {}).get("uid") or "")


def _terminating(obj: Raw) -> bool:
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def live_index(objects: list[Raw]) -> dict[ObjectKey, Raw]:
    return {object_key(dict(o)): o for o in objects}
