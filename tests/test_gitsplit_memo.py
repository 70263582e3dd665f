"""Expansions through one :class:`~grove_gitops.expand.workload.ExpansionMemo` are the
expansions without it (issue 35.4).

The render splits an autoscaled PodCliqueSet into Git's objects and the agent's by expanding
it twice, at its floor and one above (:mod:`grove_gitops.expand.gitsplit`); the second
expansion reuses every part of the first whose inputs are equal. For PodCliqueSets hypothesis
draws (one to three replicas; scaling groups with and without ``scaleConfig``; clique-level
autoscaling; resource claims at every level and scope; MNNVL; topology-aware scheduling;
every startup order; every gang backend) the split must be the one two independent
expansions give, and every expansion through a shared memo, at any counts in any order,
the expansion alone.
"""

from __future__ import annotations

import copy
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grove_gitops.api.podcliqueset import PodCliqueSet
from grove_gitops.expand.context import ExpandContext
from grove_gitops.expand.gitsplit import bumped_counts, git_objects, object_key
from grove_gitops.expand.scaling import Counts, scale_units
from grove_gitops.expand.workload import ExpansionMemo, expand_pcs, placeholder_name
from grove_gitops.load.memory import MemorySource
from grove_gitops.render import plan_source

NS = "llm"
BACKENDS = ("kai-scheduler", "volcano", "default-scheduler", "scheduler-plugins-scheduler", "koord-scheduler")
STARTUP = ("CliqueStartupTypeAnyOrder", "CliqueStartupTypeInOrder", "CliqueStartupTypeExplicit")
BINDING = {
    "apiVersion": "grove.io/v1alpha1",
    "kind": "ClusterTopologyBinding",
    "metadata": {"name": "fabric"},
    "spec": {"levels": [{"domain": "zone", "key": "topology.kubernetes.io/zone"},
                        {"domain": "rack", "key": "example.com/rack"},
                        {"domain": "host", "key": "kubernetes.io/hostname"}]},
}
CLAIM_TEMPLATE = {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}


@st.composite
def _scaling(draw: st.DrawFn, replicas: int) -> dict[str, Any] | None:
    """An autoscaling config around ``replicas`` (sometimes min == max: nothing to bump)."""
    if not draw(st.booleans()):
        return None
    return {"minReplicas": draw(st.integers(1, replicas)), "maxReplicas": replicas + draw(st.integers(0, 2))}


@st.composite
def _sharing(draw: st.DrawFn, names: list[str]) -> list[dict[str, Any]]:
    """Up to two sharing references to internal templates, either scope."""
    refs = []
    for name in draw(st.lists(st.sampled_from(names), max_size=2, unique=True)):
        refs.append({"name": name, "scope": draw(st.sampled_from(["AllReplicas", "PerReplica"]))})
    return refs


def _clique(name: str, replicas: int, gpu: bool, **extra: Any) -> dict[str, Any]:
    resources = {"limits": {"nvidia.com/gpu": "4"}} if gpu else {"requests": {"cpu": "1"}}
    container = {"name": "main", "image": "example/serve:1", "args": [f"--role={name}"], "resources": resources}
    spec: dict[str, Any] = {"roleName": name, "replicas": replicas, "podSpec": {"containers": [container]}}
    spec.update({k: v for k, v in extra.items() if k in ("minAvailable", "autoScalingConfig", "startsAfter")})
    out: dict[str, Any] = {"name": name, "spec": spec}
    out.update({k: v for k, v in extra.items() if k in ("resourceSharing", "topologyConstraint", "annotations")})
    return out


