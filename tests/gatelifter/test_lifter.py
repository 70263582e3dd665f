"""Gate-lifter behaviour against the fake API server over HTTP (issue: gate-lifter)."""

from __future__ import annotations

import copy
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes.client.exceptions import ApiException

from grove_gitops.agent.kube import Kube
from tests.fakeserver import FakeApiServer
from tests.gatelifter.support import apply, gated, path_of, rendered_objects, running_lifter
from tests.support import PROJECT, write_source

KAI_CFG = """
apiVersion: operator.config.grove.io/v1alpha1
kind: OperatorConfiguration
scheduler:
  defaultProfileName: kai-scheduler
  profiles: [{name: kai-scheduler}, {name: default-scheduler}]
"""
PCS = """
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata: {name: inf, namespace: default, labels: {kai.scheduler/queue: team-a}}
spec:
  replicas: 1
  template:
    cliques:
    - {name: router, spec: {roleName: router, replicas: 2, minAvailable: 1, podSpec: {containers: [{name: c, image: x}]}}}
    - {name: leader, spec: {roleName: leader, replicas: 1, podSpec: {containers: [{name: c, image: x}]}}}
    - {name: worker, spec: {roleName: worker, replicas: 2, podSpec: {containers: [{name: c, image: x}]}}}
    podCliqueScalingGroups:
    - {name: grp, cliqueNames: [leader, worker], replicas: 3, minAvailable: 1}
"""


def kai_objects(tmp_path: Path) -> list[dict[str, Any]]:
    return rendered_objects(write_source(tmp_path / "src", {"cfg.yaml": KAI_CFG, "pcs.yaml": PCS}))


def successful_pod_patches(server: FakeApiServer) -> Counter[str]:
    return Counter(r.name for r in server.requests if r.verb == "patch" and r.resource == "pods" and r.status < 300)


def pods_of_gang(objs: list[dict[str, Any]], gang: str) -> list[str]:
    return sorted(
        o["metadata"]["name"] for o in objs if o["kind"] == "Pod" and o["metadata"]["labels"]["grove.io/podgang"] == gang
    )


def test_end_to_end_release_initialized_and_argo_reapply(tmp_path: Path) -> None:
    objs = rendered_objects(PROJECT / "examples")
    with FakeApiServer() as server:
        kube = Kube(server.api_client())
        apply(kube, objs)
        with running_lifter(server):
            assert server.wait_for(lambda: len(gated(server)) == 4, timeout=10)
            for pod in server.store.list_objects("pods", "inference"):
                if not pod["spec"].get("schedulingGates"):
                    server.schedule_pod("inference", pod["metadata"]["name"])
            assert server.wait_for(lambda: gated(server) == [], timeout=10)
            for name in ("llama-disagg-0", "llama-disagg-0-prefill-0"):
                assert server.wait_for(
                    lambda n=name: any(  # type: ignore[misc]
                        c.get("type") == "Initialized" and c.get("status") == "True"
                        for c in ((server.get_object("podgangs.scheduler.grove.io", "inference", n) or {}).get("status") or {}).get("conditions", [])
                    ),
                    timeout=5,
                ), name
        assert max(successful_pod_patches(server).values()) == 1

        # Argo CD re-applies the Git copy with the shipped ignoreDifferences + RespectIgnoreDifferences:
        # the ignored paths are taken from the live object, so the gate is not sent again.
        app = yaml.safe_load((PROJECT / "overlays" / "argocd" / "application.yaml").read_text())
        pointers = [p for rule in app["spec"]["ignoreDifferences"] if rule.get("kind") == "Pod" for p in rule["jsonPointers"]]
        assert "/spec/schedulingGates" in pointers
        for obj in (o for o in objs if o["kind"] == "Pod"):
            live = server.get_object("pods", "inference", obj["metadata"]["name"])
            assert live is not None
            desired = copy.deepcopy(obj)
            desired["spec"].pop("schedulingGates", None)
            if live["spec"].get("schedulingGates"):
                desired["spec"]["schedulingGates"] = live["spec"]["schedulingGates"]
            patch = {"metadata": {"labels": desired["metadata"]["labels"]}, "spec": desired["spec"]}
            kube.core.patch_namespaced_pod(obj["metadata"]["name"], "inference", patch)  # accepted: nothing to re-add
        # Without ignoreDifferences the apply would try to re-add the gate, which the API server forbids.
        pod = next(o for o in objs if o["kind"] == "Pod")
        with pytest.raises(ApiException) as info:
            kube.core.patch_namespaced_pod(pod["metadata"]["name"], "inference", {"spec": {"schedulingGates": pod["spec"]["schedulingGates"]}})
        assert info.value.status == 422 and "only deletion is allowed" in str(info.value.body)
        assert gated(server) == []


