"""Records every pod event of a namespace and answers questions about every observed moment.

The observer lists pods once, then watches from that list's resourceVersion: the API server
sends every change in resourceVersion order, so the sequence of states it rebuilds is the
sequence of states the pod collection went through (a moment per event). Scenario tests then
assert invariants over all of them, e.g. "the unavailable slots never exceeded one
PodCliqueSet replica's step" or "two pods never shared a hostname while both were ungated".

A slot is ``(namespace, spec.hostname)``. It is *available* at a moment when some pod in it
is Running, Ready and not terminating. A watch that had to re-list (410, broken stream)
means moments may have been missed: :attr:`relists` counts that, and tests assert it is 0.

It also watches the namespace's PodGangs (:class:`GangHistory`). The API server has one
resourceVersion counter for every kind, so a PodGang's state "at" a pod moment is its last
version at or below the moment's resourceVersion. The invariants every scenario checks at
its end (:func:`partial_releases`, :func:`lingering_partial_releases`, :func:`emptied_slots`)
are written against that merged history; see each for why it takes the form it does.
"""

from __future__ import annotations

import bisect
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
    podgang: str = ""  # label grove.io/podgang
    podclique: str = ""  # label grove.io/podclique (= the name of its PodGang podgroup)

    @property
    def slot(self) -> Slot:
        return self.namespace, self.hostname

    @property
    def available(self) -> bool:
        return self.ready and not self.terminating and self.phase == "Running"

    @property
    def live(self) -> bool:
        """Counts towards its podgroup: not terminating, not Failed or Succeeded."""
        return not self.terminating and self.phase not in ("Failed", "Succeeded")

    @staticmethod
    def of(pod: Raw) -> PodView:
        meta, spec, status = pod["metadata"], pod.get("spec") or {}, pod.get("status") or {}
        labels = meta.get("labels") or {}
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
            unit=Unit.of(labels, str(spec.get("hostname") or "")),
            podgang=str(labels.get("grove.io/podgang", "")),
            podclique=str(labels.get("grove.io/podclique", "")),
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
    before: PodView | None = None  # the event's pod just before it (None: ADDED, SYNC)
    after: PodView | None = None  # ... and just after it (None: DELETED, SYNC)

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


@dataclass(frozen=True)
class GangView:
    """What the invariants need of one PodGang version."""

    namespace: str
    name: str
    resource_version: int
    min_replicas: dict[str, int]  # podgroup -> minReplicas
    refs: dict[str, tuple[str, ...]]  # podgroup -> referenced pod names
    initialized: str  # the Initialized condition's status ("" when absent)
    initialized_reason: str

    @staticmethod
    def of(gang: Raw) -> GangView:
        meta, spec = gang["metadata"], gang.get("spec") or {}
        groups = [g for g in spec.get("podgroups") or [] if isinstance(g, dict)]
        conditions = {str(c.get("type")): c for c in (gang.get("status") or {}).get("conditions") or []
                      if isinstance(c, dict)}
        init = conditions.get("Initialized") or {}
        return GangView(
            namespace=str(meta.get("namespace", "")),
            name=str(meta["name"]),
            resource_version=int(meta.get("resourceVersion") or 0),
            min_replicas={str(g.get("name")): int(g.get("minReplicas") or 0) for g in groups},
            refs={str(g.get("name")): tuple(str(r.get("name")) for r in g.get("podReferences") or [])
                  for g in groups},
            initialized=str(init.get("status", "")),
            initialized_reason=str(init.get("reason", "")),
        )


@dataclass(frozen=True)
class GangEvent:
    """One PodGang event (``gang`` is None for DELETED)."""

    time: float
    resource_version: int
    event: str
    namespace: str
    name: str
    gang: GangView | None


class GangHistory:
    """Every PodGang version seen, answerable at a resourceVersion (the one global counter)."""

    def __init__(self, events: Iterable[GangEvent]) -> None:
        self.events = sorted(events, key=lambda e: e.resource_version)
        self._by_gang: dict[tuple[str, str], tuple[list[int], list[GangView | None]]] = {}
        for e in self.events:
            rvs, views = self._by_gang.setdefault((e.namespace, e.name), ([], []))
            rvs.append(e.resource_version)
            views.append(e.gang)

    def at(self, namespace: str, name: str, resource_version: int) -> GangView | None:
        """The PodGang as it was right after ``resource_version`` (None: absent then)."""
        rvs, views = self._by_gang.get((namespace, name), ([], []))
        i = bisect.bisect_right(rvs, resource_version)
        return views[i - 1] if i else None

    def of(self, namespace: str, name: str) -> list[GangEvent]:
        return [e for e in self.events if (e.namespace, e.name) == (namespace, name)]


