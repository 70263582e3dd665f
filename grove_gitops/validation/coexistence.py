"""A Grove operator beside us: what it would fight over is an error, not a footnote.

When the RenderConfiguration says Grove's operator runs in the same cluster (``mode: review``,
where it reconciles the source's PodCliqueSets, or ``coexistWithGroveOperator: true``, where it
runs other workloads beside grove-gitops' own), every object this source puts in the cluster
is checked against what Grove's operator acts on (spec/grove-backends.md §1.5, §5.3-§5.4;
spec/grove-desired-state.md, PodGangs; spec/grove-autoscaling.md §2.2):

* objects labelled ``app.kubernetes.io/managed-by: grove-operator`` (its PodGang controller,
  its PodGang clean-up and its label-filtered cache take them for its own);
* objects whose ownerReferences name a ``grove.io`` kind (its controllers and the garbage
  collector treat them as children of Grove's objects);
* a scheduler's topology object that Grove's ClusterTopologyBinding controller manages itself
  (asked of each backend: :meth:`~grove_gitops.backendapi.SchedulerBackend.coexistence_findings`,
  so no scheduler is named here).

In review mode the cluster gets the source's PodCliqueSets, ClusterTopologyBindings and
pass-through objects, never the rendered expansion (Grove's operator makes that itself); in
full mode it gets the rendered output, topology objects included. Each error names the file
and field, and says the fix.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from grove_gitops.api.renderconfig import RenderConfig
from grove_gitops.api.topology import ClusterTopologyBinding
from grove_gitops.backendapi import AppliedObject, SchedulerBackend
from grove_gitops.errors import InputProblem

if TYPE_CHECKING:
    from grove_gitops.load.source import Sourced

MANAGED_BY = "app.kubernetes.io/managed-by"
GROVE_OPERATOR = "grove-operator"
#: Where a problem says the setting that made the check run.
SETTING = "RenderConfiguration mode: review or coexistWithGroveOperator: true"


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _grove_owner(obj: Mapping[str, Any]) -> str | None:
    """The first ownerReference naming a ``grove.io`` kind, as ``Kind/name``."""
    refs = _meta(obj).get("ownerReferences")
    for ref in refs if isinstance(refs, list) else []:
        if isinstance(ref, dict) and str(ref.get("apiVersion", "")).split("/")[0] == "grove.io":
            return f"{ref.get('kind')}/{ref.get('name')}"
    return None


def passthrough_problems(passthrough: Iterable[Sourced[dict[str, Any]]]) -> list[InputProblem]:
    """Pass-through objects Grove's operator would take for its own."""
    problems: list[InputProblem] = []
    for item in passthrough:
        obj = item.obj
        what = f"{obj.get('kind')} {_meta(obj).get('name')}"
        labels = _meta(obj).get("labels")
        if isinstance(labels, dict) and labels.get(MANAGED_BY) == GROVE_OPERATOR:
            problems.append(
                InputProblem(
                    item.file,
                    f"metadata.labels[{MANAGED_BY}]",
                    f"Invalid value: {GROVE_OPERATOR!r}: a Grove operator runs beside ({SETTING}) and takes {what} "
                    "for its own (its PodGang controller, PodGang clean-up and cache select this label). Fix: "
                    "drop the label, or leave this object to Grove's operator and out of this source",
                )
            )
        owner = _grove_owner(obj)
        if owner is not None:
            problems.append(
                InputProblem(
                    item.file,
                    "metadata.ownerReferences",
                    f"Invalid value: {owner}: a Grove operator runs beside ({SETTING}) and {what} names a grove.io "
                    "owner: Grove's controllers and the garbage collector treat it as that object's child. Fix: "
                    "drop the ownerReference (a rendered object carries none)",
                )
            )
    return problems


def coexistence_problems(
    render: RenderConfig,
    bindings: Sequence[Sourced[ClusterTopologyBinding]],
    passthrough: Sequence[Sourced[dict[str, Any]]],
    backends: Mapping[str, SchedulerBackend],
) -> list[InputProblem]:
    """Every object of this source that a Grove operator beside it would fight over; nothing
    unless the RenderConfiguration says one runs beside (:attr:`RenderConfig.coexists`)."""
    if not render.coexists:
        return []
    applied = [AppliedObject(item.file, item.obj) for item in passthrough if not _meta(item.obj).get("namespace")]
    if not render.review:  # review mode applies no rendered object: Grove's operator makes them
        for item in bindings:
            for backend in backends.values():
                applied += [AppliedObject(item.file, o, rendered=True) for o in backend.topology_objects(item.obj)]
    problems = passthrough_problems(passthrough)
    for item in bindings:
        for backend in backends.values():
            problems += [
                InputProblem(item.file, f.field, f"{f.kind}: {f.message}")
                for f in backend.coexistence_findings(item.obj, applied)
            ]
    return problems
