"""The ownership proof on rendered pods: ``gitops.grove.io/rendered-by``.

The in-cluster agent deletes pods (scale-in, removal, rolling update, healing). The
``app.kubernetes.io/managed-by: grove-gitops`` label alone cannot tell it which pods a render
produced: a tenant who copies the label onto a pod of their own would lose that pod. So the
render stamps every pod it builds with an annotation whose value binds the pod's identity to
what the render made of it: a SHA-256 digest over the namespace, the name and the labels the
agent reads to place the pod (PodCliqueSet, PodClique, PodGang, replica and pod index,
pod-template hash). The agent recomputes the digest from the live pod and deletes only pods
whose value matches (docs/day2.md, "Which pods the agent deletes").

What it is, and what it is not:

- It stops *accidents*: a copied label, or a label and annotation copied onto a pod with
  another name or other labels, does not verify.
- It is not a secret. Anyone can compute it (this function is public), and anyone who may
  create pods in the namespace may also delete them, so a keyed proof would protect nothing
  more. Pods made by an older render carry no proof and are never deleted by the agent.

The pod name's hash suffix covers the whole rendered pod except this annotation (the value
depends on the name, so it is stamped after naming).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from json.encoder import encode_basestring_ascii
from typing import Any

from grove_gitops.expand import labels as L

RENDERED_BY = "gitops.grove.io/rendered-by"
_SCHEME = "v1"
_PREFIX = f"{_SCHEME}:"
_TAG = f"grove-gitops/rendered-by/{_SCHEME}"
#: The labels the proof binds, in a fixed order (a missing one makes the pod unprovable).
BOUND_LABELS = (
    L.MANAGED_BY,
    L.PART_OF,
    L.PCS_REPLICA_INDEX,
    L.PODCLIQUE,
    L.POD_INDEX,
    L.PODGANG,
    L.POD_TEMPLATE_HASH,
)
#: Kubernetes caps names at 253 characters and label values at 63; anything longer is not a
#: rendered pod, and is refused before hashing (a hostile live object costs O(1)).
_MAX_PART = 253
_VALUE_LENGTH = len(_PREFIX) + 64
#: The proof hashes the JSON array of its parts, ``json.dumps(parts, separators=(",", ":"))``
#: (ASCII escapes). The parts are strings by then, so the array is written here from each
#: one's JSON string: the same text without the encoder's per-call set-up, which was most of
#: the cost of stamping every rendered pod (issue 35.4; tests/test_stamping.py holds the two equal).
_STRING = encode_basestring_ascii


def proof(namespace: Any, name: Any, labels: Any) -> str | None:
    """The ``rendered-by`` value for a pod with this identity, or None when it cannot have one
    (a bound label missing, or a part that is not a short string)."""
    if not isinstance(labels, Mapping):
        return None
    parts = [_TAG, namespace, name]
    parts.extend(map(labels.get, BOUND_LABELS))
    for part in parts:  # (a plain loop: every rendered pod is stamped, issue 35.4)
        if not (isinstance(part, str) and 0 < len(part) <= _MAX_PART):
            return None
    data = "[" + ",".join(map(_STRING, parts)) + "]"
    return _PREFIX + hashlib.sha256(data.encode()).hexdigest()


def stamp(pod: dict[str, Any]) -> None:
    """Add the proof to a rendered pod (named, labelled, in its namespace)."""
    meta = pod["metadata"]
    value = proof(meta.get("namespace"), meta.get("name"), meta.get("labels"))
    if value is None:  # every rendered pod has all of them: a bug, not bad input
        raise ValueError(f"pod {meta.get('name')!r} lacks a label the rendered-by proof binds")
    meta.setdefault("annotations", {})[RENDERED_BY] = value


def verify(pod: Mapping[str, Any]) -> bool:
    """Whether a live pod carries a proof that matches its own namespace, name and labels."""
    meta = pod.get("metadata")
    if not isinstance(meta, Mapping):
        return False
    annotations = meta.get("annotations")
    value = annotations.get(RENDERED_BY) if isinstance(annotations, Mapping) else None
    if not isinstance(value, str) or len(value) != _VALUE_LENGTH:
        return False
    expected = proof(meta.get("namespace"), meta.get("name"), meta.get("labels"))
    return expected is not None and hmac.compare_digest(value, expected)
