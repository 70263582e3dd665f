"""The agent deletes a migrated Grove pod only when it is verified as its slot's pod.

The cluster is the fake API server after `migrate apply` and the GitOps tool's sync: every slot
holds its handed-over Grove pod (old) and its gated rendered pod (new). The agent's own
decision code (snapshot + rollout) is asked, pass after pass; a pod that fails any rule of
grove_gitops/readmodel/adoption.py is never among the pods it deletes, and holds its slot.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grove_gitops.agent import rollout
from grove_gitops.agent.actions import DeletePod, Memories
from grove_gitops.readmodel import adoption, snapshot
from tests.fakeserver import FakeApiServer
from tests.migrate.fake import kubeconfig, migrate_args, run_cli, running, sync
from tests.migrate.workload import NS, PCS

Raw = dict[str, Any]
ROUTER_0 = "mig-0-router-0"


@pytest.fixture(scope="module")
def migrated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[tuple[str, str], Raw], dict[tuple[str, str], Raw]]]:
    """(pods, podgangs) the agent would watch after the hand-over and the sync."""
    tmp = tmp_path_factory.mktemp("adoption")
    with FakeApiServer() as server:
        root, objs, _ = running(server, tmp)
        result = run_cli(*migrate_args("apply", root, kubeconfig(server, tmp / "kubeconfig"), "--grove-operator-stopped"))
        assert result.exit_code == 0, result.output
        sync(server, objs)
        pods = {(NS, p["metadata"]["name"]): p for p in server.store.list_objects("pods", NS)
                if p["metadata"]["labels"].get(adoption.MANAGED_BY) == adoption.GITOPS}
        gangs = {(NS, g["metadata"]["name"]): g for g in server.store.list_objects("podgangs.scheduler.grove.io", NS)}
        yield pods, gangs


def _deleted(pods: dict[tuple[str, str], Raw], gangs: dict[tuple[str, str], Raw], passes: int = 6) -> set[str]:
    """The pods the agent's rollout deletes over several passes (each pass's deletes done)."""
    pods = dict(pods)
    memory = Memories()
    gone: set[str] = set()
    for _ in range(passes):
        snap = snapshot.build(pods, gangs)
        wl = snap.workloads[(NS, PCS)]
        actions, _ = rollout.rollout(wl, memory.of(wl.key), time.time(), breached=set(), grace=1.0)
        for action in actions:
            if isinstance(action, DeletePod):
                gone.add(action.name)
                pods.pop((action.namespace, action.name))
        # the replacement of every freed slot comes up Ready, as the kubelet would make it
        for key, pod in list(pods.items()):
            if "gitops.grove.io/rendered-by" in pod["metadata"].get("annotations", {}):
                slot_free = not any(p is not pod and p["spec"]["hostname"] == pod["spec"]["hostname"] for p in pods.values())
                if slot_free and pod["spec"].get("schedulingGates"):
                    ready = copy.deepcopy(pod)
                    ready["spec"].pop("schedulingGates")
                    ready["spec"]["nodeName"] = "n"
                    ready["status"] = {"phase": "Running", "conditions": [
                        {"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True"}]}
                    pods[key] = ready
    return gone


def _grove_pod(pods: dict[tuple[str, str], Raw], host: str) -> tuple[tuple[str, str], Raw]:
    return next((k, p) for k, p in pods.items() if p["spec"]["hostname"] == host and adoption.ADOPT in p["metadata"].get("annotations", {}))


def test_every_verified_pod_is_replaced_in_the_plans_order(migrated: tuple[dict[tuple[str, str], Raw], dict[tuple[str, str], Raw]]) -> None:
    pods, gangs = migrated
    grove = {p["metadata"]["name"] for p in pods.values() if adoption.ADOPT in p["metadata"].get("annotations", {})}
    assert len(grove) == 8
    assert _deleted(pods, gangs, passes=12) == grove


def _copied_to_another_pod(pod: Raw) -> None:
    pod["metadata"]["uid"] = "another-uid"


def _other_slot(pod: Raw) -> None:
    record = json.loads(pod["metadata"]["annotations"][adoption.ADOPT])
    record.update(hostname="mig-0-router-1", index=1)
    pod["metadata"]["annotations"][adoption.ADOPT] = json.dumps(record)
    pod["metadata"]["labels"]["grove.io/podclique-pod-index"] = "1"


def _still_owned(pod: Raw) -> None:
    pod["metadata"]["ownerReferences"] = [{"apiVersion": "grove.io/v1alpha1", "kind": "PodClique", "name": "mig-0-router",
                                           "uid": "u", "controller": True}]


def _relabelled(pod: Raw) -> None:
    pod["metadata"]["labels"]["grove.io/podclique"] = "mig-0-other"


def _not_json(pod: Raw) -> None:
    pod["metadata"]["annotations"][adoption.ADOPT] = "{not json"


def _other_podcliqueset(pod: Raw) -> None:
    record = json.loads(pod["metadata"]["annotations"][adoption.ADOPT])
    record["podCliqueSet"] = "other"
    pod["metadata"]["annotations"][adoption.ADOPT] = json.dumps(record)
    pod["metadata"]["labels"][adoption.PART_OF] = "other"


def _another_owner_kind(pod: Raw) -> None:
    record = json.loads(pod["metadata"]["annotations"][adoption.ADOPT])
    record["owner"]["kind"] = "ReplicaSet"
    pod["metadata"]["annotations"][adoption.ADOPT] = json.dumps(record)


def _renamed(pod: Raw) -> None:
    pod["metadata"]["name"] = "someone-elses"


RULES: dict[str, Callable[[Raw], None]] = {
    "record copied onto another pod": _copied_to_another_pod,
    "record names another slot": _other_slot,
    "still controlled by a PodClique": _still_owned,
    "PodClique label changed": _relabelled,
    "record is not JSON": _not_json,
    "another PodCliqueSet": _other_podcliqueset,
    "owner was not a PodClique": _another_owner_kind,
    "not the pod the record names": _renamed,
}


@pytest.mark.parametrize("break_it", RULES.values(), ids=RULES.keys())
def test_a_pod_that_does_not_verify_as_its_slots_pod_is_never_deleted(
    migrated: tuple[dict[tuple[str, str], Raw], dict[tuple[str, str], Raw]], break_it: Callable[[Raw], None],
) -> None:
    pods, gangs = copy.deepcopy(migrated)
    key, pod = _grove_pod(pods, ROUTER_0)
    break_it(pod)
    pods.pop(key)
    pods[(NS, pod["metadata"]["name"])] = pod
    gone = _deleted(pods, gangs, passes=12)
    assert pod["metadata"]["name"] not in gone
    # It holds its slot (an old pod there, not the agent's to delete): the rendered pod waits.
    slot = snapshot.build(pods, gangs).workloads[(NS, PCS)].slots[ROUTER_0]
    assert [(p.name, p.owned) for p in slot.old] == [(pod["metadata"]["name"], False)]


def test_a_slot_whose_rendered_pod_lacks_its_proof_keeps_its_grove_pod(
    migrated: tuple[dict[tuple[str, str], Raw], dict[tuple[str, str], Raw]],
) -> None:
    pods, gangs = copy.deepcopy(migrated)
    _, grove = _grove_pod(pods, ROUTER_0)
    rendered = next(p for p in pods.values() if p["spec"]["hostname"] == ROUTER_0 and p is not grove)
    del rendered["metadata"]["annotations"]["gitops.grove.io/rendered-by"]
    assert grove["metadata"]["name"] not in _deleted(pods, gangs, passes=12)


@given(field=st.sampled_from(["v", "pod", "uid", "podCliqueSet", "hostname", "podClique", "index", "replica", "owner"]),
       value=st.one_of(st.none(), st.integers(-3, 10**7), st.text(max_size=80), st.booleans(), st.lists(st.integers(), max_size=3)))
def test_any_changed_field_of_the_record_fails_verification(field: str, value: Any) -> None:
    pod: Raw = {"metadata": {"name": "p-0-c-abcde", "uid": "u1", "labels": {
        adoption.MANAGED_BY: adoption.GITOPS, adoption.PART_OF: "p", adoption.PODCLIQUE: "p-0-c",
        adoption.POD_INDEX: "0", adoption.REPLICA: "0"}, "annotations": {}}, "spec": {"hostname": "p-0-c-0"}}
    grove = copy.deepcopy(pod)
    grove["metadata"]["ownerReferences"] = [{"kind": "PodClique", "name": "p-0-c", "uid": "o", "controller": True}]
    grove["metadata"]["labels"][adoption.MANAGED_BY] = adoption.GROVE
    record = json.loads(adoption.marker(grove))
    pod["metadata"]["annotations"][adoption.ADOPT] = json.dumps(record)
    assert adoption.claim(pod) is not None
    if record[field] == value:
        return
    record[field] = value
    pod["metadata"]["annotations"][adoption.ADOPT] = json.dumps(record)
    assert adoption.claim(pod) is None


def test_before_the_render_is_fully_applied_the_rollout_waits_in_the_plans_order(
    migrated: tuple[dict[tuple[str, str], Raw], dict[tuple[str, str], Raw]],
) -> None:
    """The GitOps tool applies the rendered pods one by one: while the routers' are missing,
    their handed-over pods are still the first steps (slot identity from the PodGang), so the
    agent waits for them instead of starting with a scaling group whose pods happen to exist."""
    pods, gangs = copy.deepcopy(migrated)
    routers = {k: p for k, p in pods.items() if p["spec"]["hostname"].startswith("mig-0-router-")
               and "gitops.grove.io/rendered-by" in p["metadata"].get("annotations", {})}
    assert len(routers) == 2
    partial = {k: p for k, p in pods.items() if k not in routers}
    snap = snapshot.build(partial, gangs)
    slot = snap.workloads[(NS, PCS)].slots[ROUTER_0]
    assert slot.new is None and [p.owned for p in slot.old] == [True]
    assert _deleted(partial, gangs) == set()
    first = sorted(_deleted(pods, gangs, passes=1))
    assert first == [_grove_pod(pods, ROUTER_0)[1]["metadata"]["name"]]
