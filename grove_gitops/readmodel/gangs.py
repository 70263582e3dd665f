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

from grove_gitops.api.renderconfig import DEFAULT_MAX_PODS_PER_PCS, DEFAULT_MAX_PODS_PER_RENDER
from grove_gitops.errors import GroveGitopsError

GATE = "grove.io/podgang-pending-creation"
GANG_OBJECTS = "gitops.grove.io/gang-objects"
PODGANG_LABEL = "grove.io/podgang"
PODCLIQUE_LABEL = "grove.io/podclique"
BASE_PODGANG_LABEL = "grove.io/base-podgang"

#: The most pods (and podgroups) one PodGang may list. A render lists each pod of a
#: PodCliqueSet replica in exactly one PodGang, so with the default limits it never writes
#: more than ``maxPodsPerPodCliqueSet`` (20,000) references into one; a PodGang that size is
#: already near the API server's object size limit (etcd's 1.5 MiB), so raising the render
#: limit does not make larger PodGangs possible. Anything beyond is not a render's: it is
#: malformed (its pods are kept, nothing is released), refused after O(podgroups) checks,
#: before any reference is read (issue 21, docs/day2.md "Limits").
MAX_GANG_PODS = DEFAULT_MAX_PODS_PER_PCS
#: The most pod references all PodGangs of one workload (a PodCliqueSet) may hold together:
#: a render's whole output is at most ``maxPodsPerRender`` (50,000) pods by default. The
#: PodGangs past it (in name order) are malformed, so deriving one workload stays bounded.
MAX_WORKLOAD_PODS = DEFAULT_MAX_PODS_PER_RENDER
#: Backend objects one PodGang may list (a render lists one per podgroup at most, plus a few).
MAX_GANG_OBJECTS = MAX_GANG_PODS + 16
MAX_NAME = 253  # Kubernetes' object name limit (DNS subdomain)
MAX_NAMESPACE = 63  # a namespace is a DNS label
MAX_ANNOTATION = 256 * 1024  # the API server's limit for all annotations of an object
#: Missing pods named in one decision's ``waiting_for`` (the rest are counted): a gang waiting
#: for thousands of pods must not cost thousands of strings on every evaluation.
MAX_WAITING_NAMED = 10

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
    # Waiting only for a backend object: no watch reports one, so the gang must be asked
    # again (every ``recheck``). Anything else it waits for arrives as a watch event.
    poll: bool = False


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


def brief(value: Any) -> str:
    """A short rendering of a hostile value for a message: a container is described, never
    serialised whole (a list of 100,000 entries must not become a 5 MB string to cut)."""
    if isinstance(value, list | dict):
        return f"{type(value).__name__} of {len(value)} entries"
    if isinstance(value, str):
        return json.dumps(value[:60])
    return json.dumps(value)[:60] if isinstance(value, int | float | bool) or value is None else type(value).__name__


def load_annotation(raw: Any, where: str) -> Any:
    """The JSON value of an annotation the render wrote, read defensively: a string of at most
    :data:`MAX_ANNOTATION` characters that parses, or :class:`MalformedPodGang`. Nesting too
    deep for the decoder (``[[[[...`` fits the size limit 100,000 levels deep) is malformed
    too, never a ``RecursionError`` out of the agent's pass."""
    if not isinstance(raw, str) or len(raw) > MAX_ANNOTATION:
        raise MalformedPodGang(f"{where}: expected a JSON string of at most {MAX_ANNOTATION} characters")
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise MalformedPodGang(f"{where}: not JSON ({exc})") from exc
    except RecursionError as exc:
        raise MalformedPodGang(f"{where}: not JSON (nested too deep)") from exc


def _names(items: Any, what: str, limit: int = MAX_NAME) -> list[dict[str, Any]]:
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise MalformedPodGang(f"{what}: expected a list of objects, got {brief(items)}")
    for i in items:
        name = i.get("name")
        if not isinstance(name, str) or not name:
            raise MalformedPodGang(f"{what}: every entry needs a name, got {brief(name)}")
        if len(name) > limit:
            raise MalformedPodGang(f"{what}: name {brief(name)}... is longer than {limit} characters")
    return list(items)


def check_size(podgang: K8s) -> dict[str, Any]:
    """The PodGang's spec, once its name, namespace and counts are within what a render
    writes (:data:`MAX_GANG_PODS`); raises :class:`MalformedPodGang` otherwise.

    Costs O(podgroups) at most, whatever the PodGang holds: only list lengths are read, and
    no reference is looked at before the total is known to be in bounds.
    """
    meta = podgang.get("metadata") or {}
    name, namespace = meta.get("name"), meta.get("namespace")
    if not isinstance(name, str) or not 0 < len(name) <= MAX_NAME:
        raise MalformedPodGang(f"metadata.name: expected a name of at most {MAX_NAME} characters, got {brief(name)}")
    if not isinstance(namespace, str) or len(namespace) > MAX_NAMESPACE:
        raise MalformedPodGang(f"metadata.namespace: expected at most {MAX_NAMESPACE} characters, got {brief(namespace)}")
    spec = podgang.get("spec")
    if not isinstance(spec, dict):
        raise MalformedPodGang("spec: expected an object")
    groups = spec.get("podgroups") or []
    if not isinstance(groups, list):
        raise MalformedPodGang(f"spec.podgroups: expected a list of objects, got {brief(groups)}")
    if len(groups) > MAX_GANG_PODS:
        raise MalformedPodGang(f"spec.podgroups: {len(groups)} podgroups, more than a render writes ({MAX_GANG_PODS})")
    total = 0
    for group in groups:
        refs = group.get("podReferences") if isinstance(group, dict) else None
        total += len(refs) if isinstance(refs, list) else 0
        if total > MAX_GANG_PODS:
            raise MalformedPodGang(
                f"spec.podgroups: more than {MAX_GANG_PODS} podReferences, more than a render writes into one PodGang"
            )
    return spec


