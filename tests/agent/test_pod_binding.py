"""The agent's side of ``gitops.grove.io/pod-binding`` (readmodel/binding.py): reading it
defensively, and holding a gang, a pod or a rollout step whose pod lost its binding.

The day-2 world's scenario (tests/day2/test_pod_binding.py) runs the whole loop; here the rules
and the hostile annotations, on the pure functions.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grove_gitops.fields import pointer
from grove_gitops.readmodel import binding
from grove_gitops.readmodel import gangs as G
from grove_gitops.readmodel.snapshot import parse_day2

NS = "ml"
RECORD = {"all": {"/spec/schedulerName": "kai-scheduler", "/metadata/annotations/pod-group-name": "g"},
          "each": {"g-a": {"/metadata/labels/kai.scheduler~1subgroup-name": "g-a"},
                   "g-b": {"/metadata/labels/kai.scheduler~1subgroup-name": "g-b"}}}


def _gang(record: Any = RECORD) -> dict[str, Any]:
    annotations = {} if record is None else {binding.POD_BINDING: record if isinstance(record, str) else json.dumps(record)}
    return {"metadata": {"name": "g", "namespace": NS, "annotations": annotations},
            "spec": {"podgroups": [
                {"name": "g-a", "minReplicas": 1, "podReferences": [{"namespace": NS, "name": "a-0"}]},
                {"name": "g-b", "minReplicas": 1, "podReferences": [{"namespace": NS, "name": "b-0"}]},
            ]}}


def _pod(name: str, group: str, gated: bool = True) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": NS, "uid": f"u-{name}",
                         "labels": {G.PODGANG_LABEL: "g", "kai.scheduler/subgroup-name": group},
                         "annotations": {"pod-group-name": "g"}},
            "spec": {"schedulerName": "kai-scheduler",
                     "schedulingGates": [{"name": G.GATE}] if gated else []}}


def _pods(**changes: Any) -> dict[tuple[str, str], dict[str, Any]]:
    pods = {(NS, "a-0"): _pod("a-0", "g-a"), (NS, "b-0"): _pod("b-0", "g-b")}
    for edit in changes.values():
        edit(pods)
    return pods


def _decide(gang: dict[str, Any], pods: dict[tuple[str, str], dict[str, Any]]) -> G.Decision:
    return G.decide(gang, pods, lambda ref: True, {}, unbound=binding.parse(gang).mismatch)


def test_a_gang_whose_pods_are_bound_as_rendered_is_released_whole() -> None:
    decision = _decide(_gang(), _pods())
    assert decision.complete and decision.to_ungate == ["a-0", "b-0"]


@pytest.mark.parametrize(("edit", "why"), [
    (lambda p: p[(NS, "b-0")]["metadata"]["annotations"].pop("pod-group-name"),
     "/metadata/annotations/pod-group-name is missing (rendered \"g\")"),
    (lambda p: p[(NS, "b-0")]["spec"].update(schedulerName="default-scheduler"),
     "/spec/schedulerName is \"default-scheduler\", rendered \"kai-scheduler\""),
    (lambda p: p[(NS, "b-0")]["metadata"]["labels"].update({"kai.scheduler/subgroup-name": "g-a"}),
     "/metadata/labels/kai.scheduler~1subgroup-name is \"g-a\", rendered \"g-b\""),
    (lambda p: p[(NS, "b-0")]["metadata"].pop("annotations"), "/metadata/annotations/pod-group-name is missing"),
])
def test_one_pod_that_lost_a_bound_field_holds_the_whole_gang(edit: Any, why: str) -> None:
    decision = _decide(_gang(), _pods(x=edit))
    assert not decision.complete and decision.to_ungate == []
    (message,) = decision.waiting_for
    assert message.startswith(f"pod {NS}/b-0 to be bound to its gang as rendered: ") and why in message


def test_a_released_pod_is_not_judged_again() -> None:
    """Only gated pods are checked: a pod already released (and scheduled) that later loses a
    label holds nothing back."""
    pods = _pods()
    pods[(NS, "b-0")] = _pod("b-0", "g-b", gated=False)
    pods[(NS, "b-0")]["metadata"]["annotations"] = {}
    decision = _decide(_gang(), pods)
    assert decision.complete and decision.to_ungate == ["a-0"]


def test_a_podgang_without_the_annotation_binds_nothing() -> None:
    """Older renders and hand-written PodGangs: released as before."""
    assert binding.parse(_gang(None)) is binding.NONE
    pods = _pods(x=lambda p: p[(NS, "b-0")]["metadata"].pop("annotations"))
    assert _decide(_gang(None), pods).complete


def test_a_mapping_is_matched_as_a_subset_and_scalars_by_type() -> None:
    record = {"all": {"/spec/workloadRef": {"name": "w", "podGroup": "g"}, "/metadata/labels/n": "1"}, "each": {}}
    found = binding.parse(_gang(record))
    pod = {"metadata": {"labels": {"n": "1"}}, "spec": {"workloadRef": {"name": "w", "podGroup": "g", "extra": 1}}}
    assert found.mismatch("g-a", pod) is None
    pod["spec"]["workloadRef"]["podGroup"] = "other"
    assert found.mismatch("g-a", pod) == '/spec/workloadRef is dict of 3 entries, rendered dict of 2 entries'
    pod["spec"]["workloadRef"] = "w"
    assert found.mismatch("g-a", pod) is not None
    pod = {"metadata": {"labels": {"n": 1}}, "spec": {"workloadRef": {"name": "w", "podGroup": "g"}}}
    assert found.mismatch("g-a", pod) == '/metadata/labels/n is 1, rendered "1"'


def test_the_many_unbound_pods_of_a_gang_are_counted_not_named() -> None:
    refs = [{"namespace": NS, "name": f"p-{i}"} for i in range(50)]
    gang = _gang()
    gang["spec"]["podgroups"] = [{"name": "g-a", "minReplicas": 50, "podReferences": refs}]
    pods = {(NS, r["name"]): _pod(r["name"], "g-a") for r in refs}
    for pod in pods.values():
        pod["spec"]["schedulerName"] = "other"
    decision = _decide(gang, pods)
    assert len(decision.waiting_for) == G.MAX_WAITING_NAMED + 1
    assert decision.waiting_for[-1] == f"{50 - G.MAX_WAITING_NAMED} more pods"


@pytest.mark.parametrize(("record", "why"), [
    ("{not json", "not JSON"),
    ("[" * 100_000, "nested too deep"),
    ("x" * (G.MAX_ANNOTATION + 1), "at most"),
    (json.dumps([1, 2]), "expected"),
    (json.dumps({"all": [], "each": {}}), "at most 32 JSON pointers"),
    (json.dumps({"all": {}, "each": []}), "expected"),
    (json.dumps({"all": {"spec/schedulerName": "x"}, "each": {}}), "not a JSON pointer"),
    (json.dumps({"all": {"/a~2b": "x"}, "each": {}}), "not a JSON pointer"),
    (json.dumps({"all": {"/" + "/".join(["a"] * 9): "x"}, "each": {}}), "not a JSON pointer"),
    (json.dumps({"all": {f"/spec/f{i}": "x" for i in range(33)}, "each": {}}), "at most 32"),
    (json.dumps({"all": {}, "each": {"g-a": "x"}}), "at most 32"),
])
def test_a_binding_no_render_writes_makes_the_podgang_malformed(record: str, why: str) -> None:
    with pytest.raises(G.MalformedPodGang, match=why):
        binding.parse(_gang(record))


def test_deeply_nested_annotations_are_malformed_never_a_recursion_error() -> None:
    """Before: ``json.loads`` of a 100,000-deep ``[[[...`` (within the 256 KiB limit) raised
    RecursionError out of the agent's pass, for every PodGang annotation it reads."""
    deep = "[" * 100_000
    with pytest.raises(G.MalformedPodGang, match="nested too deep"):
        G.gang_objects({"metadata": {"annotations": {G.GANG_OBJECTS: deep}}})
    with pytest.raises(G.MalformedPodGang, match="nested too deep"):
        parse_day2({"metadata": {"annotations": {"gitops.grove.io/day2": deep}}})


@given(st.lists(st.text(max_size=12), min_size=1, max_size=pointer.MAX_DEPTH))
def test_pointers_round_trip_every_key(keys: list[str]) -> None:
    text = pointer.encode(*keys)
    assert pointer.decode(text) == tuple(keys)
    assert pointer.resolve({"a": 1}, tuple(keys)) is pointer.MISSING or keys == ["a"]


@given(st.text(max_size=40))
def test_decoding_any_text_never_raises(text: str) -> None:
    keys = pointer.decode(text)
    assert keys is None or pointer.encode(*keys) == text
