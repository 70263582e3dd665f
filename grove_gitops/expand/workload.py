"""Expand one PodCliqueSet into every object Grove's operator would create (in GitOps form).

Follows the render algorithm of ``spec/grove-desired-state.md`` (appendix) with the GitOps
differences documented in ``pods.py`` and ``podgangs.py``. PodClique and
PodCliqueScalingGroup objects are operator internals and are not emitted. The count of an
autoscaled clique or scaling group is ``counts`` (:mod:`.scaling`): the floor for Git, the live
count for the agent; which objects each holds is :mod:`.gitsplit`'s, the HPAs :mod:`.hpa`'s.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from grove_gitops.api.podcliqueset import PodCliqueSet, PodCliqueTemplateSpec
from grove_gitops.expand import labels as L
from grove_gitops.expand.children import headless_service, rbac_objects
from grove_gitops.expand.context import ExpandContext
from grove_gitops.expand.hashing import pod_template_hash
from grove_gitops.expand.hpa import unit_warnings
from grove_gitops.expand.mnnvl import compute_domains
from grove_gitops.expand.plan import CliqueInstance, Planner
from grove_gitops.expand.podgangs import build_podgangs, day2_annotation
from grove_gitops.expand.pods import build_pods
from grove_gitops.expand.resourceclaims import ClaimPlanner, ClaimRef
from grove_gitops.expand.scaling import Counts
from grove_gitops.expand.topology import Translator


class PodMemo:
    """The pods of each PodClique instance built so far in expansions of ONE PodCliqueSet with
    one context, so that a second expansion at other counts (:mod:`.gitsplit` expands every
    autoscaled PodCliqueSet twice) reuses the pods of every instance whose inputs are equal
    instead of building, naming and hashing them again (issue 35.4: half of a mid-size
    render's expansion time). :func:`.pods.build_pods` is a function of exactly the inputs
    compared here, so a reused pod is the pod that would have been built; the two expansions
    then share those pod objects, which nothing mutates afterwards."""

    def __init__(self) -> None:
        self._pods: dict[str, tuple[tuple[Any, ...], list[dict[str, Any]]]] = {}
        #: Each clique's pod-template hash (a function of the PodCliqueSet alone).
        self.template_hashes: dict[str, str] | None = None

    def build(
        self,
        pcs: PodCliqueSet,
        inst: CliqueInstance,
        ctx: ExpandContext,
        template_hash: str,
        num: int,
        claims: list[list[ClaimRef]],
    ) -> list[dict[str, Any]]:
        inputs = (inst, template_hash, num, claims)
        known = self._pods.get(inst.fqn)
        if known is not None and known[0] == inputs:
            return known[1]
        pods = build_pods(pcs, inst, ctx, template_hash, num, claims)
        self._pods[inst.fqn] = (inputs, pods)
        return pods


@dataclass
class Expansion:
    objects: list[dict[str, Any]] = field(default_factory=list)
    #: (field path, message) pairs; the caller adds the file name.
    warnings: list[tuple[str, str]] = field(default_factory=list)


def _template_hash(pcs: PodCliqueSet, template: PodCliqueTemplateSpec) -> str:
    spec = dict(template.spec.podSpec)
    if pcs.spec.template.priorityClassName:
        spec["priorityClassName"] = pcs.spec.template.priorityClassName
    else:
        spec.pop("priorityClassName", None)
    return pod_template_hash({"labels": template.labels, "annotations": template.annotations, "spec": spec})


def expand_pcs(
    pcs: PodCliqueSet, ctx: ExpandContext, counts: Counts | None = None, memo: PodMemo | None = None
) -> Expansion:
    """Every workload object at ``counts`` (default: autoscaled units at their floor); no HPAs.
    ``memo``: shared by the expansions of this PodCliqueSet with ``ctx`` (see :class:`PodMemo`)."""
    result = Expansion(warnings=unit_warnings(pcs))
    result.objects.extend(rbac_objects(pcs))
    planner = Planner(pcs, counts)
    claims = ClaimPlanner(pcs, ctx.claim_templates)
    translator = Translator(pcs, ctx)
    hashes = memo.template_hashes if memo is not None else None
    if hashes is None:
        hashes = {c.name: _template_hash(pcs, c) for c in pcs.cliques}
        if memo is not None:
            memo.template_hashes = hashes
    by_name = {c.name: c for c in pcs.cliques}
    group_pods = {
        g.name: sum(by_name[c].spec.replicas for c in g.cliqueNames if c in by_name) for g in pcs.scaling_groups
    }
    scheduler = ctx.backend.name
    for replica in range(pcs.spec.replicas):
        result.objects.append(headless_service(pcs, replica))
        if ctx.mnnvl_enabled:
            result.objects.extend(compute_domains(pcs, replica))
        instances = planner.instances(replica)
        pod_names: dict[str, list[str]] = {}
        for inst in instances:
            num = group_pods.get(inst.group.name, 0) if inst.group is not None else 0
            template_hash, pod_claims = hashes[inst.template.name], claims.claims_for(inst)
            if memo is not None:
                pods = memo.build(pcs, inst, ctx, template_hash, num, pod_claims)
            else:
                pods = build_pods(pcs, inst, ctx, template_hash, num, pod_claims)
            pod_names[inst.fqn] = [p["metadata"]["name"] for p in pods]
            result.objects.extend(pods)
        day2 = day2_annotation(pcs, replica)  # the agent's PodCliqueSet facts (docs/day2.md)
        for gang in build_podgangs(pcs, replica, instances, pod_names, scheduler, translator):
            gang_obj = gang.to_object()
            backend_objects = ctx.backend.gang_objects(gang_obj, pcs)
            refs = [
                {"apiVersion": o["apiVersion"], "kind": o["kind"], "name": o["metadata"]["name"]}
                for o in backend_objects
            ]
            annotations = gang_obj["metadata"].setdefault("annotations", {})
            annotations[L.GANG_OBJECTS] = json.dumps(refs, sort_keys=True, separators=(",", ":"))
            annotations[L.DAY2] = day2
            result.objects.append(gang_obj)
            result.objects.extend(backend_objects)
    result.objects.extend(claims.objects.values())
    return result
