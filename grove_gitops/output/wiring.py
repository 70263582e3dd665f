"""Generated Argo CD and Flux wiring of one cluster's rendered tree (single cluster and fleet).

Hand-written wiring goes stale and does not scale: a Flux Kustomization's ``healthChecks`` list
PodGang names, which change with replicas, and one Argo CD Application or Flux Kustomization of
the whole tree (``path: .``) makes every sync build every shard (``kubectl kustomize`` of the
whole output: 1.9 s at 10 PodCliqueSets, 14 s at 30, more than 580 s at 300, past Argo CD's 90 s
default; docs/gitops-wiring.md). So the render writes, next to the tree:

* ``_flux/``: one ``kustomize.toolkit.fluxcd.io/v1`` Kustomization per shard: its path,
  ``prune: true``, never ``force``/``wait``; ``healthChecks`` on the shard's PodGangs and gang
  objects (read from the rendered PodGangs' ``gitops.grove.io/gang-objects`` annotation) and, with
  ``waitForWorkloads``, its gitops.grove.io PodCliqueSet; ``healthCheckExprs`` for those kinds
  (those of ``overlays/flux/kustomization-shard.yaml``, :data:`GITOPS_HEALTH`); ``dependsOn`` the
  ``_cluster`` shard and the namespace's ``_resources`` shard, and the first shard on the
  Kustomization of grove-gitops' CRDs;
* ``_argocd/``: one ``argoproj.io/v1alpha1`` Application per shard (the ``ignoreDifferences``
  and sync options of ``overlays/argocd``; sync waves ``_cluster`` -10, ``_resources`` -5,
  PodCliqueSets 0), applied by an app-of-apps;
* a ``kustomization.yaml`` in each, listing them (what the app-of-apps / bootstrap reads).

Names follow the ApplicationSet of ``overlays/argocd``: ``grove-<path, '/'→'-', '_' dropped,
cut to 40>-<sha256(path)[:8]>``, with path ``<shard>`` (single cluster: the ApplicationSet's
names, so moving from it keeps every name) or ``<cluster>/<shard>`` (fleet): stable for the life
of a shard and unique.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from grove_gitops.api.gitopswiring import GitOpsWiring
from grove_gitops.api.renderconfig import GitOpsFlavour
from grove_gitops.output.serialize import dump_object, dump_plain
from grove_gitops.render import CLUSTER_SHARD

KUSTOMIZATION = "kustomization.yaml"
FLUX_DIR = "_flux"
ARGOCD_DIR = "_argocd"
PODGANG_PREFIX = "20-podgang.scheduler.grove.io--"
#: The rendered gitops.grove.io PodCliqueSet of a shard (``<wave>-podcliqueset.gitops.grove.io--<name>.yaml``).
PCS_MARKER = "-podcliqueset.gitops.grove.io--"
GANG_OBJECTS = "gitops.grove.io/gang-objects"
MANAGED_BY = {"app.kubernetes.io/managed-by": "grove-gitops"}
IN_CLUSTER = "https://kubernetes.default.svc"
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

#: The fields KAI owns on its PodGroups after creation (Grove ``kai/backend.go``).
KAI_OWNED = ["/spec/markUnschedulable", "/spec/schedulingBackoff", "/spec/queue"]
KAI_OWNED_LABELS = ["/metadata/labels/kai.scheduler~1node-pool", "/metadata/labels/kai.scheduler~1queue"]

#: Gang kinds: Current once the object exists (no ``failed``: their status may never exist).
GANG_HEALTH = {"inProgress": "has(metadata.deletionTimestamp)", "current": "true"}
_OBSERVED = (
    "has(metadata.deletionTimestamp) || !has(status.observedGeneration)"
    " || status.observedGeneration < metadata.generation"
)
_SCALE_BLOCKED = "status.?conditions.orValue([]).exists(c, c.type == 'ScaleBlocked' && c.status == 'True')"
#: grove-gitops' own kinds report the workload (the agent writes their status); byte for byte the
#: expressions of overlays/flux/kustomization-shard.yaml (tests/wiring keeps them equal).
GITOPS_HEALTH: dict[str, dict[str, str]] = {
    "PodCliqueSet": {
        "inProgress": _OBSERVED,
        "failed": f"{_SCALE_BLOCKED}"
        " || status.?conditions.orValue([]).exists(c, c.type == 'Ready' && c.status == 'False'"
        " && c.?reason.orValue('') == 'InvalidWorkload')",
        "current": "status.?availableReplicas.orValue(0) >= spec.replicas"
        " && status.?updatedReplicas.orValue(0) >= spec.replicas",
    },
    "PodCliqueScalingGroup": {
        "inProgress": f"{_OBSERVED} || status.?replicas.orValue(0) > spec.replicas",
        "failed": _SCALE_BLOCKED,
        "current": "status.?availableReplicas.orValue(0) >= spec.replicas"
        " && status.?updatedReplicas.orValue(0) >= spec.replicas",
    },
    "PodClique": {
        "inProgress": f"{_OBSERVED} || status.?replicas.orValue(0) > spec.replicas",
        "failed": _SCALE_BLOCKED,
        "current": "status.?readyReplicas.orValue(0) >= spec.replicas"
        " && status.?updatedReplicas.orValue(0) >= spec.replicas",
    },
}
GITOPS_API = "gitops.grove.io/v1alpha1"
#: Review-only mode (docs/adoption.md): a shard holds the grove.io PodCliqueSet itself, which
#: Grove's operator reports on (``status.availableReplicas`` / ``updatedReplicas`` of its CRD);
#: in progress while its rolling update runs (``updateProgress`` without ``updateEndedAt``).
GROVE_API = "grove.io/v1alpha1"
GROVE_PCS_MARKER = "-podcliqueset.grove.io--"
GROVE_HEALTH: dict[str, str] = {
    "inProgress": f"{_OBSERVED} || (has(status.updateProgress) && !has(status.updateProgress.updateEndedAt))",
    "current": "status.?availableReplicas.orValue(0) >= spec.replicas"
    " && status.?updatedReplicas.orValue(0) >= spec.replicas",
}


@dataclass(frozen=True)
class WiringTarget:
    """What the wiring of one rendered tree is for."""

    settings: GitOpsWiring
    flavour: GitOpsFlavour
    #: Fleet: the Cluster's name (a directory of the output, a part of names, the Argo CD
    #: destination by default). Single cluster: None.
    cluster: str | None = None
    #: Review-only mode: the shards hold grove.io PodCliqueSets for Grove's operator; no
    #: grove-gitops CRDs to wait for (:mod:`grove_gitops.output.review`).
    review: bool = False

    def path_of(self, shard: str) -> str:
        """The shard's path inside the repository."""
        base = self.settings.path.strip("/")
        return "/".join(p for p in (base, self.cluster or "", shard) if p)

    def name_of(self, shard: str) -> str:
        return app_name(f"{self.cluster}/{shard}" if self.cluster else shard)

    def labels(self) -> dict[str, str]:
        return {**MANAGED_BY, "gitops.grove.io/cluster": self.cluster} if self.cluster else dict(MANAGED_BY)


