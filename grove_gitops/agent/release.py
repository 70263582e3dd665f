"""Gate release: which gated pods may run now (``spec/grove-desired-state.md`` §6, day-2 §2.5).

- A PodGang that is not ``Initialized`` is released as a whole, once complete
  (:func:`~grove_gitops.readmodel.gangs.decide`: every referenced pod exists, backend objects exist, a scaled gang's
  base gang is scheduled), as the gate-lifter always did.
- An ``Initialized`` PodGang (its gang was scheduled before) releases each referenced pod on
  its own, as Grove does for replacements (§2.5 rule 5): rolling updates, failed-pod
  replacements and scale-outs. A scaled gang's pod still waits for its base gang.
- Either way a pod is released only while it still carries what ties it to its gang as the
  render wrote it (its scheduler name, its backend's PodGroup label or annotation:
  :mod:`~grove_gitops.readmodel.binding`); a pod that lost one would be placed alone.
- Either way a pod is released only when its slot is free: no released old pod is left on
  its hostname (even a terminating one), so two pods never share a hostname.
- At the moment of release (:class:`ReleaseGuard`) every pod released is re-checked: it
  exists, is not terminating, is not being deleted by the autoscaling loop, and is still
  wanted at the latest count; the autoscaling loop deletes no pod while a release of it is
  under way (issue 31: a burst 3 -> 8 -> 3 released 3 pods of a 4-pod gang whose 4th was
  being deleted by the scale-in).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from grove_gitops.readmodel import gangs as G
from grove_gitops.readmodel.snapshot import Key, Snapshot


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
    """Release decision for one PodGang; raises :class:`~grove_gitops.readmodel.gangs.MalformedPodGang`."""
    if key in snap.malformed:
        raise G.MalformedPodGang(snap.malformed[key])
    gang = snap.gangs.get(key)
    if gang is None:
        return GangRelease(False, True, [], ["PodGang"])
    blocking = [f"slot of pod {ns}/{name} still holds pod {blocked[(ns, name)]}" for _, ns, name in gang.refs if (ns, name) in blocked]
    if not gang.initialized:
        held = holders or {}
        decision = G.decide(gang.raw, _Live(raw_pods, snap), object_exists if not blocking else (lambda _ref: True), gangs_by_name,
                            lambda base: base_scheduled(base, snap, held), gang.binding.mismatch)
        waiting = decision.waiting_for + blocking
        if waiting:
            return GangRelease(False, True, [], waiting, poll=decision.poll and not blocking)
        return GangRelease(True, True, [(n, decision.uids.get(n, "")) for n in decision.to_ungate])
    out = GangRelease(True, False)
    base_ok: dict[str, list[str]] = {}
    for group, ns, name in gang.refs:
        pod = snap.pods.get((ns, name))
        if pod is None or pod.terminating or pod.podgang != gang.name or not pod.gated:
            continue
        if (ns, name) in blocked:
            out.waiting_for.append(f"slot of pod {ns}/{name} still holds pod {blocked[(ns, name)]}")
            continue
        unbound = gang.binding.mismatch(group, pod.raw)
        if unbound is not None:
            out.waiting_for.append(f"pod {ns}/{name} to be bound to its gang as rendered: {unbound}")
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


def _uid(pod: Mapping[str, Any]) -> str:
    return str((pod.get("metadata") or {}).get("uid") or "")


class ReleaseGuard:
    """Releases and the autoscaling loop's deletes of the same pods never overlap.

    The day-2 loop decides a release from a snapshot and then patches the gates; the
    autoscaling loop, in its own thread, may meanwhile read a lower count and delete pods of
    that gang. Both go through here:

    - :meth:`begin` (the releaser, right before its gate patches): refused when a pod is being
      retired or is no longer wanted (``wanted``, the autoscaling loop's check against the
      latest count); otherwise the pods are marked as being released until :meth:`end`;
    - :meth:`retire` (the autoscaling loop, before its DELETEs): marks the pods, so no release
      of them begins any more, and waits until releases of them already under way are done.
      A gang is thus released whole before it is deleted, or not released at all.

    Retired uids are dropped by :meth:`forget` once the cache no longer holds them.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._retiring: set[str] = set()
        self._releasing: dict[str, int] = {}
        #: Whether a pod is still wanted at the latest count (set by the autoscaling loop).
        self.wanted: Callable[[Mapping[str, Any]], bool] = lambda _pod: True

    def begin(self, pods: Sequence[Mapping[str, Any]]) -> bool:
        uids = [_uid(p) for p in pods]
        with self._cond:
            if any(u in self._retiring for u in uids) or not all(self.wanted(p) for p in pods):
                return False
            for u in uids:
                self._releasing[u] = self._releasing.get(u, 0) + 1
            return True

    def end(self, pods: Sequence[Mapping[str, Any]]) -> None:
        with self._cond:
            for pod in pods:
                u = _uid(pod)
                left = self._releasing.get(u, 0) - 1
                if left > 0:
                    self._releasing[u] = left
                else:
                    self._releasing.pop(u, None)
            self._cond.notify_all()

    def retire(self, uids: Iterable[str], timeout: float = 30.0) -> None:
        """Mark pods about to be deleted; return once no release of them is under way (gate
        patches have their own timeouts: ``timeout`` only bounds a bug)."""
        wanted = {u for u in uids if u}
        with self._cond:
            self._retiring |= wanted
            self._cond.wait_for(lambda: not wanted & self._releasing.keys(), timeout)

    def retiring(self, uid: str) -> bool:
        with self._cond:
            return uid in self._retiring

    def forget(self, live_uids: set[str]) -> None:
        with self._cond:
            self._retiring &= live_uids
