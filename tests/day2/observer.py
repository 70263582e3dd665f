"""Records every pod event of a namespace and answers questions about every observed moment.

The observer lists pods once, then watches from that list's resourceVersion: the API server
sends every change in resourceVersion order, so the sequence of states it rebuilds is the
sequence of states the pod collection went through (a moment per event). Scenario tests then
assert invariants over all of them, e.g. "the unavailable slots never exceeded one
PodCliqueSet replica's step" or "two pods never shared a hostname while both were ungated".

A slot is ``(namespace, spec.hostname)``. It is *available* at a moment when some pod in it
is Running, Ready and not terminating. A watch that had to re-list (410, broken stream)
means moments may have been missed: :attr:`relists` counts that, and tests assert it is 0.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import kubernetes.client

from tests.day2.rest import Raw, Rest, key_of, list_watch

Slot = tuple[str, str]  # (namespace, hostname)


@dataclass(frozen=True)
class Unit:
    """Where a slot sits in Grove's rolling order, from the pod's labels.

    ``group`` is the standalone PodClique (FQN) or the PodCliqueScalingGroup (FQN); ``member``
    the hostname (standalone: pods roll one at a time) or the scaling-group replica index (a
    scaling-group replica's pods roll together).
    """

    pcs: str
    replica: str
    group: str
    member: str

    @staticmethod
    def of(labels: dict[str, str], hostname: str) -> Unit:
        pcsg = labels.get("grove.io/podcliquescalinggroup")
        return Unit(
            pcs=labels.get("app.kubernetes.io/part-of", ""),
            replica=labels.get("grove.io/podcliqueset-replica-index", ""),
            group=pcsg or labels.get("grove.io/podclique", ""),
            member=labels.get("grove.io/podcliquescalinggroup-replica-index", "") if pcsg else hostname,
        )


def rolling_bound_problem(units: Iterable[Unit], strict: bool = False) -> str | None:
    """Why the unavailable ``units`` exceed a RollingRecreate's bound, or ``None`` when within.

    Grove's bound (spec grove-day2 §2.2, §2.6): per PodCliqueSet one replica at a time; inside
    it every standalone PodClique has at most one pod down and every scaling group at most one
    replica down, cliques and groups rolling concurrently. ``strict`` asks for the narrower
    reading "one standalone pod or one scaling-group replica of the PodCliqueSet at a time".
    """
    by_pcs: dict[str, set[Unit]] = {}
    for unit in units:
        by_pcs.setdefault(unit.pcs, set()).add(unit)
    for pcs, down in sorted(by_pcs.items()):
        replicas = {u.replica for u in down}
        if len(replicas) > 1:
            return f"{pcs}: replicas {sorted(replicas)} unavailable at once"
        members: dict[str, set[str]] = {}
        for unit in down:
            members.setdefault(unit.group, set()).add(unit.member)
        for group, present in sorted(members.items()):
            if len(present) > 1:
                return f"{pcs}: {group}: {sorted(present)} unavailable at once"
        if strict and len(members) > 1:
            return f"{pcs}: {sorted(members)} unavailable at once"
    return None


@dataclass(frozen=True)
class PodView:
    """What the invariants need of one pod at one moment."""

    namespace: str
    name: str
    uid: str
    hostname: str
    gated: bool
    ready: bool
    terminating: bool
    phase: str
    node: str
    template_hash: str
    images: tuple[str, ...]
    resource_version: str
    unit: Unit

    @property
    def slot(self) -> Slot:
        return self.namespace, self.hostname

    @property
    def available(self) -> bool:
        return self.ready and not self.terminating and self.phase == "Running"

    @staticmethod
    def of(pod: Raw) -> PodView:
        meta, spec, status = pod["metadata"], pod.get("spec") or {}, pod.get("status") or {}
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])
        return PodView(
            namespace=str(meta.get("namespace", "")),
            name=str(meta["name"]),
            uid=str(meta.get("uid", "")),
            hostname=str(spec.get("hostname") or ""),
            gated=bool(spec.get("schedulingGates")),
            ready=ready,
            terminating=bool(meta.get("deletionTimestamp")),
            phase=str(status.get("phase") or ""),
            node=str(spec.get("nodeName") or ""),
            template_hash=str((meta.get("labels") or {}).get("grove.io/pod-template-hash", "")),
            images=tuple(str(c.get("image", "")) for c in spec.get("containers") or []),
            resource_version=str(meta.get("resourceVersion", "")),
            unit=Unit.of(meta.get("labels") or {}, str(spec.get("hostname") or "")),
        )


@dataclass(frozen=True)
class Moment:
    """The pods of the watched namespace right after one event (``event`` ``SYNC`` for a list)."""

    index: int
    time: float
    resource_version: int
    event: str
    pod: str
    pods: tuple[PodView, ...]

    def in_slot(self, slot: Slot) -> list[PodView]:
        return [p for p in self.pods if p.slot == slot]

    def slots(self) -> dict[Slot, list[PodView]]:
        out: dict[Slot, list[PodView]] = {}
        for pod in self.pods:
            if pod.hostname:
                out.setdefault(pod.slot, []).append(pod)
        return out

    def available(self, slot: Slot) -> bool:
        return any(p.available for p in self.in_slot(slot))

    def unavailable(self, slots: Iterable[Slot]) -> set[Slot]:
        """Which of ``slots`` have no available pod at this moment."""
        by_slot = self.slots()
        return {s for s in slots if not any(p.available for p in by_slot.get(s, []))}

    def shared_hostnames(self) -> dict[Slot, list[str]]:
        """Slots in which two or more existing pods are ungated (terminating ones included)."""
        return {
            slot: sorted(p.name for p in pods if not p.gated)
            for slot, pods in self.slots().items()
            if sum(not p.gated for p in pods) > 1
        }

    def describe(self) -> str:
        rows = [f"moment {self.index} (rv {self.resource_version}, {self.event} {self.pod}):"]
        for p in sorted(self.pods, key=lambda v: (v.hostname, v.name)):
            flags = [
                "gated" if p.gated else "ungated",
                "ready" if p.ready else "not-ready",
                *(["terminating"] if p.terminating else []),
                p.phase,
            ]
            rows.append(f"  {p.hostname or '-':40} {p.name:48} {' '.join(flags)}")
        return "\n".join(rows)


@dataclass
class Observer:
    """Watches the pods of ``namespace`` in a thread; see the module docstring."""

    api_client: kubernetes.client.ApiClient
    namespace: str
    moments: list[Moment] = field(default_factory=list)
    relists: int = 0

    def __post_init__(self) -> None:
        self.rest = Rest(self.api_client)
        self._pods: dict[tuple[str, str], PodView] = {}
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lists = 0
        self.units: dict[Slot, Unit] = {}  # every slot ever seen -> its unit (from its pods' labels)

    def start(self) -> Observer:
        path = f"/api/v1/namespaces/{self.namespace}/pods"
        self._thread = threading.Thread(
            target=list_watch,
            args=(self.rest, path, self._on_list, self._on_event, self._stop),
            name="day2-observer",
            daemon=True,
        )
        self._thread.start()
        with self._lock:
            if not self._changed.wait_for(lambda: self._lists > 0, timeout=10):
                raise RuntimeError("observer: the pod list never arrived")
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def __enter__(self) -> Observer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- recording ---------------------------------------------------------------------------
    def _record(self, event: str, pod: str, rv: str) -> None:
        for view in self._pods.values():
            if view.hostname:
                self.units.setdefault(view.slot, view.unit)
        self.moments.append(
            Moment(len(self.moments), time.monotonic(), int(rv or 0), event, pod, tuple(self._pods.values()))
        )
        self._changed.notify_all()

    def _on_list(self, items: list[Raw], rv: str) -> None:
        with self._lock:
            if self._lists:
                self.relists += 1
            self._lists += 1
            self._pods = {key_of(p): PodView.of(p) for p in items}
            self._record("SYNC", "", rv)

    def _on_event(self, kind: str, pod: Raw) -> None:
        key = key_of(pod)
        with self._lock:
            if kind == "DELETED":
                self._pods.pop(key, None)
            else:
                self._pods[key] = PodView.of(pod)
            self._record(kind, key[1], str(pod["metadata"].get("resourceVersion", "0")))

    # -- questions ---------------------------------------------------------------------------
    def mark(self) -> int:
        """The index the next moment will get: pass it as ``since`` to ask about what follows."""
        with self._lock:
            return len(self.moments)

    def since(self, index: int = 0) -> list[Moment]:
        with self._lock:
            return self.moments[index:]

    def now(self) -> Moment:
        with self._lock:
            return self.moments[-1]

    def versions(self) -> dict[str, str]:
        """``{pod name: resourceVersion}`` as the observer sees the namespace now."""
        with self._lock:
            return {key[1]: view.resource_version for key, view in self._pods.items()}

    def max_unavailable(self, slots: Iterable[Slot], since: int = 0) -> tuple[int, Moment | None]:
        """The most of ``slots`` unavailable at any one moment after ``since``, and that moment."""
        wanted = list(slots)
        worst, at = -1, None
        for moment in self.since(since):
            count = len(moment.unavailable(wanted))
            if count > worst:
                worst, at = count, moment
        return max(worst, 0), at

    def rolling_bound_violation(
        self, slots: Iterable[Slot], since: int = 0, strict: bool = False
    ) -> tuple[Moment, str] | None:
        """The first moment after ``since`` whose unavailable ``slots`` exceed the rolling bound."""
        wanted = list(slots)
        for moment in self.since(since):
            down = moment.unavailable(wanted)
            with self._lock:
                units = [self.units[s] for s in down if s in self.units]
            problem = rolling_bound_problem(units, strict)
            if problem is not None:
                return moment, problem
        return None

    def first_violation(self, predicate: Callable[[Moment], bool], since: int = 0) -> Moment | None:
        """The first moment after ``since`` for which ``predicate`` is false."""
        for moment in self.since(since):
            if not predicate(moment):
                return moment
        return None

    def hostname_conflicts(self, since: int = 0) -> list[tuple[Moment, dict[Slot, list[str]]]]:
        """Every moment at which two ungated pods shared a hostname, with the slots concerned."""
        out = []
        for moment in self.since(since):
            shared = moment.shared_hostnames()
            if shared:
                out.append((moment, shared))
        return out

    def events_for(self, name: str, since: int = 0) -> list[str]:
        """The event types seen for pod ``name`` after ``since``."""
        return [m.event for m in self.since(since) if m.pod == name]
