"""Pods of one PodClique, built in Grove's mutation order (``pod/pod.go buildResource``).

Differences from Grove, all forced by GitOps (``spec/gitops.md`` §2.5): a deterministic
``metadata.name`` (``<podclique>-<index>-<hash8>``) replaces ``generateName`` — the hash
covers the whole rendered pod (but its ``gitops.grove.io/rendered-by`` ownership proof,
:mod:`.ownership`, which binds the name), so any spec change yields a new pod instead of an
update the API server would refuse — and there are no ``ownerReferences`` (no UIDs exist at render
time; pruning is the GitOps tool's job).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from grove_gitops.api.podcliqueset import PodCliqueSet
from grove_gitops.backendapi import PodPlacement
from grove_gitops.expand import labels as L
from grove_gitops.expand import mnnvl, names, ownership
from grove_gitops.expand.context import ExpandContext
from grove_gitops.expand.hashing import CanonicalWithout, short_hash, short_hash_of
from grove_gitops.expand.jsoncopy import json_copy
from grove_gitops.expand.plan import CliqueInstance
from grove_gitops.expand.resourceclaims import ClaimRef
from grove_gitops.frozen import share_values

INIT_CONTAINER = "grove-initc"
SA_TOKEN_VOLUME = "sa-token-secret-vol"
POD_INFO_VOLUME = "pod-info-vol"


def _field_env(name: str, label: str) -> dict[str, Any]:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{label}']"}}}


def podclique_labels(pcs: PodCliqueSet, inst: CliqueInstance, template_hash: str) -> dict[str, str]:
    """The PodClique's labels (§4.2): template labels, then Grove's, which always win."""
    out = dict(inst.template.labels or {})
    out.update(L.default_labels(pcs.name))
    out[L.NAME] = inst.fqn
    out[L.COMPONENT] = L.COMPONENT_PCS_PODCLIQUE if inst.group is None else L.COMPONENT_PCSG_PODCLIQUE
    if inst.group_fqn is not None:
        out[L.PCSG] = inst.group_fqn
        out[L.PCSG_REPLICA_INDEX] = str(inst.group_replica)
    out[L.PODGANG] = inst.podgang
    out[L.PCS_REPLICA_INDEX] = str(inst.pcs_replica)
    out[L.POD_TEMPLATE_HASH] = template_hash
    if inst.base_podgang is not None:
        out[L.BASE_PODGANG] = inst.base_podgang
    return out


def _pcsg_env(num_pods: int) -> list[dict[str, Any]]:
    """The scaling group's variables (§4.2)."""
    return [
        _field_env("GROVE_PCSG_NAME", L.PCSG),
        {"name": "GROVE_PCSG_TEMPLATE_NUM_PODS", "value": str(num_pods)},
        _field_env("GROVE_PCSG_INDEX", L.PCSG_REPLICA_INDEX),
    ]


def _grove_env(pcs_name: str, replica: int, pclq: str, service: str) -> list[dict[str, Any]]:
    """Grove's variables of every pod (§4.2)."""
    return [
        {"name": "GROVE_PCS_NAME", "value": pcs_name},
        {"name": "GROVE_PCS_INDEX", "value": str(replica)},
        {"name": "GROVE_PCLQ_NAME", "value": pclq},
        {"name": "GROVE_HEADLESS_SERVICE", "value": service},
        _field_env("GROVE_PCLQ_POD_INDEX", L.POD_INDEX),
    ]


def _prepend_env(containers: list[dict[str, Any]], make_env: Callable[[], list[dict[str, Any]]]) -> None:
    """``make_env()``'s variables first in every container, replacing the user's of those names.
    Each container gets entries of its own, made afresh: a deep copy per container was a
    measurable share of setting up every PodClique (issue 35.4)."""
    injected: set[str] | None = None
    for container in containers:
        env = make_env()
        if injected is None:
            injected = {e["name"] for e in env}
        user = [e for e in container.get("env") or [] if not (isinstance(e, dict) and e.get("name") in injected)]
        container["env"] = env + user


def placement_of(pcs: PodCliqueSet, inst: CliqueInstance) -> PodPlacement:
    """Where the pods of ``inst`` sit in their gang (what ``prepare_pod`` binds them with)."""
    return PodPlacement(pcs.name, pcs.namespace, inst.podgang, inst.fqn, inst.base_podgang)


