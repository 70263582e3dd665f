"""compare() against hostile live objects (pure, no server): it never raises, and a pod whose
labels or hostname do not match its slot is refused, never put among the pods to hand over."""

from __future__ import annotations

import copy
import itertools
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grove_gitops.migrate.compare import compare
from grove_gitops.migrate.live import Live
from tests.migrate.workload import NS, PCS, GroveState, Obj, render, source

LABELS = ("grove.io/podclique", "grove.io/podclique-pod-index", "grove.io/podcliqueset-replica-index",
          "app.kubernetes.io/managed-by")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Obj], Live]:
    objs = render(source(tmp_path_factory.mktemp("fuzz") / "src"))
    counter = itertools.count()
    created: list[Obj] = []

    def create(obj: Obj) -> Obj:
        obj = copy.deepcopy(obj)
        obj["metadata"]["uid"] = f"uid-{next(counter)}"
        obj["metadata"]["resourceVersion"] = "1"
        created.append(obj)
        return obj

    def status(obj: Obj, value: dict[str, Any]) -> Obj:
        obj["status"] = value
        return obj

    state = GroveState(objs, create, status)
    state.build({"apiVersion": "grove.io/v1alpha1", "kind": "PodCliqueSet", "metadata": {"name": PCS, "namespace": NS},
                 "spec": {"replicas": 1, "template": {"cliques": []}}})
    for pod in state.pods.values():
        pod["spec"]["nodeName"] = "n"
        pod["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    live = Live(NS, PCS, pcs=next(o for o in created if o["kind"] == "PodCliqueSet"),
                podcliques=[o for o in created if o["kind"] == "PodClique"],
                scaling_groups=[o for o in created if o["kind"] == "PodCliqueScalingGroup"],
                pods=list(state.pods.values()), podgangs=[o for o in created if o["kind"] == "PodGang"])
    for gang in live.podgangs:
        gang["status"] = {"conditions": [{"type": "Initialized", "status": "True"}]}
    return objs, live


def test_the_unchanged_workload_matches(world: tuple[list[Obj], Live]) -> None:
    objs, live = world
    found = compare(live, objs)
    assert found.ok, found.refusals
    assert len(found.to_adopt) == 8


@given(which=st.integers(0, 7), label=st.sampled_from(LABELS),
       value=st.one_of(st.text(max_size=70), st.sampled_from(["0", "1", "2", "mig-0-router", "grove-gitops", "99999999"])),
       hostname=st.one_of(st.none(), st.text(max_size=70), st.just("mig-0-router-1")))
def test_a_pod_that_does_not_match_its_slot_is_never_handed_over(
    world: tuple[list[Obj], Live], which: int, label: str, value: str, hostname: str | None,
) -> None:
    objs, live = world
    live = copy.deepcopy(live)
    pod = live.pods[which]
    before = (copy.deepcopy(pod["metadata"]["labels"]), pod["spec"]["hostname"])
    pod["metadata"]["labels"][label] = value
    if hostname is not None:
        pod["spec"]["hostname"] = hostname
    found = compare(live, objs)
    if (pod["metadata"]["labels"], pod["spec"]["hostname"]) == before:
        assert found.ok
        return
    assert not found.ok, "a pod changed from what Grove makes for its slot must be refused"
    assert pod["metadata"]["uid"] not in {p["metadata"]["uid"] for p in found.to_adopt}
