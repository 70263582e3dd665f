"""The autoscaling half's pure parts: which writes a scale step needs, and hostile workload records."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grove_gitops import __version__
from grove_gitops.agent.scaling.expansion import Expander
from grove_gitops.agent.scaling.plan import plan
from grove_gitops.agent.scaling.workload import MAX_TARGETS, BadWorkload, parse
from grove_gitops.expand.gitsplit import ObjectKey

UID = "owner-uid"
NS = "llm"
GANG_API = "scheduler.grove.io/v1alpha1"


def _pod(name: str, slot: str, gang: str, j: int, k: int, *, owned: bool = True, uid: str = "") -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name, "namespace": NS, "uid": uid or f"uid-{name}",
        "labels": {"grove.io/podgang": gang, "grove.io/podcliquescalinggroup-replica-index": str(j),
                   "grove.io/podclique-pod-index": str(k)},
    }
    if owned:
        meta["ownerReferences"] = [{"uid": UID}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"hostname": slot}}


def _gang(name: str, pods: list[str], *, owned: bool = True, objects: list[str] = ()) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": NS, "uid": f"uid-{name}", "annotations": {
        "gitops.grove.io/gang-objects": json.dumps(
            [{"apiVersion": "scheduling.run.ai/v2alpha2", "kind": "PodGroup", "name": o} for o in objects])}}
    if owned:
        meta["ownerReferences"] = [{"uid": UID}]
    return {"apiVersion": GANG_API, "kind": "PodGang", "metadata": meta,
            "spec": {"podgroups": [{"name": name, "podReferences": [{"name": p, "namespace": NS} for p in pods]}]}}


def _group(name: str, *, owned: bool = True) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": NS, "uid": f"uid-{name}"}
    if owned:
        meta["ownerReferences"] = [{"uid": UID}]
    return {"apiVersion": "scheduling.run.ai/v2alpha2", "kind": "PodGroup", "metadata": meta, "spec": {"minMember": 2}}


def _key(obj: dict[str, Any]) -> ObjectKey:
    return (obj["apiVersion"], obj["kind"], NS, obj["metadata"]["name"])


def _index(*objs: dict[str, Any]) -> dict[ObjectKey, dict[str, Any]]:
    return {_key(o): o for o in objs}


def _replica(j: int, *, owned: bool = True, suffix: str = "a") -> list[dict[str, Any]]:
    """Scaled gang ``g-<j>`` with two pods and a backend PodGroup."""
    gang = f"g-{j}"
    pods = [_pod(f"p-{j}-{k}-{suffix}", f"p-{j}-{k}", gang, j, k, owned=owned) for k in range(2)]
    return [*pods, _gang(gang, [p["metadata"]["name"] for p in pods], owned=owned, objects=[gang]),
            _group(gang, owned=owned)]


def test_scale_out_creates_each_missing_gang_whole_pods_first_and_the_podgang_last() -> None:
    desired = _index(*_replica(2), *_replica(3))
    live = _index(*_replica(2))
    out = plan(desired, live, UID)
    assert [g.name for g in out.gangs] == ["g-3"]
    gang = out.gangs[0]
    assert [p["metadata"]["name"] for p in gang.pods] == ["p-3-0-a", "p-3-1-a"]
    assert [(o["kind"], o["metadata"]["name"]) for o in gang.objects] == [("PodGroup", "g-3"), ("PodGang", "g-3")]
    assert not out.delete and not out.join and not out.replace and not out.loose


def test_scale_in_deletes_pods_highest_index_first_and_the_gang_only_once_its_pods_are_gone() -> None:
    desired = _index(*_replica(2))
    live = _index(*_replica(2), *_replica(3), *_replica(4))
    first = plan(desired, live, UID)
    assert [k[3] for k, _ in first.delete] == ["p-4-1-a", "p-4-0-a", "p-3-1-a", "p-3-0-a"]
    # pods gone: now the gangs and their backend objects
    after = {k: o for k, o in live.items() if not (k[1] == "Pod" and k[3][2] in "34")}
    second = plan(desired, after, UID)
    assert sorted(k[3] for k, _ in second.delete) == ["g-3", "g-3", "g-4", "g-4"]
    assert {k[1] for k, _ in second.delete} == {"PodGang", "PodGroup"}


def test_objects_git_applied_or_of_someone_else_are_never_deleted_or_replaced() -> None:
    desired = _index(*_replica(2))
    live = _index(*_replica(2), *_replica(3, owned=False))
    changed = _replica(2)[2]
    changed["spec"]["podgroups"][0]["podReferences"] = []
    live[_key(changed)] = {**changed, "metadata": {**changed["metadata"], "ownerReferences": []}}
    out = plan(desired, live, UID)
    assert out.delete == [] and out.replace == []


def test_an_old_pod_in_a_wanted_slot_is_left_to_the_rolling_update() -> None:
    desired = _index(*_replica(2, suffix="new"))
    live = _index(*_replica(2, suffix="old"))
    out = plan(desired, live, UID)
    assert out.delete == []  # the day-2 loop retires p-2-*-old in Grove's order
    assert sorted(p["metadata"]["name"] for p in out.join) == ["p-2-0-new", "p-2-1-new"]
    assert [o["metadata"]["name"] for o in out.replace] == ["g-2"]  # its podReferences name the new pods


def test_terminating_objects_are_not_deleted_twice() -> None:
    live = _index(*_replica(3))
    for obj in live.values():
        obj["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert plan({}, live, UID).delete == []


# ------------------------------------------------------------------------------ the record
def _record(**spec: Any) -> dict[str, Any]:
    base = {
        "replicas": 1, "rendererVersion": __version__,
        "scaleTargets": [{"kind": "PodCliqueScalingGroup", "name": "w-0-g", "podCliqueSetReplica": 0,
                          "templateName": "g", "minAvailable": 1, "minReplicas": 1, "maxReplicas": 4,
                          "initialReplicas": 2, "selector": "a=b"}],
        "source": [{"kind": "PodCliqueSet"}],
    }
    base.update(spec)
    return {"apiVersion": "gitops.grove.io/v1alpha1", "kind": "PodCliqueSet",
            "metadata": {"name": "w", "namespace": NS, "uid": UID, "generation": 1}, "spec": base}


def test_a_record_as_the_render_writes_it_parses() -> None:
    workload = parse(_record())
    assert [(t.name, t.min_replicas, t.max_replicas, t.initial) for t in workload.targets] == [("w-0-g", 1, 4, 2)]
    assert workload.owner_reference["uid"] == UID


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"scaleTargets": [{}] * (MAX_TARGETS + 1)}, "spec.scaleTargets"),
        ({"scaleTargets": [{"kind": "Deployment"}]}, "spec.scaleTargets[0].kind"),
        ({"source": "x"}, "spec.source"),
        ({"source": [{"x": "y" * 2_000_000}]}, "spec.source"),
        ({"source": []}, "spec.source"),
    ],
)
def test_records_no_render_writes_are_refused_naming_the_field(spec: dict[str, Any], field: str) -> None:
    with pytest.raises(BadWorkload, match=field.replace("[", r"\[").replace("]", r"\]")):
        parse(_record(**spec))


def test_a_target_outside_its_workload_or_with_a_huge_count_is_refused() -> None:
    target = _record()["spec"]["scaleTargets"][0]
    with pytest.raises(BadWorkload, match="name"):
        parse(_record(scaleTargets=[{**target, "name": "other-0-g"}]))
    with pytest.raises(BadWorkload, match="maxReplicas"):
        parse(_record(scaleTargets=[{**target, "maxReplicas": 10**12}]))


@settings(max_examples=200, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
                    max_leaves=30))
def test_any_hostile_record_is_parsed_or_refused_with_bad_workload(value: Any) -> None:
    for record in (_record(scaleTargets=value), _record(source=value), _record(rendererVersion=value)):
        with contextlib.suppress(BadWorkload):
            parse(record)


def test_a_record_of_another_renderer_version_is_not_rendered() -> None:
    workload = parse(_record(rendererVersion="0.0.0-other"))
    with pytest.raises(BadWorkload, match="rendererVersion"):
        Expander().desired(workload, {(0, "g"): 2})


def test_a_record_whose_inputs_do_not_render_is_refused_with_the_problem() -> None:
    workload = parse(_record(source=[{"apiVersion": "grove.io/v1alpha1", "kind": "PodCliqueSet",
                                      "metadata": {"name": "w", "namespace": NS}, "spec": {"replicas": -1}}]))
    with pytest.raises(BadWorkload, match="does not render"):
        Expander().desired(workload, {(0, "g"): 2})


def test_a_pod_git_dropped_when_the_floor_fell_is_scaled_in_but_no_pod_git_just_applied() -> None:
    from grove_gitops.expand import ownership

    def proven(pod: dict[str, Any], group: str = "w-0-g") -> dict[str, Any]:
        pod["metadata"]["labels"].update({"app.kubernetes.io/managed-by": "grove-gitops",
                                          "app.kubernetes.io/part-of": "w", "grove.io/podcliqueset-replica-index": "0",
                                          "grove.io/podclique": "p", "grove.io/pod-template-hash": "h",
                                          "grove.io/podcliquescalinggroup": group})
        ownership.stamp(pod)
        return pod

    units = ["w-0-g"]
    git = {("v1", "Pod", NS, "p-1-0-new")}
    # Git applied it; the floor fell, Argo CD pruned its PodGang: the agent's to scale in.
    dropped = proven(_pod("p-3-0-a", "p-3-0", "g-3", 3, 0, owned=False))
    assert [k[3] for k, _ in plan({}, _index(dropped), UID, git, units=units).delete] == ["p-3-0-a"]
    # ... also when its PodGang is one the agent made since.
    assert [k[3] for k, _ in plan({}, _index(dropped, _gang("g-3", [])), UID, git, units=units).delete][:1] == [
        "p-3-0-a"]
    # Git has just applied it (its PodGang is Git's, the record not yet updated): never taken.
    fresh = proven(_pod("p-4-0-a", "p-4-0", "g-4", 4, 0, owned=False))
    assert plan({}, _index(fresh, _gang("g-4", ["p-4-0-a"], owned=False)), UID, git, units=units).delete == []
    # A pod of a unit no scale target names (Git scales it), or without the proof: never taken.
    other = proven(_pod("r-2-a", "r-2", "base", 0, 2, owned=False), group="w-0-other")
    assert plan({}, _index(other), UID, git, units=units).delete == []
    unproven = _pod("p-3-0-b", "p-3-0", "g-3", 3, 0, owned=False)
    unproven["metadata"]["labels"]["grove.io/podcliquescalinggroup"] = "w-0-g"
    assert plan({}, _index(unproven), UID, git, units=units).delete == []
    # A workload that left Git (no units): only what the agent made.
    assert plan({}, _index(dropped), UID, git).delete == []
    # Git's old pod of a rolling update (a slot Git still wants) is the day-2 loop's.
    old_git = proven(_pod("p-1-0-old", "p-1-0", "g-1", 1, 0, owned=False))
    assert plan({}, _index(old_git), UID, git, units=units).delete == []


def test_a_gang_cut_short_by_a_restart_carries_its_existing_pods_for_a_rollback() -> None:
    pods = _replica(3)[:2]
    desired = _index(*_replica(2), *_replica(3))
    live = _index(*_replica(2), pods[0])  # the agent was killed after the first pod of g-3
    out = plan(desired, live, UID)
    [gang] = out.gangs
    assert [p["metadata"]["name"] for p in gang.pods] == ["p-3-1-a"]
    assert [p["metadata"]["name"] for p in gang.existing] == ["p-3-0-a"]


def test_scale_in_goes_in_waves_highest_replica_first() -> None:
    desired = _index(*_replica(2))
    live = _index(*_replica(2), *_replica(3), *_replica(4))
    waves = plan(desired, live, UID).delete_waves()
    assert [sorted(k[3] for k, _ in w) for w in waves] == [["p-4-0-a", "p-4-1-a"], ["p-3-0-a", "p-3-1-a"]]


@pytest.mark.parametrize(
    "name",
    ["w-0-g/status", "w-0-g/../../../api/v1/namespaces/llm/pods/victim", "w-0-g\x00", "/abs", "..", "w-0-G",
     "w-1-g", ["w-0-g"], 10**9],
)
def test_a_target_name_that_is_not_exactly_the_renders_is_refused_before_it_reaches_a_path(name: Any) -> None:
    target = _record()["spec"]["scaleTargets"][0]
    with pytest.raises(BadWorkload, match="name"):
        parse(_record(scaleTargets=[{**target, "name": name}]))


def test_hostile_numbers_in_a_record_are_refused_not_raised() -> None:
    target = _record()["spec"]["scaleTargets"][0]
    huge = 10**5000  # a 5,001-digit integer
    for field in ("minReplicas", "maxReplicas", "podCliqueSetReplica", "initialReplicas"):
        with pytest.raises(BadWorkload, match=field):
            parse(_record(scaleTargets=[{**target, field: huge}]))
    with pytest.raises(BadWorkload, match=r"spec\.source"):
        parse(_record(source=[{"n": huge}]))