@st.composite
def workloads(draw: st.DrawFn) -> tuple[str, list[dict[str, Any]]]:
    """A source tree of one PodCliqueSet: (its backend, its documents)."""
    backend = draw(st.sampled_from(BACKENDS))
    claims = draw(st.booleans())
    templates = ["gpu", "nic"] if claims else []
    # topology constraints where the backend takes them (scaling-group level: not Koordinator)
    tas = backend in ("kai-scheduler", "default-scheduler", "koord-scheduler") and draw(st.booleans())
    mnnvl = backend != "koord-scheduler" and draw(st.booleans())  # koord refuses MNNVL
    startup = draw(st.sampled_from(STARTUP))

    def sharing() -> list[dict[str, Any]]:
        return draw(_sharing(templates)) if claims else []

    def pack(domain: str) -> dict[str, Any]:
        """(Koordinator gathers a gang at one required layer: below the PodCliqueSet, preferred.)"""
        kinds = ["preferred"] if backend == "koord-scheduler" else ["required", "preferred"]
        return {"pack": {draw(st.sampled_from(kinds)): domain}}

    router_replicas = draw(st.integers(1, 3))
    router_scaling = draw(_scaling(router_replicas))
    router = _clique(
        "router", router_replicas, False, minAvailable=1,
        **({"autoScalingConfig": router_scaling} if router_scaling else {}),
        **({"resourceSharing": sharing()} if claims else {}),
        **({"startsAfter": ["leader"]} if startup == STARTUP[2] else {}),
    )
    leader = _clique("leader", 1, draw(st.booleans()), **({"resourceSharing": sharing()} if claims else {}))
    worker = _clique(
        "worker", draw(st.integers(1, 3)), draw(st.booleans()), minAvailable=1,
        **({"startsAfter": ["leader"]} if startup == STARTUP[2] else {}),
        **({"topologyConstraint": pack("host")} if tas and draw(st.booleans()) else {}),
    )
    decode = _clique("decode", draw(st.integers(1, 2)), draw(st.booleans()),
                     **({"annotations": {"grove.io/mnnvl-group": "dec"}} if mnnvl and draw(st.booleans()) else {}))
    groups: list[dict[str, Any]] = []
    for name, members in (("prefill", ["leader", "worker"]), ("decode", ["decode"])):
        replicas = draw(st.integers(1, 3))
        group: dict[str, Any] = {"name": name, "cliqueNames": members, "replicas": replicas,
                                 "minAvailable": draw(st.integers(1, replicas))}
        scaling = draw(_scaling(replicas))
        if scaling is not None:
            group["scaleConfig"] = {**scaling, "minReplicas": max(scaling["minReplicas"], group["minAvailable"])}
        if claims:
            group["resourceSharing"] = sharing()
        if tas and backend != "koord-scheduler" and draw(st.booleans()):
            group["topologyConstraint"] = pack("rack")
        groups.append(group)
    template: dict[str, Any] = {
        **({"priorityClassName": "inference-high"} if draw(st.booleans()) else {}),
        "cliqueStartupType": startup,
        "cliques": [router, leader, worker, decode],
        "podCliqueScalingGroups": groups,
    }
    if claims:
        template["resourceClaimTemplates"] = [{"name": n, "templateSpec": {"spec": CLAIM_TEMPLATE}} for n in templates]
        template["resourceSharing"] = sharing()
    if tas:
        template["topologyConstraint"] = {"topologyName": "fabric", "pack": {"required": "zone"}}
    pcs = {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueSet",
        "metadata": {"name": "disagg", "namespace": NS, "labels": {"kai.scheduler/queue": "default"},
                     **({"annotations": {"grove.io/mnnvl-group": "fabric"}} if mnnvl else {})},
        "spec": {"replicas": draw(st.integers(1, 3)), "template": template},
    }
    opcfg: dict[str, Any] = {
        "apiVersion": "operator.config.grove.io/v1alpha1",
        "kind": "OperatorConfiguration",
        "scheduler": {"defaultProfileName": backend, "profiles": [
            {"name": b, **({"config": {"clusterNetworkTopology": "fabric"}} if b == "koord-scheduler" and tas else {})}
            for b in BACKENDS
        ]},
        "topologyAwareScheduling": {"enabled": tas},
        "network": {"autoMNNVLEnabled": mnnvl},
    }
    docs = [pcs, opcfg, *([BINDING] if tas else [])]
    if backend == "volcano":
        docs.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "default"},
                     "spec": {"weight": 1}})
    return backend, docs


