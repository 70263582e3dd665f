"""Scale-in and removal: delete the pods no PodGang wants any more.

A managed pod whose slot no current PodGang references is *unwanted* (``readmodel/snapshot.py``): its
PodClique, scaling-group replica or PodCliqueSet replica was scaled in, or the whole
PodCliqueSet was removed from Git. The GitOps tool never prunes rendered pods (they carry
``Prune=false`` / ``prune: disabled`` so that a rolling update stays in the agent's hands), so
the agent deletes them.

- **Only after a grace period.** A released pod (it ran, so a PodGang listed it once) is
  deleted once it has been unwanted continuously for ``grace`` seconds; a pod that becomes
  wanted again, or disappears, is forgotten (``Memory.unwanted_since``, this workload's
  own). After an agent restart the grace period starts again: the cautious side.
- **A gated pod may be ahead, not unwanted.** A GitOps tool may apply a pod before the
  PodGang that lists it, for as long as a sync stalls. Such a pod is deleted only when the
  workload's PodGangs changed after the agent first saw it (:mod:`.intent`), never merely
  because no PodGang lists it yet.
- **In Grove's scale-in order** (``spec/grove-day2.md`` §6.1, ``DeletionSorter``):
  unassigned pods first, then by phase (Pending < Unknown < Running; Failed and Succeeded
  rank with Pending), not-Ready first, newest first. Which pods go is decided by Git (the
  render removes the highest indices), not by health and age as in Grove (§9 row 16); the
  order only decides which of the due pods the executor deletes first.
- **Never a referenced or unmanaged pod.** A pod any current PodGang lists is never unwanted;
  this is asserted, not trusted. The managed-by label is checked again here (the watch and the
  snapshot already select on it), and so is the ``gitops.grove.io/rendered-by`` proof: a
  tenant pod that copied the label (even with the annotation of another pod) is not ours. A pod whose own PodGang (label ``grove.io/podgang``) exists
  but cannot be read is not deleted either: the gang may well want it.
"""

from __future__ import annotations

from grove_gitops.agent import intent
from grove_gitops.agent.actions import Action, DeletePod, Key, Memory
from grove_gitops.readmodel.snapshot import MANAGED_BY, MANAGER, PodView, Snapshot, Workload

UNWANTED_POD_DELETED = "UnwantedPodDeleted"

_PHASE_RANK = {"Pending": 0, "Unknown": 1, "Running": 2}  # others (Failed, Succeeded) rank 0, as in Grove


def _rank(pod: PodView) -> tuple[bool, int, bool, bool]:
    """Grove's ``DeletionSorter`` rules 2-4 and the first half of 6 (§6.1): smaller goes first.

    Rule 1 (terminating first) is moot: terminating pods are never due. Rule 5 (a template
    hash other than the expected one first) has no meaning for a pod no PodGang wants.
    """
    return (
        pod.node_name != "",  # unassigned first
        _PHASE_RANK.get(pod.phase, 0),
        pod.ready,  # not Ready first
        pod.created != "",  # zero creationTimestamp first
    )


def scale_in_order(pods: list[PodView]) -> list[PodView]:
    """Pods in Grove's deletion order: :func:`_rank`, then newest first, then by name.

    Stable sorts applied from the last criterion to the first. RFC 3339 UTC timestamps, as
    the API server writes them, sort chronologically as strings.
    """
    by_name = sorted(pods, key=lambda p: p.key)
    newest_first = sorted(by_name, key=lambda p: p.created, reverse=True)
    return sorted(newest_first, key=_rank)


def _managed(pod: PodView) -> bool:
    labels = (pod.raw.get("metadata") or {}).get("labels") or {}
    return bool(labels.get(MANAGED_BY) == MANAGER)


def _own_gang(pod: PodView) -> Key | None:
    return (pod.namespace, pod.podgang) if pod.podgang else None


def unwanted_pods(wl: Workload, memory: Memory, now: float, grace: float, snap: Snapshot,
                  unordered_grace: float = intent.UNORDERED_GRACE) -> list[Action]:
    """DeletePod(UnwantedPodDeleted) for the pods of ``wl`` that are due.

    ``memory`` is this workload's own (updated in place, only for this workload's pods: a
    pass over another workload never touches it). A released pod is due once unwanted for
    ``grace`` seconds; a gated one when :func:`.intent.gated_due` says it is behind the
    workload's PodGangs (never merely because its PodGang has not arrived). ``snap`` is the
    snapshot ``wl`` comes from: its ``referenced`` set is the guard that no pod a PodGang
    lists is ever deleted here, and its ``malformed`` PodGangs keep their pods.
    """
    current = {p.key for p in wl.unwanted}
    for key in [k for k in memory.unwanted_since if k not in current]:
        del memory.unwanted_since[key]  # wanted again, or gone
    due: list[tuple[PodView, str]] = []
    for pod in wl.unwanted:
        if pod.key in snap.referenced:
            raise AssertionError(f"pod {pod.namespace}/{pod.name} is referenced by a PodGang but was classed unwanted")
        if pod.terminating or not _managed(pod) or not pod.owned:
            continue
        gang = _own_gang(pod)
        if gang is not None and gang in snap.malformed:
            memory.unwanted_since.pop(pod.key, None)  # its PodGang may want it; cannot tell
            continue
        if pod.gated:
            ready, why = intent.gated_due(pod, memory, now, grace, unordered_grace)
            if ready:
                due.append((pod, f"it never ran and {why}"))
            continue
        since = memory.unwanted_since.setdefault(pod.key, now)
        if now - since >= grace:
            due.append((pod, f"for {now - since:.0f}s (grace {grace:g}s): scaled in or removed from Git"))
    out: list[Action] = []
    why_of = {p.key: why for p, why in due}
    for pod in scale_in_order([p for p, _ in due]):
        gang = _own_gang(pod)
        attach = gang if gang is not None and gang in snap.gangs else None
        out.append(DeletePod(
            pod.namespace, pod.name, pod.uid, UNWANTED_POD_DELETED,
            f"pod {pod.name} ({pod.hostname}) is listed by no PodGang of PodCliqueSet {wl.pcs or '?'} "
            f"{why_of[pod.key]}",
            attach,
        ))
    return out
