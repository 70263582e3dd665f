"""``diff`` and ``plan`` of a rendered fleet: changes and plans grouped per cluster.

Owns the per-cluster grouping of two diff sides (a fleet's shard paths start with the cluster's
name). It reads rendered trees only, never the fleet's source model, so it sits with the plan and
``diff``, ``plan`` and ``pr-check`` use it without reaching into ``grove_gitops.fleet``.
"""

from __future__ import annotations

import dataclasses

from grove_gitops.diff.report import Report, Side
from grove_gitops.diff.semantic import ShardSummary
from grove_gitops.plan.compute import build_plan
from grove_gitops.plan.model import Plan


def changes_per_cluster(report: Report) -> dict[str, list[ShardSummary]]:
    """Cluster name -> its changed shards, in cluster order; empty for a single-cluster diff.

    A cluster present on one side only (added or removed) is listed too.
    """
    names = sorted(set(report.base.clusters) | set(report.head.clusters))
    return {
        name: [s for s in report.shards if s.shard == name or s.shard.startswith(f"{name}/")] for name in names
    }


def _cluster_side(side: Side, name: str) -> Side:
    objects = {k: v for k, v in side.objects.items() if k.shard.startswith(f"{name}/")}
    return dataclasses.replace(side, objects=objects, clusters=[])


def build_fleet_plan(base: Side, head: Side) -> Plan:
    """``grove-gitops plan`` of a fleet: each cluster planned on its own (the same PodCliqueSet
    runs on several clusters, with the same pod hostnames), titled ``<cluster>/<ns>/<name>``.
    Without clusters, the single-cluster plan."""
    names = sorted(set(base.clusters) | set(head.clusters))
    if not names:
        return build_plan(base, head)
    out = []
    for name in names:
        plan = build_plan(_cluster_side(base, name), _cluster_side(head, name))
        out += [dataclasses.replace(p, namespace=f"{name}/{p.namespace}") for p in plan.podcliquesets]
    return Plan(tuple(out), head.review)