class CliquePods:
    """The pods of one PodClique instance, stamped one at a time from one prototype.

    Every pod of the clique starts from the prototype (issue 10, "stamp repeated pods"):
    labels, annotations and spec are built once, and each pod then only gets its index label,
    hostname, name and (when it mounts claims of its own) its own copy of the spec. Pod ``k``
    is a function of the prototype, ``k`` and its claims alone, never of how many pods the
    clique has: an expansion at another count reuses the pods it shares with this one and
    stamps only the others (:class:`~grove_gitops.expand.workload.ExpansionMemo`).

    The canonical JSON that names a pod is joined from parts encoded once per clique (the
    spec but its hostname, the metadata but its labels, the labels but the pod index,
    :class:`~grove_gitops.expand.hashing.CanonicalWithout`): per pod only the few values that
    differ are encoded (issue 35.4).
    """

    def __init__(
        self, pcs: PodCliqueSet, inst: CliqueInstance, ctx: ExpandContext, template_hash: str, pcsg_num_pods: int
    ) -> None:
        ns = pcs.namespace
        self.pcs_name, self.inst, self.init_image = pcs.name, inst, ctx.render.initContainerImage
        pclq_labels = podclique_labels(pcs, inst, template_hash)
        # A template's own rendered-by value is dropped: the render alone says which pods it made.
        annotations = {
            k: v
            for k, v in (inst.template.annotations or {}).items()
            if k not in (L.TOPOLOGY_NAME, ownership.RENDERED_BY)
        }
        # The PodClique spec: the template's pod spec with the PCSG variables prepended (§4.2).
        base_spec = json_copy(inst.template.spec.podSpec)
        if ctx.mnnvl_enabled:
            group = mnnvl.resolve_group(pcs, inst.template, inst.group)
            if group is not None:
                mnnvl.inject_claim(base_spec, mnnvl.template_name(pcs.name, inst.pcs_replica, group))
        if inst.group_fqn is not None:
            for key in ("containers", "initContainers"):
                if base_spec.get(key):
                    _prepend_env(base_spec[key], partial(_pcsg_env, pcsg_num_pods))
        service = names.headless_service_address(pcs.name, inst.pcs_replica, ns)
        grove_env = partial(_grove_env, pcs.name, inst.pcs_replica, inst.fqn, service)
        placement = placement_of(pcs, inst)
        proto_labels = L.default_labels(pcs.name)
        proto_labels.update(pclq_labels)
        proto_labels[L.PODCLIQUE] = inst.fqn
        proto_labels[L.PCS_REPLICA_INDEX] = str(inst.pcs_replica)
        proto_labels[L.PODGANG] = inst.podgang
        proto: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"namespace": ns, "labels": proto_labels, "annotations": dict(annotations)},
            "spec": base_spec,
        }
        base_spec["schedulingGates"] = [{"name": L.SCHEDULING_GATE}]
        ctx.backend.prepare_pod(proto, placement)
        for key in ("containers", "initContainers"):
            if base_spec.get(key):
                _prepend_env(base_spec[key], grove_env)
        base_spec["subdomain"] = names.headless_service_name(pcs.name, inst.pcs_replica)
        proto_meta = proto["metadata"]
        #: Never changed after this: each pod mounting claims of its own deep-copies it.
        self.base_spec = base_spec
        self.ns = ns
        self.labels: dict[str, str] = proto_meta["labels"]
        self.annotations: dict[str, str] | None = proto_meta.get("annotations") or None
        self._labels_text = CanonicalWithout(self.labels, L.POD_INDEX)
        shared_meta: dict[str, Any] = {"namespace": ns}
        if self.annotations is not None:
            shared_meta["annotations"] = self.annotations
        self._meta_text = CanonicalWithout(shared_meta, "labels")
        self._shared_spec: dict[str, Any] | None = None
        self._shared_text: CanonicalWithout | None = None  # the shared spec's canonical JSON but the hostname

    def _shared(self) -> tuple[dict[str, Any], CanonicalWithout]:
        """The spec every pod without claims of its own shares, and its canonical JSON but the
        hostname. Made on first use: the base spec's top level copied (only the volume and init
        container lists grow, both copied first), its lists and mappings shared subtrees."""
        if self._shared_spec is None or self._shared_text is None:
            spec = dict(self.base_spec)
            if self.inst.starts_after:
                for key in ("volumes", "initContainers"):
                    if key in spec:
                        spec[key] = list(spec[key])
                _add_init_container(spec, self.pcs_name, self.inst, self.init_image)
            self._shared_spec = share_values(spec)
            self._shared_text = CanonicalWithout(self._shared_spec, "hostname")
        return self._shared_spec, self._shared_text

    def pod(self, k: int, claims: list[ClaimRef]) -> dict[str, Any]:
        """Pod ``k``, mounting ``claims`` (the ResourceClaims of this pod, or none)."""
        inst = self.inst
        if claims:  # this pod mounts its own claims: its own copy of the spec
            spec = json_copy(self.base_spec)
            _inject_claims(spec, claims)
            if inst.starts_after:
                _add_init_container(spec, self.pcs_name, inst, self.init_image)
            shared_text = None
        else:
            shared_spec, shared_text = self._shared()
            spec = dict(shared_spec)
        index = str(k)
        spec["hostname"] = names.pod_hostname(inst.fqn, k)
        labels = dict(self.labels)
        labels[L.POD_INDEX] = index
        meta: dict[str, Any] = {"namespace": self.ns, "labels": labels}
        if self.annotations is not None:
            meta["annotations"] = dict(self.annotations)
        pod: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
        if shared_text is None:
            suffix = short_hash(pod)
        else:  # short_hash(pod), from the texts encoded once for the clique
            canonical = (
                '{"apiVersion":"v1","kind":"Pod","metadata":'
                + self._meta_text.text_of(self._labels_text.text_of(f'"{index}"'))  # (digits: no escapes)
                + ',"spec":'
                + shared_text.text(spec["hostname"])
                + "}"
            )
            suffix = short_hash_of(canonical.encode())
        pod["metadata"] = {"name": f"{inst.fqn}-{k}-{suffix}", **meta}
        ownership.stamp(pod)  # after naming: the proof binds the name (docs/day2.md)
        return pod


