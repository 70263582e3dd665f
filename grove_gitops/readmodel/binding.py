"""What ties a pod to its gang, as the render recorded it, and whether a live pod still has it.

A rendered pod is bound to its gang by a few fields its scheduler backend wrote
(``SchedulerBackend.pod_binding``): ``spec.schedulerName``, and KAI's ``pod-group-name``
annotation and subgroup label, Volcano's group-name annotations, the coscheduling and
Koordinator pod-group labels, the Workload API's pod reference. A pod that lost one (an
applier's transformation, a mutating webhook, a hand edit of the rendered file) would be
placed by its scheduler alone, or by another scheduler, once its gate is lifted: a partial
gang. The render writes the fields on each PodGang (``gitops.grove.io/pod-binding``:
``{"all": {pointer: value}, "each": {podgroup: {pointer: value}}}``) and the agent checks
every pod against them before it lifts the pod's gate.

A PodGang without the annotation (an older render, one written by hand) binds nothing, as
before. A mapping value is matched as a subset (the API server may default fields inside it);
anything else must be equal.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from grove_gitops.expand.labels import POD_BINDING
from grove_gitops.fields import pointer
from grove_gitops.readmodel.gangs import MalformedPodGang, brief, load_annotation

__all__ = ["NONE", "POD_BINDING", "PodBinding", "parse"]
#: Fields one podgroup's pods are bound by: a render writes a handful (KAI four, the others
#: two or three); more is not a render's.
MAX_FIELDS = 32
#: How deep a recorded value is compared (the Workload API's pod reference is one level).
MAX_VALUE_DEPTH = 8

Field = tuple[str, tuple[str, ...], Any]  # (pointer, its keys, the value the render wrote)


@dataclass(frozen=True)
class PodBinding:
    """The fields every pod of the PodGang carries (``shared``) and each podgroup's own."""

    shared: tuple[Field, ...] = ()
    each: Mapping[str, tuple[Field, ...]] = field(default_factory=dict)

    def mismatch(self, podgroup: str, pod: Mapping[str, Any]) -> str | None:
        """Why ``pod`` (of ``podgroup``) is not bound as rendered, or None when it is."""
        for fields in (self.shared, self.each.get(podgroup, ())):
            for text, keys, want in fields:
                live = pointer.resolve(pod, keys)
                if live is pointer.MISSING:
                    return f"{text} is missing (rendered {brief(want)})"
                if not _matches(live, want, MAX_VALUE_DEPTH):
                    return f"{text} is {brief(live)}, rendered {brief(want)}"
        return None


NONE = PodBinding()


def _matches(live: Any, want: Any, depth: int) -> bool:
    if isinstance(want, Mapping):
        if not isinstance(live, Mapping) or depth <= 0:
            return False
        return all(k in live and _matches(live[k], v, depth - 1) for k, v in want.items())
    return bool(live == want and type(live) is type(want))


def _fields(raw: Any, where: str) -> tuple[Field, ...]:
    if not isinstance(raw, dict) or len(raw) > MAX_FIELDS:
        raise MalformedPodGang(f"{where}: expected an object of at most {MAX_FIELDS} JSON pointers")
    out: list[Field] = []
    for text, value in raw.items():
        keys = pointer.decode(text)
        if keys is None:
            raise MalformedPodGang(f"{where}: {brief(text)} is not a JSON pointer to a field")
        out.append((text, keys, value))
    return tuple(out)


def parse(podgang: Mapping[str, Any]) -> PodBinding:
    """The binding a PodGang records (:data:`NONE` without the annotation); raises
    :class:`MalformedPodGang` for one no render writes."""
    raw = ((podgang.get("metadata") or {}).get("annotations") or {}).get(POD_BINDING)
    if raw is None:
        return NONE
    where = f"metadata.annotations[{POD_BINDING}]"
    data = load_annotation(raw, where)
    if not isinstance(data, dict) or not isinstance(data.get("each", {}), dict):
        raise MalformedPodGang(f'{where}: expected {{"all": {{...}}, "each": {{podgroup: {{...}}}}}}')
    each = {str(g): _fields(f, f"{where}.each[{brief(g)}]") for g, f in data.get("each", {}).items()}
    return PodBinding(_fields(data.get("all", {}), f"{where}.all"), each)
