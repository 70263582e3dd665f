"""The ``gitops.grove.io`` PodCliqueSet as the agent reads it: bounded and checked.

The object comes from Git through Argo CD or Flux, and Git is untrusted input: every count,
list and string is bounded here before anything loops over it or renders it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from grove_gitops.api.renderconfig import DEFAULT_MAX_PODS_PER_PCS
from grove_gitops.errors import GroveGitopsError
from grove_gitops.expand.scaling import API_VERSION, PCLQ_KIND, PCS_KIND, PCSG_KIND
from grove_gitops.fields.k8snames import dns1123_subdomain_problems
from grove_gitops.readmodel.gangs import MAX_NAME

#: Scale targets per workload: one per PodCliqueSet replica and autoscaled unit. A render
#: writes at most one per PodClique, and a PodCliqueSet has at most this many pods.
MAX_TARGETS = 1000
#: The render inputs an object can carry: etcd refuses objects above 1.5 MiB.
MAX_SOURCE_BYTES = 3 * 512 * 1024
#: Set by the watch on an object it could read only in part (:mod:`.bounded`): the problem,
#: reported on the workload instead of acting on it. No API object has a key of this name.
UNREADABLE = "\x00grove-gitops/unreadable"


class BadWorkload(GroveGitopsError):
    """A ``gitops.grove.io`` PodCliqueSet the agent cannot act on; the message names the field."""


@dataclass(frozen=True)
class Target:
    kind: str
    name: str
    replica: int
    template: str
    min_available: int
    min_replicas: int
    max_replicas: int
    initial: int
    selector: str


@dataclass(frozen=True)
class ScaledWorkload:
    namespace: str
    name: str
    uid: str
    generation: int
    renderer_version: str
    targets: tuple[Target, ...]
    source: tuple[dict[str, Any], ...]
    #: A digest of the render inputs: equal digests render equal objects.
    digest: str

    @property
    def owner_reference(self) -> dict[str, Any]:
        return {"apiVersion": API_VERSION, "kind": PCS_KIND, "name": self.name, "uid": self.uid,
                "controller": True, "blockOwnerDeletion": True}


def _int(value: Any, where: str, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= high:
        raise BadWorkload(f"{where}: expected an integer from 0 to {high}")
    return value


def _str(value: Any, where: str, limit: int = MAX_NAME) -> str:
    if not isinstance(value, str) or not 0 < len(value) <= limit:
        raise BadWorkload(f"{where}: expected a non-empty string of at most {limit} characters")
    return value


def parse(obj: Mapping[str, Any], max_pods: int = DEFAULT_MAX_PODS_PER_PCS) -> ScaledWorkload:
    """The workload, or :class:`BadWorkload` naming the first field that is not as a render
    writes it; no count may exceed ``max_pods`` (the agent's pod limit, never the record's)."""
    if isinstance(obj.get(UNREADABLE), str):
        raise BadWorkload(obj[UNREADABLE])
    meta = obj.get("metadata") or {}
    spec = obj.get("spec")
    if not isinstance(meta, Mapping) or not isinstance(spec, Mapping):
        raise BadWorkload("metadata/spec: expected objects")
    namespace = _str(meta.get("namespace"), "metadata.namespace", 63)
    name = _str(meta.get("name"), "metadata.name")
    uid = _str(meta.get("uid"), "metadata.uid", 128)
    generation = meta.get("generation", 0)
    generation = generation if isinstance(generation, int) and not isinstance(generation, bool) else 0
    raw_targets = spec.get("scaleTargets") or []
    if not isinstance(raw_targets, list) or len(raw_targets) > MAX_TARGETS:
        raise BadWorkload(f"spec.scaleTargets: expected a list of at most {MAX_TARGETS} entries")
    targets = []
    seen: set[str] = set()
    for n, t in enumerate(raw_targets):
        w = f"spec.scaleTargets[{n}]"
        if not isinstance(t, Mapping):
            raise BadWorkload(f"{w}: expected an object")
        kind = t.get("kind")
        if kind not in (PCSG_KIND, PCLQ_KIND):
            raise BadWorkload(f"{w}.kind: expected {PCSG_KIND} or {PCLQ_KIND}")
        target = Target(
            str(kind),
            _str(t.get("name"), f"{w}.name"),
            _int(t.get("podCliqueSetReplica"), f"{w}.podCliqueSetReplica", max_pods),
            _str(t.get("templateName"), f"{w}.templateName"),
            _int(t.get("minAvailable"), f"{w}.minAvailable", max_pods),
            _int(t.get("minReplicas"), f"{w}.minReplicas", max_pods),
            _int(t.get("maxReplicas"), f"{w}.maxReplicas", max_pods),
            _int(t.get("initialReplicas"), f"{w}.initialReplicas", max_pods),
            _str(t.get("selector"), f"{w}.selector", 1024),
        )
        if not target.min_replicas <= target.initial <= target.max_replicas:
            raise BadWorkload(f"{w}: expected minReplicas <= initialReplicas <= maxReplicas")
        # The name goes into request paths: exactly the name the render gives this target
        # (Grove's ``<pcs>-<replica>-<template>``), a DNS subdomain, once.
        expected = f"{name}-{target.replica}-{target.template}"
        if target.name != expected or dns1123_subdomain_problems(target.name) or target.name in seen:
            raise BadWorkload(f"{w}.name: expected {json.dumps(expected)[:300]}, a valid object name, once")
        seen.add(target.name)
        targets.append(target)
    source = spec.get("source") or []
    if not isinstance(source, list) or not all(isinstance(d, dict) for d in source):
        raise BadWorkload("spec.source: expected a list of objects")
    try:  # (a 5,000-digit integer is beyond Python's int-to-text limit: not a render's)
        text = json.dumps(source, sort_keys=True, separators=(",", ":"), default=str)
    except (TypeError, ValueError, RecursionError) as exc:  # (nesting: the watch bounds it, :mod:`.bounded`)
        raise BadWorkload(f"spec.source: not serialisable ({str(exc)[:100]})") from None
    if len(text) > MAX_SOURCE_BYTES:
        raise BadWorkload(f"spec.source: larger than {MAX_SOURCE_BYTES} bytes")
    if targets and not source:
        raise BadWorkload("spec.source: required when spec.scaleTargets is not empty")
    version = spec.get("rendererVersion")
    return ScaledWorkload(
        namespace, name, uid, generation, _str(version, "spec.rendererVersion", 64) if targets else str(version or ""),
        tuple(targets), tuple(source), hashlib.sha256(text.encode()).hexdigest(),
    )
