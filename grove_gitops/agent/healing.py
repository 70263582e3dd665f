"""Self-healing: Failed pods, ``MinAvailableBreached`` and gang termination.

Pure decisions over a :class:`~grove_gitops.readmodel.snapshot.Workload` (``spec/grove-day2.md``
§5); the loop executes the returned actions. Where Grove has a defect (§8) the sound thing is
done instead, and documented here:

- **Failed pods are replaced** (§5.1, defect §8.7). Grove leaves a pod in phase Failed or
  Succeeded (kubelet eviction, node shutdown) in place for ever. The agent deletes it: a
  referenced pod is then re-created from Git by the GitOps tool (Argo CD ``selfHeal: true`` or
  Flux's reconcile interval, a documented requirement), or by the agent's autoscaling loop when
  the pod is the agent's (above the autoscaling floor), and released at once because its gang
  is initialized; an old pod's slot frees, so its new pod is released.
- **MinAvailableBreached is Grove's formula** (§5.3), computed per PodClique over *all* its
  pods, terminating and Failed ones included: old and new pods of its slots. A scaling group
  is breached when fewer than ``minAvailable`` of its replicas have every PodClique present
  and none breached.
- **Only units that were once healthy are terminated** (§5.4 "ever-healthy"): a PodClique
  once seen with ``scheduled >= minAvailable``, a scaling group once seen not breached. Grove
  judges that from the condition's transition time against the object's creation; plain pods
  have no PodClique object, so the agent remembers it (:class:`~.actions.Memory`). Only
  non-terminating pods count as that evidence: the pods of a just-terminated gang are still
  terminating, and must not make the re-created gang look healthy (Grove gets this for free
  because it re-creates the PodClique objects).
- **Termination after ``terminationDelay``** (§5.4), in Grove's scope: one scaling-group
  replica when only scaling-group PodCliques are breached and the group still meets its
  ``minAvailable`` without the expired and waiting replicas (§5.4 A), else the whole
  PodCliqueSet replica (§5.4 B). Unlike Grove (defect §8.8), the PodGangs' ``Initialized``
  condition is reset, so the re-created pods are released together as a gang again.
- **Suppressed for the replica being rolled**, as Grove's ``UpdateInProgress`` does (§5.3 row
  1). Grove suppresses per child; the agent suppresses the whole replica it is rolling, the
  more cautious reading (§8.9): a replacement that is still starting is not a failure. The
  breach clock restarts when the update ends, as Grove's Unknown→True transition does.
- **The clock survives a restart.** The base PodGang ``P-i`` carries ``MinAvailableBreached``
  (contract "Agent progress"): ``True`` while a once-healthy unit of replica ``i`` is breached,
  its message naming each such unit with the time its breach began. A restarted agent (fresh
  memory) resumes those units' clocks, and counts them as once-healthy, from that message.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from grove_gitops.agent.actions import Action, DeletePod, Event, Key, Memory, SetCondition
from grove_gitops.readmodel.snapshot import MANAGED_BY, MANAGER, Day2, PodView, Slot, Workload

FAILED_POD_DELETED = "FailedPodDeleted"
GANG_TERMINATED = "GangTerminated"
MIN_AVAILABLE_BREACHED = "MinAvailableBreached"
INITIALIZED = "Initialized"

# Grove's reasons (spec/grove-day2.md §5.3)
SCHEDULED_BELOW = "ScheduledReplicasBelowMinAvailable"
INSUFFICIENT_READY = "InsufficientReadyPods"
INSUFFICIENT_PCSG = "InsufficientAvailablePodCliqueScalingGroupReplicas"
SUFFICIENT = "SufficientReadyPods"
UPDATE_IN_PROGRESS = "UpdateInProgress"

PODCLIQUE, SCALING_GROUP = "PodClique", "PodCliqueScalingGroup"
_NAMED = re.compile(r"\b(PodCliqueScalingGroup|PodClique) (\S+) since (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")


# --------------------------------------------------------------------------- Failed pods


def _managed(pod: PodView) -> bool:
    """Second guard (the watch already selects them): only pods grove-gitops manages are deleted."""
    labels = (pod.raw.get("metadata") or {}).get("labels") or {}
    return bool(labels.get(MANAGED_BY) == MANAGER)


def _deletable(pod: PodView) -> bool:
    """Live, managed, made by a render (its ``gitops.grove.io/rendered-by`` proof verifies:
    the label alone can be copied) and with a hostname: a referenced pod without one is bad
    input (warned by the snapshot, never deleted)."""
    return not pod.terminating and pod.hostname is not None and _managed(pod) and pod.owned


def _why_finished(pod: PodView) -> str:
    status = pod.raw.get("status") or {}
    reason = status.get("reason")
    detail = f"{pod.phase}, {reason}" if isinstance(reason, str) and reason else pod.phase
    message = status.get("message")
    if isinstance(message, str) and message:
        detail += f": {message[:200]}"
    return detail


def _recreated_by(pod: PodView) -> str:
    """Who makes the pod again (issue 37): the agent for a pod it created (a replica above the
    autoscaling floor: ownerReference to the ``gitops.grove.io`` PodCliqueSet), the GitOps
    tool for Git's."""
    refs = (pod.raw.get("metadata") or {}).get("ownerReferences") or []
    if isinstance(refs, list) and any(
        isinstance(r, Mapping) and r.get("apiVersion") == "gitops.grove.io/v1alpha1" and r.get("kind") == "PodCliqueSet"
        for r in refs
    ):
        return "the agent re-creates it (a replica above the autoscaling floor is the agent's, not Git's)"
    return "the GitOps tool re-creates it from Git (Argo CD selfHeal / Flux interval)"


