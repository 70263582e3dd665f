"""Generated Argo CD and Flux wiring of one fleet cluster's output (issue 12, section 2).

The objects are those of :mod:`grove_gitops.output.wiring` (shared with single-cluster
renders); in a fleet each cluster's tree gets them under ``<cluster>/_flux`` and
``<cluster>/_argocd``, with the Cluster's name in every object name (``grove-<cluster>-<shard
...>-<hash>``, path ``<cluster>/<shard>``), in every repository path, in a
``gitops.grove.io/cluster`` label, and as the default Argo CD destination.
"""

from __future__ import annotations

from collections.abc import Mapping

from grove_gitops.api.renderconfig import RenderConfig
from grove_gitops.fleet.model import Cluster
from grove_gitops.output import wiring
from grove_gitops.output.wiring import ARGOCD_DIR, FLUX_DIR, GANG_OBJECTS, KAI_OWNED, MANAGED_BY, WiringTarget

__all__ = ["ARGOCD_DIR", "FLUX_DIR", "GANG_OBJECTS", "KAI_OWNED", "MANAGED_BY", "shard_name", "wiring_files"]


def shard_name(cluster: str, shard: str) -> str:
    """The Application / Kustomization name of a cluster's shard."""
    return wiring.app_name(f"{cluster}/{shard}")


def wiring_files(
    cluster: Cluster, config: RenderConfig, files: Mapping[str, bytes], shards: Mapping[str, list[str]]
) -> dict[str, bytes]:
    """``_flux/`` and/or ``_argocd/`` of one cluster tree (paths relative to the cluster)."""
    target = WiringTarget(settings=cluster.spec.gitops, flavour=config.gitops, cluster=cluster.name)
    return wiring.wiring_files(target, files, shards)
