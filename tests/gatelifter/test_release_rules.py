"""Adversarial release rules of the gate-lifter (issue 9, section 7), over HTTP against the fake API server.

Each test builds a situation that released pods (or stopped every release) before the fix.
"""

from __future__ import annotations

import copy
import logging
import time
from pathlib import Path
from typing import Any

import pytest

from grove_gitops.agent.kube import Kube
from grove_gitops.agent.loop import Agent, AgentConfig
from grove_gitops.metrics import Registry
from tests.fakeserver import FakeApiServer
from tests.gatelifter.support import apply, gated, path_of, running_lifter
from tests.gatelifter.test_lifter import kai_objects, pods_of_gang, successful_pod_patches

Obj = dict[str, Any]
GANG_OBJECTS = "gitops.grove.io/gang-objects"


def find(objs: list[Obj], kind: str, name: str) -> Obj:
    return next(o for o in objs if o["kind"] == kind and o["metadata"]["name"] == name)


def hand_made_gang(objs: list[Obj], name: str, refs: list[tuple[str, str]], annotation: str | None = None) -> Obj:
    """A PodGang like the rendered inf-0, renamed, referencing ``refs`` (namespace, pod) in one podgroup."""
    gang = copy.deepcopy(find(objs, "PodGang", "inf-0"))
    gang["metadata"]["name"] = name
    gang["metadata"].get("annotations", {}).pop(GANG_OBJECTS, None)
    # Written by hand: no pod binding (its pods are copies bound to inf-0's PodGroup, binding.py).
    gang["metadata"].get("annotations", {}).pop("gitops.grove.io/pod-binding", None)
    if annotation is not None:
        gang["metadata"].setdefault("annotations", {})[GANG_OBJECTS] = annotation
    group = copy.deepcopy(gang["spec"]["podgroups"][0])
    group["podReferences"] = [{"namespace": ns, "name": pod} for ns, pod in refs]
    group["minReplicas"] = len(refs)
    gang["spec"]["podgroups"] = [group]
    return gang


def hand_made_pod(objs: list[Obj], name: str, gang: str, gated_: bool = True) -> Obj:
    pod = copy.deepcopy(next(o for o in objs if o["kind"] == "Pod"))
    pod["metadata"]["name"] = name
    pod["metadata"]["labels"]["grove.io/podgang"] = gang
    pod["metadata"]["labels"].pop("grove.io/base-podgang", None)
    if not gated_:
        pod["spec"].pop("schedulingGates", None)
    return pod


def events_about(server: FakeApiServer, name: str) -> list[Obj]:
    return [e for e in server.store.list_objects("events.events.k8s.io", "default") if e["regarding"]["name"] == name]