def _plan(docs: list[dict[str, Any]]) -> tuple[PodCliqueSet, ExpandContext]:
    text = yaml.safe_dump_all(docs, sort_keys=False).encode()
    plan = plan_source(MemorySource("gitsplit-test", {"src.yaml": text}))
    (item,) = plan.items
    assert item.pcs is not None
    return item.pcs, plan.context_for(item.pcs)


def _double_expansion(pcs: PodCliqueSet, ctx: ExpandContext) -> list[dict[str, Any]]:
    """Git's objects by the rule alone: two expansions that share nothing."""
    floor = expand_pcs(pcs, ctx, memo=ExpansionMemo())
    bumped = bumped_counts(pcs)
    if not bumped:
        return floor.objects
    above = {object_key(o): o for o in expand_pcs(pcs, ctx, bumped, ExpansionMemo()).objects}
    return [o for o in floor.objects if above.get(object_key(o)) == o]


def _counts(pcs: PodCliqueSet, data: st.DataObject) -> Counts:
    """Live counts of every scalable unit, anywhere from its floor to its maximum."""
    return {
        (i, u.name): data.draw(st.integers(u.min_replicas, u.max_replicas))
        for i in range(pcs.spec.replicas)
        for u in scale_units(pcs)
    }


_SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_SETTINGS
@given(workloads())
def test_the_split_is_the_split_of_two_independent_expansions(workload: tuple[str, list[dict[str, Any]]]) -> None:
    _backend, docs = workload
    pcs, ctx = _plan(docs)
    memo = ExpansionMemo()
    floor = expand_pcs(pcs, ctx, memo=memo)
    assert floor.objects == expand_pcs(pcs, ctx).objects
    assert git_objects(pcs, ctx, floor, memo) == _double_expansion(pcs, ctx)


@_SETTINGS
@given(workloads(), st.data())
def test_expansions_through_one_memo_are_the_expansions_alone(
    workload: tuple[str, list[dict[str, Any]]], data: st.DataObject
) -> None:
    """At any counts in any order, and back to the floor: what the agent renders each pass."""
    _backend, docs = workload
    pcs, ctx = _plan(docs)
    memo = ExpansionMemo()
    for counts in [_counts(pcs, data), None, _counts(pcs, data), bumped_counts(pcs), None]:
        assert expand_pcs(pcs, ctx, counts, memo).objects == expand_pcs(pcs, ctx, counts).objects


def test_the_split_of_each_backend_on_the_same_shape_is_its_own() -> None:
    """Every backend on one autoscaled shape with claims: the memo's split equals the rule's,
    and Git keeps objects of every kind the floor has that no count changes."""
    for backend in BACKENDS:
        pcs, ctx = _plan(_fixed(backend))
        split = git_objects(pcs, ctx)
        assert split == _double_expansion(pcs, ctx)
        floor = expand_pcs(pcs, ctx).objects
        assert 0 < len(split) < len(floor), backend
        assert {o["kind"] for o in split} >= {"Pod", "PodGang", "Service", "ResourceClaim"}, backend
        # the router's count changes the base gang's pod list: the agent's; the scaled gang is Git's
        gangs = {o["metadata"]["name"] for o in split if o["kind"] == "PodGang"}
        assert gangs == {"fixed-0-prefill-0", "fixed-1-prefill-0"}, backend


