"""The pod binding a PodGang records is what its pods carry (``gitops.grove.io/pod-binding``).

``SchedulerBackend.pod_binding`` runs ``prepare_pod`` on an empty pod; the rendered pods were
prepared from their clique's prototype. For PodCliqueSets hypothesis draws on every gang backend
(test_gitsplit_memo's strategy), and for the default scheduler's Workload API on 1.35 and
1.36, the agent's own reader (``readmodel.binding``) must find every rendered pod bound, and
must find it unbound once any one of the recorded fields is dropped or changed.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings

from grove_gitops.expand.workload import MAX_BINDING_BYTES, ExpansionMemo, expand_pcs
from grove_gitops.fields import pointer
from grove_gitops.load.memory import MemorySource
from grove_gitops.readmodel import binding
from grove_gitops.readmodel.gangs import referenced_pods
from grove_gitops.render import plan_source
from tests.test_gitsplit_memo import _fixed, _plan, workloads


def _check(objects: list[dict[str, Any]]) -> int:
    """Every pod bound as its PodGang says; each recorded field, dropped or changed, unbinds it.
    Returns the number of (pod, field) pairs checked."""
    pods = {(o["metadata"]["namespace"], o["metadata"]["name"]): o for o in objects if o["kind"] == "Pod"}
    checked = 0
    for gang in (o for o in objects if o["kind"] == "PodGang"):
        found = binding.parse(gang)
        assert found.shared, gang["metadata"]["name"]  # at least the scheduler name
        for group, ns, name in referenced_pods(gang):
            pod = pods[(ns, name)]
            assert found.mismatch(group, pod) is None, (name, found)
            for _text, keys, _value in [*found.shared, *found.each.get(group, ())]:
                dropped = copy.deepcopy(pod)
                parent = pointer.resolve(dropped, keys[:-1])
                del parent[keys[-1]]
                assert found.mismatch(group, dropped) is not None
                changed = copy.deepcopy(pod)
                pointer.resolve(changed, keys[:-1])[keys[-1]] = "another"
                assert found.mismatch(group, changed) is not None
                checked += 1
    return checked


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads())
def test_every_rendered_pod_is_bound_as_its_podgang_records(workload: tuple[str, list[dict[str, Any]]]) -> None:
    _backend, docs = workload
    pcs, ctx = _plan(docs)
    assert _check(expand_pcs(pcs, ctx, memo=ExpansionMemo()).objects) > 0


@pytest.mark.parametrize("backend", ["kai-scheduler", "volcano", "default-scheduler", "scheduler-plugins-scheduler",
                                     "koord-scheduler"])
def test_each_backend_binds_its_own_fields(backend: str) -> None:
    pcs, ctx = _plan(_fixed(backend))
    objects = expand_pcs(pcs, ctx, memo=ExpansionMemo()).objects
    assert _check(objects) > 0
    bound = {text for g in objects if g["kind"] == "PodGang" for f in [binding.parse(g)]
             for text, _, _ in [*f.shared, *(x for fields in f.each.values() for x in fields)]}
    expected = {
        "kai-scheduler": {"/spec/schedulerName", "/metadata/annotations/pod-group-name",
                          "/metadata/annotations/kai.scheduler~1skip-podgrouper",
                          "/metadata/labels/kai.scheduler~1subgroup-name"},
        "volcano": {"/spec/schedulerName", "/metadata/annotations/scheduling.volcano.sh~1group-name",
                    "/metadata/annotations/scheduling.k8s.io~1group-name"},
        "default-scheduler": {"/spec/schedulerName"},
        "scheduler-plugins-scheduler": {"/spec/schedulerName", "/metadata/labels/scheduling.x-k8s.io~1pod-group"},
        "koord-scheduler": {"/spec/schedulerName", "/metadata/labels/pod-group.scheduling.sigs.k8s.io"},
    }[backend]
    assert bound == expected


@pytest.mark.parametrize(("version", "field"), [("1.35", "workloadRef"), ("1.36", "schedulingGroup")])
def test_the_workload_api_pod_reference_binds_the_pod(version: str, field: str) -> None:
    docs = _fixed("default-scheduler")
    docs[1]["scheduler"]["profiles"] = [{"name": "default-scheduler", "config": {"gangScheduling": True}}]
    docs.append({"apiVersion": "gitops.grove.io/v1alpha1", "kind": "RenderConfiguration",
                 "kubernetesVersion": version, "gitops": "argocd"})
    pcs, ctx = _plan(docs)
    objects = expand_pcs(pcs, ctx, memo=ExpansionMemo()).objects
    assert _check(objects) > 0
    gangs = [g for g in objects if g["kind"] == "PodGang"]
    for gang in gangs:
        found = binding.parse(gang)
        fields = {text for text, _, _ in [*found.shared, *(x for f in found.each.values() for x in f)]}
        assert f"/spec/{field}" in fields
    # A pod whose applier dropped the reference (Flux on 1.35) is unbound.
    gang = gangs[0]
    group, _ns, name = referenced_pods(gang)[0]
    pod = copy.deepcopy(next(o for o in objects if o["kind"] == "Pod" and o["metadata"]["name"] == name))
    del pod["spec"][field]
    assert f"/spec/{field} is missing" in (binding.parse(gang).mismatch(group, pod) or "")
    # The API server may default more inside the reference: still bound.
    pod = copy.deepcopy(next(o for o in objects if o["kind"] == "Pod" and o["metadata"]["name"] == name))
    pod["spec"][field]["defaultedByTheServer"] = "x"
    assert binding.parse(gang).mismatch(group, pod) is None


def test_a_gang_of_many_podgroups_keeps_only_the_shared_fields() -> None:
    """Past MAX_BINDING_BYTES (KAI's per-podgroup subgroup label, 1,200 podgroups) only the
    fields all podgroups share are written: the PodGang stays within the API server's limits."""
    cliques = [{"name": f"c{i:04d}", "spec": {"roleName": f"c{i}", "replicas": 1,
                                              "podSpec": {"containers": [{"name": "m", "image": "busybox"}]}}}
               for i in range(1200)]
    pcs = {"apiVersion": "grove.io/v1alpha1", "kind": "PodCliqueSet",
           "metadata": {"name": "wide", "namespace": "ns", "labels": {"kai.scheduler/queue": "default"}},
           "spec": {"replicas": 1, "template": {"cliques": cliques}}}
    opcfg = {"apiVersion": "operator.config.grove.io/v1alpha1", "kind": "OperatorConfiguration",
             "scheduler": {"defaultProfileName": "kai-scheduler", "profiles": [{"name": "kai-scheduler"}]}}
    plan = plan_source(MemorySource("wide", {"src.yaml": yaml.safe_dump_all([pcs, opcfg]).encode()}))
    (item,) = plan.items
    assert item.pcs is not None
    objects = expand_pcs(item.pcs, plan.context_for(item.pcs), memo=ExpansionMemo()).objects
    (gang,) = [o for o in objects if o["kind"] == "PodGang"]
    text = gang["metadata"]["annotations"][binding.POD_BINDING]
    assert len(text) <= MAX_BINDING_BYTES
    assert json.loads(text) == {"all": {"/metadata/annotations/kai.scheduler~1skip-podgrouper": "true",
                                        "/metadata/annotations/pod-group-name": "wide-0",
                                        "/spec/schedulerName": "kai-scheduler"}, "each": {}}
    assert _check(objects) == 3 * 1200
