"""``diff`` of a fleet: the changed shards grouped per cluster (their paths start with it)."""

from __future__ import annotations

from grove_gitops.diff.report import Report
from grove_gitops.diff.semantic import ShardSummary


def changes_per_cluster(report: Report) -> dict[str, list[ShardSummary]]:
    """Cluster name -> its changed shards, in cluster order; empty for a single-cluster diff.

    A cluster present on one side only (added or removed) is listed too.
    """
    names = sorted(set(report.base.clusters) | set(report.head.clusters))
    return {
        name: [s for s in report.shards if s.shard == name or s.shard.startswith(f"{name}/")] for name in names
    }