def failed_pods(wl: Workload) -> list[Action]:
    """Delete every pod of a slot that is Failed or Succeeded and not already terminating.

    Grove never replaces such a pod (§5.1, defect §8.7: it may even hide a breach, §5.3). The
    new pod of a slot is re-created from Git by the GitOps tool and released at once (its gang
    is initialized); an old pod's deletion frees the slot, so its new pod is released.
    Ambiguous slots (two old pods) are left alone: something other than grove-gitops made one
    of them. Pods without a hostname are in no slot, so never reach here.
    """
    out: list[Action] = []
    for host in sorted(wl.slots):
        slot = wl.slots[host]
        if slot.ambiguous:
            continue
        gang: Key | None = (wl.namespace, slot.gang) if slot.gang is not None else None
        pod = slot.new
        if pod is not None and pod.finished and _deletable(pod):
            out.append(DeletePod(
                pod.namespace, pod.name, pod.uid, FAILED_POD_DELETED,
                f"pod {pod.name} is {_why_finished(pod)}; deleted so that {_recreated_by(pod)} and the agent "
                f"releases it into its initialized gang",
                gang,
            ))
        for old in slot.old:
            if old.finished and _deletable(old):
                then = f"its new pod {slot.new_name} is released" if slot.new_name else "the slot frees"
                out.append(DeletePod(
                    old.namespace, old.name, old.uid, FAILED_POD_DELETED,
                    f"old pod {old.name} of slot {host} is {_why_finished(old)}; deleted so that {then}",
                    gang,
                ))
    return out


# --------------------------------------------------------------------------- breach units


@dataclass(frozen=True)
class Unit:
    """One thing whose ``MinAvailableBreached`` Grove computes: a PodClique or a scaling group."""

    id: str  # memory key: "<ns>/<pcs>/PodClique/<fqn>" or "<ns>/<pcs>/PodCliqueScalingGroup/<fqn>"
    kind: str  # PODCLIQUE or SCALING_GROUP
    name: str  # FQN
    replica: int  # PodCliqueSet replica
    breach: str | None  # Grove's reason when breached, None when not
    healthy: bool  # evidence for "ever healthy", from non-terminating pods only (module docstring)
    scaling_group: str | None = None  # PCSG FQN of a scaling-group PodClique
    scaling_group_replica: int | None = None

    @property
    def pcs_scope(self) -> bool:
        """Standalone PodCliques and scaling groups drive PodCliqueSet-replica termination (§5.4 B)."""
        return self.kind == SCALING_GROUP or self.scaling_group is None


def unit_id(namespace: str, pcs: str, kind: str, name: str) -> str:
    """Memory key of a unit; the PodCliqueSet in it lets a pass forget its own stale units only."""
    return f"{namespace}/{pcs}/{kind}/{name}"


def podclique_of(hostname: str) -> str:
    """A slot's PodClique FQN: the hostname is ``<podclique>-<index>`` (``names.pod_hostname``)."""
    return hostname.rsplit("-", 1)[0]


def _slots_by_podclique(wl: Workload) -> dict[str, list[Slot]]:
    out: dict[str, list[Slot]] = {}
    for host in sorted(wl.slots):
        out.setdefault(podclique_of(host), []).append(wl.slots[host])
    return out