def build_pods(
    pcs: PodCliqueSet,
    inst: CliqueInstance,
    ctx: ExpandContext,
    template_hash: str,
    pcsg_num_pods: int,
    claims_for_pod: list[list[ClaimRef]],
) -> list[dict[str, Any]]:
    """Every pod of ``inst``; ``claims_for_pod[k]`` are the ResourceClaims pod ``k`` mounts."""
    stamper = CliquePods(pcs, inst, ctx, template_hash, pcsg_num_pods)
    return [stamper.pod(k, claims_for_pod[k] if k < len(claims_for_pod) else []) for k in range(inst.pods)]


def _inject_claims(spec: dict[str, Any], claims: list[ClaimRef]) -> None:
    """§7.5: pod-level ``resourceClaims`` plus ``resources.claims`` in every user container."""
    if not claims:
        return
    existing = spec.setdefault("resourceClaims", [])
    for claim in claims:
        existing.append({"name": claim.name, "resourceClaimName": claim.name})
    for key in ("containers", "initContainers"):
        for container in spec.get(key) or []:
            resources = container.setdefault("resources", {})
            resources.setdefault("claims", []).extend({"name": c.name} for c in claims)


def _add_init_container(spec: dict[str, Any], pcs: str, inst: CliqueInstance, image: str) -> None:
    """§4.7: ``grove-initc`` waits for the PodCliques this one starts after."""
    spec.setdefault("volumes", []).extend(
        [
            {"name": SA_TOKEN_VOLUME, "secret": {"secretName": names.token_secret_name(pcs), "defaultMode": 420}},
            {
                "name": POD_INFO_VOLUME,
                "downwardAPI": {
                    "items": [
                        {"path": "namespace", "fieldRef": {"fieldPath": "metadata.namespace"}},
                        {"path": "podgangname", "fieldRef": {"fieldPath": f"metadata.labels['{L.PODGANG}']"}},
                    ]
                },
            },
        ]
    )
    spec.setdefault("initContainers", []).append(
        {
            "name": INIT_CONTAINER,
            "image": image,
            "args": [f"--podcliques={d.fqn}:{d.min_available}" for d in inst.starts_after],
            "volumeMounts": [
                {"name": POD_INFO_VOLUME, "readOnly": True, "mountPath": "/var/grove/pod-info"},
                {
                    "name": SA_TOKEN_VOLUME,
                    "readOnly": True,
                    "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                },
            ],
        }
    )
