"""What the agent sees: live pods and PodGangs, grouped into workloads and slots.

Pure: built from the watch cache on every pass, so the agent's view is always derived from
the cluster and a restarted agent resumes where the last one stopped.

- A **workload** is one PodCliqueSet in one namespace (label ``app.kubernetes.io/part-of``).
- A **slot** is (namespace, ``spec.hostname``), ``<podclique>-<index>``. Its **new** pod is
  the one a current PodGang references; its **old** pods are managed pods in the slot that
  no PodGang references. A managed pod whose slot no PodGang wants is **unwanted**.
- Per PodCliqueSet replica, the renderer's ``gitops.grove.io/day2`` annotation on the
  PodGangs says the update strategy, ``terminationDelay`` and the minAvailable of every
  PodClique and scaling group (plain pods carry no PodClique status to read it from).

Anything surprising (a pod without a hostname, two old pods in one slot, a PodGang listing
a pod of another PodCliqueSet) is recorded as a problem; the actions never delete in its
presence.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from grove_gitops.expand import ownership
from grove_gitops.readmodel import adoption
from grove_gitops.readmodel import gangs as G
from grove_gitops.readmodel.binding import NONE as NO_BINDING
from grove_gitops.readmodel.binding import PodBinding
from grove_gitops.readmodel.binding import parse as parse_binding

Key = tuple[str, str]  # (namespace, name)
WorkloadKey = tuple[str, str]  # (namespace, PodCliqueSet)
Raw = Mapping[str, Any]

DAY2_ANNOTATION = "gitops.grove.io/day2"
MANAGED_BY, MANAGER = "app.kubernetes.io/managed-by", "grove-gitops"
PART_OF = "app.kubernetes.io/part-of"
PCS_REPLICA_INDEX = "grove.io/podcliqueset-replica-index"
POD_INDEX = "grove.io/podclique-pod-index"
PCSG = "grove.io/podcliquescalinggroup"
PCSG_REPLICA_INDEX = "grove.io/podcliquescalinggroup-replica-index"
TEMPLATE_HASH = "grove.io/pod-template-hash"
ROLLING_RECREATE, ON_DELETE = "RollingRecreate", "OnDelete"
DEFAULT_TERMINATION_DELAY = 4 * 3600.0  # Grove's default, spec/grove-day2.md §0.3
MAX_PROBLEMS_PER_GANG = 5  # bad references of one PodGang reported by name; the rest counted


@dataclass(frozen=True)
class CliqueSpec:
    name: str  # PodClique FQN
    min_available: int
    replicas: int
    #: Autoscaled (docs/autoscaling.md): ``replicas`` is the floor Git renders.
    scale_target: bool = False


@dataclass(frozen=True)
class ScalingGroupSpec:
    name: str  # PodCliqueScalingGroup FQN
    min_available: int
    replicas: int
    cliques: tuple[str, ...]  # template clique names; replica j's PodClique is f"{name}-{j}-{clique}"
    #: Autoscaled (docs/autoscaling.md): ``replicas`` is the floor Git renders; the replicas
    #: above it are those whose PodGangs exist (:meth:`count`).
    scale_target: bool = False

    def count(self, known: Collection[str]) -> int:
        """The replicas this group has now: ``replicas``, or for an autoscaled group also every
        further replica some of whose PodCliques a live PodGang names (``known``)."""
        if not self.scale_target:
            return self.replicas
        j = self.replicas
        while j < G.MAX_GANG_PODS and any(self.podclique(j, c) in known for c in self.cliques):
            j += 1
        return j

    def podclique(self, replica: int, clique: str) -> str:
        return f"{self.name}-{replica}-{clique}"


@dataclass(frozen=True)
class Day2:
    """The renderer's description of one PodCliqueSet replica (``gitops.grove.io/day2``)."""

    pcs: str
    replica: int
    strategy: str
    termination_delay: float
    cliques: tuple[CliqueSpec, ...] = ()
    scaling_groups: tuple[ScalingGroupSpec, ...] = ()

    def min_available(self, podclique: str) -> int | None:
        """minAvailable of a PodClique FQN of this replica (standalone or in a scaling group)."""
        for c in self.cliques:
            if c.name == podclique:
                return c.min_available
        return None