def referenced_pods(podgang: K8s) -> list[tuple[str, str, str]]:
    """(podgroup, namespace, name) of every pod the PodGang references.

    A reference without a namespace means the PodGang's own namespace; one with a namespace
    means exactly that namespace (never a same-named pod elsewhere). A PodGang beyond the
    bounds of :func:`check_size` is malformed before any reference is read.
    """
    spec = check_size(podgang)
    own_ns = str((podgang.get("metadata") or {}).get("namespace", ""))
    out = []
    for group in _names(spec.get("podgroups") or [], "spec.podgroups"):
        for ref in _names(group.get("podReferences") or [], f"spec.podgroups[{group['name']}].podReferences"):
            ns = ref.get("namespace") or own_ns
            if not isinstance(ns, str) or len(ns) > MAX_NAMESPACE:
                raise MalformedPodGang(f"spec.podgroups[{group['name']}].podReferences: bad namespace {brief(ns)}")
            out.append((group["name"], ns, ref["name"]))
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
    items = load_annotation(raw, where)
    if isinstance(items, list) and len(items) > MAX_GANG_OBJECTS:
        raise MalformedPodGang(f"{where}: {len(items)} objects, more than a render lists ({MAX_GANG_OBJECTS})")
    ns = str(meta.get("namespace", ""))
    out = []
    for i in _names(items, where):
        if not isinstance(i.get("apiVersion"), str) or not isinstance(i.get("kind"), str):
            raise MalformedPodGang(f"{where}: every entry needs apiVersion and kind, got {brief(i)}")
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
    unbound: Callable[[str, K8s], str | None] | None = None,
) -> Decision:
    """Whether the gang is complete and which of its pods still carry the gate.

    ``pods`` is keyed by (namespace, name). Backend objects are checked last, and only when
    everything else is in place, so a waiting gang costs no API calls. ``unbound(podgroup,
    pod)``: why a present pod is no longer tied to its gang as rendered
    (:meth:`~grove_gitops.readmodel.binding.PodBinding.mismatch`); the gang waits for it.
    """
    if podgang is None:
        return Decision(False, ["PodGang"])
    waiting: list[str] = []
    present = []
    unnamed = 0  # missing pods beyond MAX_WAITING_NAMED: counted, not named
    for group, ns, name in referenced_pods(podgang):
        pod = pods.get((ns, name))
        if pod is not None and not is_terminating(pod) and belongs_to(pod, podgang):
            present.append(pod)
            why = unbound(group, pod) if unbound is not None and has_gate(pod) else None
            if why is not None and len(waiting) < MAX_WAITING_NAMED:
                waiting.append(f"pod {ns}/{name} to be bound to its gang as rendered: {why}")
            elif why is not None:
                unnamed += 1
        elif len(waiting) >= MAX_WAITING_NAMED:
            unnamed += 1
        elif pod is None or is_terminating(pod):
            waiting.append(f"pod {ns}/{name}")
        else:
            waiting.append(f"pod {ns}/{name} is labelled for PodGang {_label(pod, PODGANG_LABEL)!r}")
    if unnamed:
        waiting.append(f"{unnamed} more pods")
    objects = gang_objects(podgang)  # parsed even while waiting: a malformed gang is reported at once
    bases = sorted({b for b in (_label(p, BASE_PODGANG_LABEL) for p in present) if b})
    for base_name in bases:
        base = podgang_by_name.get(base_name)
        if base is None:
            waiting.append(f"base PodGang {base_name}")
        else:
            waiting.extend(base_check(base) if base_check is not None else base_gang_scheduled(base, pods))
    if not waiting:
        # One API call per missing object and evaluation: asking on after the first missing
        # one would cost a request per listed object on every recheck, and change nothing.
        missing = next((ref for ref in objects if not object_exists(ref)), None)
        if missing is not None:
            return Decision(False, [f"{missing.kind} {missing.name} ({missing.api_version})"], poll=True)
    if waiting:
        return Decision(False, waiting)
    gated = sorted((p for p in present if has_gate(p)), key=lambda p: str(p["metadata"]["name"]))
    return Decision(
        True,
        [],
        [str(p["metadata"]["name"]) for p in gated],
        {str(p["metadata"]["name"]): str(p["metadata"].get("uid", "")) for p in gated},
    )