def _fixed(backend: str) -> list[dict[str, Any]]:
    """A standalone autoscaled router, an autoscaled scaling group and claims at every level."""
    claims = [{"name": "gpu", "templateSpec": {"spec": CLAIM_TEMPLATE}}]
    pcs = {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueSet",
        "metadata": {"name": "fixed", "namespace": NS, "labels": {"kai.scheduler/queue": "default"}},
        "spec": {
            "replicas": 2,
            "template": {
                "resourceClaimTemplates": claims,
                "resourceSharing": [{"name": "gpu", "scope": "PerReplica"}],
                "cliques": [
                    _clique("router", 2, False, minAvailable=1,
                            autoScalingConfig={"minReplicas": 2, "maxReplicas": 4},
                            resourceSharing=[{"name": "gpu", "scope": "PerReplica"}]),
                    _clique("leader", 1, True),
                    _clique("worker", 2, True, minAvailable=1),
                ],
                "podCliqueScalingGroups": [
                    {"name": "prefill", "cliqueNames": ["leader", "worker"], "replicas": 2, "minAvailable": 1,
                     "scaleConfig": {"minReplicas": 2, "maxReplicas": 4},
                     "resourceSharing": [{"name": "gpu", "scope": "AllReplicas"}]},
                ],
            },
        },
    }
    opcfg = {
        "apiVersion": "operator.config.grove.io/v1alpha1",
        "kind": "OperatorConfiguration",
        "scheduler": {"defaultProfileName": backend, "profiles": [{"name": b} for b in BACKENDS]},
    }
    docs: list[dict[str, Any]] = [pcs, opcfg]
    if backend == "volcano":
        docs.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "default"},
                     "spec": {"weight": 1}})
    return docs


@_SETTINGS
@given(workloads())
def test_backends_read_pod_references_only_through_their_number(workload: tuple[str, list[dict[str, Any]]]) -> None:
    """``backendapi``'s rule that the split's placeholder pod names rest on: renaming every pod
    a PodGang lists leaves the backend's objects for it unchanged."""
    _backend, docs = workload
    pcs, ctx = _plan(docs)
    for counts in (None, bumped_counts(pcs)):
        for gang in [o for o in expand_pcs(pcs, ctx, counts).objects if o["kind"] == "PodGang"]:
            renamed = copy.deepcopy(gang)
            for group in renamed["spec"]["podgroups"]:
                group["podReferences"] = [{**r, "name": f"other-{i}"} for i, r in enumerate(group["podReferences"])]
            assert ctx.backend.gang_objects(copy.deepcopy(gang), pcs) == ctx.backend.gang_objects(renamed, pcs)


def test_the_render_above_the_floor_builds_no_pod_of_a_podclique_the_floor_lacks() -> None:
    """Its PodGangs list those pods by placeholder names; the split is the rule's all the same."""
    pcs, ctx = _plan(_fixed("kai-scheduler"))
    memo = ExpansionMemo()
    floor = expand_pcs(pcs, ctx, memo=memo)
    above = expand_pcs(pcs, ctx, bumped_counts(pcs), memo, floor.pod_cliques)
    full = expand_pcs(pcs, ctx, bumped_counts(pcs))
    pods = [o for o in above.objects if o["kind"] == "Pod"]
    # the autoscaled router's new pods are built (their PodClique is the floor's), prefill-2's not
    assert {p["metadata"]["labels"]["grove.io/podclique"] for p in pods} == floor.pod_cliques
    assert "fixed-0-router-2" in {p["spec"]["hostname"] for p in pods}
    assert len(pods) < sum(o["kind"] == "Pod" for o in full.objects)
    new_gang = next(o for o in above.objects if o["kind"] == "PodGang" and o["metadata"]["name"] == "fixed-0-prefill-1")
    for group in new_gang["spec"]["podgroups"]:
        refs = [r["name"] for r in group["podReferences"]]
        assert refs == sorted(placeholder_name(group["name"], k) for k in range(len(refs))) != []
    assert git_objects(pcs, ctx, floor, memo) == _double_expansion(pcs, ctx)