@dataclass(frozen=True)
class _Clique:
    breach: str | None  # over all pods (Grove's condition)
    fresh_breach: str | None  # over non-terminating pods
    healthy: bool  # scheduled non-terminating pods >= minAvailable (Grove's PodCliqueScheduled)


def _clique(slots: list[Slot], min_available: int) -> _Clique:
    """The breach over all of the clique's pods (old and new of its slots) and over its live
    ones, and its health, in one walk over the pods: it runs for every PodClique of every
    replica on every pass (issue 35.2); ``tests/agent/test_healing_shared_units.py`` holds
    it to Grove's formula written out over two lists of pods."""
    scheduled = not_ready = live_scheduled = live_not_ready = 0
    for s in slots:
        for p in ([s.new] if s.new is not None else []) + s.old:
            sched, bad = int(p.scheduled), int(p.errored) + int(p.started_not_ready)
            scheduled += sched
            not_ready += bad
            if not p.terminating:
                live_scheduled += sched
                live_not_ready += bad
    return _Clique(
        _breach_of(scheduled, not_ready, min_available),
        _breach_of(live_scheduled, live_not_ready, min_available),
        live_scheduled >= min_available,
    )


def _breach_of(scheduled: int, not_ready: int, min_available: int) -> str | None:
    """Grove's ``MinAvailableBreached`` of a PodClique (§5.3 rows 2-4), from the counts of its
    pods: scheduled, and errored or started not Ready."""
    if scheduled < min_available:
        return SCHEDULED_BELOW
    if scheduled - not_ready < min_available:
        return INSUFFICIENT_READY
    return None


@dataclass(frozen=True)
class Index:
    """What :func:`replica_units` looks up, computed once per workload and pass (the agent's
    time per pass must stay small at a thousand pods)."""

    slots: dict[str, list[Slot]]  # PodClique FQN -> its slots
    min_available: dict[str, int]  # PodClique FQN -> minAvailable


def index(wl: Workload) -> Index:
    return Index(_slots_by_podclique(wl), wl.min_availables())


def replica_units(wl: Workload, day2: Day2, idx: Index | None = None) -> list[Unit]:
    """Every breach unit of one PodCliqueSet replica, with its current state.

    A PodClique whose minAvailable no live object states (its PodGang not applied yet) is no
    unit: nothing is decided about it, and the scaling-group replica it belongs to counts as
    incomplete, as a missing PodClique does in Grove (§5.3 last paragraph).
    """
    ns, i = wl.namespace, day2.replica
    idx = idx or index(wl)
    by_clique = idx.slots
    units: list[Unit] = []
    for c in day2.cliques:
        state = _clique(by_clique.get(c.name, []), c.min_available)
        units.append(Unit(unit_id(ns, wl.pcs, PODCLIQUE, c.name), PODCLIQUE, c.name, i, state.breach, state.healthy))
    for g in day2.scaling_groups:
        available = fresh_available = 0
        for j in range(g.count(idx.min_available)):
            complete = fresh_ok = True
            for clique in g.cliques:
                fqn = g.podclique(j, clique)
                need = idx.min_available.get(fqn)
                if need is None:
                    complete = fresh_ok = False
                    continue
                state = _clique(by_clique.get(fqn, []), need)
                units.append(Unit(unit_id(ns, wl.pcs, PODCLIQUE, fqn), PODCLIQUE, fqn, i, state.breach, state.healthy, g.name, j))
                complete = complete and state.breach is None
                fresh_ok = fresh_ok and state.fresh_breach is None
            available += complete
            fresh_available += fresh_ok
        breach = INSUFFICIENT_PCSG if available < g.min_available else None
        units.append(Unit(unit_id(ns, wl.pcs, SCALING_GROUP, g.name), SCALING_GROUP, g.name, i, breach,
                          fresh_available >= g.min_available))
    return units


def workload_units(wl: Workload) -> dict[int, list[Unit]]:
    """:func:`replica_units` of every replica of ``wl``, over one :func:`index`.

    Computed once per workload and pass (:func:`~.decide.day2_actions`) and handed to both
    :func:`gang_termination` and :func:`breached_replicas`, which otherwise derived the same
    units each: a third of the agent's healing time per pass, and a pass runs every few pod
    events in a scale-out (issue 35.2). Units are frozen and depend on ``wl`` alone (not on the
    memory or the time), so sharing them changes nothing the two decide.
    """
    idx = index(wl)
    return {i: replica_units(wl, day2, idx) for i, day2 in wl.replicas.items()}