def test_malformed_podgangs_get_one_event_back_off_and_block_nobody(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    objs = kai_objects(tmp_path)
    base = pods_of_gang(objs, "inf-0")
    # Both sort before inf-0; before the fix every evaluation raised and nothing after them was released.
    bad = [
        hand_made_gang(objs, "aaa-five", [("default", "x-0")], annotation="5"),
        hand_made_gang(objs, "aab-nameless", [("default", "y-0")], annotation='[{"apiVersion": "v1", "kind": "ConfigMap"}]'),
    ]
    pods = [hand_made_pod(objs, "x-0", "aaa-five"), hand_made_pod(objs, "y-0", "aab-nameless")]
    caplog.set_level(logging.WARNING, logger="grove_gitops.agent")
    with FakeApiServer() as server:
        apply(Kube(server.api_client()), bad + pods + objs)
        with running_lifter(server) as lifter:
            assert server.wait_for(lambda: not set(base) & set(gated(server)), timeout=10)
            time.sleep(2.5)
            assert {"x-0", "y-0"} <= set(gated(server))
            for gang in bad:
                assert len(events_about(server, gang["metadata"]["name"])) == 1
            evaluations = lifter.registry.get("grove_gitops_lifter_malformed_podgangs_total")
            assert evaluations is not None and evaluations <= 8  # backoff 1 s, 2 s, ...: not thousands
        warnings = [r.getMessage() for r in caplog.records if "cannot be evaluated" in r.getMessage()]
        assert len(warnings) == 2 and not any(r.exc_info for r in caplog.records)
        assert any("aaa-five" in w and "expected a list" in w for w in warnings)
        assert any("aab-nameless" in w and "needs a name" in w for w in warnings)


def test_fixed_podgang_is_read_again_at_once(tmp_path: Path) -> None:
    objs = kai_objects(tmp_path)
    gang = hand_made_gang(objs, "aaa-five", [("default", "x-0")], annotation="5")
    with FakeApiServer() as server:
        kube = Kube(server.api_client())
        apply(kube, [gang, hand_made_pod(objs, "x-0", "aaa-five")])
        with running_lifter(server):
            assert server.wait_for(lambda: len(events_about(server, "aaa-five")) == 1, timeout=5)
            time.sleep(1.2)  # now in a longer backoff
            patch = {"metadata": {"annotations": {GANG_OBJECTS: "[]"}}}
            kube.custom.patch_namespaced_custom_object("scheduler.grove.io", "v1alpha1", "default", "podgangs", "aaa-five", patch)
            fixed = time.monotonic()
            assert server.wait_for(lambda: gated(server) == [], timeout=5)
            assert time.monotonic() - fixed < 1.0


def test_deleted_backend_object_is_not_remembered_as_present(tmp_path: Path) -> None:
    objs = kai_objects(tmp_path)
    podgroup = find(objs, "PodGroup", "inf-0")
    gang = find(objs, "PodGang", "inf-0")
    base = [o for o in objs if o["kind"] == "Pod" and o["metadata"]["labels"]["grove.io/podgang"] == "inf-0"]
    with FakeApiServer() as server:
        kube = Kube(server.api_client())
        apply(kube, objs)
        with running_lifter(server):
            assert server.wait_for(lambda: not {p["metadata"]["name"] for p in base} & set(gated(server)), timeout=10)
            kube.raw("DELETE", path_of(kube, podgroup, with_name=True))
            kube.raw("DELETE", path_of(kube, gang, with_name=True))
            for pod in base:
                kube.core.delete_namespaced_pod(pod["metadata"]["name"], "default")
            apply(kube, [gang, *base])  # re-created without the PodGroup
            time.sleep(1.5)
            assert {p["metadata"]["name"] for p in base} <= set(gated(server))
            apply(kube, [podgroup])
            assert server.wait_for(lambda: not {p["metadata"]["name"] for p in base} & set(gated(server)), timeout=5)


def test_pod_is_released_only_by_its_own_complete_podgang(tmp_path: Path) -> None:
    objs = kai_objects(tmp_path)
    base = pods_of_gang(objs, "inf-0")
    held_back = find(objs, "Pod", base[-1])
    # PodGang "intruder" lists two pods of the incomplete gang inf-0 and is otherwise complete.
    intruder = hand_made_gang(objs, "intruder", [("default", base[0]), ("default", base[1])])
    with FakeApiServer() as server:
        kube = Kube(server.api_client())
        apply(kube, [o for o in objs if o is not held_back] + [intruder])
        with running_lifter(server) as lifter:
            time.sleep(1.5)
            assert set(base[:-1]) <= set(gated(server))
            assert not successful_pod_patches(server)
            decision = lifter.evaluate(("default", "intruder"))
            assert not decision.complete and any("labelled for PodGang 'inf-0'" in w for w in decision.waiting_for)
            apply(kube, [held_back])
            assert server.wait_for(lambda: not set(base) & set(gated(server)), timeout=5)


def test_namespace_of_pod_references_is_honoured(tmp_path: Path) -> None:
    objs = kai_objects(tmp_path)
    gang = hand_made_gang(objs, "cross", [("other", "p-0"), ("other", "p-1")])
    pods = [hand_made_pod(objs, "p-0", "cross"), hand_made_pod(objs, "p-1", "cross")]  # in default, not other
    with FakeApiServer() as server:
        apply(Kube(server.api_client()), [gang, *pods])
        with running_lifter(server) as lifter:
            time.sleep(1.5)
            assert gated(server) == ["p-0", "p-1"]
            assert "pod other/p-0" in lifter.evaluate(("default", "cross")).waiting_for


def test_gate_patch_is_guarded_by_uid_so_a_recreated_pod_keeps_its_gate(tmp_path: Path) -> None:
    objs = kai_objects(tmp_path)
    victim = pods_of_gang(objs, "inf-0")[0]
    with FakeApiServer() as server:
        kube = Kube(server.api_client())
        apply(kube, objs)
        lifter = Agent(kube, AgentConfig(backoff_base=0.01), Registry())
        lifter.cache.replace("pods", kube.list_pods(None, "app.kubernetes.io/managed-by=grove-gitops")["items"])
        lifter.cache.replace("podgangs", kube.list_podgangs(None, "app.kubernetes.io/managed-by=grove-gitops")["items"])
        # Someone re-creates the pod under the same name before the (not running) watch catches up.
        kube.core.delete_namespaced_pod(victim, "default")
        apply(kube, [find(objs, "Pod", victim)])
        assert lifter.sync_gang(("default", "inf-0")) is False
        assert victim in gated(server)
        rejected = [r for r in server.requests if r.verb == "patch" and r.name == victim]
        assert rejected and all(r.status == 422 for r in rejected)
        lifter._pool.shutdown()


def test_gate_patch_tests_uid_managed_by_and_gate_position(tmp_path: Path) -> None:
    objs = kai_objects(tmp_path)
    victim = pods_of_gang(objs, "inf-0")[0]
    sent: list[list[Obj]] = []
    with FakeApiServer() as server:
        kube = Kube(server.api_client())
        apply(kube, objs)
        original = kube.patch_pod_json

        def spy(namespace: str, name: str, ops: list[Obj]) -> Obj:
            sent.append(ops)
            return original(namespace, name, ops)

        kube.patch_pod_json = spy  # type: ignore[method-assign]
        lifter = Agent(kube, AgentConfig(), Registry())
        lifter.cache.replace("pods", kube.list_pods(None, "app.kubernetes.io/managed-by=grove-gitops")["items"])
        uid = server.get_object("pods", "default", victim)["metadata"]["uid"]  # type: ignore[index]
        assert lifter.executor.ungate("default", victim, uid) is True
        lifter._pool.shutdown()
    assert sent[0][:3] == [
        {"op": "test", "path": "/metadata/uid", "value": uid},
        {"op": "test", "path": "/metadata/labels/app.kubernetes.io~1managed-by", "value": "grove-gitops"},
        {"op": "test", "path": "/spec/schedulingGates/0/name", "value": "grove.io/podgang-pending-creation"},
    ]


def test_scaled_gang_counts_only_base_pods_the_base_podgang_references(tmp_path: Path) -> None:
    objs = kai_objects(tmp_path)
    base = pods_of_gang(objs, "inf-0")
    scaled = pods_of_gang(objs, "inf-0-grp-0") + pods_of_gang(objs, "inf-0-grp-1")
    # Old base pods from before a template change: same labels, not referenced, still scheduled.
    old = []
    for name in base:
        pod = copy.deepcopy(find(objs, "Pod", name))
        pod["metadata"]["name"] = f"{name}-old"
        # Another hostname: a released old pod in the *same* slot would (rightly) hold the new
        # pod back; this test is about what the scaled gang counts.
        pod["spec"]["hostname"] = pod["spec"]["hostname"] + "-old"
        pod["spec"].pop("schedulingGates", None)
        old.append(pod)
    with FakeApiServer() as server:
        kube = Kube(server.api_client())
        apply(kube, old)
        for pod in old:
            server.schedule_pod("default", pod["metadata"]["name"])
        apply(kube, objs)
        with running_lifter(server):
            assert server.wait_for(lambda: sorted(gated(server)) == sorted(scaled), timeout=10)
            time.sleep(1.5)
            assert sorted(gated(server)) == sorted(scaled)  # 0 new base pods scheduled
            for name in base:
                server.schedule_pod("default", name)
            assert server.wait_for(lambda: gated(server) == [], timeout=5)


