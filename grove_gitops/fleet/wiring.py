"""Generated Argo CD and Flux wiring of one cluster's output (issue 12, section 2).

Hand-written Flux Kustomizations go stale: their ``healthChecks`` list PodGang names, which
change with replicas. So a fleet render writes, next to each cluster's tree:

* ``_flux/``: one ``kustomize.toolkit.fluxcd.io/v1`` Kustomization per shard (its path,
  ``prune: true``, health checks on the shard's PodGangs and gang objects read from the
  rendered PodGangs' ``gitops.grove.io/gang-objects`` annotation, ``dependsOn`` the
  ``_cluster`` shard and the namespace's ``_resources`` shard, ``sourceRef`` from the Cluster);
* ``_argocd/``: one ``argoproj.io/v1alpha1`` Application per shard (destination cluster by
  name, the ``ignoreDifferences`` and sync options of ``docs/gitops-wiring.md``, sync waves:
  ``_cluster`` -10, ``_resources`` -5, PodCliqueSets 0), applied by an app-of-apps.

The rules are those of ``overlays/argocd`` and ``overlays/flux`` (see their comments); the
objects are checked against the upstream CRDs in the tests. Names follow the ApplicationSet of
``overlays/argocd``: ``grove-<path, '/'→'-', '_' dropped, cut to 40>-<sha256(path)[:8]>`` with
path ``<cluster>/<shard>``, stable for the life of a shard and unique.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

import yaml

from grove_gitops.api.renderconfig import RenderConfig
from grove_gitops.fleet.model import Cluster
from grove_gitops.output.layout import KUSTOMIZATION
from grove_gitops.output.serialize import dump_object, dump_plain
from grove_gitops.render import CLUSTER_SHARD

FLUX_DIR = "_flux"
ARGOCD_DIR = "_argocd"
PODGANG_PREFIX = "20-podgang.scheduler.grove.io--"
GANG_OBJECTS = "gitops.grove.io/gang-objects"
MANAGED_BY = {"app.kubernetes.io/managed-by": "grove-gitops"}
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

#: The fields KAI owns on its PodGroups after creation (Grove ``kai/backend.go``).
KAI_OWNED = ["/spec/markUnschedulable", "/spec/schedulingBackoff", "/spec/queue"]
KAI_OWNED_LABELS = ["/metadata/labels/kai.scheduler~1node-pool", "/metadata/labels/kai.scheduler~1queue"]


def shard_name(cluster: str, shard: str) -> str:
    """The Application / Kustomization name of a shard (see the module docstring)."""
    path = f"{cluster}/{shard}"
    slug = path.replace("/", "-").replace("_", "")[:40].rstrip("-")
    return f"grove-{slug}-{hashlib.sha256(path.encode()).hexdigest()[:8]}"


def _repo_path(cluster: Cluster, shard: str) -> str:
    base = cluster.spec.gitops.path.strip("/")
    return "/".join(p for p in (base, cluster.name, shard) if p)


def _health_targets(shard: str, files: Mapping[str, bytes], names: list[str]) -> list[dict[str, str]]:
    """The shard's PodGangs and their gang objects, in file order."""
    targets: list[dict[str, str]] = []
    for name in names:
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
    return targets


def _dependencies(shard: str, shards: set[str]) -> list[str]:
    deps = [CLUSTER_SHARD] if shard != CLUSTER_SHARD and CLUSTER_SHARD in shards else []
    ns, _, sub = shard.partition("/")
    if sub and sub != "_resources" and f"{ns}/_resources" in shards:
        deps.append(f"{ns}/_resources")
    return deps


def _flux(cluster: Cluster, shard: str, shards: set[str], targets: list[dict[str, str]]) -> dict[str, Any]:
    flux = cluster.spec.gitops.flux
    source_ref: dict[str, str] = {"kind": flux.sourceRef.kind, "name": flux.sourceRef.name}
    if flux.sourceRef.namespace:
        source_ref["namespace"] = flux.sourceRef.namespace
    spec: dict[str, Any] = {
        "interval": flux.interval,
        "retryInterval": "1m",
        "timeout": "2m",
        "sourceRef": source_ref,
        "path": f"./{_repo_path(cluster, shard)}",
        "prune": True,
        "force": False,
        "wait": False,
    }
    deps = _dependencies(shard, shards)
    if deps:
        spec["dependsOn"] = [{"name": shard_name(cluster.name, d)} for d in deps]
    if targets:
        spec["healthChecks"] = targets
        kinds = sorted({(t["apiVersion"], t["kind"]) for t in targets})
        spec["healthCheckExprs"] = [
            {"apiVersion": api, "kind": kind, "inProgress": "has(metadata.deletionTimestamp)", "current": "true"}
            for api, kind in kinds
        ]
        if any(api.startswith("scheduling.run.ai/") and kind == "PodGroup" for api, kind in kinds):
            spec["ignore"] = [
                {"paths": KAI_OWNED, "target": {"group": "scheduling.run.ai", "kind": "PodGroup"}},
            ]
    return {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {
            "name": shard_name(cluster.name, shard),
            "namespace": flux.namespace,
            "labels": {**MANAGED_BY, "gitops.grove.io/cluster": cluster.name},
        },
        "spec": spec,
    }


def _wave(shard: str) -> str:
    if shard == CLUSTER_SHARD:
        return "-10"
    return "-5" if shard.endswith("/_resources") else "0"


def _argocd(cluster: Cluster, shard: str) -> dict[str, Any]:
    wiring = cluster.spec.gitops
    argo = wiring.argocd
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {
            "name": shard_name(cluster.name, shard),
            "namespace": argo.namespace,
            "labels": {**MANAGED_BY, "gitops.grove.io/cluster": cluster.name},
            "annotations": {
                "argocd.argoproj.io/sync-wave": _wave(shard),
                "argocd.argoproj.io/compare-options": "ServerSideDiff=false",
                "argocd.argoproj.io/manifest-generate-paths": ".",
            },
            "finalizers": ["resources-finalizer.argocd.argoproj.io"],
        },
        "spec": {
            "project": argo.project,
            "source": {"repoURL": wiring.repoURL, "targetRevision": wiring.targetRevision, "path": _repo_path(cluster, shard)},
            "destination": {"name": argo.destinationName or cluster.name},
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


def wiring_files(
    cluster: Cluster, config: RenderConfig, files: Mapping[str, bytes], shards: Mapping[str, list[str]]
) -> dict[str, bytes]:
    """``_flux/`` and/or ``_argocd/`` of one cluster tree (paths relative to the cluster)."""
    out: dict[str, bytes] = {}
    present = set(shards)
    ordered = sorted(present, key=lambda s: (s != CLUSTER_SHARD, s))
    for flavour, folder in (("flux", FLUX_DIR), ("argocd", ARGOCD_DIR)):
        if config.gitops not in (flavour, "both"):
            continue
        names: list[str] = []
        for shard in ordered:
            if flavour == "flux":
                targets = _health_targets(shard, files, sorted(shards[shard]))
                obj = _flux(cluster, shard, present, targets)
            else:
                obj = _argocd(cluster, shard)
            name = f"{obj['metadata']['name']}.yaml"
            out[f"{folder}/{name}"] = dump_object(obj).encode()
            names.append(name)
        kustomization = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "resources": names}
        out[f"{folder}/{KUSTOMIZATION}"] = dump_plain(kustomization).encode()
    return out