Problem = tuple[Moment, str]


def partial_releases(moments: Iterable[Moment], gangs: GangHistory,
                     exempt: Callable[[Moment, PodView], bool] | None = None) -> list[Problem]:
    """Every release of a pod from a podgroup that was incomplete at that moment (issue 22).

    A release is a moment at which a pod goes from gated to ungated. At it, the pod's PodGang
    podgroup (the pods labelled ``grove.io/podgang=<gang>`` and ``grove.io/podclique=<podgroup>``)
    must hold at least the podgroup's ``minReplicas`` pods that are not terminating and not
    Failed/Succeeded, gated or not, the released pod included; ``minReplicas`` is read from
    the PodGang as it was at that resourceVersion.

    Why this form, and not "no moment with some pods of a podgroup ungated and others gated":
    the observer sees one event per moment and a whole-gang release is one gate patch per pod,
    so every correct release of a gang of n pods passes through n-1 moments that look
    partial. What a correct agent guarantees at each gate removal is that the podgroup is
    complete (its pods exist and are alive); releasing a pod while its podgroup is short (a
    re-created pod not yet there, a deleted one still counted) is exactly a partial gang.
    For an Initialized gang (a rolling update, a Failed pod's replacement) the others of
    the podgroup are its live old or new pods, so one-by-one replacement passes.

    ``exempt`` (the test's own losses, :meth:`~tests.day2.harness.Day2Env.exempt`): Grove
    releases a replacement in an *Initialized* PodGang on its own, whatever else of the
    podgroup is missing (``spec/grove-day2.md`` §2.5 rule 5). So there, a referenced slot
    whose last pod the test itself failed or deleted (and that holds no live pod yet) counts
    as present: a chaos run that takes two pods of a podgroup at once does not make the first
    replacement's release partial. A slot the agent emptied still counts as missing, and so
    does every slot of a gang that is not Initialized (released whole, issue 22).
    """
    out: list[Problem] = []
    lost_by_test: dict[Slot, bool] = {}  # slot -> whether the last pod that stopped counting was the test's
    for m in moments:
        before, after = m.before, m.after
        if exempt is not None and before is not None and before.live and (after is None or not after.live):
            lost_by_test[before.slot] = exempt(m, before)
        if m.event != "MODIFIED" or before is None or after is None or not before.gated or after.gated:
            continue
        if not after.podgang or not after.podclique:
            continue  # not a gang pod (a tenant's): nothing to count
        gang = gangs.at(after.namespace, after.podgang, m.resource_version)
        if gang is None:
            out.append((m, f"pod {after.name} released while its PodGang {after.podgang} did not exist"))
            continue
        need = gang.min_replicas.get(after.podclique)
        if need is None:
            out.append((m, f"pod {after.name} released from podgroup {after.podclique}, which PodGang "
                           f"{gang.name} does not list"))
            continue
        members = [p for p in m.pods if p.namespace == after.namespace and p.podgang == after.podgang
                   and p.podclique == after.podclique and p.live]
        live = sorted(p.name for p in members)
        excused = 0
        if exempt is not None and gang.initialized == "True":
            held = {p.slot for p in members}
            refs = {(after.namespace, name.rsplit("-", 1)[0]) for name in gang.refs.get(after.podclique, ())}
            excused = sum(1 for slot in refs - held if lost_by_test.get(slot))
        if len(live) + excused < need:
            out.append((m, f"pod {after.name} released while podgroup {after.podclique} of PodGang {gang.name} "
                           f"had {len(live)} live pods {live}, minReplicas {need}: a partial gang"))
    return out


