"""The HorizontalPodAutoscalers an autoscaled PodCliqueSet renders, checked before they reach Git.

Grove copies ``metrics`` into its HPAs unchecked; the API server then refuses the HPA and
Grove's whole PodCliqueSet stops reconciling (``spec/grove-autoscaling.md`` §6.2). Here the
HPA is judged against Kubernetes' own schema of the target version at render time, and a bad
metric is an input error on the source field. It checks what :mod:`.hpa` renders, so it lives
beside it in ``expand``, above the field-level checks of ``validation`` it uses.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from grove_gitops.api.podcliqueset import PodCliqueSet
from grove_gitops.expand.hpa import hpa
from grove_gitops.expand.scaling import scale_units
from grove_gitops.fields.fielderrors import FieldError, not_supported
from grove_gitops.validation.podspec import object_errors

_SPEC = "spec.metrics"


METRIC_TYPES = ("ContainerResource", "External", "Object", "Pods", "Resource")
TARGET_TYPES = ("AverageValue", "Utilization", "Value")
#: The member of a metric that holds its source, by metric type.
_SOURCE = {"ContainerResource": "containerResource", "External": "external", "Object": "object", "Pods": "pods",
           "Resource": "resource"}


def _enums(metrics: list[dict[str, object]], path: str) -> list[FieldError]:
    """The API server's enumerations (``pkg/apis/autoscaling/validation``), which the schema
    leaves as plain strings."""
    errs = []
    for i, metric in enumerate(metrics):
        kind = metric.get("type")
        if kind not in METRIC_TYPES:
            errs.append(not_supported(f"{path}[{i}].type", kind, list(METRIC_TYPES)))
            continue
        source = metric.get(_SOURCE[str(kind)])
        target = source.get("target") if isinstance(source, dict) else None
        if isinstance(target, dict) and target.get("type") not in TARGET_TYPES:
            errs.append(not_supported(f"{path}[{i}].{_SOURCE[str(kind)]}.target.type", target.get("type"), list(TARGET_TYPES)))
    return errs


#: (Kubernetes version, the HPA's spec as canonical JSON, its target's name blanked) -> its
#: schema errors. Bounded: emptied when full.
_MEMO: dict[tuple[str, str], tuple[FieldError, ...]] = {}
_MEMO_MAX = 1024


def _schema_errors(obj: dict[str, Any], kube_version: str) -> tuple[FieldError, ...]:
    """:func:`object_errors` of one rendered HPA, once per distinct spec.

    Why a memo: checking an HPA against the schema cost about a third of the parent's
    validation of a mid-size tree (issue 35.4), and the HPAs of PodCliqueSets that scale alike
    differ only in names. ``object_errors`` leaves ``metadata`` out, and the one name in the
    spec (``scaleTargetRef.name``) is a string where the schema asks for any string, so neither
    can change the errors: the key is the spec with that name blanked."""
    spec = dict(obj["spec"])
    spec["scaleTargetRef"] = {**spec["scaleTargetRef"], "name": ""}
    key = (kube_version, json.dumps(spec, sort_keys=True, separators=(",", ":"), default=repr))
    found = _MEMO.get(key)
    if found is None:
        found = tuple(object_errors(obj, kube_version))
        if len(_MEMO) >= _MEMO_MAX:
            _MEMO.clear()
        _MEMO[key] = found
    return found


def validate_hpas(pcs: PodCliqueSet, kube_version: str) -> list[FieldError]:
    """Schema errors of each unit's HPA (one PodCliqueSet replica's: every replica's is the
    same but for its name), on the ``metrics`` field of the source."""
    errs: list[FieldError] = []
    for unit in scale_units(pcs):
        errs += _enums([m for m in unit.metrics if isinstance(m, dict)], f"{unit.path}.metrics")
        for err in _schema_errors(hpa(pcs, 0, unit), kube_version):
            if err.path == _SPEC or err.path.startswith((f"{_SPEC}.", f"{_SPEC}[")):
                path = f"{unit.path}.metrics{err.path[len(_SPEC):]}"
            else:
                path = unit.path
            errs.append(dataclasses.replace(err, path=path))
    return errs