def _int(value: Any, where: str) -> int:
    """A count or index of the annotation, at most :data:`~.gangs.MAX_GANG_PODS`: a render
    never writes more (every one of them is at most the pods of one PodCliqueSet replica), and
    the healing rules loop over replicas (``replicas: 1e12`` must not hang the agent)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= G.MAX_GANG_PODS:
        raise G.MalformedPodGang(f"{where}: expected an integer from 0 to {G.MAX_GANG_PODS}, got {G.brief(value)}")
    return value


def _str(value: Any, where: str) -> str:
    if not isinstance(value, str) or not 0 < len(value) <= G.MAX_NAME:
        raise G.MalformedPodGang(f"{where}: expected a non-empty string of at most {G.MAX_NAME} characters, got {G.brief(value)}")
    return value


def parse_day2(podgang: Raw) -> Day2 | None:
    """The ``gitops.grove.io/day2`` annotation, or None when absent (an older render).

    Raises :class:`~grove_gitops.readmodel.gangs.MalformedPodGang` when present but not
    readable: guessing a strategy or minAvailable could retire pods Grove would keep.
    """
    raw = ((podgang.get("metadata") or {}).get("annotations") or {}).get(DAY2_ANNOTATION)
    if raw is None:
        return None
    where = f"metadata.annotations[{DAY2_ANNOTATION}]"
    data = G.load_annotation(raw, where)
    if not isinstance(data, dict):
        raise G.MalformedPodGang(f"{where}: expected a JSON object")
    strategy = data.get("updateStrategy", ROLLING_RECREATE)
    if strategy not in (ROLLING_RECREATE, ON_DELETE):
        raise G.MalformedPodGang(f"{where}.updateStrategy: unknown strategy {json.dumps(strategy)[:40]}")
    delay = data.get("terminationDelaySeconds", DEFAULT_TERMINATION_DELAY)
    if isinstance(delay, bool) or not isinstance(delay, int | float) or delay <= 0:
        raise G.MalformedPodGang(f"{where}.terminationDelaySeconds: expected a positive number")
    for key in ("cliques", "scalingGroups"):
        if not isinstance(data.get(key) or [], list):
            raise G.MalformedPodGang(f"{where}.{key}: expected a list, got {G.brief(data.get(key))}")
    cliques = []
    for n, c in enumerate(data.get("cliques") or []):
        w = f"{where}.cliques[{n}]"
        if not isinstance(c, dict):
            raise G.MalformedPodGang(f"{w}: expected an object")
        cliques.append(CliqueSpec(_str(c.get("name"), f"{w}.name"), _int(c.get("minAvailable"), f"{w}.minAvailable"),
                                  _int(c.get("replicas"), f"{w}.replicas"), c.get("scaleTarget") is True))
    groups = []
    for n, g in enumerate(data.get("scalingGroups") or []):
        w = f"{where}.scalingGroups[{n}]"
        if not isinstance(g, dict) or not isinstance(g.get("cliques"), list):
            raise G.MalformedPodGang(f"{w}: expected an object with a list of cliques")
        groups.append(
            ScalingGroupSpec(
                _str(g.get("name"), f"{w}.name"),
                _int(g.get("minAvailable"), f"{w}.minAvailable"),
                _int(g.get("replicas"), f"{w}.replicas"),
                tuple(_str(c, f"{w}.cliques") for c in g["cliques"]),
                g.get("scaleTarget") is True,
            )
        )
    # Each scaling-group replica has at least one pod per clique: more PodCliques than pods
    # a render can write is not a render's (and would make the breach rules loop that long).
    if sum(g.replicas * len(g.cliques) for g in groups) + len(cliques) > G.MAX_GANG_PODS:
        raise G.MalformedPodGang(f"{where}: more PodCliques than a render writes for one replica ({G.MAX_GANG_PODS})")
    return Day2(
        _str(data.get("podCliqueSet"), f"{where}.podCliqueSet"),
        _int(data.get("replicaIndex"), f"{where}.replicaIndex"),
        strategy,
        float(delay),
        tuple(cliques),
        tuple(groups),
    )


#: Day-2 annotations longer than this are parsed each time by :func:`day2_or_none`, not
#: memoised (a hostile one must not fill the memo): the render's own are a few hundred bytes.
_MEMO_MAX = 4096


@functools.lru_cache(maxsize=1024)
def _day2_text(raw: str) -> Day2 | None:
    try:
        return parse_day2({"metadata": {"annotations": {DAY2_ANNOTATION: raw}}})
    except G.MalformedPodGang:
        return None


def day2_or_none(podgang: Raw) -> Day2 | None:
    """:func:`parse_day2`, None for a malformed annotation too: for readers that judge a
    workload's status, where an unreadable replica counts as unavailable rather than failing the
    pass (the day-2 loop reads the same annotation strictly). Memoised by the annotation's text:
    every status pass reads every PodGang's, and a workload's share a handful of values."""
    raw = ((podgang.get("metadata") or {}).get("annotations") or {}).get(DAY2_ANNOTATION)
    if not isinstance(raw, str):
        return None
    return _day2_text(raw) if len(raw) <= _MEMO_MAX else _day2_text.__wrapped__(raw)


def _cond(obj: Raw, kind: str) -> bool:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if isinstance(c, dict) and c.get("type") == kind and c.get("status") == "True":
            return True
    return False


def _label_int(labels: Mapping[str, Any], key: str) -> int | None:
    value = labels.get(key)
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


@dataclass
class PodView:
    """One live pod with the facts the day-2 rules read (``spec/grove-day2.md`` §5.3)."""

    namespace: str
    name: str
    uid: str
    raw: Raw
    hostname: str | None
    pcs: str | None
    replica: int | None
    podclique: str | None
    index: int | None
    scaling_group: str | None
    scaling_group_replica: int | None
    podgang: str | None
    template_hash: str | None
    phase: str
    ready: bool
    scheduled: bool
    terminating: bool
    gated: bool
    created: str
    node_name: str
    errored: bool
    started_not_ready: bool
    # Its ``gitops.grove.io/rendered-by`` proof verifies (grove_gitops/expand/ownership.py):
    # a render made it. Only such pods are ever deleted; the managed-by label alone is not proof.
    owned: bool = False

    @property
    def key(self) -> Key:
        return self.namespace, self.name

    @property
    def finished(self) -> bool:
        """Failed or Succeeded: the kubelet will never run it again."""
        return self.phase in ("Failed", "Succeeded")

    @property
    def available(self) -> bool:
        return self.ready and not self.terminating and not self.finished


def pod_view(pod: Raw) -> PodView:
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    labels = meta.get("labels") or {}
    ready = _cond(pod, "Ready")
    statuses = [s for s in (status.get("containerStatuses") or []) if isinstance(s, dict)]
    inits = [s for s in (status.get("initContainerStatuses") or []) if isinstance(s, dict)]
    errored = not ready and any(
        ((s.get("lastState") or {}).get("terminated") or {}).get("exitCode", 0) not in (0, None)
        for s in statuses + inits
    )
    started_not_ready = not ready and not errored and any(s.get("started") and not s.get("ready") for s in statuses)
    hostname = spec.get("hostname")
    return PodView(
        namespace=str(meta.get("namespace", "")),
        name=str(meta.get("name", "")),
        uid=str(meta.get("uid", "")),
        raw=pod,
        hostname=hostname if isinstance(hostname, str) and hostname else None,
        pcs=labels.get(PART_OF) if isinstance(labels.get(PART_OF), str) else None,
        replica=_label_int(labels, PCS_REPLICA_INDEX),
        podclique=labels.get(G.PODCLIQUE_LABEL) if isinstance(labels.get(G.PODCLIQUE_LABEL), str) else None,
        index=_label_int(labels, POD_INDEX),
        scaling_group=labels.get(PCSG) if isinstance(labels.get(PCSG), str) else None,
        scaling_group_replica=_label_int(labels, PCSG_REPLICA_INDEX),
        podgang=labels.get(G.PODGANG_LABEL) if isinstance(labels.get(G.PODGANG_LABEL), str) else None,
        template_hash=labels.get(TEMPLATE_HASH) if isinstance(labels.get(TEMPLATE_HASH), str) else None,
        phase=str(status.get("phase") or "Pending"),
        ready=ready,
        scheduled=_cond(pod, "PodScheduled"),
        terminating=G.is_terminating(pod),
        gated=G.has_gate(pod),
        created=str(meta.get("creationTimestamp") or ""),
        node_name=str(spec.get("nodeName") or ""),
        errored=errored,
        started_not_ready=started_not_ready,
        owned=ownership.verify(pod),
    )


@dataclass
class GangView:
    namespace: str
    name: str
    raw: Raw
    pcs: str | None
    day2: Day2 | None
    initialized: bool
    refs: list[tuple[str, str, str]]  # (podgroup, namespace, pod name)
    #: What ties each podgroup's pods to the gang, as rendered (``readmodel.binding``).
    binding: PodBinding = NO_BINDING

    @property
    def key(self) -> Key:
        return self.namespace, self.name


@dataclass
class Slot:
    namespace: str
    hostname: str
    new_name: str | None = None  # the pod a PodGang references for this slot
    gang: str | None = None  # that PodGang
    new: PodView | None = None  # the live pod of that name, if applied yet
    old: list[PodView] = field(default_factory=list)
    podgroup: str | None = None  # the PodGang podgroup listing the new pod (its PodClique)
    _released: tuple[int, list[PodView]] | None = field(default=None, repr=False, compare=False)

    @property
    def released_old(self) -> list[PodView]:
        """Old pods that were released (no gate): they may be running a workload.

        Kept until ``old`` grows: the decision modules ask this of every slot many times
        per pass (it was the agent's hottest line in the rollout benchmark)."""
        if self._released is None or self._released[0] != len(self.old):
            self._released = (len(self.old), [p for p in self.old if not p.gated])
        return self._released[1]

    @property
    def ambiguous(self) -> bool:
        """Two released old pods in one slot: the agent never releases two pods in a slot,
        so something other than grove-gitops made one of them. (Several *gated* old pods are
        normal: every superseded target leaves one, and none ever ran.)"""
        return len(self.released_old) > 1

    @property
    def free(self) -> bool:
        """No released pod but the new one is here (a terminating pod still holds the
        hostname; a gated old pod never ran, so it does not)."""
        return not self.released_old


@dataclass
class Workload:
    namespace: str
    pcs: str
    replicas: dict[int, Day2] = field(default_factory=dict)
    gangs: dict[str, GangView] = field(default_factory=dict)
    slots: dict[str, Slot] = field(default_factory=dict)
    unwanted: list[PodView] = field(default_factory=list)
    _min: dict[str, int] | None = field(default=None, repr=False)

    @property
    def key(self) -> WorkloadKey:
        return self.namespace, self.pcs

    def min_availables(self) -> dict[str, int]:
        """minAvailable of every PodClique FQN a live object states (one pass over the gangs).

        A standalone PodClique's comes from the ``gitops.grove.io/day2`` annotation; a
        scaling-group PodClique's from the ``minReplicas`` of the PodGang podgroup named after
        it (the render writes the PodClique's minAvailable there, as Grove does,
        ``spec/grove-desired-state.md`` §5). A PodClique missing here has its PodGang not
        applied (yet): nothing is decided about it.
        """
        out: dict[str, int] = {}
        for gang in self.gangs.values():
            groups = (gang.raw.get("spec") or {}).get("podgroups") or []
            for group in groups if isinstance(groups, list) else []:
                if not isinstance(group, dict) or not isinstance(group.get("name"), str):
                    continue
                value = group.get("minReplicas", 0)
                if not isinstance(value, bool) and isinstance(value, int) and value >= 0:
                    out.setdefault(group["name"], value)
        for day2 in self.replicas.values():
            for c in day2.cliques:
                out[c.name] = c.min_available
        return out

    def min_available(self, podclique: str) -> int | None:
        """minAvailable of one PodClique FQN (see :meth:`min_availables`), None when unknown."""
        if self._min is None:
            self._min = self.min_availables()  # a snapshot is rebuilt every pass: cache per pass
        return self._min.get(podclique)

    def replica_slots(self, replica: int) -> list[Slot]:
        """Slots of one PodCliqueSet replica (by their pods' replica-index label)."""
        out = []
        for slot in self.slots.values():
            pod = slot.new or (slot.old[0] if slot.old else None)
            if pod is not None and pod.replica == replica:
                out.append(slot)
            elif pod is None and slot.gang is not None:
                day2 = self.gangs[slot.gang].day2 if slot.gang in self.gangs else None
                if day2 is not None and day2.replica == replica:
                    out.append(slot)
        return out


@dataclass
class Snapshot:
    pods: dict[Key, PodView]
    gangs: dict[Key, GangView]
    workloads: dict[WorkloadKey, Workload]
    referenced: set[Key]  # every pod any PodGang lists: never deleted by rollout or scale-in
    problems: list[tuple[WorkloadKey | None, str]]
    malformed: dict[Key, str]  # PodGangs that cannot be read, with the reason


def unit_of(pod: Raw) -> tuple[str, str, int] | None:
    """The scaling-group replica a pod belongs to (namespace, scaling group, replica index), the
    unit a rollout step retires whole; None for a pod of a standalone PodClique."""
    meta = pod.get("metadata") or {}
    labels = meta.get("labels") or {}
    if not isinstance(labels, dict):
        return None
    group, index = labels.get(PCSG), _label_int(labels, PCSG_REPLICA_INDEX)
    if not isinstance(group, str) or index is None:
        return None
    return (str(meta.get("namespace") or ""), group, index)


def hostname_of(pod_name: str) -> str:
    """The slot a rendered pod name belongs to: its name without the hash suffix."""
    return pod_name.rsplit("-", 1)[0]


#: What the spec of one PodGang version says: its day-2 facts, pod references and pod binding.
_Gang = tuple[Day2 | None, list[tuple[str, str, str]], PodBinding]


class Views:
    """Parsed pods and PodGang specs, kept per object version.

    The loop re-derives a workload on every event that touches it, and most of its objects
    have not changed since the last pass: parsing each pod and each PodGang's annotation only
    once per ``resourceVersion`` is what keeps a pass cheap (the rollout benchmark's "agent
    time per step"). A PodGang's status is not part of the key (the executor merges its own
    condition writes into the cache without a new version), so only spec-derived facts are kept.
    """

    def __init__(self) -> None:
        self._pods: dict[Key, tuple[tuple[str, str], PodView]] = {}
        # -> (version, parsed, why it is malformed): a malformed version is not read again
        self._gangs: dict[Key, tuple[tuple[str, str], _Gang | None, str | None]] = {}

    @staticmethod
    def _version(obj: Raw) -> tuple[str, str] | None:
        meta = obj.get("metadata") or {}
        uid, rv = meta.get("uid"), meta.get("resourceVersion")
        return (uid, rv) if isinstance(uid, str) and uid and isinstance(rv, str) and rv else None

    def pod(self, key: Key, raw: Raw) -> PodView:
        version = self._version(raw)
        kept = self._pods.get(key)
        if version is not None and kept is not None and kept[0] == version and kept[1].raw is raw:
            return kept[1]
        view = pod_view(raw)
        if version is not None:
            self._pods[key] = (version, view)
        return view

    def gang(self, key: Key, raw: Raw) -> _Gang:
        """``(day2, refs, binding)`` of a PodGang; raises MalformedPodGang as the parsers do."""
        version = self._version(raw)
        kept = self._gangs.get(key)
        if version is not None and kept is not None and kept[0] == version:
            if kept[1] is None:
                raise G.MalformedPodGang(kept[2] or "malformed")
            return kept[1]
        try:
            parsed = (parse_day2(raw), G.referenced_pods(raw), parse_binding(raw))
        except G.MalformedPodGang as exc:
            if version is not None:
                self._gangs[key] = (version, None, str(exc))
            raise
        if version is not None:
            self._gangs[key] = (version, parsed, None)
        return parsed

    def retain(self, pods: Collection[Key], gangs: Collection[Key]) -> None:
        """Forget objects no longer in the cache (called now and then, not per pass)."""
        self._pods = {k: v for k, v in self._pods.items() if k in pods}
        self._gangs = {k: v for k, v in self._gangs.items() if k in gangs}


def build(
    pods: Mapping[Key, Raw],
    podgangs: Mapping[Key, Raw],
    referenced_elsewhere: Collection[Key] = (),
    views_of: Views | None = None,
    deleting: Collection[Key] = (),
) -> Snapshot:
    """Group the cache into workloads and slots (see the module docstring).

    ``referenced_elsewhere``: pods listed by PodGangs outside ``podgangs`` (the loop builds
    one workload at a time); they are never old or unwanted. ``views_of``: parsed objects
    kept from earlier passes (a fresh :class:`Views` when not given). ``deleting``: pods whose
    DELETE is under way, seen as terminating (as the API server will report them).
    """
    memo = views_of if views_of is not None else Views()
    views = {key: memo.pod(key, p) for key, p in pods.items()}
    for key in deleting:
        if key in views and not views[key].terminating:
            views[key] = dataclasses.replace(views[key], terminating=True)  # a copy: the memo keeps the original
    problems: list[tuple[WorkloadKey | None, str]] = []
    malformed: dict[Key, str] = {}
    gangs: dict[Key, GangView] = {}
    total = 0  # references of the PodGangs read so far (bounded by MAX_WORKLOAD_PODS)
    for key, raw in sorted(podgangs.items()):
        try:
            day2, refs, binding = memo.gang(key, raw)
        except G.MalformedPodGang as exc:
            malformed[key] = str(exc)
            continue
        total += len(refs)
        if total > G.MAX_WORKLOAD_PODS:
            malformed[key] = (f"its PodCliqueSet's PodGangs list more than {G.MAX_WORKLOAD_PODS} pods together, "
                              "more than a render writes; this PodGang and those after it (by name) are not read")
            continue
        labels = (raw.get("metadata") or {}).get("labels") or {}
        pcs = day2.pcs if day2 is not None else labels.get(PART_OF)
        gangs[key] = GangView(
            key[0], key[1], raw, pcs if isinstance(pcs, str) else None, day2, _cond(raw, "Initialized"), refs, binding
        )

    workloads: dict[WorkloadKey, Workload] = {}

    def workload(ns: str, pcs: str) -> Workload:
        wl = workloads.get((ns, pcs))
        if wl is None:
            wl = workloads[(ns, pcs)] = Workload(ns, pcs)
        return wl

    referenced: set[Key] = set(k for k in referenced_elsewhere if k in views)
    for gang in sorted(gangs.values(), key=lambda g: g.key):
        for _, ns, name in gang.refs:
            referenced.add((ns, name))
        if gang.pcs is None:
            problems.append((None, f"PodGang {gang.namespace}/{gang.name} names no PodCliqueSet; it is only used for gate release"))
            continue
        wl = workload(gang.namespace, gang.pcs)
        wl.gangs[gang.name] = gang
        if gang.day2 is not None:
            wl.replicas.setdefault(gang.day2.replica, gang.day2)
        # A bad PodGang can hold thousands of bad references: the first few are reported,
        # the rest counted (each distinct problem is remembered once it is logged).
        bad: list[str] = []
        for group, ns, name in gang.refs:
            live = views.get((ns, name))
            if live is not None and (live.pcs != gang.pcs or live.podgang != gang.name):
                bad.append(f"PodGang {gang.namespace}/{gang.name} lists pod {ns}/{name}, which belongs to "
                           f"PodCliqueSet {live.pcs!r} and PodGang {live.podgang!r}; the reference is ignored")
                continue
            if ns != gang.namespace:
                bad.append(f"PodGang {gang.namespace}/{gang.name} lists pod {ns}/{name} in another namespace; ignored")
                continue
            host = live.hostname if live is not None and live.hostname else hostname_of(name)
            slot = wl.slots.get(host)
            if slot is None:
                slot = wl.slots[host] = Slot(ns, host)
            if slot.new_name is not None and slot.new_name != name:
                bad.append(f"slot {ns}/{host} is wanted twice (pods {slot.new_name} and {name}); using {slot.new_name}")
                continue
            slot.new_name, slot.gang, slot.new, slot.podgroup = name, gang.name, live, group
        problems += [(wl.key, p) for p in bad[:MAX_PROBLEMS_PER_GANG]]
        if len(bad) > MAX_PROBLEMS_PER_GANG:
            problems.append((wl.key, f"PodGang {gang.namespace}/{gang.name}: {len(bad) - MAX_PROBLEMS_PER_GANG} more "
                             "references like these are ignored"))

    by_host: dict[tuple[str, str], Slot] = {}
    wl_of_host: dict[tuple[str, str], Workload] = {}
    for wl in workloads.values():
        for host, slot in wl.slots.items():
            by_host[(wl.namespace, host)] = slot
            wl_of_host[(wl.namespace, host)] = wl
    # Only the pods no PodGang lists, in key order (sorting only those: in a scale-out nearly
    # every pod is referenced, and this ran on every pass).
    for key in sorted(k for k in views if k not in referenced):
        pod = views[key]
        labels = (pod.raw.get("metadata") or {}).get("labels") or {}
        if labels.get(MANAGED_BY) != MANAGER:
            continue  # never ours to retire (the watch selects managed pods; this is a second guard)
        if pod.hostname is None:
            problems.append(((pod.namespace, pod.pcs or ""), f"pod {pod.namespace}/{pod.name} has no spec.hostname; it is left alone"))
            continue
        slot = by_host.get((pod.namespace, pod.hostname))
        if not pod.owned and slot is not None and _adopted(pod, slot, wl_of_host[(pod.namespace, pod.hostname)]):
            # A running Grove pod handed over by `grove-gitops migrate apply`, verified as the
            # slot's (grove_gitops/readmodel/adoption.py): an old pod the rollout may retire.
            slot.old.append(dataclasses.replace(pod, owned=True))
            continue
        if not pod.owned:
            # Labelled as ours, but no render made it (or a render from before the proof):
            # never deleted. In a wanted slot it still counts as an old pod, so the new pod
            # is not released beside it (two pods never share a hostname).
            claimed = adoption.claim(pod.raw)
            if claimed is None:
                problems.append(((pod.namespace, pod.pcs or ""), f"pod {pod.namespace}/{pod.name} is labelled "
                                 f"{MANAGED_BY}={MANAGER} but its {ownership.RENDERED_BY} proof does not verify: "
                                 "no render made it, so the agent never deletes it (delete it by hand if it is a "
                                 "pod of an older grove-gitops render)"))
            elif slot is not None and slot.new is not None:
                problems.append(((pod.namespace, pod.pcs or ""), f"pod {pod.namespace}/{pod.name} was handed over by "
                                 f"`grove-gitops migrate apply` for slot {claimed.hostname}, but the rendered pod "
                                 f"{slot.new_name} of that slot is not of the same PodCliqueSet, PodClique, index and "
                                 "replica (or lacks its proof): the agent never deletes it"))
            # (a handed-over pod whose rendered pod is not applied yet waits for it: nothing to say)
            if slot is not None:
                slot.old.append(pod)
            continue
        if slot is not None:
            slot.old.append(pod)
            continue
        wl = workload(pod.namespace, pod.pcs or "")
        wl.unwanted.append(pod)
    for wl in workloads.values():
        for slot in wl.slots.values():
            if slot.ambiguous:
                names = ", ".join(p.name for p in slot.released_old)
                problems.append(
                    (wl.key, f"slot {slot.namespace}/{slot.hostname} holds {len(slot.released_old)} released old pods "
                     f"({names}); none is deleted")
                )
    return Snapshot(views, gangs, workloads, referenced, problems, malformed)


def _adopted(pod: PodView, slot: Slot, wl: Workload) -> bool:
    """Whether a pod without a ``rendered-by`` proof is the slot's migrated Grove pod: its
    adoption record verifies and names the PodCliqueSet, hostname, PodClique, index and replica
    the render wants for the slot: those of the slot's rendered pod (which must carry its own
    proof), or, before that pod is applied, those the PodGang listing it says (the podgroup is
    the PodClique, the hostname ends in the index, the PodGang's ``day2`` names the replica).
    So the rollout orders every handed-over pod from the start, and keeps each one until its
    replacement exists, as it does for an outdated rendered pod."""
    found = adoption.claim(pod.raw)
    if found is None:
        return False
    new = slot.new
    if new is not None:
        if not new.owned:
            return False
        want = (new.podclique, new.index, new.replica)
    else:
        gang = wl.gangs.get(slot.gang) if slot.gang is not None else None
        suffix = slot.hostname.rsplit("-", 1)[-1]
        index = int(suffix) if suffix.isdigit() and len(suffix) <= 6 else None
        want = (slot.podgroup, index, gang.day2.replica if gang is not None and gang.day2 is not None else None)
    return adoption.fits(found, slot.namespace, pod.namespace, wl.pcs, slot.hostname, *want)


def slots_where(slots: Iterable[Slot], *, with_old: bool) -> list[Slot]:
    return [s for s in slots if bool(s.old) == with_old]
