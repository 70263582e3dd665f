"""The scale targets end to end: refusals, quota, removal, bad records (fake API server, real agent)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from grove_gitops.expand.scaling import API_VERSION, PCSG_KIND
from tests.agent.scaling_env import ScalingEnv, render_at, scaling_env, wait_until
from tests.agent.test_scaling_property import NS, source

TARGET = "disagg-0-prefill"


def _pods(env: ScalingEnv) -> list[dict[str, Any]]:
    return [p for p in env.server.store.list_objects("pods", NS) if not p["metadata"].get("deletionTimestamp")]


def _gangs(env: ScalingEnv) -> list[str]:
    return sorted(g["metadata"]["name"] for g in env.server.store.list_objects("podgangs.scheduler.grove.io", NS))


def _condition(obj: dict[str, Any] | None, kind: str) -> dict[str, Any]:
    return next((c for c in ((obj or {}).get("status") or {}).get("conditions") or [] if c["type"] == kind), {})


def _started(tmp: Path, *, floor: int = 1, top: int = 4, **agent: Any) -> tuple[Path, Any]:
    src = source(tmp, backend="kai-scheduler", group=True, floor=floor, top=top, pcs_replicas=1)
    manager = scaling_env(tmp / "live", NS, **agent)
    env = manager.__enter__()
    env.apply(render_at(src))
    env.start_agent()
    assert wait_until(lambda: env.target(TARGET) is not None)
    return src, (manager, env)


@pytest.fixture
def world(tmp_path: Path) -> Any:
    src, (manager, env) = _started(tmp_path)
    yield src, env
    manager.__exit__(None, None, None)


def test_scale_writes_outside_the_bounds_are_refused_with_the_rules_message(world: Any) -> None:
    _, env = world
    api = client.CustomObjectsApi(env.server.api_client())
    env.scale(TARGET, 3)
    for replicas, message in [
        (0, "replicas must be greater than or equal to minAvailable"),
        (5, "replicas must be less than or equal to maxReplicas"),
    ]:
        with pytest.raises(ApiException) as info:
            api.patch_namespaced_custom_object_scale(
                "gitops.grove.io", "v1alpha1", NS, "podcliquescalinggroups", TARGET, {"spec": {"replicas": replicas}})
        assert info.value.status == 422 and message in (info.value.body or "")
    target = env.target(TARGET)
    assert target is not None and target["spec"]["replicas"] == 3
    scale = api.get_namespaced_custom_object_scale("gitops.grove.io", "v1alpha1", NS, "podcliquescalinggroups", TARGET)
    assert scale["spec"]["replicas"] == 3
    assert wait_until(lambda: (api.get_namespaced_custom_object_scale(
        "gitops.grove.io", "v1alpha1", NS, "podcliquescalinggroups", TARGET).get("status") or {}).get("selector") ==
        "app.kubernetes.io/managed-by=grove-gitops,app.kubernetes.io/part-of=disagg,"
        "grove.io/podcliquescalinggroup=disagg-0-prefill")


def test_scale_below_the_floor_is_refused_and_names_git(tmp_path: Path) -> None:
    _, (manager, env) = _started(tmp_path, floor=2)
    try:
        with pytest.raises(ApiException) as info:
            env.scale(TARGET, 1)
        assert info.value.status == 422
        assert "minReplicas (the floor rendered in Git)" in (info.value.body or "")
    finally:
        manager.__exit__(None, None, None)


def test_a_quota_that_refuses_a_pod_leaves_no_partial_gang_and_says_so(world: Any) -> None:
    _, env = world
    assert wait_until(lambda: len(_pods(env)) == 5)  # router 2 + one prefill replica (leader + 2 workers)
    # Room for two more pods: the next prefill replica has three.
    env.kube.create({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "gpu", "namespace": NS},
                     "spec": {"hard": {"pods": "7"}}})
    env.scale(TARGET, 2)
    assert wait_until(lambda: _condition(env.target(TARGET), "ScaleBlocked").get("status") == "True")
    blocked = _condition(env.target(TARGET), "ScaleBlocked")
    assert blocked["reason"] == "QuotaExceeded" and "exceeded quota: gpu" in blocked["message"]
    assert wait_until(lambda: len(_pods(env)) == 5)  # the two that fit were deleted again
    assert _gangs(env) == ["disagg-0"]
    events = env.server.store.list_objects("events.events.k8s.io", NS)
    assert any(e.get("reason") == "GangCreationRefused" for e in events)
    # More quota: the gang is created whole.
    quota = env.server.get_object("resourcequotas", NS, "gpu")
    assert quota is not None
    quota["spec"]["hard"]["pods"] = "20"
    env.server.put_object(quota)
    assert wait_until(lambda: len(_pods(env)) == 8 and _gangs(env) == ["disagg-0", "disagg-0-prefill-0"], timeout=90)
    assert wait_until(lambda: _condition(env.target(TARGET), "ScaleBlocked").get("status") == "False")


def test_a_workload_leaving_git_takes_what_the_agent_made_along_pods_first(world: Any) -> None:
    _, env = world
    env.scale(TARGET, 3)
    assert wait_until(lambda: len(_pods(env)) == 11)
    agent_pods = {p["metadata"]["name"] for p in _pods(env) if p["metadata"].get("ownerReferences")}
    assert len(agent_pods) == 6
    env.server.delete_object("podcliquesets.gitops.grove.io", NS, "disagg")
    assert wait_until(lambda: not agent_pods & {p["metadata"]["name"] for p in _pods(env)})
    assert wait_until(lambda: _gangs(env) == ["disagg-0"] and env.target(TARGET) is None)
    assert len(_pods(env)) == 5  # Git's pods are the day-2 loop's (after its grace period), not this loop's


def test_a_record_no_render_writes_is_refused_with_an_event_and_creates_nothing(world: Any) -> None:
    _, env = world
    record = env.server.get_object("podcliquesets.gitops.grove.io", NS, "disagg")
    assert record is not None
    bad = yaml.safe_load(yaml.safe_dump(record))
    bad["metadata"] = {"name": "evil", "namespace": NS, "labels": record["metadata"]["labels"]}
    bad["spec"]["scaleTargets"][0]["name"] = "evil-0-prefill"
    bad["spec"].pop("status", None)
    env.kube.create({**bad, "apiVersion": API_VERSION, "kind": "PodCliqueSet"})  # inputs render "disagg", not "evil"
    assert wait_until(lambda: any(e.get("reason") == "InvalidWorkload"
                                  for e in env.server.store.list_objects("events.events.k8s.io", NS)))
    assert env.target("evil-0-prefill", PCSG_KIND) is None
    evil = env.server.get_object("podcliquesets.gitops.grove.io", NS, "evil")
    assert wait_until(lambda: _condition(env.server.get_object("podcliquesets.gitops.grove.io", NS, "evil"),
                                         "Ready").get("status") == "False")
    assert evil is not None