def app_name(path: str) -> str:
    """The Application / Kustomization name of a shard path (see the module docstring)."""
    slug = path.replace("/", "-").replace("_", "")[:40].rstrip("-")
    return f"grove-{slug}-{hashlib.sha256(path.encode()).hexdigest()[:8]}"


def _health_targets(
    shard: str, files: Mapping[str, bytes], names: list[str], workloads: bool
) -> list[dict[str, str]]:
    """The shard's PodGangs and their gang objects, in file order, then its PodCliqueSet."""
    targets: list[dict[str, str]] = []
    records: list[dict[str, str]] = []
    for name in names:
        if workloads and GROVE_PCS_MARKER in name:
            meta = yaml.load(files[f"{shard}/{name}"], Loader=_Loader).get("metadata") or {}
            records.append(
                {"apiVersion": GROVE_API, "kind": "PodCliqueSet", "name": meta["name"], "namespace": meta["namespace"]}
            )
        if workloads and PCS_MARKER in name:
            meta = yaml.load(files[f"{shard}/{name}"], Loader=_Loader).get("metadata") or {}
            records.append(
                {"apiVersion": GITOPS_API, "kind": "PodCliqueSet", "name": meta["name"], "namespace": meta["namespace"]}
            )
        if not name.startswith(PODGANG_PREFIX):
            continue
        gang = yaml.load(files[f"{shard}/{name}"], Loader=_Loader)
        meta = gang.get("metadata") or {}
        ns = str(meta.get("namespace") or "")
        targets.append({"apiVersion": gang["apiVersion"], "kind": "PodGang", "name": meta["name"], "namespace": ns})
        refs = json.loads((meta.get("annotations") or {}).get(GANG_OBJECTS, "[]"))
        # Gang objects live beside their PodGang (cluster-scoped ones would be in _cluster).
        targets += [
            {"apiVersion": ref["apiVersion"], "kind": ref["kind"], "name": ref["name"], "namespace": ns} for ref in refs
        ]
    return targets + records


def _dependencies(shard: str, shards: set[str]) -> list[str]:
    deps = [CLUSTER_SHARD] if shard != CLUSTER_SHARD and CLUSTER_SHARD in shards else []
    ns, _, sub = shard.partition("/")
    if sub and sub != "_resources" and f"{ns}/_resources" in shards:
        deps.append(f"{ns}/_resources")
    return deps


def _health_exprs(kinds: set[tuple[str, str]]) -> list[dict[str, str]]:
    """One expression per listed kind, plus every gitops.grove.io kind (a user may list the
    agent's scale targets; they are evaluated the same way everywhere)."""
    exprs = [
        {"apiVersion": api, "kind": kind, **(GROVE_HEALTH if (api, kind) == (GROVE_API, "PodCliqueSet") else GANG_HEALTH)}
        for api, kind in sorted(kinds)
        if api != GITOPS_API
    ]
    exprs += [{"apiVersion": GITOPS_API, "kind": kind, **rules} for kind, rules in GITOPS_HEALTH.items()]
    return exprs


