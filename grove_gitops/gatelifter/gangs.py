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
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

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


def referenced_pods(podgang: K8s) -> list[str]:
    return [ref["name"] for group in podgang["spec"].get("podgroups", []) for ref in group.get("podReferences") or []]


def gang_objects(podgang: K8s) -> list[ObjectRef]:
    """The backend objects the renderer listed for this gang (empty when none)."""
    meta = podgang.get("metadata") or {}
    raw = (meta.get("annotations") or {}).get(GANG_OBJECTS)
    if not raw:
        return []
    try:
        items = json.loads(raw)
    except ValueError:
        return []
    ns = str(meta.get("namespace", ""))
    return [ObjectRef(str(i["apiVersion"]), str(i["kind"]), ns, str(i["name"])) for i in items if isinstance(i, dict)]


def base_gang_scheduled(base: K8s, pods: Iterable[K8s]) -> list[str]:
    """Podgroups of the base gang below minReplicas scheduled pods (empty = scheduled)."""
    base_name = base["metadata"]["name"]
    counts: dict[str, int] = {}
    for pod in pods:
        labels = (pod.get("metadata") or {}).get("labels") or {}
        if labels.get(PODGANG_LABEL) == base_name and not is_terminating(pod) and is_scheduled(pod):
            counts[labels.get(PODCLIQUE_LABEL, "")] = counts.get(labels.get(PODCLIQUE_LABEL, ""), 0) + 1
    return [
        f"base PodGang {base_name}: podgroup {g['name']} has {counts.get(g['name'], 0)}/{g['minReplicas']} scheduled pods"
        for g in base["spec"].get("podgroups", [])
        if counts.get(g["name"], 0) < int(g.get("minReplicas", 0))
    ]


def decide(
    podgang: K8s | None,
    pods_by_name: Mapping[str, K8s],
    object_exists: Callable[[ObjectRef], bool],
    podgang_by_name: Mapping[str, K8s],
    namespace_pods: Iterable[K8s],
) -> Decision:
    """Whether the gang is complete and which of its pods still carry the gate."""
    if podgang is None:
        return Decision(False, ["PodGang"])
    waiting: list[str] = []
    refs = referenced_pods(podgang)
    present = []
    for name in refs:
        pod = pods_by_name.get(name)
        if pod is None or is_terminating(pod):
            waiting.append(f"pod {name}")
        else:
            present.append(pod)
    for ref in gang_objects(podgang):
        if not object_exists(ref):
            waiting.append(f"{ref.kind} {ref.name} ({ref.api_version})")
    bases = {
        ((p.get("metadata") or {}).get("labels") or {}).get(BASE_PODGANG_LABEL)
        for p in present
        if ((p.get("metadata") or {}).get("labels") or {}).get(BASE_PODGANG_LABEL)
    }
    for base_name in sorted(b for b in bases if b):
        base = podgang_by_name.get(base_name)
        if base is None:
            waiting.append(f"base PodGang {base_name}")
        else:
            waiting.extend(base_gang_scheduled(base, namespace_pods))
    if waiting:
        return Decision(False, waiting)
    return Decision(True, [], sorted(p["metadata"]["name"] for p in present if has_gate(p)))