def test_missing_pod_blocks_the_gang_until_it_appears(tmp_path: Path) -> None:
    objs = kai_objects(tmp_path)
    base_pods = pods_of_gang(objs, "inf-0")
    held_back = next(o for o in objs if o["kind"] == "Pod" and o["metadata"]["name"] == base_pods[-1])
    with FakeApiServer() as server:
        kube = Kube(server.api_client())
        apply(kube, [o for o in objs if o is not held_back])
        with running_lifter(server):
            time.sleep(1.5)
            assert set(base_pods[:-1]) <= set(gated(server))  # never part of a gang
            assert not any(r.verb == "patch" and r.resource == "pods" for r in server.requests)
            apply(kube, [held_back])
            appeared = time.monotonic()
            assert server.wait_for(lambda: not set(base_pods) & set(gated(server)), timeout=5)
            assert time.monotonic() - appeared < 1.0


def test_missing_backend_object_blocks_the_gang_until_it_appears(tmp_path: Path) -> None:
    objs = kai_objects(tmp_path)
    podgroup = next(o for o in objs if o["kind"] == "PodGroup" and o["metadata"]["name"] == "inf-0")
    gang = next(o for o in objs if o["kind"] == "PodGang" and o["metadata"]["name"] == "inf-0")
    assert '"kind":"PodGroup"' in gang["metadata"]["annotations"]["gitops.grove.io/gang-objects"]
    base_pods = pods_of_gang(objs, "inf-0")
    with FakeApiServer() as server:
        kube = Kube(server.api_client())
        apply(kube, [o for o in objs if o is not podgroup])
        with running_lifter(server):
            time.sleep(1.5)
            assert set(base_pods) <= set(gated(server))
            apply(kube, [podgroup])
            appeared = time.monotonic()
            assert server.wait_for(lambda: not set(base_pods) & set(gated(server)), timeout=5)
            assert time.monotonic() - appeared < 1.0


def test_scaled_gangs_wait_for_base_gang_scheduled_pods(tmp_path: Path) -> None:
    objs = kai_objects(tmp_path)
    base = pods_of_gang(objs, "inf-0")
    scaled = pods_of_gang(objs, "inf-0-grp-0") + pods_of_gang(objs, "inf-0-grp-1")
    assert len(base) == 5 and len(scaled) == 6
    with FakeApiServer() as server:
        apply(Kube(server.api_client()), objs)
        with running_lifter(server):
            assert server.wait_for(lambda: sorted(gated(server)) == sorted(scaled), timeout=10)
            # minReplicas: router 1, leader 1, worker 2. Schedule all but one worker: not enough.
            routers = [p for p in base if "-router-" in p]
            workers = [p for p in base if "-worker-" in p]
            leaders = [p for p in base if "-leader-" in p]
            for name in routers + leaders + workers[:1]:
                server.schedule_pod("default", name)
            time.sleep(1.0)
            assert sorted(gated(server)) == sorted(scaled)
            server.schedule_pod("default", workers[1])
            assert server.wait_for(lambda: gated(server) == [], timeout=5)


def test_recreated_pod_is_released_again(tmp_path: Path) -> None:
    objs = kai_objects(tmp_path)
    pod = next(o for o in objs if o["kind"] == "Pod" and o["metadata"]["labels"]["grove.io/podgang"] == "inf-0")
    with FakeApiServer() as server:
        kube = Kube(server.api_client())
        apply(kube, objs)
        with running_lifter(server):
            assert server.wait_for(lambda: pod["metadata"]["name"] not in gated(server), timeout=10)
            kube.core.delete_namespaced_pod(pod["metadata"]["name"], "default")
            apply(kube, [pod])  # self-heal re-creates it from Git, gated again
            assert server.wait_for(lambda: pod["metadata"]["name"] not in gated(server), timeout=5)
        assert successful_pod_patches(server)[pod["metadata"]["name"]] == 2


