"""Expand one PodCliqueSet into every object Grove's operator would create (in GitOps form).

Follows the render algorithm of ``spec/grove-desired-state.md`` (appendix) with the GitOps
differences documented in ``pods.py`` and ``podgangs.py``. PodClique and
PodCliqueScalingGroup objects are operator internals and are not emitted. The count of an
autoscaled clique or scaling group is ``counts`` (:mod:`.scaling`): the floor for Git, the live
count for the agent; which objects each holds is :mod:`.gitsplit`'s, the HPAs :mod:`.hpa`'s.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, TypeVar, cast

from grove_gitops.api.podcliqueset import PodCliqueSet, PodCliqueTemplateSpec
from grove_gitops.expand import labels as L
from grove_gitops.expand.children import headless_service, rbac_objects
from grove_gitops.expand.context import ExpandContext
from grove_gitops.expand.hashing import pod_template_hash
from grove_gitops.expand.hpa import unit_warnings
from grove_gitops.expand.mnnvl import compute_domains
from grove_gitops.expand.plan import CliqueInstance, Planner
from grove_gitops.expand.podgangs import build_podgang, day2_annotation, gang_members
from grove_gitops.expand.pods import CliquePods, placement_of
from grove_gitops.expand.resourceclaims import ClaimPlanner, ClaimRef
from grove_gitops.expand.scaling import Counts
from grove_gitops.expand.topology import Translator

T = TypeVar("T")


class ExpansionMemo:
    """What the expansions of ONE PodCliqueSet with ONE context have in common, built once.

    :mod:`.gitsplit` expands every autoscaled PodCliqueSet twice (at the floor and one above
    it) and the second expansion differs from the first only where a count changed: a few
    PodCliques gain pods or appear, a few PodGangs gain members or appear (issue 35.4: the
    second expansion was a third of a mid-size render's expansion). Each part of an expansion
    is a function of a few inputs, and an expansion asks the memo for it with those inputs:
    it gets the part built before when the inputs are equal, else a new one, so an expansion
    through the memo is, object for object, the expansion without it. The parts:

    - the pods of a PodClique: :class:`.pods.CliquePods` of the instance with its count left
      out, the template hash and the scaling group's pod count; pod ``k`` is a function of
      those, ``k`` and its claims, so a count that grows reuses every pod it had;
    - a PodGang with its backend objects and annotations: a function of the PodCliqueSet
      replica, its member PodCliques and their pod names (:func:`.podgangs.build_podgang`;
      a backend's ``gang_objects`` is a function of its arguments, ``backendapi``);
    - the objects of the PodCliqueSet (RBAC) and of each replica (headless Service,
      ComputeDomains, the day-2 annotation), functions of the PodCliqueSet and the replica.

    Two expansions then share those objects, and :func:`.gitsplit.git_objects` compares a
    shared one in O(1). Nothing changes them while they are compared: the output stage
    annotates Git's objects in place only after the split, when the second expansion is gone.
    """

    def __init__(self) -> None:
        self._cliques: dict[str, _CliqueMemo] = {}
        self._parts: dict[tuple[str, str | int], tuple[Any, Any]] = {}
        #: Each clique's pod-template hash (a function of the PodCliqueSet alone).
        self.template_hashes: dict[str, str] | None = None

    def pods(
        self,
        pcs: PodCliqueSet,
        inst: CliqueInstance,
        ctx: ExpandContext,
        template_hash: str,
        num: int,
        claims: list[list[ClaimRef]],
    ) -> list[dict[str, Any]]:
        """:func:`.pods.build_pods` of these arguments."""
        known = self._cliques.get(inst.fqn)
        if known is None or not known.serves(inst, template_hash, num):
            stamper = CliquePods(pcs, inst, ctx, template_hash, num)
            known = self._cliques[inst.fqn] = _CliqueMemo(inst, template_hash, num, stamper)
        return known.pods(inst.pods, claims)

    def part(self, kind: str, key: str | int, inputs: Any, build: Callable[[], T]) -> T:
        """``build()``, or what it returned for the same ``kind``, ``key`` and equal ``inputs``
        (``build`` must be a function of them and of this memo's PodCliqueSet and context)."""
        known = self._parts.get((kind, key))
        if known is not None and known[0] == inputs:
            return cast(T, known[1])
        value = build()
        self._parts[(kind, key)] = (inputs, value)
        return value


class _CliqueMemo:
    """The pods stamped so far for one PodClique shape, by index, with the claims each mounts."""

    def __init__(self, inst: CliqueInstance, template_hash: str, num: int, stamper: CliquePods) -> None:
        self.inst, self.template_hash, self.num = inst, template_hash, num
        self.stamper = stamper
        self.built: list[tuple[list[ClaimRef], dict[str, Any]]] = []

    def serves(self, inst: CliqueInstance, template_hash: str, num: int) -> bool:
        """Whether ``inst`` is this shape: the same instance but (perhaps) its pod count."""
        if (template_hash, num) != (self.template_hash, self.num):
            return False
        known = self.inst if self.inst.pods == inst.pods else replace(self.inst, pods=inst.pods)
        return known == inst

    def pods(self, count: int, claims: list[list[ClaimRef]]) -> list[dict[str, Any]]:
        out = []
        for k in range(count):
            mounts = claims[k] if k < len(claims) else []
            if k < len(self.built) and self.built[k][0] == mounts:
                out.append(self.built[k][1])
                continue
            pod = self.stamper.pod(k, mounts)
            if k < len(self.built):
                self.built[k] = (mounts, pod)
            else:
                self.built.append((mounts, pod))
            out.append(pod)
        return out


@dataclass
class Expansion:
    objects: list[dict[str, Any]] = field(default_factory=list)
    #: (field path, message) pairs; the caller adds the file name.
    warnings: list[tuple[str, str]] = field(default_factory=list)
    #: The PodCliques whose pods are among ``objects``.
    pod_cliques: set[str] = field(default_factory=set)


def _template_hash(pcs: PodCliqueSet, template: PodCliqueTemplateSpec) -> str:
    spec = dict(template.spec.podSpec)
    if pcs.spec.template.priorityClassName:
        spec["priorityClassName"] = pcs.spec.template.priorityClassName
    else:
        spec.pop("priorityClassName", None)
    return pod_template_hash({"labels": template.labels, "annotations": template.annotations, "spec": spec})


def expand_pcs(
    pcs: PodCliqueSet,
    ctx: ExpandContext,
    counts: Counts | None = None,
    memo: ExpansionMemo | None = None,
    only_named_beyond: Collection[str] | None = None,
) -> Expansion:
    """Every workload object at ``counts`` (default: autoscaled units at their floor); no HPAs.
    ``memo``: shared by the expansions of this PodCliqueSet with ``ctx`` (:class:`ExpansionMemo`).
    ``only_named_beyond``: for :mod:`.gitsplit`'s comparison alone, the PodCliques whose pods
    are built; the pods of every other PodClique are not, and their PodGangs list them by
    :func:`placeholder_name` (why that leaves the split unchanged: :mod:`.gitsplit`)."""
    memo = memo if memo is not None else ExpansionMemo()
    result = Expansion(warnings=unit_warnings(pcs))
    result.objects.extend(memo.part("rbac", "", None, partial(rbac_objects, pcs)))
    planner = Planner(pcs, counts)
    claims = ClaimPlanner(pcs, ctx.claim_templates)
    translator = Translator(pcs, ctx)
    hashes = memo.template_hashes
    if hashes is None:
        hashes = memo.template_hashes = {c.name: _template_hash(pcs, c) for c in pcs.cliques}
    by_name = {c.name: c for c in pcs.cliques}
    group_pods = {
        g.name: sum(by_name[c].spec.replicas for c in g.cliqueNames if c in by_name) for g in pcs.scaling_groups
    }
    scheduler = ctx.backend.name
    for replica in range(pcs.spec.replicas):
        result.objects.extend(memo.part("replica", replica, None, partial(_replica_objects, pcs, ctx, replica)))
        instances = planner.instances(replica)
        pod_names: dict[str, list[str]] = {}
        for inst in instances:
            if only_named_beyond is not None and inst.fqn not in only_named_beyond:
                pod_names[inst.fqn] = [placeholder_name(inst.fqn, k) for k in range(inst.pods)]
                continue
            num = group_pods.get(inst.group.name, 0) if inst.group is not None else 0
            pods = memo.pods(pcs, inst, ctx, hashes[inst.template.name], num, claims.claims_for(inst))
            pod_names[inst.fqn] = [p["metadata"]["name"] for p in pods]
            result.objects.extend(pods)
            result.pod_cliques.add(inst.fqn)
        # the agent's PodCliqueSet facts (docs/day2.md)
        day2 = memo.part("day2", replica, None, partial(day2_annotation, pcs, replica))
        for gang_name, members in gang_members(instances).items():
            inputs = (replica, [(inst, pod_names[inst.fqn]) for inst in members])
            build = partial(build_podgang, pcs, replica, gang_name, members, pod_names, scheduler, translator)
            binding = partial(pod_binding, pcs, ctx, members)
            result.objects.extend(
                memo.part("gang", gang_name, inputs, partial(_gang_objects, build, binding, pcs, ctx, day2))
            )
    result.objects.extend(claims.objects.values())
    return result


def placeholder_name(pclq: str, index: int) -> str:
    """What names pod ``index`` of PodClique ``pclq`` in a comparison-only expansion: the shape
    of a rendered pod's name (``<podclique>-<index>-<hash8>``, so PodGangs order their pod
    references alike) with a suffix no hash has (``-`` is not in the hash alphabet)."""
    return f"{pclq}-{index}--------"


def _replica_objects(pcs: PodCliqueSet, ctx: ExpandContext, replica: int) -> list[dict[str, Any]]:
    """The objects of one PodCliqueSet replica that no count changes."""
    objects = [headless_service(pcs, replica)]
    if ctx.mnnvl_enabled:
        objects.extend(compute_domains(pcs, replica))
    return objects


#: The most a PodGang's pod binding takes: past it (a gang of thousands of podgroups) only the
#: fields every podgroup shares are written, not each podgroup's own (docs/day2.md).
MAX_BINDING_BYTES = 64 * 1024


def pod_binding(pcs: PodCliqueSet, ctx: ExpandContext, members: list[CliqueInstance]) -> str:
    """The PodGang's ``gitops.grove.io/pod-binding``: what ties the pods of each podgroup (a
    member PodClique) to the gang (:meth:`~grove_gitops.backendapi.SchedulerBackend.pod_binding`,
    from the placement its pods are prepared with), as ``{"all": {pointer: value}, "each":
    {podgroup: {pointer: value}}}``: the fields every podgroup shares once, then each
    podgroup's own (KAI's subgroup label names the podgroup)."""
    found = {inst.fqn: ctx.backend.pod_binding(placement_of(pcs, inst)) for inst in members}
    first = next(iter(found.values()), {})
    shared = {p: v for p, v in first.items() if all(p in b and b[p] == v for b in found.values())}
    each = {g: {p: v for p, v in b.items() if p not in shared} for g, b in found.items()}
    text = json.dumps({"all": shared, "each": {g: b for g, b in each.items() if b}}, sort_keys=True, separators=(",", ":"))
    if len(text) > MAX_BINDING_BYTES:
        text = json.dumps({"all": shared, "each": {}}, sort_keys=True, separators=(",", ":"))
    return text


def _gang_objects(
    build: Callable[[], dict[str, Any]],
    binding: Callable[[], str],
    pcs: PodCliqueSet,
    ctx: ExpandContext,
    day2: str,
) -> list[dict[str, Any]]:
    """The PodGang ``build`` makes, then the backend's objects for it, which the PodGang names."""
    gang_obj = build()
    backend_objects = ctx.backend.gang_objects(gang_obj, pcs)
    refs = [{"apiVersion": o["apiVersion"], "kind": o["kind"], "name": o["metadata"]["name"]} for o in backend_objects]
    annotations = gang_obj["metadata"].setdefault("annotations", {})
    annotations[L.GANG_OBJECTS] = json.dumps(refs, sort_keys=True, separators=(",", ":"))
    annotations[L.DAY2] = day2
    annotations[L.POD_BINDING] = binding()
    return [gang_obj, *backend_objects]
