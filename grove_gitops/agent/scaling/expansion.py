"""The objects a workload holds at live counts: the controller's render, run in the agent.

The inputs are the render inputs Git holds on the ``gitops.grove.io`` PodCliqueSet
(``spec.source``); the code is :func:`grove_gitops.render.plan_source` and
:meth:`~grove_gitops.render.RenderPlan.expand`, the controller's own. What the agent owns at
counts ``N`` is the render at ``N`` minus what Git holds (the render at the floor without its
count-dependent objects, :mod:`grove_gitops.expand.gitsplit`): so Git plus the agent is the
render of ``N``, object for object (tests/agent/test_scaling_property.py).
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import yaml

from grove_gitops import __version__
from grove_gitops.agent.scaling.limits import ScalingLimits, with_limits
from grove_gitops.agent.scaling.workload import BadWorkload, ScaledWorkload
from grove_gitops.errors import GroveGitopsError, InvalidInputError
from grove_gitops.expand import labels as L
from grove_gitops.expand.gitsplit import ObjectKey, object_key
from grove_gitops.load.memory import MemorySource
from grove_gitops.output.gitopsmeta import annotate, wave_of

Counts = tuple[tuple[tuple[int, str], int], ...]  # sorted ((replica, template), count) pairs
WorkloadKey = tuple[str, str]


@dataclass(frozen=True)
class Desired:
    """What the agent must hold for one workload at one set of counts."""

    #: Objects only the agent creates, by key, in render order.
    objects: dict[ObjectKey, dict[str, Any]]
    #: Keys of the objects Git holds (never touched by the agent).
    git: frozenset[ObjectKey]
    #: Per scale target, the units of its count at these counts: each the (pod name, slot)
    #: pairs of one scaling-group replica, or the one pod of one clique replica.
    units: dict[str, list[list[tuple[str, str]]]] = field(default_factory=dict)


def _render(workload: ScaledWorkload, counts: Counts, limits: ScalingLimits | None = None) -> Desired:
    from grove_gitops.render import plan_source

    if workload.renderer_version != __version__:
        raise BadWorkload(
            f"spec.rendererVersion: rendered by grove-gitops {workload.renderer_version}, this agent is "
            f"{__version__}; it creates objects only from its own version's render (upgrade the controller "
            "and the agent together)"
        )
    # The agent's limits, never the record's (issue 31): a record over them does not render.
    try:
        text = yaml.safe_dump_all(with_limits(workload.source, limits or ScalingLimits()), sort_keys=True)
    except RecursionError:  # (a list bounds nesting, :mod:`.bounded`; a watch event may not)
        raise BadWorkload("spec.source: nested too deeply to render") from None
    try:
        plan = plan_source(MemorySource(f"{workload.namespace}/{workload.name}", {"source.yaml": text.encode()}))
    except InvalidInputError as exc:
        problem = str(exc.problems[0] if exc.problems else exc)
        if "RenderConfiguration limits." in problem:
            used = limits or ScalingLimits()
            problem += (f"; the agent renders with its own limits, not the record's (--max-pods-per-podcliqueset "
                        f"{used.max_pods_per_pcs}, --max-pods-per-render {used.max_pods_per_render})")
        raise BadWorkload(f"spec.source: does not render: {problem}") from None
    items = [i for i in plan.items if i.key == (workload.namespace, workload.name)]
    if len(plan.items) != 1 or not items:
        raise BadWorkload(f"spec.source: expected exactly the PodCliqueSet {workload.namespace}/{workload.name}")
    item = items[0]
    git, _ = plan.expand(item)
    full, _ = plan.expand(item, dict(counts))
    git_keys = frozenset(object_key(o.obj) for o in git)
    objects: dict[ObjectKey, dict[str, Any]] = {}
    targets = {t.name: t for t in workload.targets}
    units: dict[str, dict[int, list[tuple[str, str]]]] = {name: {} for name in targets}
    for rendered in full:
        obj = rendered.obj
        key = object_key(obj)
        if key[1] == "Pod" and key[0] == "v1":
            _count_unit(obj, targets, units)
        if key in git_keys:
            continue
        if key[2] != workload.namespace:
            raise BadWorkload(f"spec.source: renders {key[1]} {key[3]} outside namespace {workload.namespace}")
        # The output stage's GitOps annotations, as Git's copy of this object would carry them.
        obj = {**obj, "metadata": dict(obj.get("metadata") or {})}
        annotate(obj, wave_of(obj, False), plan.config.gitops)
        objects[key] = obj
    return Desired(objects, git_keys, {n: [u[j] for j in sorted(u)] for n, u in units.items()})


def _count_unit(pod: dict[str, Any], targets: dict[str, Any], units: dict[str, dict[int, list[tuple[str, str]]]]) -> None:
    labels = pod["metadata"].get("labels") or {}
    slot = str((pod.get("spec") or {}).get("hostname") or "")
    name = str(pod["metadata"]["name"])
    group = labels.get(L.PCSG)
    if group in targets:
        j = int(labels.get(L.PCSG_REPLICA_INDEX, "0"))
        units[group].setdefault(j, []).append((name, slot))
        return
    clique = labels.get(L.PODCLIQUE)
    if clique in targets:
        k = int(labels.get(L.POD_INDEX, "0"))
        units[clique].setdefault(k, []).append((name, slot))


def _size(found: Desired | GroveGitopsError) -> int:
    """What one kept render costs in memory, roughly: the JSON size of its objects (Python's
    dicts take a few times that; the budget is in the same unit for every entry)."""
    if isinstance(found, GroveGitopsError):
        return len(str(found))
    return sum(len(json.dumps(o, separators=(",", ":"), default=str)) for o in found.objects.values()) + 64 * len(
        found.git)


@dataclass
class _Entry:
    ident: str
    counts: Counts
    found: Desired | GroveGitopsError
    size: int


class Expander:
    """:func:`_render`, kept once per workload: a pass re-renders a workload only when its
    inputs or its counts changed (a render of thousands of pods takes a second).

    Issue 31: a 16-entry cache shared by every workload thrashed as soon as more than 16 were
    autoscaled (40 records: 551 renders in 30 s instead of 40). One entry per workload, the
    latest, is all a pass needs; the entries together stay within ``limits.cache_bytes``
    (least recently used workloads are dropped first, and a render larger than the whole
    budget is used and not kept).
    """

    def __init__(self, limits: ScalingLimits | None = None) -> None:
        self.limits = limits or ScalingLimits()
        self._cache: OrderedDict[WorkloadKey, _Entry] = OrderedDict()
        self._lock = threading.Lock()
        self.bytes = 0
        self.renders = 0

    def __len__(self) -> int:
        return len(self._cache)

    def forget(self, key: WorkloadKey) -> None:
        """Drop a workload's render (it left Git)."""
        with self._lock:
            entry = self._cache.pop(key, None)
            if entry is not None:
                self.bytes -= entry.size

    def desired(self, workload: ScaledWorkload, counts: dict[tuple[int, str], int]) -> Desired:
        # The record's own uid and name are part of the key: two records with the same inputs
        # are not the same workload (and only the one the inputs name renders).
        key = (workload.namespace, workload.name)
        ident = f"{workload.uid}/{workload.renderer_version}/{workload.digest}"
        wanted = tuple(sorted(counts.items()))
        with self._lock:
            entry = self._cache.get(key)
            if entry is not None and entry.ident == ident and entry.counts == wanted:
                self._cache.move_to_end(key)
                found: Desired | GroveGitopsError | None = entry.found
            else:
                found = None
        if found is None:
            try:
                found = _render(workload, wanted, self.limits)
            except GroveGitopsError as exc:
                found = exc
            self.renders += 1
            self._keep(key, _Entry(ident, wanted, found, _size(found)))
        if isinstance(found, GroveGitopsError):
            raise found
        return found

    def _keep(self, key: WorkloadKey, entry: _Entry) -> None:
        with self._lock:
            old = self._cache.pop(key, None)
            if old is not None:
                self.bytes -= old.size
            if entry.size > self.limits.cache_bytes:
                return
            self._cache[key] = entry
            self.bytes += entry.size
            while self.bytes > self.limits.cache_bytes and self._cache:
                _, dropped = self._cache.popitem(last=False)
                self.bytes -= dropped.size
