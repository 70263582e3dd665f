"""RollingRecreate and OnDelete: which old pods to retire now (``spec/grove-day2.md`` §2-§4).

Git already holds the new target: every slot's new pod exists (gated) next to its old pod.
Retiring the old pod frees the slot, and :mod:`.release` then lifts the new pod's gate. This
module only chooses *which* old pods to delete, in Grove's order, derived each pass from
live pods (and the ``RollingUpdate`` condition on the replica's base PodGang, which records
the replica being rolled), so a restarted agent resumes where the last one stopped.

RollingRecreate, per PodCliqueSet:
- one replica at a time: the one whose base PodGang says ``RollingUpdate=True`` while it has
  work left, else the next by :func:`~grove_gitops.readmodel.order.order_replicas` (Grove's order);
- in that replica, old pods that are not Ready are retired at once (Grove's pending /
  unhealthy / starting buckets; a Ready pod with an old restart is *not* unhealthy here,
  fixing Grove #697), and a scaling-group replica that is unavailable has all its old pods
  retired at once;
- Ready old pods go one step at a time (:func:`~grove_gitops.readmodel.order.steps_for_replica`): a step starts
  only when nothing of the replica is in flight (an old pod still terminating, or a new pod
  not yet Ready) and Grove's guard holds (the PodClique has ≥ minAvailable Ready pods; the
  scaling group ≥ minAvailable available replicas);
- the replica is done when it has no old pod and every PodClique has ≥ minAvailable Ready
  new pods (Grove's completion rule).
- An update during an update keeps the current replica until it is done (Grove restarts the
  walk and can roll two replicas at once, §4 / §8.6).

OnDelete retires nothing: a user deleting an old pod frees the slot. Under both strategies
an old pod that never ran (still gated: a superseded target) and is older than the grace
period is deleted at once, since it holds no workload and would otherwise block its slot.
Only pods whose ``gitops.grove.io/rendered-by`` proof verifies are ever retired
(:mod:`grove_gitops.expand.ownership`); any other old pod holds its slot until a person
deletes it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from grove_gitops.agent import healing, intent
from grove_gitops.agent.actions import Action, DeletePod, Event, Memory, SetCondition
from grove_gitops.readmodel.order import ReplicaRank, SlotRef, Step, order_replicas, steps_for_replica
from grove_gitops.readmodel.snapshot import ON_DELETE, PodView, Slot, Workload

ROLLING_UPDATE = "RollingUpdate"
RETIRED = "PodRetired"  # an old pod retired by a rollout step
SUPERSEDED = "SupersededPodDeleted"  # an old pod that never ran, past the grace period
WAITING_FOR_REPLACEMENT = "WaitingForReplacement"  # RollingUpdate reason while a step waits for new pods
REPLACEMENT_POD_MISSING = "ReplacementPodMissing"  # the Event that reports such a wait
REPORT_MISSING_AFTER = 10.0  # seconds a step waits for its new pods before that is reported
# Why a rollout waits (the reason of the RolloutBlocked condition, :mod:`.blocked`)
MIN_AVAILABLE = "MinAvailable"  # the next step would break Grove's availability bound
NEW_POD_NOT_READY = "NewPodNotReady"  # the last step's new pod is not Ready yet
OLD_POD_TERMINATING = "OldPodTerminating"  # the last step's old pod is still going
REPLACEMENT_MISSING = "ReplacementMissing"  # the next step's new pod does not exist
UNPROVEN_OLD_POD = "UnprovenOldPod"  # an old pod no render made: never deleted
NEW_POD_UNBOUND = "NewPodUnbound"  # the next step's new pod lost what binds it to its gang: never released
REPLICA_NOT_READY = "ReplicaNotReady"  # no old pod left, but the replica is not complete
_STEP = re.compile(r"step (\d+) of \d+")
MAX_STEPS = 10**6  # a count read back from a condition is bounded


@dataclass
class Progress:
    """What a pass found, for the PodGang condition, Events and metrics."""

    replica: int | None = None
    step: int = 0
    total: int = 0
    outdated: int = 0  # old pods still running (both strategies)
    waiting: list[str] = field(default_factory=list)
    #: Why no step is taken this pass, as (rule, message naming the pod): the first wait found;
    #: None when a step was taken or nothing is left to do (see :mod:`.blocked`)
    blocked: tuple[str, str] | None = None
    missing: list[str] = field(default_factory=list)  # new pods a step waits for (they do not exist)


def _wait(progress: Progress, rule: str, message: str) -> None:
    progress.waiting.append(message)
    if progress.blocked is None:
        progress.blocked = (rule, message)


def _live_old(slot: Slot) -> list[PodView]:
    return [p for p in slot.old if not p.terminating]


def _slot_ref(slot: Slot, pod: PodView) -> SlotRef:
    return SlotRef(slot.hostname, pod.podclique or slot.hostname, pod.index or 0, pod.scaling_group, pod.scaling_group_replica)


def base_gang(wl: Workload, replica: int) -> str | None:
    name = f"{wl.pcs}-{replica}"
    return name if name in wl.gangs else None


def _condition(wl: Workload, replica: int, kind: str) -> dict[str, object] | None:
    gang = base_gang(wl, replica)
    if gang is None:
        return None
    for cond in (wl.gangs[gang].raw.get("status") or {}).get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type") == kind:
            return cond
    return None


def rolling_replicas(wl: Workload) -> set[int]:
    """Replicas whose base PodGang says ``RollingUpdate=True`` (breaches there are not acted
    on, as Grove's ``UpdateInProgress`` suppresses them)."""
    out = set()
    for i in wl.replicas:
        cond = _condition(wl, i, ROLLING_UPDATE)
        if cond is not None and cond.get("status") == "True":
            out.add(i)
    return out


def superseded(wl: Workload, memory: Memory, now: float, grace: float, unordered_grace: float) -> list[Action]:
    """Old pods that never ran (still gated) and are behind the workload's PodGangs
    (:func:`.intent.gated_due`): deleted, as they hold no workload. A gated pod applied
    before its PodGang is *ahead*, not superseded, and waits (issue 22)."""
    out: list[Action] = []
    for slot in wl.slots.values():
        for pod in slot.old:
            if not pod.gated or pod.terminating or not pod.owned:
                continue
            newer = slot.new is not None and bool(pod.created) and slot.new.created > pod.created
            due, why = intent.gated_due(pod, memory, now, grace, unordered_grace, newer)
            if due:
                out.append(DeletePod(pod.namespace, pod.name, pod.uid, SUPERSEDED,
                                     f"superseded before it ever ran (slot {slot.hostname}): {why}", _gang_key(wl, slot)))
    return out


def _gang_key(wl: Workload, slot: Slot) -> tuple[str, str] | None:
    return (wl.namespace, slot.gang) if slot.gang else None


def _available_in(wl: Workload, slots: list[Slot], podclique: str) -> int:
    n = 0
    for slot in slots:
        for pod in [*slot.old, *([slot.new] if slot.new else [])]:
            if pod.podclique == podclique and pod.available:
                n += 1
    return n


def _clique_of(slot: Slot) -> str | None:
    pod = slot.new or (slot.old[0] if slot.old else None)
    return pod.podclique if pod else None


def _replica_done(wl: Workload, slots: list[Slot]) -> bool:
    """No old pod left and every PodClique has ≥ minAvailable Ready new pods."""
    if any(s.released_old for s in slots):
        return False
    ready: dict[str, int] = {}
    for slot in slots:
        clique = _clique_of(slot)
        if clique is None:
            continue
        ready.setdefault(clique, 0)
        if slot.new is not None and slot.new.available:
            ready[clique] += 1
    return all(n >= (wl.min_available(c) or 0) for c, n in ready.items())


def _short_clique(wl: Workload, slots: list[Slot]) -> tuple[str, int, int, str] | None:
    """The first PodClique (by name) with fewer Ready new pods than minAvailable, with a new pod
    of it that is not Ready: what keeps a replica without old pods from completing."""
    ready: dict[str, int] = {}
    waiting: dict[str, str] = {}
    for slot in sorted(slots, key=lambda s: s.hostname):
        clique = _clique_of(slot)
        if clique is None:
            continue
        ready.setdefault(clique, 0)
        if slot.new is not None and slot.new.available:
            ready[clique] += 1
        else:
            waiting.setdefault(clique, slot.new_name or slot.hostname)
    for clique in sorted(ready):
        need = wl.min_available(clique) or 0
        if ready[clique] < need:
            return clique, ready[clique], need, waiting.get(clique, "")
    return None


def _work(slots: list[Slot]) -> bool:
    return any(s.released_old and not s.ambiguous for s in slots)


def _group_available(wl: Workload, slots: list[Slot], group: str, replica: int) -> bool:
    cliques = {s.new.podclique for s in slots if s.new and s.new.scaling_group == group and s.new.scaling_group_replica == replica}
    cliques |= {p.podclique for s in slots for p in s.old if p.scaling_group == group and p.scaling_group_replica == replica}
    members = [s for s in slots if any(
        p.scaling_group == group and p.scaling_group_replica == replica for p in [*s.old, *([s.new] if s.new else [])])]
    return all(_available_in(wl, members, c) >= (wl.min_available(c) or 0) for c in cliques if c)


def rollout(wl: Workload, memory: Memory, now: float, *, breached: set[int], grace: float,
            unordered_grace: float = intent.UNORDERED_GRACE) -> tuple[list[Action], Progress]:
    """The retire actions of one pass for one PodCliqueSet, and its progress (``memory``:
    this workload's, with :func:`.intent.observe` done for this pass)."""
    actions, progress = _rollout(wl, memory, now, breached, grace, unordered_grace)
    _forget_found(memory, progress)
    return actions, progress


def _rollout(wl: Workload, memory: Memory, now: float, breached: set[int], grace: float,
             unordered_grace: float) -> tuple[list[Action], Progress]:
    progress = Progress()
    actions: list[Action] = superseded(wl, memory, now, grace, unordered_grace)
    progress.outdated = sum(len(s.released_old) for s in wl.slots.values())
    rolling = {i: d for i, d in wl.replicas.items() if d.strategy != ON_DELETE}
    if not rolling:
        return actions, progress
    by_replica = {i: wl.replica_slots(i) for i in rolling}
    current = None
    for i in sorted(rolling):
        cond = _condition(wl, i, ROLLING_UPDATE)
        if cond is not None and cond.get("status") == "True" and not _replica_done(wl, by_replica[i]):
            current = i
            break
    if current is not None and not _work(by_replica[current]) and _replica_done(wl, by_replica[current]):
        current = None
    if current is None:
        pending = [i for i in rolling if _work(by_replica[i])]
        # A replica whose condition says True but is done now gets its completion written.
        for i in rolling:
            cond = _condition(wl, i, ROLLING_UPDATE)
            if cond is not None and cond.get("status") == "True" and i not in pending and _replica_done(wl, by_replica[i]):
                actions += _complete(wl, i, memory)
        if not pending:
            return actions, progress
        ranks = [
            ReplicaRank(i, sum(1 for s in by_replica[i] for p in [*s.old, *([s.new] if s.new else [])] if p.scheduled), i in breached)
            for i in pending
        ]
        current = order_replicas(ranks)[0]
        total = len(_remaining_steps(current, by_replica[current]))
        _start_steps(memory, wl, current, total)
        gang = base_gang(wl, current)
        if gang is not None:
            actions.append(Event((wl.namespace, gang), "RollingUpdateStarted",
                                 f"rolling PodCliqueSet replica {current}: {total} steps"))
    progress.replica = current
    slots = by_replica[current]
    actions += _retire_step(wl, memory, now, current, slots, progress)
    retiring = any(isinstance(a, DeletePod) and a.reason == RETIRED for a in actions)
    if not _work(slots) and _replica_done(wl, slots) and not retiring:
        actions += _complete(wl, current, memory)
    else:
        if not retiring and progress.blocked is None and not _work(slots):
            short = _short_clique(wl, slots)
            if short is not None:
                _wait(progress, REPLICA_NOT_READY, f"replica {current} has no old pod left, but PodClique {short[0]} has "
                      f"{short[1]} Ready new pods, below minAvailable {short[2]} (e.g. pod {short[3]})")
        gang = base_gang(wl, current)
        reported = any(isinstance(a, SetCondition) and a.reason == WAITING_FOR_REPLACEMENT for a in actions)
        if gang is not None and not reported:
            cond = _condition(wl, current, ROLLING_UPDATE)
            was_waiting = cond is not None and cond.get("reason") == WAITING_FOR_REPLACEMENT
            # After a reported wait the reason is put back at once (not at the next refresh).
            actions.append(SetCondition((wl.namespace, gang), ROLLING_UPDATE, "True", "RollingReplica",
                                        f"rolling replica {current}, step {progress.step} of {progress.total}",
                                        progress=None if was_waiting else (progress.step, progress.total)))
    return actions, progress


def count_steps(memory: Memory, wl: Workload, replica: int, remaining: int) -> tuple[int, int]:
    """``(done, total)``: the steps of the replica's rollout done so far and in all.

    Steps left are counted from the cluster each pass; what is done only shows as steps left
    going down. So ``done`` grows by every drop of the steps left since the last pass, and the
    total is ``done + left``: a scale-out or another update mid-rollout adds steps to the
    total, never moves the count back (issue 37: after a restart the logs read "step 1 of 9",
    "step 1 of 8", ...: the total read back from the condition was kept while the steps left
    exceeded it). A restarted agent takes ``done`` from the condition's "step k of n". This is
    only what the progress messages say: no decision reads it.
    """
    key = f"{wl.namespace}/{wl.pcs}/{replica}"
    kept = memory.rollout_steps.get(key)
    if kept is None:
        cond = _condition(wl, replica, ROLLING_UPDATE)
        found = _STEP.search(str(cond.get("message", ""))) if cond is not None and cond.get("status") == "True" else None
        done = int(found.group(1)) if found else 0
    else:
        done, before = kept
        done += max(0, before - remaining)
    done = min(done, MAX_STEPS)
    memory.rollout_steps[key] = (done, remaining)
    return done, done + remaining


def _start_steps(memory: Memory, wl: Workload, replica: int, remaining: int, done: int = 0) -> None:
    memory.rollout_steps[f"{wl.namespace}/{wl.pcs}/{replica}"] = (done, remaining)


def _complete(wl: Workload, replica: int, memory: Memory) -> list[Action]:
    memory.rollout_steps.pop(f"{wl.namespace}/{wl.pcs}/{replica}", None)
    gang = base_gang(wl, replica)
    if gang is None:
        return []
    return [
        SetCondition((wl.namespace, gang), ROLLING_UPDATE, "False", "UpdateComplete", f"replica {replica} runs its current template"),
        Event((wl.namespace, gang), "RollingUpdateComplete", f"PodCliqueSet replica {replica} updated"),
    ]


def _remaining_steps(replica: int, slots: list[Slot]) -> list[Step]:
    refs = []
    for slot in slots:
        if slot.ambiguous:
            continue
        for pod in slot.released_old:
            if not pod.terminating and pod.owned:
                refs.append(_slot_ref(slot, pod))
    return steps_for_replica(replica, refs)


def _retire_step(wl: Workload, memory: Memory, now: float, replica: int, slots: list[Slot],
                 progress: Progress) -> list[Action]:
    out: list[Action] = []
    missing: list[Slot] = []
    by_host = {s.hostname: s for s in slots}
    # 1. Old pods that are not Ready, and every old pod of an unavailable scaling-group replica: at once.
    retired: set[str] = set()
    for slot in slots:
        if slot.ambiguous:
            continue
        for pod in _live_old(slot):
            if pod.gated:
                continue  # handled by superseded() once past the grace period
            if not pod.owned:
                continue  # no render made it: never deleted (see the end of this function)
            if pod.scaling_group is not None and pod.scaling_group_replica is not None:
                if _group_available(wl, slots, pod.scaling_group, pod.scaling_group_replica):
                    continue
                reason = f"scaling group {pod.scaling_group} replica {pod.scaling_group_replica} is unavailable"
            elif pod.available:
                continue
            else:
                reason = "not Ready"
            if _missing(slot):
                missing.append(slot)  # never leave a slot empty while its replacement does not exist
                continue
            out.append(DeletePod(pod.namespace, pod.name, pod.uid, RETIRED,
                                 f"rolling update of replica {replica}: old pod {reason}", _gang_key(wl, slot)))
            retired.add(slot.hostname)
    remaining = [s for s in _remaining_steps(replica, slots) if not set(s.hostnames) & retired]
    progress.step, progress.total = count_steps(memory, wl, replica, len(remaining))
    if out:
        progress.waiting.append("old pods that are not Ready are being retired")  # a step: not blocked
        return out
    if missing:
        return _wait_for_replacements(wl, memory, now, replica, missing, progress)
    # 2. Anything in flight? An old pod terminating, or a new pod not Ready yet.
    for slot in slots:
        if any(p.terminating for p in slot.old):
            old = next(p for p in slot.old if p.terminating)
            _wait(progress, OLD_POD_TERMINATING, f"old pod {old.name} is terminating: the next step waits until it is gone")
            return out
        if slot.new_name is not None and slot.free and (slot.new is None or not slot.new.available):
            _wait(progress, NEW_POD_NOT_READY, f"new pod {slot.new_name} is not Ready yet: the next step waits for it "
                  "(Grove's rule: one step at a time)")
            return out
    if not remaining:
        unproven = sorted(p.name for s in slots if not s.ambiguous for p in _live_old(s) if not p.owned and not p.gated)
        if unproven:
            _wait(progress, UNPROVEN_OLD_POD, f"old pod {unproven[0]} has no valid gitops.grove.io/rendered-by proof; "
                  "the agent never deletes it: delete it by hand")
        return out
    step = remaining[0]
    # 3. Grove's guard.
    first = by_host[step.hostnames[0]].released_old[0]
    if first.scaling_group is None:
        clique = first.podclique or ""
        need = wl.min_available(clique) or 0
        have = _available_in(wl, slots, clique)
        if have < need:
            _wait(progress, MIN_AVAILABLE, f"retiring old pod {first.name} would leave PodClique {clique} below "
                  f"minAvailable {need} ({have} Ready)")
            return out
    else:
        group = first.scaling_group
        spec = next((g for d in [wl.replicas[replica]] for g in d.scaling_groups if g.name == group), None)
        need = spec.min_available if spec else 1
        replicas = {p.scaling_group_replica for s in slots for p in [*s.old, *([s.new] if s.new else [])]
                    if p.scaling_group == group and p.scaling_group_replica is not None}
        have = sum(1 for j in replicas if _group_available(wl, slots, group, j))
        if have < need:
            _wait(progress, MIN_AVAILABLE, f"retiring old pod {first.name} would leave scaling group {group} below "
                  f"minAvailable {need} ({have} available replicas)")
            return out
    absent = [by_host[h] for h in step.hostnames if _missing(by_host[h])]
    if absent:
        return _wait_for_replacements(wl, memory, now, replica, absent, progress)
    unbound = _unbound(wl, [by_host[h] for h in step.hostnames])
    if unbound is not None:
        _wait(progress, NEW_POD_UNBOUND, f"new pod {unbound[0]} is not bound to its gang as rendered ({unbound[1]}), "
              "so it would never be released: its old pod stays (restore the field, or delete the new pod for the "
              "GitOps tool to create it again)")
        return out
    progress.step += 1
    # The step is counted as done now: steps added before the next pass (a scale-out) must not
    # hide the one step fewer left.
    _start_steps(memory, wl, replica, len(remaining) - 1, done=progress.step)
    for host in step.hostnames:
        slot = by_host[host]
        for pod in (p for p in _live_old(slot) if p.owned):
            out.append(DeletePod(pod.namespace, pod.name, pod.uid, RETIRED,
                                 f"rolling update of replica {replica}, step {progress.step} of {progress.total}: {step.unit}",
                                 _gang_key(wl, slot)))
    return out


def _unbound(wl: Workload, slots: list[Slot]) -> tuple[str, str] | None:
    """(name, why) of the first new pod of ``slots`` that lost what binds it to its gang
    (:mod:`~grove_gitops.readmodel.binding`): the release would hold it forever, so a step
    must not empty its slot (retiring the old pod would only take a Ready pod away)."""
    for slot in slots:
        gang = wl.gangs.get(slot.gang) if slot.gang is not None else None
        if gang is None or slot.new is None or slot.podgroup is None or not slot.new.gated:
            continue
        why = gang.binding.mismatch(slot.podgroup, slot.new.raw)
        if why is not None:
            return slot.new.name, why
    return None


def _missing(slot: Slot) -> bool:
    """The slot's new pod does not exist (or is on its way out): its old pod must stay."""
    return slot.new is None or slot.new.terminating


def _wait_for_replacements(wl: Workload, memory: Memory, now: float, replica: int, slots: list[Slot],
                           progress: Progress) -> list[Action]:
    """A step waits until the new pod of every slot it empties exists (created and gated).

    Grove creates a replacement itself; here the GitOps tool does, and Argo CD's shipped
    order applies PodGangs (wave 0) before Pods (wave 10): retiring on the PodGang change
    alone emptied slots for the whole gap, and indefinitely when the pod wave failed (issue
    22). The wait is reported once it has lasted :data:`REPORT_MISSING_AFTER` seconds: a
    Warning Event ``ReplacementPodMissing`` on the replica's base PodGang and the
    ``RollingUpdate`` condition's reason ``WaitingForReplacement``, each written once.
    """
    names = sorted(s.new_name or s.hostname for s in slots)
    for name in names:
        memory.missing_since.setdefault(name, now)
    since = min(memory.missing_since[n] for n in names)
    waited = now - since
    progress.waiting.append(f"new pod {names[0]} does not exist yet" + (f" (and {len(names) - 1} more)" if len(names) > 1 else "")
                            + f", for {waited:.0f}s: its old pod stays until the GitOps tool creates it")
    progress.blocked = progress.blocked or (REPLACEMENT_MISSING, f"new pod {names[0]} does not exist yet"
                                            + (f" (and {len(names) - 1} more)" if len(names) > 1 else "")
                                            + ": its old pod stays until it is created")
    progress.missing = names
    gang = base_gang(wl, replica)
    if waited < REPORT_MISSING_AFTER or gang is None:
        return []
    # One message per wait: written once, kept while pods of it are still missing (naming the
    # pods still missing would rewrite the condition each time the GitOps tool creates one).
    first = memory.missing_message is None
    message = memory.missing_message or (
        f"rolling replica {replica}, step {progress.step + 1} of {progress.total}: waiting since {healing.iso(since)} for "
        f"pod {names[0]}" + (f" and {len(names) - 1} more" if len(names) > 1 else "")
        + " to be created by the GitOps tool (Argo CD sync / Flux apply) before retiring the old pod")
    memory.missing_message = message
    out: list[Action] = [SetCondition((wl.namespace, gang), ROLLING_UPDATE, "True", WAITING_FOR_REPLACEMENT, message)]
    if first:
        out.append(Event((wl.namespace, gang), REPLACEMENT_POD_MISSING, message, "Warning"))
    return out


def _forget_found(memory: Memory, progress: Progress) -> None:
    """Drop the missing-replacement clocks of pods that exist now (this workload's only)."""
    waiting = set(progress.missing)
    memory.missing_since = {n: t for n, t in memory.missing_since.items() if n in waiting}
    if not waiting:
        memory.missing_message = None
