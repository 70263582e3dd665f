"""Status writes of a scale-out (issue 35.2): one per new gang, and one per scale target and workload.

A 2 -> 26 scale-out (24 new gangs of 4 pods, KAI backend) in the day-2 world (fake API server,
GitOps applier, a kubelet making each released pod Ready after a short delay), the agent in
process. Every write is counted on the API server by verb and resource, minus the simulators'
own. Each new PodGang gets one status write (``Initialized``, as Grove writes it: the day-2 loop
releases an initialized gang pod by pod); the scale target's and the workload's status are
written only when they changed, and a scale's progress is held back until it settles (or has
waited ``STATUS_INTERVAL``): one write each per scale-out, not one at its start (the new
``observedGeneration``, the workload's ``Ready`` turning False while pods start) and one at its
end. Before issue 35 the target's status was written on every pass whose counts moved (18-26
times for 48 gangs in ``bench.autoscale_bench``), then 2-3 times.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from bench import autoscale_bench
from grove_gitops.agent.scaling.scaler import STATUS_INTERVAL
from tests.day2.harness import Day2Env

NS = "status-writes"
PCS = "scaled"
GROUP = "model"
TARGET = f"{PCS}-0-{GROUP}"
LOW, HIGH = 2, 26
STATUS = ("podgangs/status", "podcliquescalinggroups/status", "podcliquesets/status")


def _source(root: Path) -> Path:
    return autoscale_bench.source(root, LOW, HIGH, namespace=NS, name=PCS)


def _status_writes(env: Day2Env) -> dict[str, int]:
    return {resource: env.agent_requests("patch", resource) for resource in STATUS}


def test_a_scale_out_writes_at_most_one_status_per_new_gang_beside_a_bounded_few(
        day2: Callable[..., Day2Env], tmp_path: Path) -> None:
    env = day2(source=_source(tmp_path / "source"), namespace=NS, ready_delay=0.2, sync_interval=1.0,
               bystander=False)
    env.primary = PCS
    env.set_counts({(0, GROUP): LOW})

    def target() -> dict[str, Any] | None:
        return env.rest.get("gitops.grove.io/v1alpha1", "PodCliqueScalingGroup", NS, TARGET)

    env.wait_until(lambda: target() is not None and env.converged(), timeout=60, what="the first deploy",
                   interval=0.1)
    def workload() -> dict[str, Any]:
        return env.rest.get("gitops.grove.io/v1alpha1", "PodCliqueSet", NS, PCS) or {}

    def ready(obj: dict[str, Any]) -> bool:
        return any(c.get("type") == "Ready" and c.get("status") == "True"
                   for c in (obj.get("status") or {}).get("conditions") or [])

    # The first deploy's status settles (its progress is held back too) before the count starts:
    # the target's and then the workload's, written by the same pass.
    env.wait_until(lambda: ((target() or {}).get("status") or {}).get("readyReplicas") == LOW, timeout=30,
                   what="the target's status at the floor", interval=0.1)
    env.wait_until(lambda: ready(workload()), timeout=30, what="the workload's status Ready", interval=0.1)
    before = _status_writes(env)
    creates_before = env.agent_requests("create", "pods")
    env.set_counts({(0, GROUP): HIGH})
    started = time.monotonic()
    env.rest.request("PATCH", f"/apis/gitops.grove.io/v1alpha1/namespaces/{NS}/podcliquescalinggroups/{TARGET}/scale",
                     {"spec": {"replicas": HIGH}}, content_type="application/merge-patch+json")
    env.wait_until(lambda: env.converged(), timeout=120, what=f"count {HIGH} Ready", interval=0.2)
    env.wait_until(lambda: ((target() or {}).get("status") or {}).get("readyReplicas") == HIGH, timeout=30,
                   what="the target's status at the new count", interval=0.1)
    time.sleep(1.0)  # any trailing status write lands
    elapsed = time.monotonic() - started
    after = _status_writes(env)
    writes = {resource: after[resource] - before[resource] for resource in STATUS}
    gangs = HIGH - LOW
    # Each new pod is created once: a pass that ran before the watch brought the pods of the
    # last one created them again (a 409 each, 21-63 of 192 in bench.autoscale_bench).
    assert env.agent_requests("create", "pods") - creates_before == gangs * 4

    assert writes["podgangs/status"] <= gangs, writes  # Initialized, once per new gang
    # Per object: the settled end, and a refresh only for a change held back a whole interval
    # (none when the scale-out takes less than one).
    bound = 1 + math.floor(elapsed / STATUS_INTERVAL)
    assert 1 <= writes["podcliquescalinggroups/status"] <= bound, (writes, elapsed)
    assert writes["podcliquesets/status"] <= bound, (writes, elapsed)
    # What was held back is not lost: both say where the scale-out ended.
    status = (target() or {}).get("status") or {}
    assert status.get("replicas") == status.get("readyReplicas") == HIGH, status
    assert status.get("observedGeneration") == (target() or {}).get("metadata", {}).get("generation"), status
    assert ready(workload()) and (workload().get("status") or {}).get("availableReplicas") == 1, workload()


@pytest.mark.parametrize("unit", ["group", "clique"])
def test_a_scale_out_longer_than_the_status_interval_leaves_the_workload_status_alone(
        day2: Callable[..., Day2Env], tmp_path: Path, unit: str) -> None:
    """Grove's PodCliqueSet replica is available while its standalone cliques have
    ``minAvailable`` pods Ready and each scaling group ``minAvailable`` replicas (spec
    grove-desired-state.md §8): new replicas of a group, or new pods of an autoscaled clique,
    starting above ``minAvailable`` do not make it unavailable. The agent counted every pod of
    every PodGang of the replica, so a scale-out that outlasted ``STATUS_INTERVAL`` (pods Ready
    slowly) wrote the workload ``Ready=False``, ``availableReplicas`` 0, and then back: two
    writes of a status that ends where it started (``bench.autoscale_bench --shape
    slow-ready``: 48 + 2 + 2 for 48 gangs)."""
    low, high = 2, 4
    if unit == "group":
        pcs, target, plural = PCS, TARGET, "podcliquescalinggroups"
        src = autoscale_bench.source(tmp_path / "source", low, high, namespace=NS, name=PCS)
    else:  # the bench's ``clique`` shape: a standalone clique ``router`` of one pod a replica
        shape = dataclasses.replace(autoscale_bench.SHAPES["clique"], low=low, high=high)
        pcs, target, plural = autoscale_bench.PCS, f"{autoscale_bench.PCS}-0-router", "podcliques"
        src = autoscale_bench.shape_source(tmp_path / "source", shape, namespace=NS)
    env = day2(source=src, namespace=NS, ready_delay=STATUS_INTERVAL + 1.5, sync_interval=1.0, bystander=False)
    env.primary = pcs
    env.set_counts({(0, GROUP if unit == "group" else "router"): low})

    def workload() -> dict[str, Any]:
        return env.rest.get("gitops.grove.io/v1alpha1", "PodCliqueSet", NS, pcs) or {}

    def available() -> bool:
        status = workload().get("status") or {}
        return status.get("availableReplicas") == 1 and any(
            c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])

    def target_ready() -> Any:
        kind = "PodCliqueScalingGroup" if unit == "group" else "PodClique"
        return ((env.rest.get("gitops.grove.io/v1alpha1", kind, NS, target) or {}).get("status") or {}).get(
            "readyReplicas")

    env.wait_until(lambda: env.converged() and available(), timeout=60, what="the first deploy", interval=0.1)
    before = _status_writes(env)
    before_clique = env.agent_requests("patch", "podcliques/status")
    env.set_counts({(0, GROUP if unit == "group" else "router"): high})
    started = time.monotonic()
    env.rest.request("PATCH", f"/apis/gitops.grove.io/v1alpha1/namespaces/{NS}/{plural}/{target}/scale",
                     {"spec": {"replicas": high}}, content_type="application/merge-patch+json")
    env.wait_until(lambda: env.converged(), timeout=60, what=f"count {high} Ready", interval=0.2)
    env.wait_until(lambda: target_ready() == high, timeout=30, what="the target's status at the new count",
                   interval=0.1)
    time.sleep(1.0)  # any trailing status write lands
    elapsed = time.monotonic() - started
    after = _status_writes(env)
    writes = {resource: after[resource] - before[resource] for resource in STATUS}
    writes["podcliques/status"] = env.agent_requests("patch", "podcliques/status") - before_clique
    assert elapsed > STATUS_INTERVAL, elapsed  # the scale-out outlasted the hold: progress was due
    assert writes["podcliquesets/status"] == 0, writes
    assert writes["podgangs/status"] <= (high - low if unit == "group" else 0), writes
    assert available(), workload()


def _availability_source(root: Path) -> Path:
    """The bench's workload plus a standalone router of 4 pods, ``minAvailable: 3``."""
    path = _source(root) / "workload.yaml"
    docs = list(yaml.safe_load_all(path.read_text()))
    docs[0]["spec"]["template"]["cliques"].append({"name": "router", "spec": {
        "roleName": "router", "replicas": 4, "minAvailable": 3,
        "podSpec": {"containers": [{"name": "main", "image": "busybox:1.36", "resources": {"requests": {"cpu": "100m"}}}]}}})
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return path.parent


