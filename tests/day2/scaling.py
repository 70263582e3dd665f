"""Autoscaling in the day-2 scenarios: ``/scale`` writes, the scale targets, the expected world.

A scaler (HPA, KEDA, ``kubectl scale``, a planner) writes the count of a ``gitops.grove.io``
scale target through its ``/scale`` subresource; :func:`scale` does it with the official
client (``CustomObjectsApi.patch_namespaced_custom_object_scale``), as such a tool would.
The agent then materialises the replicas above the floor Git holds; :func:`matches` says
whether the namespace holds exactly the render at the counts (every pod Ready and released,
and exactly the PodGangs that render lists), which the scenarios wait for after each write.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, cast

from kubernetes.client import CustomObjectsApi
from kubernetes.client.exceptions import ApiException

from grove_gitops.expand.scaling import API_VERSION, PCSG_KIND
from tests.day2.harness import Day2Env
from tests.day2.rest import Raw

GROUP = "gitops.grove.io"
VERSION = API_VERSION.split("/", 1)[1]
PLURALS = {PCSG_KIND: "podcliquescalinggroups", "PodClique": "podcliques"}
#: The example's autoscaled scaling group and its scale target (PodCliqueSet replica 0).
PREFILL = "prefill"
PREFILL_TARGET = "llama-disagg-0-prefill"
PODS_PER_PREFILL = 4  # pleader 1 + pworker 3


def prefill_floor(floor: int, replicas: int | None = None) -> Callable[[Raw], None]:
    """An edit of the example: the prefill group's ``scaleConfig.minReplicas`` (the floor Git
    renders) becomes ``floor``, and its template replicas (Grove's start value) ``replicas``
    (default: the floor)."""

    def change(pcs: Raw) -> None:
        (group,) = [g for g in pcs["spec"]["template"]["podCliqueScalingGroups"] if g["name"] == PREFILL]
        group["scaleConfig"]["minReplicas"] = floor
        group["replicas"] = floor if replicas is None else replicas

    return change


def both(*changes: Callable[[Raw], None]) -> Callable[[Raw], None]:
    def change(pcs: Raw) -> None:
        for one in changes:
            one(pcs)

    return change


def counts(n: int) -> dict[tuple[int, str], int]:
    """The primary's prefill count of PodCliqueSet replica 0."""
    return {(0, PREFILL): n}


def custom(env: Day2Env) -> CustomObjectsApi:
    return CustomObjectsApi(env.server.api_client())


def scale(env: Day2Env, n: int, name: str = PREFILL_TARGET, kind: str = PCSG_KIND,
          api: CustomObjectsApi | None = None, *, accepted: bool = True) -> Raw:
    """Write the count ``n`` through ``/scale`` with the official client (a merge patch of
    ``spec.replicas``, as ``kubectl scale`` and the HPA write it). The scenario's expected
    world moves to ``n`` first (:meth:`Day2Env.set_counts`) when ``name`` is the primary's
    prefill target, unless the write is expected to be refused (``accepted=False``)."""
    if name == PREFILL_TARGET and accepted:
        env.set_counts(counts(n))
    answer = (api or custom(env)).patch_namespaced_custom_object_scale(
        GROUP, VERSION, env.namespace, PLURALS[kind], name, {"spec": {"replicas": n}})
    return cast(Raw, answer if isinstance(answer, dict) else answer.to_dict())


def refusal(exc: ApiException) -> str:
    """The message of an API error's Status body."""
    try:
        return str(json.loads(exc.body or "{}").get("message", ""))
    except ValueError:
        return str(exc.body)


def target(env: Day2Env, name: str = PREFILL_TARGET, kind: str = PCSG_KIND) -> Raw | None:
    """The live scale target, or ``None``."""
    try:
        return cast(Raw, custom(env).get_namespaced_custom_object(GROUP, VERSION, env.namespace, PLURALS[kind], name))
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def desired_count(env: Day2Env, name: str = PREFILL_TARGET, kind: str = PCSG_KIND) -> int | None:
    live = target(env, name, kind)
    return None if live is None else int(live["spec"]["replicas"])


def condition(obj: Raw | None, kind: str) -> Raw:
    for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind:
            return cast(Raw, cond)
    return {}


def gangs(env: Day2Env, pcs: str | None = None) -> set[str]:
    """Names of the namespace's PodGangs (of PodCliqueSet ``pcs`` when given) not being deleted."""
    listed = env.rest.request("GET", f"/apis/scheduler.grove.io/v1alpha1/namespaces/{env.namespace}/podgangs")
    return {
        str(g["metadata"]["name"]) for g in listed.get("items") or []
        if not g["metadata"].get("deletionTimestamp")
        and (pcs is None or (g["metadata"].get("labels") or {}).get("app.kubernetes.io/part-of") == pcs)
    }


def expected_gangs(env: Day2Env) -> set[str]:
    """The primary's PodGangs at the live counts (Git's plus the agent's)."""
    return {str(o["metadata"]["name"]) for o in env.objects_at(env.counts) if o["kind"] == "PodGang"}


def matches(env: Day2Env) -> bool:
    """The namespace holds exactly the pods of Git plus the render at the counts, each Ready
    and released, and the primary exactly the PodGangs of that render."""
    return env.converged() and gangs(env, env.primary) == expected_gangs(env)


def wait_matches(env: Day2Env, what: str, timeout: float = 40.0) -> None:
    expected = expected_gangs(env)

    def done() -> bool:
        return env.converged() and gangs(env, env.primary) == expected

    try:
        env.wait_until(done, timeout=timeout, what=what, interval=0.05)
    except AssertionError as exc:
        have = sorted(v.name for v in env.views(env.primary))
        want = sorted(name for slot, name in env.desired_pods().items())
        raise AssertionError(f"{exc}\nmissing pods {sorted(set(want) - set(have))}, extra pods "
                             f"{sorted(set(have) - set(want))}; gangs {sorted(gangs(env, env.primary))} "
                             f"expected {sorted(expected)}\n{env.observer.now().describe()}") from None


def events(env: Day2Env, reason: str, involved: str | None = None) -> list[Raw]:
    """The namespace's Events of ``reason`` (about object ``involved`` when given), from both
    Event APIs (a real server shows each Event in both; the fake keeps them apart), each with
    ``regarding`` (``involvedObject`` of a core/v1 Event)."""
    out: list[Raw] = []
    for path, about in ((f"/apis/events.k8s.io/v1/namespaces/{env.namespace}/events", "regarding"),
                        (f"/api/v1/namespaces/{env.namespace}/events", "involvedObject")):
        for e in env.rest.request("GET", path).get("items") or []:
            regarding = e.get(about) or {}
            if e.get("reason") == reason and (involved is None or regarding.get("name") == involved):
                out.append({**e, "regarding": regarding})
    return out


def replica_of(name: str) -> int:
    """The prefill replica index of a pod or PodGang name ``llama-disagg-0-prefill-<i>...``."""
    rest = name.split(f"{PREFILL_TARGET}-", 1)[1]
    return int(rest.split("-", 1)[0])


def pod_names(env: Day2Env) -> dict[str, Any]:
    return {v.name: v for v in env.views(env.primary)}