# --------------------------------------------------------------------------- persisted condition


def iso(t: float) -> str:
    """Epoch seconds as the RFC 3339 UTC time condition messages carry (whole seconds)."""
    return dt.datetime.fromtimestamp(int(t), dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse_time(value: Any) -> float | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    return parsed.timestamp()


def condition(gang_raw: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for c in (gang_raw.get("status") or {}).get("conditions") or []:
        if isinstance(c, dict) and c.get("type") == kind:
            return c
    return None


def breach_message(units: Iterable[Unit], since: Mapping[str, float]) -> str:
    """The persisted message: every breached once-healthy unit with the time its breach began.

    Stable while the set of breached units is stable (one API write per change), and read back
    by a restarted agent (:func:`_resume`).
    """
    parts = [f"{u.kind} {u.name} since {iso(since[u.id])}" for u in sorted(units, key=lambda u: (u.kind, u.name))]
    return "minAvailable breached: " + "; ".join(parts)


def _resume(wl: Workload, base: Key, units: list[Unit], memory: Memory) -> None:
    """On a fresh memory, take breach clocks from the base PodGang's persisted condition.

    Only units the condition names are resumed (they were breached and once healthy when it
    was written), each with the time written next to it, or the condition's
    ``lastTransitionTime`` if that cannot be read. Done once per base PodGang per agent:
    afterwards the memory is authoritative (see ``Memory.resumed``).
    """
    if base in memory.resumed:
        return
    memory.resumed.add(base)
    cond = condition(wl.gangs[base[1]].raw, MIN_AVAILABLE_BREACHED)
    if cond is None or cond.get("status") != "True":
        return
    named: dict[str, float | None] = {}
    for kind, name, when in _NAMED.findall(str(cond.get("message") or "")):
        named[unit_id(wl.namespace, wl.pcs, kind, name)] = _parse_time(when)
    fallback = _parse_time(cond.get("lastTransitionTime"))
    for u in units:
        if u.breach is None or u.id not in named or u.id in memory.breach_since:
            continue
        began = named[u.id] if named[u.id] is not None else fallback
        if began is None:
            continue
        memory.breach_since[u.id] = began
        memory.ever_healthy.add(u.id)


# --------------------------------------------------------------------------- gang termination


def _base_gang(wl: Workload, replica: int) -> Key | None:
    """The base PodGang ``P-i`` (``names.base_podgang_name``), if applied."""
    name = f"{wl.pcs}-{replica}"
    gang = wl.gangs.get(name)
    if gang is None or gang.day2 is None or gang.day2.replica != replica:
        return None
    return wl.namespace, name


def _expired(u: Unit, memory: Memory, now: float, delay: float) -> bool:
    """Grove's ``waitFor = terminationDelay - (now - LTT) <= 0`` (§5.4)."""
    return now - memory.breach_since.get(u.id, now) >= delay


def _candidate(u: Unit, memory: Memory) -> bool:
    return u.breach is not None and u.id in memory.ever_healthy


def _observe(units: list[Unit], memory: Memory, now: float, rolling: bool) -> None:
    """Record ever-healthy evidence and breach clocks (Grove's condition transitions, §5.3)."""
    for u in units:
        if u.healthy:
            memory.ever_healthy.add(u.id)
        if u.breach is None or rolling:
            memory.breach_since.pop(u.id, None)  # an update restarts the clock (Unknown -> True)
        else:
            memory.breach_since.setdefault(u.id, now)


def _forget(units: Iterable[Unit], memory: Memory) -> None:
    """A terminated unit is not once-healthy again until seen healthy (§5.4: new PodCliques)."""
    for u in units:
        memory.breach_since.pop(u.id, None)
        memory.ever_healthy.discard(u.id)


def _delete_all(wl: Workload, slots: Iterable[Slot], why: str) -> list[Action]:
    """DeletePod(GangTerminated) for every live, non-terminating, managed pod of the slots.

    Old and new pods alike (Grove deletes whole PodCliques); never a pod of an ambiguous slot.
    """
    out: list[Action] = []
    for slot in sorted(slots, key=lambda s: s.hostname):
        if slot.ambiguous:
            continue
        gang: Key | None = (wl.namespace, slot.gang) if slot.gang is not None else None
        for pod in ([slot.new] if slot.new is not None else []) + slot.old:
            if _deletable(pod):
                out.append(DeletePod(pod.namespace, pod.name, pod.uid, GANG_TERMINATED, why, gang))
    return out


def _reset_initialized(wl: Workload, gangs: Iterable[str], why: str) -> list[Action]:
    return [SetCondition((wl.namespace, g), INITIALIZED, "False", GANG_TERMINATED, why) for g in sorted(set(gangs))]


def _terminate_replica(wl: Workload, day2: Day2, fired: list[Unit], base: Key) -> list[Action]:
    """PodCliqueSet-replica scope (§5.4 B): every pod of replica ``i``, every PodGang of it."""
    i = day2.replica
    names = ", ".join(f"{u.kind} {u.name}" for u in fired)
    why = (f"PodCliqueSet {wl.pcs} replica {i}: minAvailable breached for {day2.termination_delay:g}s "
           f"({names}); every pod of the replica is deleted and re-created as a gang")
    gangs = [g.name for g in wl.gangs.values() if g.day2 is not None and g.day2.replica == i]
    return [
        *_reset_initialized(wl, gangs, why),
        Event(base, GANG_TERMINATED, why, "Warning"),
        *_delete_all(wl, wl.replica_slots(i), why),
    ]


def _terminate_group_replica(wl: Workload, day2: Day2, group: str, j: int, fired: list[Unit], base: Key) -> list[Action]:
    """Scaling-group-replica scope (§5.4 A): the pods of replica ``j`` of one group, its PodGang."""
    names = ", ".join(f"{u.kind} {u.name}" for u in fired)
    why = (f"PodCliqueScalingGroup {group} replica {j}: minAvailable breached for {day2.termination_delay:g}s "
           f"({names}); its pods are deleted and re-created as a gang")
    spec = next(g for g in day2.scaling_groups if g.name == group)
    cliques = {spec.podclique(j, c) for c in spec.cliques}
    slots = [s for h, s in wl.slots.items() if podclique_of(h) in cliques]
    return [
        *_reset_initialized(wl, [s.gang for s in slots if s.gang is not None], why),
        Event(base, GANG_TERMINATED, why, "Warning"),
        *_delete_all(wl, slots, why),
    ]


def _terminations(wl: Workload, day2: Day2, units: list[Unit], memory: Memory, now: float,
                  base: Key) -> tuple[list[Action], bool]:
    """Grove's two scopes (§5.4); returns the actions and whether the whole replica went."""
    delay = day2.termination_delay
    pcs_fired = [u for u in units if u.pcs_scope and _candidate(u, memory) and _expired(u, memory, now, delay)]
    if pcs_fired:
        actions = _terminate_replica(wl, day2, pcs_fired, base)
        _forget(units, memory)
        return actions, True
    out: list[Action] = []
    for g in day2.scaling_groups:
        expired: dict[int, list[Unit]] = {}
        waiting: set[int] = set()
        for u in units:
            if u.scaling_group != g.name or u.scaling_group_replica is None or not _candidate(u, memory):
                continue
            if _expired(u, memory, now, delay):
                expired.setdefault(u.scaling_group_replica, []).append(u)
            else:
                waiting.add(u.scaling_group_replica)
        waiting -= set(expired)
        live = len({u.scaling_group_replica for u in units if u.scaling_group == g.name})
        if not expired or max(g.replicas, live) - len(expired) - len(waiting) < g.min_available:
            continue  # the group itself breaches: the PodCliqueSet-replica scope handles it
        for j in sorted(expired):
            out += _terminate_group_replica(wl, day2, g.name, j, expired[j], base)
            _forget([u for u in units if u.scaling_group == g.name and u.scaling_group_replica == j], memory)
    return out, False


def _persist(wl: Workload, base: Key, units: list[Unit], memory: Memory, *, rolling: bool,
             terminated: bool) -> list[Action]:
    """The base PodGang's ``MinAvailableBreached``, written only when it changes (few API writes).

    ``True`` names the breached once-healthy units; ``False`` is written only over a ``True``
    or ``Unknown`` one (a gang never breached carries no condition: absent means not
    breached); ``Unknown``/``UpdateInProgress`` replaces a ``True`` one while the replica
    rolls, so a restarted agent does not resume a clock the update has restarted.
    """
    current = condition(wl.gangs[base[1]].raw, MIN_AVAILABLE_BREACHED)
    status = current.get("status") if current is not None else None
    if rolling:
        if status == "True":
            return [SetCondition(base, MIN_AVAILABLE_BREACHED, "Unknown", UPDATE_IN_PROGRESS,
                                 "breaches are not acted on while the replica is rolled")]
        return []
    breached = sorted((u for u in units if _candidate(u, memory) and u.id in memory.breach_since),
                      key=lambda u: (memory.breach_since[u.id], u.id))
    if not breached:
        if status in ("True", "Unknown"):
            reason = GANG_TERMINATED if terminated else SUFFICIENT
            return [SetCondition(base, MIN_AVAILABLE_BREACHED, "False", reason,
                                 "gang terminated and re-created" if terminated else "every PodClique and scaling group meets minAvailable")]
        return []
    reason = breached[0].breach or INSUFFICIENT_READY
    message = breach_message(breached, memory.breach_since)
    if current is not None and status == "True" and current.get("reason") == reason and current.get("message") == message:
        return []
    return [SetCondition(base, MIN_AVAILABLE_BREACHED, "True", reason, message, memory.breach_since[breached[0].id])]


def gang_termination(wl: Workload, memory: Memory, now: float, rolling: set[int],
                     units_of: Mapping[int, list[Unit]] | None = None) -> list[Action]:
    """Breach bookkeeping, gang termination and the persisted condition of every replica.

    Per PodCliqueSet replica ``i`` with a ``gitops.grove.io/day2`` description and an applied
    base PodGang (where the clock is persisted; without one nothing is decided): resume clocks
    from the condition on a fresh memory, record health and breach starts, terminate expired
    breaches in Grove's scope unless ``i`` is in ``rolling``, then bring the base PodGang's
    ``MinAvailableBreached`` up to date.

    Action order matters to the executor: the ``Initialized=False`` resets come before the
    deletes, so no re-created pod can be released on its own into a gang still marked
    initialized (§8.8); the deletes are last. ``memory`` is updated in place. ``units_of``:
    :func:`workload_units` of ``wl`` when the caller has them already.
    """
    out: list[Action] = []
    if units_of is None:
        units_of = workload_units(wl)
    seen: set[str] = set()
    for i in sorted(wl.replicas):
        day2 = wl.replicas[i]
        base = _base_gang(wl, i)
        if base is None:
            continue
        units = units_of[i]
        seen.update(u.id for u in units)
        _resume(wl, base, units, memory)
        _observe(units, memory, now, i in rolling)
        actions: list[Action] = []
        terminated = False
        if i not in rolling:
            actions, terminated = _terminations(wl, day2, units, memory, now, base)
        persist = _persist(wl, base, units, memory, rolling=i in rolling, terminated=terminated)
        resets = [a for a in actions if isinstance(a, SetCondition)]
        out += resets + persist + [a for a in actions if not isinstance(a, SetCondition)]
    _prune(wl, seen, memory)
    return out


def _prune(wl: Workload, seen: set[str], memory: Memory) -> None:
    """Forget units of this PodCliqueSet that no longer exist (scaled in, or their replica has
    no base PodGang): the memory stays bounded, and a unit that comes back starts afresh (not
    once-healthy), the cautious side."""
    prefix = f"{wl.namespace}/{wl.pcs}/"
    for uid in [u for u in memory.breach_since if u.startswith(prefix) and u not in seen]:
        del memory.breach_since[uid]
    memory.ever_healthy -= {u for u in memory.ever_healthy if u.startswith(prefix) and u not in seen}


def breached_replicas(wl: Workload, memory: Memory, now: float, rolling: Iterable[int] = (),
                      units_of: Mapping[int, list[Unit]] | None = None) -> set[int]:
    """Replicas with a once-healthy standalone PodClique or scaling group breached, not yet expired.

    Grove's ``breachedNotExpired`` (§2.2, ``pcsr/gangterminate.go:99-102``), which the rollout
    uses to order replicas. Reads ``memory`` without changing it: call it after
    :func:`gang_termination` in the same pass so the clocks are current (a breach not yet
    recorded counts as starting now). Replicas in ``rolling`` are never breached, as Grove's
    ``UpdateInProgress`` children are not. ``units_of``: as in :func:`gang_termination`.
    """
    out: set[int] = set()
    if units_of is None:
        units_of = workload_units(wl)
    skip = set(rolling)
    for i, day2 in wl.replicas.items():
        if i in skip:
            continue
        for u in units_of[i]:
            if u.pcs_scope and _candidate(u, memory) and not _expired(u, memory, now, day2.termination_delay):
                out.add(i)
                break
    return out
