"""Cluster states the agent did not make: each gets a logged warning and no deletion (issue 13)."""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Callable

import pytest

from tests.day2.harness import Day2Env

NS = "inference"


def _copy_pod(env: Day2Env, hostname: str, name: str) -> dict[str, object]:
    source = next(p for p in env.pods() if p["spec"].get("hostname") == hostname)
    pod = copy.deepcopy(source)
    pod["metadata"] = {"name": name, "namespace": NS, "labels": dict(source["metadata"]["labels"])}
    pod["spec"].pop("schedulingGates", None)
    pod.pop("status", None)
    return pod


def _names(env: Day2Env) -> set[str]:
    return {v.name for v in env.views()}


def test_pod_without_hostname_is_left_alone(day2: Callable[..., Day2Env], caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="grove_gitops.agent")
    env = day2()
    env.wait_until(env.converged, timeout=10, what="the first deploy")
    pod = _copy_pod(env, "llama-disagg-0-router-0", "llama-disagg-0-router-x-abcdefgh")
    pod["spec"].pop("hostname")  # type: ignore[attr-defined]
    env.server.put_object({"apiVersion": "v1", "kind": "Pod", **pod})
    time.sleep(2.5)  # more than the grace period (1 s in the harness) and several resyncs
    assert "llama-disagg-0-router-x-abcdefgh" in _names(env)
    assert any("has no spec.hostname" in r.getMessage() for r in caplog.records)
    env.assert_invariants()


def test_slot_with_two_released_old_pods_deletes_neither(
    day2: Callable[..., Day2Env], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="grove_gitops.agent")
    env = day2()
    env.wait_until(env.converged, timeout=10, what="the first deploy")
    old = env.desired_pods()
    # With the agent stopped: the bump makes the running pods old, then someone adds a second
    # released pod to router-0's slot.
    env.stop_agent()
    env.bump_image(cliques=("router",))
    new = env.desired_pods()
    env.wait_until(lambda: set(new.values()) <= _names(env), what="the new pods applied")
    twin = _copy_pod(env, "llama-disagg-0-router-0", "llama-disagg-0-router-0-twin0000")
    env.server.put_object({"apiVersion": "v1", "kind": "Pod", **twin})
    env.start_agent()
    slot = (NS, "llama-disagg-0-router-0")
    # The other router slot rolls; the ambiguous one keeps both old pods, and its new pod stays gated.
    other = (NS, "llama-disagg-0-router-1")
    env.wait_until(lambda: any(v.name == new[other] and v.available for v in env.views()), timeout=20,
                   what="router-1 replaced")
    time.sleep(2.0)
    names = _names(env)
    assert {old[slot], "llama-disagg-0-router-0-twin0000"} <= names
    views = {v.name: v for v in env.views()}
    assert views[new[slot]].gated
    assert any("released old pods" in r.getMessage() for r in caplog.records)
    env.assert_invariants()


def test_podgang_listing_a_pod_of_another_podcliqueset(
    day2: Callable[..., Day2Env], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="grove_gitops.agent")
    env = day2()
    env.wait_until(env.converged, timeout=10, what="the first deploy")
    victim = env.desired_pods()[(NS, "llama-disagg-0-router-0")]
    intruder = copy.deepcopy(env.podgang("llama-disagg-0"))
    assert intruder is not None
    intruder["metadata"] = {
        "name": "intruder-0",
        "namespace": NS,
        "labels": {"app.kubernetes.io/managed-by": "grove-gitops", "app.kubernetes.io/part-of": "intruder"},
    }
    intruder["spec"]["podgroups"] = [{"name": "intruder-0-x", "minReplicas": 1, "podReferences": [{"name": victim, "namespace": NS}]}]
    intruder.pop("status", None)
    env.server.put_object(intruder)
    time.sleep(2.0)
    assert victim in _names(env)
    assert any("which belongs to PodCliqueSet 'llama-disagg'" in r.getMessage() for r in caplog.records)
    assert env.converged()
    env.assert_invariants()
