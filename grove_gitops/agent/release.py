"""Gate release: which gated pods may run now (``spec/grove-desired-state.md`` §6, day-2 §2.5).

- A PodGang that is not ``Initialized`` is released as a whole, once complete
  (:func:`~.gangs.decide`: every referenced pod exists, backend objects exist, a scaled gang's
  base gang is scheduled), as the gate-lifter always did.
- An ``Initialized`` PodGang (its gang was scheduled before) releases each referenced pod on
  its own, as Grove does for replacements (§2.5 rule 5): rolling updates, failed-pod
  replacements and scale-outs. A scaled gang's pod still waits for its base gang.
- Either way a pod is released only when its slot is free: no released old pod is left on
  its hostname (even a terminating one), so two pods never share a hostname.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from grove_gitops.agent import gangs as G
from grove_gitops.agent.snapshot import Key, Snapshot


class _Live(Mapping[Key, Mapping[str, Any]]):
    """The raw pods as a whole-gang decision may count them: without the pods the snapshot
    sees terminating, which includes every pod the agent deleted or is deleting, whatever the
    cache says (a watch event older than the DELETE can still show such a pod running).

    Issue 22: right after a gang termination the agent judged the gang from a cache where
    the pods it was deleting did not look terminating yet, found it complete, marked it
    ``Initialized`` again and then released the re-created pods one by one. A view, not a
    copy: a decision looks up only the gang's own pods.
    """

    def __init__(self, raw: Mapping[Key, Mapping[str, Any]], snap: Snapshot) -> None:
        self._raw, self._snap = raw, snap

    def __getitem__(self, key: Key) -> Mapping[str, Any]:
        view = self._snap.pods.get(key)
        if view is not None and view.terminating:
            raise KeyError(key)
        return self._raw[key]

    def __iter__(self) -> Iterator[Key]:
        return (k for k in self._raw if k in self)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, tuple) or key not in self._raw:
            return False
        view = self._snap.pods.get(key)
        return view is None or not view.terminating


@dataclass
class GangRelease:
    """The decision for one PodGang."""

    complete: bool  # nothing left to wait for (whole-gang: mark Initialized after the release)
    whole_gang: bool  # not Initialized yet: released as a whole
    to_ungate: list[tuple[str, str]] = field(default_factory=list)  # (name, uid)
    waiting_for: list[str] = field(default_factory=list)
    poll: bool = False  # waits only for a backend object, which no watch reports (ask again)


def _blocked(snap: Snapshot) -> dict[Key, str]:
    """Referenced pods whose slot still holds a released old pod -> that pod's name."""
    out: dict[Key, str] = {}
    for wl in snap.workloads.values():
        for slot in wl.slots.values():
            if slot.new_name is not None and not slot.free:
                out[(slot.namespace, slot.new_name)] = slot.released_old[0].name
    return out


def _slots_by_new(snap: Snapshot) -> dict[Key, list[Any]]:
    """Referenced pod -> the released old pods still in its slot."""
    out: dict[Key, list[Any]] = {}
    for wl in snap.workloads.values():
        for slot in wl.slots.values():
            if slot.new_name is not None and slot.released_old:
                out[(slot.namespace, slot.new_name)] = slot.released_old
    return out


def base_scheduled(base: Mapping[str, Any], snap: Snapshot, holders: Mapping[Key, list[Any]]) -> list[str]:
    """Podgroups of a base gang below ``minReplicas`` scheduled pods (empty = scheduled).

    Grove reads the PodClique's ``scheduledReplicas``, which counts every pod of the PodClique.
    Here a podgroup counts its referenced pods, and, once the base gang is ``Initialized``,
    the old pod still holding a referenced pod's slot (mid-rollout the base gang's new pods
    wait for their turn; a scaled gang's replacement must not wait for them, or the rollout
    deadlocks). Old pods in *other* slots never count.
    """
    name = str((base.get("metadata") or {}).get("name"))
    initialized = any(
        isinstance(c, dict) and c.get("type") == "Initialized" and c.get("status") == "True"
        for c in (base.get("status") or {}).get("conditions") or []
    )
    counts: dict[str, int] = {}
    for group, ns, pod_name in G.referenced_pods(base):
        pod = snap.pods.get((ns, pod_name))
        candidates = [pod] if pod is not None and pod.podgang == name else []
        if initialized:
            candidates += holders.get((ns, pod_name), [])
        if any(p.scheduled and not p.terminating and not p.finished for p in candidates):
            counts[group] = counts.get(group, 0) + 1
    out = []
    for g in (base.get("spec") or {}).get("podgroups") or []:
        need = g.get("minReplicas", 0)
        need = need if isinstance(need, int) else 0
        if counts.get(g["name"], 0) < need:
            out.append(f"base PodGang {name}: podgroup {g['name']} has {counts.get(g['name'], 0)}/{need} scheduled pods")
    return out


