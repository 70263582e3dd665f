"""The Pod rules a gate-lifter lives or dies by, as the apiserver's pod strategy applies them.

- Scheduling gates may be set only at creation; afterwards they may be removed in any order,
  never added (``spec.schedulingGates[i].name: Forbidden: only deletion is allowed, but found
  new scheduling gate 'x'``). A rename is an addition.
- A pod cannot be created with both ``spec.nodeName`` and gates.
- Every other spec change is rejected except images, ``activeDeadlineSeconds`` (set or
  decrease), toleration additions, ``terminationGracePeriodSeconds`` (negative → 1) and, while
  the pod is still gated, ``nodeSelector`` additions and a first ``nodeAffinity``.
- On create the server resets status to ``Pending`` with a QoS class and, for a gated pod, the
  ``PodScheduled=False/SchedulingGated`` condition; it also applies scheme defaults and the
  default admission mutations (service account name, priority, not-ready/unreachable
  tolerations), so a naive read-modify-PUT meets the same diff it would in a cluster.
"""

from __future__ import annotations

import json
from typing import Any

from tests.fakeserver.errors import FieldError
from tests.fakeserver.patch import json_equal
from tests.fakeserver.store import clone, now_rfc3339
from tests.fakeserver.validation import qualified_name_errors

JsonObj = dict[str, Any]

GATED_MESSAGE = "Scheduling is blocked due to non-empty scheduling gates"
IMMUTABLE_SPEC_MESSAGE = (
    "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,"
    "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),"
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
)
_CONTAINER_LISTS = ("containers", "initContainers")


def apply_defaults(pod: JsonObj) -> None:
    """Scheme defaulting (``SetDefaults_Pod*``), applied on create and on every update."""
    spec = pod.setdefault("spec", {})
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("securityContext", {})
    spec.setdefault("enableServiceLinks", True)
    if spec.get("serviceAccountName") and not spec.get("serviceAccount"):
        spec["serviceAccount"] = spec["serviceAccountName"]
    for list_name in _CONTAINER_LISTS:
        for container in spec.get(list_name) or []:
            if not isinstance(container, dict):
                continue
            container.setdefault("terminationMessagePath", "/dev/termination-log")
            container.setdefault("terminationMessagePolicy", "File")
            container.setdefault("resources", {})
            container.setdefault("imagePullPolicy", _pull_policy(str(container.get("image", ""))))
            for port in container.get("ports") or []:
                if isinstance(port, dict):
                    port.setdefault("protocol", "TCP")


def _pull_policy(image: str) -> str:
    if "@" in image:
        return "IfNotPresent"
    last = image.rsplit("/", 1)[-1]
    tag = last.split(":", 1)[1] if ":" in last else ""
    return "Always" if tag in ("", "latest") else "IfNotPresent"