def test_faults_409_500_dropped_watches_and_410(tmp_path: Path) -> None:
    objs = kai_objects(tmp_path)
    base = pods_of_gang(objs, "inf-0")
    with FakeApiServer() as server:
        kube = Kube(server.api_client())
        server.faults.add(verb="patch", resource="pods", status=409, times=3)
        server.faults.add(verb="patch", resource="pods", status=500, times=3)
        server.faults.add(verb="list", resource="pods", status=500, times=2)
        with running_lifter(server, backoff_base=0.01) as lifter:
            server.drop_watches()
            apply(kube, objs)
            server.compact()
            server.drop_watches()
            assert server.wait_for(lambda: not set(base) & set(gated(server)), timeout=10)
            for name in base:
                server.schedule_pod("default", name)
            assert server.wait_for(lambda: gated(server) == [], timeout=10)
        patched = successful_pod_patches(server)
        assert set(patched) == {o["metadata"]["name"] for o in objs if o["kind"] == "Pod"}
        assert max(patched.values()) == 1  # no pod patched twice
        assert lifter.registry.get("grove_gitops_lifter_api_errors_total", code="409") == 3.0
        assert lifter.registry.get("grove_gitops_lifter_api_errors_total", code="500") is not None


def test_apply_helper_uses_discovery(tmp_path: Path) -> None:
    with FakeApiServer() as server:
        kube = Kube(server.api_client())
        pg = {"apiVersion": "scheduling.run.ai/v2alpha2", "kind": "PodGroup", "metadata": {"name": "x", "namespace": "default"}}
        assert path_of(kube, pg) == "/apis/scheduling.run.ai/v2alpha2/namespaces/default/podgroups"
        assert kube.plural("example.com/v1", "Nope") is None


def test_the_initialized_writes_of_gangs_released_together_run_side_by_side(tmp_path: Path) -> None:
    """Issue 35.3: a pass that releases many whole gangs wrote their ``Initialized`` one after
    the other from the loop thread, so at 10,000 pods 500 gangs' ends queued behind each other
    (and the next pass's releases behind them). Each is now written on the pool as soon as its
    own pods are released: with every status write held a moment, two are seen at once. Each
    gang is still marked once, and only after all of its pods were released."""
    import threading

    from tests.support import pcs_yaml

    files = {f"{n}.yaml": pcs_yaml(n).replace("namespace: ml", "namespace: default") for n in ("a", "b", "c", "d", "e")}
    objs = rendered_objects(write_source(tmp_path / "src", files))
    gangs = [o for o in objs if o["kind"] == "PodGang"]
    assert len(gangs) == 5
    with FakeApiServer() as server:
        kube = Kube(server.api_client())
        with running_lifter(server) as lifter:
            apply(kube, [o for o in objs if o["kind"] != "PodGang"])
            pods = sum(1 for o in objs if o["kind"] == "Pod")
            assert server.wait_for(lambda: len(lifter.pods) == pods, timeout=20)
            writing, most, order = [0], [0], []
            lock = threading.Lock()
            real = lifter.executor.set_condition
            released = set(lifter.pods)

            def held(action: Any) -> bool:
                with lock:
                    writing[0] += 1
                    most[0] = max(most[0], writing[0])
                    gated_now = set(gated(server)) & {k[1] for k in released}
                    order.append((action.gang[1], sorted(gated_now)))
                try:
                    time.sleep(0.3)  # long enough for the next gang's end to begin meanwhile
                    return real(action)
                finally:
                    with lock:
                        writing[0] -= 1

            lifter.executor.set_condition = held  # type: ignore[method-assign]
            apply(kube, gangs)
            assert server.wait_for(lambda: gated(server) == [] and len(order) == 5, timeout=30), order
            assert most[0] >= 2, order
            assert sorted(name for name, _ in order) == sorted(g["metadata"]["name"] for g in gangs)
            for name, still_gated in order:  # its own pods were released before its mark
                assert not [p for p in still_gated if p.startswith(name.rsplit("-", 1)[0] + "-")], (name, still_gated)