def lingering_partial_releases(moments: list[Moment], gangs: GangHistory, seconds: float,
                               end: float | None = None) -> list[Problem]:
    """Podgroups left partially released for more than ``seconds`` (issue 22's wording).

    The state: a podgroup has ``0 < ungated live pods < minReplicas`` while another live pod
    of it is gated *and its slot holds no other pod* (nothing but the agent keeps it back:
    not a rolling update waiting for an old pod to finish terminating, which is Grove's
    one-by-one replacement of an Initialized gang). Every release burst passes through this
    state for as long as the burst takes; it is reported only when it lasts more than
    ``seconds`` (a generous bound, wall clock of the observed moments), so a slow machine
    does not make it flaky. ``end``: when observation ended (the state may last until then).
    """
    out: list[Problem] = []
    started: dict[tuple[str, str, str], Moment] = {}
    reported: set[tuple[str, str, str]] = set()

    def close(key: tuple[str, str, str], until: float) -> None:
        first = started.pop(key)
        if until - first.time > seconds and key not in reported:
            reported.add(key)
            out.append((first, f"podgroup {key[2]} of PodGang {key[1]} stayed partially released "
                               f"for {until - first.time:.1f} s (> {seconds:g} s) from moment {first.index}"))

    for m in moments:
        groups: dict[tuple[str, str, str], list[PodView]] = {}
        by_slot: dict[Slot, int] = {}
        for p in m.pods:
            by_slot[p.slot] = by_slot.get(p.slot, 0) + 1
            if p.podgang and p.podclique:
                groups.setdefault((p.namespace, p.podgang, p.podclique), []).append(p)
        now_in_state = set()
        for key, pods in groups.items():
            gang = gangs.at(key[0], key[1], m.resource_version)
            need = gang.min_replicas.get(key[2], 0) if gang is not None else 0
            ungated = sum(1 for p in pods if p.live and not p.gated)
            waiting = any(p.live and p.gated and by_slot.get(p.slot, 0) == 1 for p in pods)
            if 0 < ungated < need and waiting:
                now_in_state.add(key)
        for key in [k for k in started if k not in now_in_state]:
            close(key, m.time)
        for key in now_in_state:
            started.setdefault(key, m)
    final = end if end is not None else (moments[-1].time if moments else 0.0)
    for key in list(started):
        close(key, final)
    return out


def bound_outside_a_gang(moments: Iterable[Moment], gangs: GangHistory) -> list[Problem]:
    """Every binding (``spec.nodeName`` first set: the simulated kubelet's, or on the real
    control plane the kube-scheduler's) of a pod still gated, or of a gang pod whose PodGang did
    not exist at that resourceVersion: a scheduler may only see pods the agent released from a
    gang that exists (issue 32: pods applied before their PodGangs). Whether the gang listed
    the pod is not asked: GitOps may change a PodGang between a release and its binding."""
    out: list[Problem] = []
    for m in moments:
        before, after = m.before, m.after
        if after is None or not after.node or (before is not None and before.node):
            continue
        if after.gated:
            out.append((m, f"{after.name} bound while gated"))
        elif after.podgang and gangs.at(after.namespace, after.podgang, m.resource_version) is None:
            out.append((m, f"{after.name} bound while its PodGang {after.podgang} did not exist"))
    return out


def emptied_slots(
    moments: Iterable[Moment],
    wanted: Callable[[Moment, Slot], bool],
    exempt: Callable[[Moment, PodView], bool],
) -> list[Problem]:
    """Every moment a wanted slot lost its Ready pod while no replacement existed (issue 22).

    A pod that was Ready, ungated and not terminating becomes terminating (or is deleted
    outright). Unless its slot is no longer ``wanted`` by the current target (scale-in,
    removal from Git) or the test declared the loss (``exempt``: a failure it injected, a
    gang termination it provoked, a pod it deleted itself), the slot must at that moment
    hold another pod that is not terminating: its replacement, created (and gated). A pod that
    was no longer Ready when it went (Failed, crashed) is the failure's doing, not the agent's.
    """
    out: list[Problem] = []
    for m in moments:
        before = m.before
        if before is None or before.gated or not before.available or not before.hostname:
            continue
        if not (m.event == "DELETED" or (m.after is not None and m.after.terminating)):
            continue
        if not wanted(m, before.slot) or exempt(m, before):
            continue
        others = [p for p in m.pods if p.slot == before.slot and p.uid != before.uid and not p.terminating]
        if not others:
            what = "deleted" if m.event == "DELETED" else "made terminating"
            out.append((m, f"Ready pod {before.name} of wanted slot {before.hostname} was {what} while the slot "
                           "held no replacement pod"))
    return out


