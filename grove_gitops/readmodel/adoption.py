"""The adoption marker: which running Grove pod a rendered pod may replace.

``grove-gitops migrate apply`` (with the user's credentials) writes on each running pod of the
Grove PodCliqueSet it migrates, in one PATCH: the label ``app.kubernetes.io/managed-by:
grove-gitops`` (so the agent's watch sees the pod and the headless Service keeps selecting it),
no ownerReferences (Grove's PodClique no longer owns it) and the annotation
:data:`ADOPT` below, a JSON record of what the pod was when it was checked against the render:
its name and uid, its slot (hostname ``<podclique>-<index>``), PodClique, pod index,
PodCliqueSet replica and the PodClique that owned it.

The agent deletes such a pod only when :func:`claim` accepts it *and* its slot is a slot the
render wants for the same PodCliqueSet, PodClique, index and replica (:func:`fits`); anything
else is left alone, as any pod without a ``rendered-by`` proof is. The uid binds the record to
the one pod it was written on: copied onto another pod (or applied from a source repository,
whose objects get new uids) it does not verify. Like the ``rendered-by`` proof it stops
accidents, not someone who may patch pods (who may delete them too).

Pure, standard library only: the agent imports this module.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

ADOPT = "gitops.grove.io/adopt"
VERSION = 1
MANAGED_BY, GITOPS, GROVE = "app.kubernetes.io/managed-by", "grove-gitops", "grove-operator"
PART_OF = "app.kubernetes.io/part-of"
PODCLIQUE = "grove.io/podclique"
POD_INDEX = "grove.io/podclique-pod-index"
REPLICA = "grove.io/podcliqueset-replica-index"
MAX_VALUE = 2048  # a record is a few hundred characters; a longer value is not one
_MAX_NAME = 253
_MAX_INDEX = 100_000


@dataclass(frozen=True)
class Claim:
    """A verified record: the slot the pod held under Grove."""

    pod: str
    uid: str
    pcs: str
    hostname: str
    podclique: str
    index: int
    replica: int


def marker(pod: Mapping[str, Any]) -> str:
    """The annotation value for a Grove pod as it is now (its labels and owner are Grove's)."""
    meta = pod["metadata"]
    labels = meta.get("labels") or {}
    owner: Mapping[str, Any] = next((o for o in meta.get("ownerReferences") or [] if o.get("controller")), {})
    record = {
        "v": VERSION,
        "pod": meta["name"],
        "uid": meta["uid"],
        "podCliqueSet": labels[PART_OF],
        "hostname": (pod.get("spec") or {}).get("hostname"),
        "podClique": labels[PODCLIQUE],
        "index": int(labels[POD_INDEX]),
        "replica": int(labels[REPLICA]),
        "owner": {"kind": owner.get("kind"), "name": owner.get("name"), "uid": owner.get("uid")},
    }
    return json.dumps(record, separators=(",", ":"), sort_keys=True)


def _name(value: Any) -> bool:
    return isinstance(value, str) and 0 < len(value) <= _MAX_NAME


def _index(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= _MAX_INDEX


def claim(pod: Mapping[str, Any]) -> Claim | None:
    """The pod's record when it verifies against the pod itself, else None.

    Verified: the record names this pod (name and uid); the pod is labelled as migrated
    (``managed-by: grove-gitops``) with the PodCliqueSet, PodClique, index and replica the
    record says; its hostname is ``<podclique>-<index>`` and its name Grove's
    ``<podclique>-<random>``; Grove's PodClique of that name owned it, and nothing controls
    it now (a pod still owned by a PodClique is Grove's, never ours to delete).
    """
    meta = pod.get("metadata")
    if not isinstance(meta, Mapping):
        return None
    annotations = meta.get("annotations")
    raw = annotations.get(ADOPT) if isinstance(annotations, Mapping) else None
    if not isinstance(raw, str) or len(raw) > MAX_VALUE:
        return None
    try:
        record = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(record, dict) or record.get("v") != VERSION:
        return None
    pcs, host, clique = record.get("podCliqueSet"), record.get("hostname"), record.get("podClique")
    index, replica, owner = record.get("index"), record.get("replica"), record.get("owner")
    if not (_name(pcs) and _name(host) and _name(clique)) or not isinstance(index, int) or not isinstance(replica, int):
        return None
    if not (_index(index) and _index(replica)):
        return None
    if not isinstance(owner, dict) or owner.get("kind") != "PodClique" or owner.get("name") != clique:
        return None
    if record.get("pod") != meta.get("name") or not _name(meta.get("uid")) or record.get("uid") != meta.get("uid"):
        return None
    labels = meta.get("labels")
    if not isinstance(labels, Mapping) or labels.get(MANAGED_BY) != GITOPS or labels.get(PART_OF) != pcs:
        return None
    if labels.get(PODCLIQUE) != clique or labels.get(POD_INDEX) != str(index) or labels.get(REPLICA) != str(replica):
        return None
    spec = pod.get("spec")
    if not isinstance(spec, Mapping) or spec.get("hostname") != host or host != f"{clique}-{index}":
        return None
    if not str(meta.get("name")).startswith(f"{clique}-"):
        return None
    if any(isinstance(o, Mapping) and o.get("controller") for o in meta.get("ownerReferences") or []):
        return None
    return Claim(str(meta["name"]), str(meta["uid"]), str(pcs), str(host), str(clique), index, replica)


def fits(found: Claim, namespace: str, pod_namespace: str, pcs: str, hostname: str, podclique: str | None,
         index: int | None, replica: int | None) -> bool:
    """Whether a verified record holds the slot the render wants: the same namespace and
    PodCliqueSet, hostname, PodClique, pod index and PodCliqueSet replica (those of the rendered
    pod of the slot)."""
    return (
        namespace == pod_namespace
        and found.pcs == pcs
        and found.hostname == hostname
        and found.podclique == podclique
        and found.index == index
        and found.replica == replica
    )
