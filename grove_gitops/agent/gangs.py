"""The release decision, as a pure function of what the cache holds.

A gang is *complete* when its PodGang exists, every pod its podgroups reference exists (and
is not being deleted), and every backend object it lists exists. A pod of a scaled PodGang
(label ``grove.io/base-podgang``) additionally waits until every podgroup of the base
PodGang has at least ``minReplicas`` pods with ``PodScheduled=True``
(``spec/grove-desired-state.md`` §6). Grove reads that count from PodClique status; no
PodClique objects exist under GitOps, so the pods themselves are counted.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from grove_gitops.errors import GroveGitopsError

GATE = "grove.io/podgang-pending-creation"
GANG_OBJECTS = "gitops.grove.io/gang-objects"
PODGANG_LABEL = "grove.io/podgang"
PODCLIQUE_LABEL = "grove.io/podclique"
BASE_PODGANG_LABEL = "grove.io/base-podgang"

K8s = Mapping[str, Any]


@dataclass(frozen=True, order=True)
class ObjectRef:
    api_version: str
    kind: str
    namespace: str
    name: str


@dataclass
class Decision:
    """Why a gang is or is not released, and which pods to ungate."""

    complete: bool
    waiting_for: list[str] = field(default_factory=list)
    to_ungate: list[str] = field(default_factory=list)
    uids: dict[str, str] = field(default_factory=dict)  # pod name -> uid the decision saw


def has_gate(pod: K8s) -> bool:
    return any(g.get("name") == GATE for g in (pod.get("spec") or {}).get("schedulingGates") or [])


def gate_index(pod: K8s) -> int | None:
    for i, gate in enumerate((pod.get("spec") or {}).get("schedulingGates") or []):
        if gate.get("name") == GATE:
            return i
    return None


def is_terminating(obj: K8s) -> bool:
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def is_scheduled(pod: K8s) -> bool:
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("status") == "True":
            return True
    return False


class MalformedPodGang(GroveGitopsError):
    """A PodGang the lifter cannot read (a bad annotation or spec).

    Raised per gang, so the loop can report that one gang (one Event, one warning), retry it
    with backoff, and go on releasing every other gang.
    """


def _names(items: Any, what: str) -> list[dict[str, Any]]:
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise MalformedPodGang(f"{what}: expected a list of objects, got {json.dumps(items)[:80]}")
    for i in items:
        if not isinstance(i.get("name"), str) or not i["name"]:
            raise MalformedPodGang(f"{what}: every entry needs a name, got {json.dumps(i)[:80]}")
    return list(items)


def referenced_pods(podgang: K8s) -> list[tuple[str, str, str]]:
    """(podgroup, namespace, name) of every pod the PodGang references.

    A reference without a namespace means the PodGang's own namespace; one with a namespace
    means exactly that namespace (never a same-named pod elsewhere).
    """
    spec = podgang.get("spec")
    if not isinstance(spec, dict):
        raise MalformedPodGang("spec: expected an object")
    own_ns = str((podgang.get("metadata") or {}).get("namespace", ""))
    out = []
    for group in _names(spec.get("podgroups") or [], "spec.podgroups"):
        for ref in _names(group.get("podReferences") or [], f"spec.podgroups[{group['name']}].podReferences"):
            ns = ref.get("namespace") or own_ns
            out.append((str(group["name"]), str(ns), str(ref["name"])))
    return out


def gang_objects(podgang: K8s) -> list[ObjectRef]:
    """The backend objects the renderer listed for this gang (empty when none).

    A malformed annotation raises :class:`MalformedPodGang`: silently treating it as "no
    objects" would release pods before their PodGroup exists.
    """
    meta = podgang.get("metadata") or {}
    raw = (meta.get("annotations") or {}).get(GANG_OBJECTS)
    if not raw:
        return []
    where = f"metadata.annotations[{GANG_OBJECTS}]"
    try:
        items = json.loads(raw)
    except ValueError as exc:
        raise MalformedPodGang(f"{where}: not JSON ({exc})") from exc
    ns = str(meta.get("namespace", ""))
    out = []
    for i in _names(items, where):
        if not isinstance(i.get("apiVersion"), str) or not isinstance(i.get("kind"), str):
            raise MalformedPodGang(f"{where}: every entry needs apiVersion and kind, got {json.dumps(i)[:80]}")
        out.append(ObjectRef(i["apiVersion"], i["kind"], ns, i["name"]))
    return out


def _label(pod: K8s, key: str) -> str | None:
    value = ((pod.get("metadata") or {}).get("labels") or {}).get(key)
    return value if isinstance(value, str) else None


def base_label(pod: K8s) -> str | None:
    """The base PodGang a scaled gang's pod waits for (label ``grove.io/base-podgang``)."""
    return _label(pod, BASE_PODGANG_LABEL)