def decide_gang(
    key: Key,
    snap: Snapshot,
    raw_pods: Mapping[Key, Mapping[str, Any]],
    gangs_by_name: Mapping[str, Mapping[str, Any]],
    object_exists: Callable[[G.ObjectRef], bool],
    blocked: Mapping[Key, str],
    holders: Mapping[Key, list[Any]] | None = None,
) -> GangRelease:
    """Release decision for one PodGang; raises :class:`~.gangs.MalformedPodGang`."""
    if key in snap.malformed:
        raise G.MalformedPodGang(snap.malformed[key])
    gang = snap.gangs.get(key)
    if gang is None:
        return GangRelease(False, True, [], ["PodGang"])
    blocking = [f"slot of pod {ns}/{name} still holds pod {blocked[(ns, name)]}" for _, ns, name in gang.refs if (ns, name) in blocked]
    if not gang.initialized:
        held = holders or {}
        decision = G.decide(gang.raw, _Live(raw_pods, snap), object_exists if not blocking else (lambda _ref: True), gangs_by_name,
                            lambda base: base_scheduled(base, snap, held))
        waiting = decision.waiting_for + blocking
        if waiting:
            return GangRelease(False, True, [], waiting, poll=decision.poll and not blocking)
        return GangRelease(True, True, [(n, decision.uids.get(n, "")) for n in decision.to_ungate])
    out = GangRelease(True, False)
    base_ok: dict[str, list[str]] = {}
    for _group, ns, name in gang.refs:
        pod = snap.pods.get((ns, name))
        if pod is None or pod.terminating or pod.podgang != gang.name or not pod.gated:
            continue
        if (ns, name) in blocked:
            out.waiting_for.append(f"slot of pod {ns}/{name} still holds pod {blocked[(ns, name)]}")
            continue
        base = G.base_label(pod.raw)
        if base:
            if base not in base_ok:
                base_gang = gangs_by_name.get(base)
                base_ok[base] = (
                    [f"base PodGang {base}"] if base_gang is None else base_scheduled(base_gang, snap, holders or {})
                )
            if base_ok[base]:
                out.waiting_for.extend(base_ok[base])
                continue
        out.to_ungate.append((name, pod.uid))
    out.complete = not out.waiting_for
    return out


def decide_all(
    keys: Iterable[Key],
    snap: Snapshot,
    raw_pods: Mapping[Key, Mapping[str, Any]],
    raw_gangs: Mapping[Key, Mapping[str, Any]],
    object_exists: Callable[[G.ObjectRef], bool],
) -> dict[Key, GangRelease | G.MalformedPodGang]:
    """Decisions for several gangs; a malformed gang yields its error, never blocks others."""
    blocked = _blocked(snap)
    holders = _slots_by_new(snap)
    by_ns: dict[str, dict[str, Mapping[str, Any]]] = {}
    for (ns, name), raw in raw_gangs.items():
        by_ns.setdefault(ns, {})[name] = raw
    out: dict[Key, GangRelease | G.MalformedPodGang] = {}
    for key in keys:
        try:
            out[key] = decide_gang(key, snap, raw_pods, by_ns.get(key[0], {}), object_exists, blocked, holders)
        except G.MalformedPodGang as exc:
            out[key] = exc
    return out