def _flux(target: WiringTarget, shard: str, shards: set[str], targets: list[dict[str, str]]) -> dict[str, Any]:
    flux = target.settings.flux
    source_ref: dict[str, str] = {"kind": flux.sourceRef.kind, "name": flux.sourceRef.name}
    if flux.sourceRef.namespace:
        source_ref["namespace"] = flux.sourceRef.namespace
    spec: dict[str, Any] = {
        "interval": flux.interval,
        "retryInterval": "1m",
        "timeout": flux.timeout,
        "sourceRef": source_ref,
        "path": f"./{target.path_of(shard)}",
        "prune": True,
        "force": False,
        "wait": False,
    }
    deps = [target.name_of(d) for d in _dependencies(shard, shards)]
    if not deps and flux.crdsKustomization and not target.review:
        # The first shards (``_cluster``, or every shard without one): after grove-gitops' CRDs.
        deps = [flux.crdsKustomization]
    if deps:
        spec["dependsOn"] = [{"name": d} for d in deps]
    if targets:
        spec["healthChecks"] = targets
    kinds = {(t["apiVersion"], t["kind"]) for t in targets}
    spec["healthCheckExprs"] = _health_exprs(kinds)
    if any(api.startswith("scheduling.run.ai/") and kind == "PodGroup" for api, kind in kinds):
        spec["ignore"] = [
            {"paths": KAI_OWNED, "target": {"group": "scheduling.run.ai", "kind": "PodGroup"}},
        ]
    return {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {"name": target.name_of(shard), "namespace": flux.namespace, "labels": target.labels()},
        "spec": spec,
    }


def _wave(shard: str) -> str:
    if shard == CLUSTER_SHARD:
        return "-10"
    return "-5" if shard.endswith("/_resources") else "0"


def _argocd(target: WiringTarget, shard: str) -> dict[str, Any]:
    wiring = target.settings
    argo = wiring.argocd
    name = argo.destinationName or target.cluster
    destination = {"name": name} if name else {"server": IN_CLUSTER}
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {
            "name": target.name_of(shard),
            "namespace": argo.namespace,
            "labels": target.labels(),
            "annotations": {
                "argocd.argoproj.io/sync-wave": _wave(shard),
                "argocd.argoproj.io/compare-options": "ServerSideDiff=false",
                "argocd.argoproj.io/manifest-generate-paths": ".",
            },
            "finalizers": ["resources-finalizer.argocd.argoproj.io"],
        },
        "spec": {
            "project": argo.project,
            "source": {"repoURL": wiring.repoURL, "targetRevision": wiring.targetRevision, "path": target.path_of(shard)},
            "destination": destination,
            "ignoreDifferences": [
                {"group": "", "kind": "Pod", "jsonPointers": ["/spec/schedulingGates"]},
                {"group": "scheduling.run.ai", "kind": "PodGroup", "jsonPointers": KAI_OWNED + KAI_OWNED_LABELS},
            ],
            "syncPolicy": {
                "automated": {"prune": True, "selfHeal": True},
                "syncOptions": ["RespectIgnoreDifferences=true", "ApplyOutOfSyncOnly=true", "PruneLast=true"],
                "retry": {
                    "limit": 10,
                    "backoff": {"duration": "10s", "factor": 2, "maxDuration": "5m"},
                },
            },
            "revisionHistoryLimit": 3,
        },
    }


def wiring_files(target: WiringTarget, files: Mapping[str, bytes], shards: Mapping[str, list[str]]) -> dict[str, bytes]:
    """``_flux/`` and/or ``_argocd/`` of one rendered tree (paths relative to that tree).
    ``files``/``shards`` are the tree's (:class:`grove_gitops.output.layout.Tree`)."""
    out: dict[str, bytes] = {}
    present = set(shards)
    ordered = sorted(present, key=lambda s: (s != CLUSTER_SHARD, s))
    workloads = target.settings.flux.waitForWorkloads
    for flavour, folder in (("flux", FLUX_DIR), ("argocd", ARGOCD_DIR)):
        if target.flavour not in (flavour, "both"):
            continue
        names: list[str] = []
        for shard in ordered:
            if flavour == "flux":
                targets = _health_targets(shard, files, sorted(shards[shard]), workloads)
                obj = _flux(target, shard, present, targets)
            else:
                obj = _argocd(target, shard)
            name = f"{obj['metadata']['name']}.yaml"
            out[f"{folder}/{name}"] = dump_object(obj).encode()
            names.append(name)
        kustomization = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "resources": names}
        out[f"{folder}/{KUSTOMIZATION}"] = dump_plain(kustomization).encode()
    return out
