"""``ResourceQuota`` for pods: admission at pod CREATE and best-effort ``status.hard``/``status.used``.

Rules kept (Kubernetes docs "Resource Quotas" and kube's ``plugin/pkg/admission/resourcequota``
plus ``pkg/quota/v1/evaluator/core/pods.go``):

- every ResourceQuota in the pod's namespace is checked; a create whose usage would exceed any
  ``spec.hard`` entry is refused with 403 Forbidden:
  ``pods "<name>" is forbidden: exceeded quota: <quota>, requested: <r>=<q>, used: <r>=<q>,
  limited: <r>=<q>`` (only the exceeded resources, sorted, canonical quantities);
- a pod's usage: ``count/pods`` = 1 always; for a pod that is not terminal (phase Succeeded or
  Failed) and not being deleted also ``pods`` = 1, ``requests.cpu``/``cpu`` and
  ``requests.memory``/``memory`` from its requests, ``limits.cpu``/``limits.memory`` from its
  limits, ``requests.<extended resource>`` (e.g. ``requests.nvidia.com/gpu``) and the
  ``ephemeral-storage``/``hugepages-*`` equivalents. Pod requests are the larger of the sum over
  containers and the largest init container, plus ``spec.overhead``; a container's limit stands
  in for a missing request (as API defaulting does);
- if a quota tracks cpu or memory (``cpu``, ``memory``, ``requests.*``, ``limits.*``), every
  container must state that resource, else ``failed quota: <quota>: must specify <r> for: <c>``;
- gated pods are charged like any other (quota is charged at creation, not at scheduling).

Not emulated: quota ``scopes``/``scopeSelector`` (such quotas are ignored), object-count quotas
of other kinds, ``limits`` for extended resources, pod updates (in-place resize) and the
quota controller's resync. ``status`` is rewritten after every pod create or delete and quota
write in the namespace (``hard`` = ``spec.hard``, ``used`` = the live sum for those keys), so it
is exact for pods created and deleted through the fake; pods changed with ``put_object`` or
``set_pod_condition`` are re-counted only at the next such event.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tests.fakeserver.quantity import Quantity, QuantityError

JsonObj = dict[str, Any]
ResourceList = dict[str, Quantity]

_COMPUTE = ("cpu", "memory", "ephemeral-storage")
_VALIDATION_SET = frozenset(
    {"cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"}
)
_NATIVE_PREFIXES = ("kubernetes.io/", "requests.", "limits.")


class QuotaExceeded(Exception):
    """A pod create refused by a quota; ``message`` is kube's text after ``is forbidden: ``."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _dict(value: Any) -> JsonObj:
    return value if isinstance(value, dict) else {}


def _quantities(raw: Any) -> ResourceList:
    out: ResourceList = {}
    if isinstance(raw, dict):
        for key, value in raw.items():
            try:
                out[str(key)] = Quantity.parse(value)
            except QuantityError:
                continue  # schema validation reports malformed quantities; the fake ignores them here
    return out


def _add(total: ResourceList, more: ResourceList) -> ResourceList:
    out = dict(total)
    for key, value in more.items():
        out[key] = out[key] + value if key in out else value
    return out


def _max(a: ResourceList, b: ResourceList) -> ResourceList:
    out = dict(a)
    for key, value in b.items():
        if key not in out or out[key] < value:
            out[key] = value
    return out


def _container_resources(container: JsonObj) -> tuple[ResourceList, ResourceList]:
    resources = _dict(container.get("resources"))
    limits = _quantities(resources.get("limits"))
    requests = _quantities(resources.get("requests"))
    for key, value in limits.items():
        requests.setdefault(key, value)  # SetDefaults_Pod: a limit without a request is the request
    return requests, limits


def _is_extended(name: str) -> bool:
    """``helper.IsExtendedResourceName``: a qualified name outside ``kubernetes.io``, not a quota prefix."""
    return "/" in name and not name.startswith(_NATIVE_PREFIXES)


def _pod_totals(pod: JsonObj) -> tuple[ResourceList, ResourceList]:
    spec = _dict(pod.get("spec"))
    requests: ResourceList = {}
    limits: ResourceList = {}
    for container in _containers(spec, "containers"):
        req, lim = _container_resources(container)
        requests, limits = _add(requests, req), _add(limits, lim)
    for container in _containers(spec, "initContainers"):
        req, lim = _container_resources(container)
        if container.get("restartPolicy") == "Always":  # sidecars run alongside the app containers
            requests, limits = _add(requests, req), _add(limits, lim)
        else:
            requests, limits = _max(requests, req), _max(limits, lim)
    overhead = _quantities(spec.get("overhead"))
    if overhead:
        requests = _add(requests, overhead)
        limits = _add(limits, {k: v for k, v in overhead.items() if k in limits})
    return requests, limits