def admit_create(pod: JsonObj) -> None:
    """The default admission plugins' mutations on create (ServiceAccount, Priority,
    DefaultTolerationSeconds); token-volume injection is not emulated."""
    spec = pod.setdefault("spec", {})
    spec.setdefault("serviceAccountName", "default")
    spec.setdefault("serviceAccount", spec["serviceAccountName"])
    spec.setdefault("priority", 0)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    tolerations = spec.setdefault("tolerations", [])
    for taint in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
        if not any(isinstance(t, dict) and t.get("key") == taint for t in tolerations):
            tolerations.append(
                {"key": taint, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
            )


def qos_class(spec: JsonObj) -> str:
    """BestEffort / Burstable / Guaranteed from cpu and memory requests and limits."""
    containers = [c for name in _CONTAINER_LISTS for c in spec.get(name) or [] if isinstance(c, dict)]
    any_set = False
    guaranteed = True
    for container in containers:
        resources = container.get("resources") or {}
        requests = resources.get("requests") or {}
        limits = resources.get("limits") or {}
        for resource in ("cpu", "memory"):
            if resource in requests or resource in limits:
                any_set = True
            if resource not in limits or requests.get(resource, limits[resource]) != limits[resource]:
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def initial_status(pod: JsonObj) -> JsonObj:
    """What ``PrepareForCreate`` leaves in status, whatever the client sent."""
    spec = pod.get("spec") or {}
    status: JsonObj = {"phase": "Pending", "qosClass": qos_class(spec)}
    if spec.get("schedulingGates"):
        status["conditions"] = [
            {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated", "message": GATED_MESSAGE}
        ]
    return status


def _gate_errors(gates: Any) -> list[FieldError]:
    errors: list[FieldError] = []
    seen: set[str] = set()
    for i, gate in enumerate(gates if isinstance(gates, list) else []):
        name = gate.get("name") if isinstance(gate, dict) else None
        if not isinstance(name, str):
            continue  # the schema validator reports it
        errors.extend(qualified_name_errors(name, f"spec.schedulingGates[{i}]"))
        if name in seen:
            errors.append(FieldError("Duplicate", f"spec.schedulingGates[{i}]", value=name))
        seen.add(name)
    return errors


def _duplicate_container_errors(spec: JsonObj) -> list[FieldError]:
    errors = []
    seen: set[str] = set()
    for list_name in _CONTAINER_LISTS:
        for i, container in enumerate(spec.get(list_name) or []):
            name = container.get("name") if isinstance(container, dict) else None
            if isinstance(name, str):
                if name in seen:
                    errors.append(FieldError("Duplicate", f"spec.{list_name}[{i}].name", value=name))
                seen.add(name)
    return errors


def create_errors(pod: JsonObj) -> list[FieldError]:
    """``ValidatePodCreate`` rules the schema cannot express."""
    spec = pod.get("spec") or {}
    errors = _gate_errors(spec.get("schedulingGates"))
    errors.extend(_duplicate_container_errors(spec))
    if spec.get("nodeName") and spec.get("schedulingGates"):
        errors.append(
            FieldError(
                "Forbidden", "spec.nodeName", "cannot be set until all schedulingGates have been cleared"
            )
        )
    return errors


def _gate_names(spec: JsonObj) -> list[str]:
    gates = spec.get("schedulingGates") or []
    return [str(g["name"]) for g in gates if isinstance(g, dict) and isinstance(g.get("name"), str)]


def update_errors(new: JsonObj, old: JsonObj) -> list[FieldError]:
    """``ValidatePodUpdate``: gates only shrink, and the spec is otherwise immutable."""
    new_spec = new.get("spec") or {}
    old_spec = old.get("spec") or {}
    errors = _gate_errors(new_spec.get("schedulingGates"))
    old_gates = set(_gate_names(old_spec))
    for i, name in enumerate(_gate_names(new_spec)):
        if name not in old_gates:
            errors.append(
                FieldError(
                    "Forbidden",
                    f"spec.schedulingGates[{i}].name",
                    f"only deletion is allowed, but found new scheduling gate '{name}'",
                )
            )

    munged = clone(new_spec)
    munged["schedulingGates"] = clone(old_spec.get("schedulingGates"))
    for list_name in _CONTAINER_LISTS:
        new_list, old_list = munged.get(list_name) or [], old_spec.get(list_name) or []
        if len(new_list) != len(old_list):
            errors.append(
                FieldError("Forbidden", f"spec.{list_name}", "pod updates may not add or remove containers")
            )
            continue
        for index, (new_c, old_c) in enumerate(zip(new_list, old_list, strict=True)):
            if isinstance(new_c, dict) and isinstance(old_c, dict):
                if not new_c.get("image"):
                    errors.append(FieldError("Required", f"spec.{list_name}[{index}].image"))
                new_c["image"] = old_c.get("image")
    errors.extend(
        _deadline_errors(new_spec.get("activeDeadlineSeconds"), old_spec.get("activeDeadlineSeconds"))
    )
    munged["activeDeadlineSeconds"] = old_spec.get("activeDeadlineSeconds")
    old_tolerations = old_spec.get("tolerations") or []
    new_tolerations = new_spec.get("tolerations") or []
    if not all(any(json_equal(o, n) for n in new_tolerations) for o in old_tolerations):
        errors.append(
            FieldError(
                "Forbidden",
                "spec.tolerations",
                "existing toleration can not be modified except its tolerationSeconds",
            )
        )
    munged["tolerations"] = clone(old_spec.get("tolerations"))
    old_grace = old_spec.get("terminationGracePeriodSeconds")
    if isinstance(old_grace, int) and old_grace < 0 and new_spec.get("terminationGracePeriodSeconds") == 1:
        munged["terminationGracePeriodSeconds"] = old_grace
    if old_spec.get("schedulingGates"):
        errors.extend(_gated_directive_errors(munged, old_spec))

    for key in [k for k, v in munged.items() if v is None]:
        del munged[key]
    old_cmp = {k: v for k, v in old_spec.items() if v is not None}
    if not json_equal(munged, old_cmp):
        errors.append(FieldError("Forbidden", "spec", f"{IMMUTABLE_SPEC_MESSAGE}\n{_diff(old_cmp, munged)}"))
    return errors


def _deadline_errors(new: Any, old: Any) -> list[FieldError]:
    field = "spec.activeDeadlineSeconds"
    if new is None:
        if old is not None:
            return [
                FieldError("Invalid", field, "must not update from a positive integer to nil value", None)
            ]
        return []
    if isinstance(old, int) and isinstance(new, int) and new > old:
        return [FieldError("Invalid", field, "must be less than or equal to previous value", new)]
    return []


def _gated_directive_errors(munged: JsonObj, old_spec: JsonObj) -> list[FieldError]:
    """KEP-3838: while gated, a controller may narrow placement (add selectors, set affinity)."""
    errors = []
    new_selector = munged.get("nodeSelector") or {}
    old_selector = old_spec.get("nodeSelector") or {}
    if all(new_selector.get(k) == v for k, v in old_selector.items()):
        munged["nodeSelector"] = clone(old_spec.get("nodeSelector"))
    else:
        errors.append(
            FieldError(
                "Invalid",
                "spec.nodeSelector",
                "only additions to spec.nodeSelector are allowed (no mutations or deletions)",
                new_selector,
            )
        )
    old_affinity = old_spec.get("affinity") or {}
    new_affinity = dict(munged.get("affinity") or {})
    if not old_affinity.get("nodeAffinity"):
        new_affinity.pop("nodeAffinity", None)
        if json_equal(new_affinity, old_affinity):
            munged["affinity"] = clone(old_spec.get("affinity"))
    return errors


def _diff(old: JsonObj, new: JsonObj) -> str:
    """A short field-level diff (the real server prints a Go struct diff here)."""
    lines = []
    for key in sorted(set(old) | set(new)):
        if not json_equal(old.get(key), new.get(key)):
            lines.append(f"-  spec.{key}: {json.dumps(old.get(key))[:200]}")
            lines.append(f"+  spec.{key}: {json.dumps(new.get(key))[:200]}")
    return "\n".join(lines)


def normalize(pod: JsonObj) -> None:
    """Drop empty optional lists from the spec, as Go's ``omitempty`` does on the way out.

    After the last gate is removed a real server returns no ``spec.schedulingGates`` at all,
    not ``[]``; a controller that tests for ``[]`` would pass here only if it is right there.
    """
    spec = pod.get("spec")
    if isinstance(spec, dict):
        for key in [k for k, v in spec.items() if v == [] and k != "containers"]:
            del spec[key]


def set_condition(
    pod: JsonObj, type_: str, status: str, reason: str | None = None, message: str | None = None
) -> None:
    """Upsert ``status.conditions[type]`` as kubelet/scheduler do: the transition time moves only
    when the status value changes."""
    conditions = pod.setdefault("status", {}).setdefault("conditions", [])
    existing = next((c for c in conditions if c.get("type") == type_), None)
    if existing is None:
        existing = {"type": type_}
        conditions.append(existing)
    if existing.get("status") != status:
        existing["lastTransitionTime"] = now_rfc3339()
    existing["status"] = status
    for key, value in (("reason", reason), ("message", message)):
        if value is None:
            existing.pop(key, None)
        else:
            existing[key] = value