def disturbed(moments: Iterable[Moment], pcs: Iterable[str]) -> list[Problem]:
    """Every moment a pod of the PodCliqueSets ``pcs`` was deleted, began terminating or was
    re-created (a new uid under a name seen before: gated again). Those PodCliqueSets are
    bystanders of the scenario: nothing may touch their pods once created."""
    names = set(pcs)
    uids: dict[str, str] = {}
    out: list[Problem] = []
    for m in moments:
        view = m.after or m.before
        if view is None or view.unit.pcs not in names:
            continue
        if m.event == "DELETED":
            out.append((m, f"pod {view.name} of bystander PodCliqueSet {view.unit.pcs} was deleted"))
        elif view.terminating:
            out.append((m, f"pod {view.name} of bystander PodCliqueSet {view.unit.pcs} began terminating"))
        elif uids.setdefault(view.name, view.uid) != view.uid:
            out.append((m, f"pod {view.name} of bystander PodCliqueSet {view.unit.pcs} was re-created"))
            uids[view.name] = view.uid
    return out


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
        self.gang_events: list[GangEvent] = []
        self._gangs: dict[tuple[str, str], str] = {}  # PodGang -> resourceVersion seen last
        self._gang_lists = 0
        self._threads: list[threading.Thread] = []

    def start(self) -> Observer:
        pods = f"/api/v1/namespaces/{self.namespace}/pods"
        gangs = f"/apis/scheduler.grove.io/v1alpha1/namespaces/{self.namespace}/podgangs"
        self._threads = [
            threading.Thread(target=list_watch, args=(self.rest, pods, self._on_list, self._on_event, self._stop),
                             name="day2-observer", daemon=True),
            threading.Thread(target=list_watch,
                             args=(self.rest, gangs, self._on_gang_list, self._on_gang_event, self._stop),
                             name="day2-observer-gangs", daemon=True),
        ]
        for thread in self._threads:
            thread.start()
        with self._lock:
            if not self._changed.wait_for(lambda: self._lists > 0 and self._gang_lists > 0, timeout=10):
                raise RuntimeError("observer: the pod or PodGang list never arrived")
        return self

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=10)

    def __enter__(self) -> Observer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- recording ---------------------------------------------------------------------------
    def _record(self, event: str, pod: str, rv: str, before: PodView | None = None,
                after: PodView | None = None) -> None:
        for view in self._pods.values():
            if view.hostname:
                self.units.setdefault(view.slot, view.unit)
        self.moments.append(
            Moment(len(self.moments), time.monotonic(), int(rv or 0), event, pod, tuple(self._pods.values()),
                   before, after)
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
            before = self._pods.get(key)
            after: PodView | None = None
            if kind == "DELETED":
                self._pods.pop(key, None)
            else:
                after = self._pods[key] = PodView.of(pod)
            self._record(kind, key[1], str(pod["metadata"].get("resourceVersion", "0")), before, after)

    def _on_gang_list(self, items: list[Raw], rv: str) -> None:
        with self._lock:
            if self._gang_lists:
                self.relists += 1
            self._gang_lists += 1
            now = time.monotonic()
            listed = {key_of(g): g for g in items}
            for key in [k for k in self._gangs if k not in listed]:
                self.gang_events.append(GangEvent(now, int(rv or 0), "SYNC", key[0], key[1], None))
            for key, gang in listed.items():
                self.gang_events.append(GangEvent(now, int(rv or 0), "SYNC", key[0], key[1], GangView.of(gang)))
            self._gangs = {k: str(g["metadata"].get("resourceVersion", "")) for k, g in listed.items()}
            self._changed.notify_all()

    def _on_gang_event(self, kind: str, gang: Raw) -> None:
        key = key_of(gang)
        rv = str(gang["metadata"].get("resourceVersion", "0"))
        with self._lock:
            view = None if kind == "DELETED" else GangView.of(gang)
            if view is None:
                self._gangs.pop(key, None)
            else:
                self._gangs[key] = rv
            self.gang_events.append(GangEvent(time.monotonic(), int(rv or 0), kind, key[0], key[1], view))
            self._changed.notify_all()

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

    def gang_versions(self) -> dict[str, str]:
        """``{PodGang name: resourceVersion}`` as the observer sees the namespace now."""
        with self._lock:
            return {key[1]: rv for key, rv in self._gangs.items()}

    def gang_history(self) -> GangHistory:
        with self._lock:
            return GangHistory(list(self.gang_events))

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