def test_the_workload_is_available_while_each_clique_meets_its_min_available(
        day2: Callable[..., Day2Env], tmp_path: Path) -> None:
    """Grove's availability (spec grove-desired-state.md §8) on the live world: one router pod of
    four not Ready leaves the replica available (``minAvailable: 3``); a second makes it
    unavailable, and Ready again once both are back. Before, the first pod already turned the
    workload ``Ready=False`` with ``availableReplicas`` 0."""
    env = day2(source=_availability_source(tmp_path / "source"), namespace=NS, ready_delay=0.1, sync_interval=1.0,
               bystander=False)
    env.primary = PCS
    env.set_counts({(0, GROUP): LOW})

    def workload() -> dict[str, Any]:
        return env.rest.get("gitops.grove.io/v1alpha1", "PodCliqueSet", NS, PCS) or {}

    def available() -> tuple[int | None, str | None]:
        status = workload().get("status") or {}
        ready = next((c.get("status") for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)
        return status.get("availableReplicas"), ready

    env.wait_until(lambda: env.converged() and available() == (1, "True"), timeout=60, what="the first deploy Ready",
                   interval=0.1)
    routers = sorted(p["metadata"]["name"] for p in env.pods() if p["metadata"]["name"].startswith(f"{PCS}-0-router-"))
    assert len(routers) == 4, routers
    env.kubelet.set_ready(NS, routers[3], False)
    # Held back at most STATUS_INTERVAL, then written: wait past it and the status still says 1.
    time.sleep(STATUS_INTERVAL + 1.5)
    assert available() == (1, "True"), workload().get("status")
    env.kubelet.set_ready(NS, routers[0], False)
    env.wait_until(lambda: available() == (0, "False"), timeout=STATUS_INTERVAL + 30,
                   what="two router pods down: below minAvailable", interval=0.1)
    message = next(c["message"] for c in workload()["status"]["conditions"] if c["type"] == "Ready")
    assert message.startswith("0 of 1 replicas available"), message
    env.kubelet.set_ready(NS, routers[0], True)
    env.kubelet.set_ready(NS, routers[3], True)
    env.wait_until(lambda: available() == (1, "True"), timeout=STATUS_INTERVAL + 30, what="Ready again",
                   interval=0.1)