def _containers(spec: JsonObj, key: str) -> Iterable[JsonObj]:
    items = spec.get(key)
    return [c for c in items if isinstance(c, dict)] if isinstance(items, list) else []


def counts_compute(pod: JsonObj) -> bool:
    """``QuotaV1Pod``: terminal pods and pods being deleted no longer use compute quota."""
    phase = _dict(pod.get("status")).get("phase")
    if phase in ("Succeeded", "Failed"):
        return False
    return not (pod.get("metadata") or {}).get("deletionTimestamp")


def pod_usage(pod: JsonObj) -> ResourceList:
    """What one pod charges against quota (``podEvaluator.Usage``)."""
    usage: ResourceList = {"count/pods": Quantity.parse("1")}
    if not counts_compute(pod):
        return usage
    requests, limits = _pod_totals(pod)
    usage["pods"] = Quantity.parse("1")
    for name in _COMPUTE:
        if name in requests:
            usage[name] = requests[name]
            usage[f"requests.{name}"] = requests[name]
        if name in limits:
            usage[f"limits.{name}"] = limits[name]
    for name, value in requests.items():
        if name.startswith("hugepages-"):
            usage[name] = value
            usage[f"requests.{name}"] = value
        elif _is_extended(name):
            usage[f"requests.{name}"] = value
    return usage


def _missing_requirements(pod: JsonObj, tracked: set[str]) -> str:
    """``podEvaluator.Constraints``: the ``must specify …`` text, or ``""``."""
    required = tracked & _VALIDATION_SET
    if not required:
        return ""
    missing: dict[str, set[str]] = {}
    spec = _dict(pod.get("spec"))
    for container in [*_containers(spec, "containers"), *_containers(spec, "initContainers")]:
        requests, limits = _container_resources(container)
        has: set[str] = set()
        for name in ("cpu", "memory"):
            if name in requests:
                has |= {name, f"requests.{name}"}
            if name in limits:
                has.add(f"limits.{name}")
        for resource in required - has:
            missing.setdefault(resource, set()).add(str(container.get("name", "")))
    if not missing:
        return ""
    parts = [f"{r} for: {','.join(sorted(missing[r]))}" for r in sorted(missing)]
    return "must specify " + "; ".join(parts)


def _applies(quota: JsonObj) -> bool:
    spec = _dict(quota.get("spec"))
    return not spec.get("scopes") and not spec.get("scopeSelector")


def _pretty(resources: ResourceList) -> str:
    return ",".join(f"{k}={resources[k]}" for k in sorted(resources))


def namespace_usage(pods: Iterable[JsonObj], keys: Iterable[str]) -> ResourceList:
    """The live usage of ``keys`` by ``pods`` (absent resources count as zero)."""
    wanted = list(keys)
    used: ResourceList = {k: Quantity.zero() for k in wanted}
    for pod in pods:
        usage = pod_usage(pod)
        for key in wanted:
            if key in usage:
                used[key] = used[key] + usage[key]
    return used


def admit(pod: JsonObj, quotas: Iterable[JsonObj], pods: list[JsonObj]) -> None:
    """Refuse ``pod`` (being created) if any quota in its namespace would be exceeded.

    ``pods`` are the namespace's existing pods. Raises :class:`QuotaExceeded`.
    """
    requested_all = pod_usage(pod)
    for quota in sorted(quotas, key=lambda q: str((q.get("metadata") or {}).get("name", ""))):
        if not _applies(quota):
            continue
        name = str((quota.get("metadata") or {}).get("name", ""))
        hard = _quantities((quota.get("spec") or {}).get("hard"))
        if not hard:
            continue
        missing = _missing_requirements(pod, set(hard))
        if missing:
            raise QuotaExceeded(f"failed quota: {name}: {missing}")
        requested = {k: v for k, v in requested_all.items() if k in hard}
        if not requested:
            continue
        used = namespace_usage(pods, hard)
        exceeded = sorted(k for k, v in requested.items() if hard[k] < used[k] + v)
        if exceeded:
            raise QuotaExceeded(
                f"exceeded quota: {name}, requested: {_pretty({k: requested[k] for k in exceeded})}, "
                f"used: {_pretty({k: used[k] for k in exceeded})}, limited: {_pretty({k: hard[k] for k in exceeded})}"
            )


def status_for(quota: JsonObj, pods: Iterable[JsonObj]) -> JsonObj:
    """The ``status`` the quota controller would write: ``hard`` as in spec, ``used`` counted live."""
    raw_hard = _dict(quota.get("spec")).get("hard")
    hard = _quantities(raw_hard)
    used = namespace_usage(pods, hard) if _applies(quota) else {}
    return {
        "hard": {k: str(v) for k, v in sorted(hard.items())},
        "used": {k: str(v) for k, v in sorted(used.items())},
    }
