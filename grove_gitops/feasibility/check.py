"""Feasibility of a render: gangs from the rendered PodGangs and pods, placed on the inventory.

:func:`check_objects` is the command's core. :func:`findings` turns its answer into the
warnings (``feasibility: warn``) or errors (``enforce``) that ``validate``, ``render`` and
``diff`` report when the source holds an inventory. Owns placing rendered objects; placing a
:class:`~grove_gitops.render.RenderPlan` (autoscaled workloads at their floor and their maximum)
is :mod:`grove_gitops.planfeasibility`, above the render plan, so the render can call this module without a circle.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from grove_gitops.api.topology import ClusterTopologyBinding
from grove_gitops.errors import InputProblem, InvalidInputError
from grove_gitops.expand import labels as L
from grove_gitops.feasibility.demand import NodeFilter, pod_requests
from grove_gitops.feasibility.inventory import Inventory, build_inventory
from grove_gitops.feasibility.model import Gang, Run, Scope
from grove_gitops.feasibility.placement import GangResult, Placer, place_all
from grove_gitops.feasibility.scaled import Verdict
from grove_gitops.load.source import SourceSet

PODGANG_API = "scheduler.grove.io/v1alpha1"


@dataclass
class Feasibility:
    inventory: Inventory
    placer: Placer
    results: list[GangResult]
    #: The same source with every autoscaled count at its maximum (None: nothing autoscaled).
    maximum: Feasibility | None = None
    #: Per autoscaled workload: floor and maximum verdicts.
    verdicts: list[Verdict] = field(default_factory=list)

    @property
    def fits(self) -> bool:
        """Every gang fits (at the floor: the maximum is :attr:`maximum`'s)."""
        return all(r.fits for r in self.results)

    @property
    def fits_at_maximum(self) -> bool | None:
        """Every autoscaled workload fits at its maximum; None when none is autoscaled or
        none was checked there."""
        checked = [v.max_fits for v in self.verdicts if v.max_fits is not None]
        return all(checked) if checked else None


def _pack(obj: Mapping[str, Any] | None) -> tuple[str | None, str | None]:
    pack = ((obj or {}).get("packConstraint") or {}) if isinstance(obj, Mapping) else {}
    return pack.get("required") or None, pack.get("preferred") or None


def _scheduling_parts(spec: Mapping[str, Any]) -> tuple[Any, ...]:
    """Everything of a pod spec that requests and node choice depend on (compared, not parsed)."""
    return (
        [c.get("resources") for c in spec.get("containers") or []],
        [(c.get("resources"), c.get("restartPolicy")) for c in spec.get("initContainers") or []],
        spec.get("overhead"),
        spec.get("nodeSelector"),
        spec.get("affinity"),
        spec.get("tolerations"),
    )


def _runs(pods: list[Mapping[str, Any]]) -> list[Run]:
    """Consecutive pods alike in requests and node filter, as runs. The pods of a podgroup
    share their template, so the parts are compared and parsed once per run."""
    runs: list[Run] = []
    last: tuple[Any, ...] | None = None
    for pod in pods:
        spec = pod.get("spec") or {}
        parts = _scheduling_parts(spec)
        if runs and parts == last:
            runs[-1] = Run(runs[-1].requests, runs[-1].node_filter, runs[-1].count + 1)
            continue
        last = parts
        requests = tuple(sorted(pod_requests(spec).items()))
        node_filter = NodeFilter.of(spec)
        if runs and runs[-1].requests == requests and runs[-1].node_filter == node_filter:
            runs[-1] = Run(requests, node_filter, runs[-1].count + 1)
        else:
            runs.append(Run(requests, node_filter, 1))
    return runs


def _gang(obj: Mapping[str, Any], pods: Mapping[tuple[str, str], Mapping[str, Any]], file: str) -> Gang:
    meta = obj.get("metadata") or {}
    ns, name = meta.get("namespace") or "", meta.get("name") or ""
    spec = obj.get("spec") or {}
    leaves: dict[str, Scope] = {}
    base: str | None = None
    for group in spec.get("podgroups") or []:
        refs = [(r.get("namespace") or ns, r.get("name") or "") for r in group.get("podReferences") or []]
        members = [pods[ref] for ref in refs if ref in pods]
        for pod in members:
            base = base or (pod.get("metadata") or {}).get("labels", {}).get(L.BASE_PODGANG)
        need = max(0, min(int(group.get("minReplicas") or 0), len(members)))
        required, preferred = _pack(group.get("topologyConstraint"))
        leaves[group["name"]] = Scope(
            f"podgroup {group['name']}", required, preferred, runs=_runs(members[:need]), extra=_runs(members[need:])
        )
    required, preferred = _pack(spec.get("topologyConstraint"))
    root = Scope("the gang" if required or preferred else f"gang {name}", required, preferred)
    grouped: set[str] = set()
    for cfg in spec.get("topologyConstraintGroupConfigs") or []:
        names = [n for n in cfg.get("podGroupNames") or [] if n in leaves and n not in grouped]
        grouped.update(names)
        req, pref = _pack(cfg.get("topologyConstraint"))
        root.children.append(Scope(f"scaling group {cfg.get('name')}", req, pref, [leaves[n] for n in names]))
    root.children += [leaf for n, leaf in leaves.items() if n not in grouped]
    pcs = (meta.get("labels") or {}).get(L.PART_OF, "")
    kind = "scaled" if base is not None and base != name else "base"
    return Gang(ns, name, pcs, kind, base if kind == "scaled" else None, file, root)


def gangs_of(objects: Iterable[Mapping[str, Any]], files: Mapping[tuple[str, str], str]) -> list[Gang]:
    """Every rendered PodGang as a :class:`Gang`; ``files`` names each PodCliqueSet's source file."""
    pods: dict[tuple[str, str], Mapping[str, Any]] = {}
    gang_objs: list[Mapping[str, Any]] = []
    for obj in objects:
        kind, api = obj.get("kind"), obj.get("apiVersion")
        if kind == "Pod" and api == "v1":
            meta = obj.get("metadata") or {}
            pods[(meta.get("namespace") or "", meta.get("name") or "")] = obj
        elif kind == "PodGang" and api == PODGANG_API:
            gang_objs.append(obj)
    out = []
    for obj in gang_objs:
        meta = obj.get("metadata") or {}
        pcs = (meta.get("labels") or {}).get(L.PART_OF, "")
        out.append(_gang(obj, pods, files.get((meta.get("namespace") or "", pcs), "")))
    return out


def check_objects(
    objects: Iterable[Mapping[str, Any]],
    source: SourceSet,
    bindings: Mapping[str, ClusterTopologyBinding],
    files: Mapping[tuple[str, str], str],
) -> Feasibility:
    """Place the gangs of ``objects`` (a whole render) on the source's inventory."""
    return place_gangs(gangs_of(objects, files), source, bindings)


def place_gangs(
    gangs: list[Gang], source: SourceSet, bindings: Mapping[str, ClusterTopologyBinding]
) -> Feasibility:
    inventory = build_inventory(source, dict(bindings))
    placer, results = place_all(inventory, gangs)
    return Feasibility(inventory, placer, results)


#: Why a maximum that does not fit is never an error.
MAX_IS_A_WARNING = (
    "a warning under every feasibility mode: only the floor must fit; a replica above it that finds no room "
    "waits unscheduled"
)


def findings(result: Feasibility, mode: str) -> tuple[list[InputProblem], list[str]]:
    """A non-fitting gang (at the floor) as an error (``enforce``) or a warning (``warn``),
    naming its file; an autoscaled workload whose maximum does not fit (or was not checked)
    as a warning under both."""
    problems: list[InputProblem] = []
    warnings: list[str] = []
    for v in result.verdicts:
        if v.max_fits is False or v.skipped:
            note = f" ({MAX_IS_A_WARNING})" if v.max_fits is False else ""
            message = f"PodCliqueSet {v.title} {v.text()}{note}"
            warnings.append(f"{v.file}: {message}" if v.file else message)
    for r in result.results:
        if r.fits:
            continue
        message = (
            f"PodGang {r.gang.namespace}/{r.gang.name} does not fit the node inventory: {r.reason} "
            "(a heuristic placement; run grove-gitops feasibility for the whole picture)"
        )
        if mode == "enforce":
            problems.append(InputProblem(r.gang.file or "NodeInventory", "", message))
        else:
            warnings.append(f"{r.gang.file}: {message}" if r.gang.file else message)
    return problems, warnings


def unfit_gangs(result: Feasibility | None) -> dict[tuple[str, str], str]:
    """(namespace, PodGang) -> why it does not fit, for every gang that does not (at the
    floor): what ``plan`` needs to tell a gang a topology change strands from one that fits."""
    if result is None:
        return {}
    return {r.gang.key: r.reason or "it does not fit" for r in result.results if not r.fits}


def apply_mode(result: Feasibility | None, mode: str) -> list[str]:
    """Under ``enforce`` raise every non-fitting gang as an input error; under ``warn``
    return them as warnings."""
    if result is None:
        return []
    problems, warnings = findings(result, mode)
    if problems:
        raise InvalidInputError(problems)
    return warnings