def belongs_to(pod: K8s, podgang: K8s) -> bool:
    """Whether the pod's ``grove.io/podgang`` label names this PodGang (same namespace).

    Only that PodGang may release the pod: another PodGang that merely lists it does not.
    """
    meta = podgang.get("metadata") or {}
    pod_meta = pod.get("metadata") or {}
    return _label(pod, PODGANG_LABEL) == meta.get("name") and pod_meta.get("namespace") == meta.get("namespace")


def base_gang_scheduled(base: K8s, pods: Mapping[tuple[str, str], K8s]) -> list[str]:
    """Podgroups of the base gang below minReplicas scheduled pods (empty = scheduled).

    Only pods the base PodGang references count: after a template change the old base pods
    keep the same label while they are being retired, and must not satisfy the count.
    """
    base_name = base["metadata"]["name"]
    counts: dict[str, int] = {}
    for group, ns, name in referenced_pods(base):
        pod = pods.get((ns, name))
        if pod is not None and belongs_to(pod, base) and not is_terminating(pod) and is_scheduled(pod):
            counts[group] = counts.get(group, 0) + 1
    out = []
    for g in _names(base["spec"].get("podgroups") or [], "spec.podgroups"):
        try:
            need = int(g.get("minReplicas", 0))
        except (TypeError, ValueError) as exc:
            raise MalformedPodGang(f"spec.podgroups[{g['name']}].minReplicas: not an integer") from exc
        if counts.get(g["name"], 0) < need:
            out.append(f"base PodGang {base_name}: podgroup {g['name']} has {counts.get(g['name'], 0)}/{need} scheduled pods")
    return out


def decide(
    podgang: K8s | None,
    pods: Mapping[tuple[str, str], K8s],
    object_exists: Callable[[ObjectRef], bool],
    podgang_by_name: Mapping[str, K8s],
    base_check: Callable[[K8s], list[str]] | None = None,
) -> Decision:
    """Whether the gang is complete and which of its pods still carry the gate.

    ``pods`` is keyed by (namespace, name). Backend objects are checked last, and only when
    everything else is in place, so a waiting gang costs no API calls.
    """
    if podgang is None:
        return Decision(False, ["PodGang"])
    waiting: list[str] = []
    present = []
    for _group, ns, name in referenced_pods(podgang):
        pod = pods.get((ns, name))
        if pod is None or is_terminating(pod):
            waiting.append(f"pod {ns}/{name}")
        elif not belongs_to(pod, podgang):
            waiting.append(f"pod {ns}/{name} is labelled for PodGang {_label(pod, PODGANG_LABEL)!r}")
        else:
            present.append(pod)
    objects = gang_objects(podgang)  # parsed even while waiting: a malformed gang is reported at once
    bases = sorted({b for b in (_label(p, BASE_PODGANG_LABEL) for p in present) if b})
    for base_name in bases:
        base = podgang_by_name.get(base_name)
        if base is None:
            waiting.append(f"base PodGang {base_name}")
        else:
            waiting.extend(base_check(base) if base_check is not None else base_gang_scheduled(base, pods))
    if not waiting:
        for ref in objects:
            if not object_exists(ref):
                waiting.append(f"{ref.kind} {ref.name} ({ref.api_version})")
    if waiting:
        return Decision(False, waiting)
    gated = sorted((p for p in present if has_gate(p)), key=lambda p: str(p["metadata"]["name"]))
    return Decision(
        True,
        [],
        [str(p["metadata"]["name"]) for p in gated],
        {str(p["metadata"]["name"]): str(p["metadata"].get("uid", "")) for p in gated},
    )
