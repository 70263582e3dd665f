"""The RBAC against the lifter's real traffic: run leader election, the lifter (releasing the
examples' gangs, with a 409 on one pod patch), the topology drift check (an external KAI Topology
that drifted) and the gang-object existence checks of every backend against the fake API server,
then authorize every request it logged with the built overlay's RBAC.

Both directions are checked: every request is allowed (nothing missing), and every granted
permission was used (nothing extra).
"""

from __future__ import annotations

import copy
import threading
from pathlib import Path
from typing import Any

import kubernetes.client
import pytest

import grove_gitops_backends.coscheduling
import grove_gitops_backends.kai
import grove_gitops_backends.koordinator
import grove_gitops_backends.volcano
import grove_gitops_backends.workload_api
from grove_gitops.agent.drift import DriftChecker
from grove_gitops.agent.kube import Kube
from grove_gitops.agent.leader import LeaderElector
from grove_gitops.agent.loop import Agent, AgentConfig
from grove_gitops.expand import ownership
from grove_gitops.metrics import Registry
from grove_gitops.output.layout import build_tree
from grove_gitops.readmodel.gangs import ObjectRef
from grove_gitops.render import render_source
from tests.fakeserver import FakeApiServer
from tests.fakeserver.server import DEFAULT_NAMESPACES

from .helpers import (
    COMPONENT_PERMISSIONS,
    DEFAULT_COMPONENTS,
    DRIFT_EVENTS,
    GATE_LIFTER,
    LEASE_NAME,
    LEASE_PERMISSIONS,
    LIFTER_NAMESPACE,
    LIFTER_PERMISSIONS,
    NAMESPACED,
    NAMESPACED_SA,
    PROJECT,
    WATCHED_NAMESPACE,
    Authorizer,
    Request,
    build,
    build_with,
    deployment_params,
    is_discovery_path,
    one,
    parse_resource_path,
    pending_autoscaling_permissions,
    require_kubectl,
)

WAVE = "argocd.argoproj.io/sync-wave"
GATE = "grove.io/podgang-pending-creation"


def _rendered_examples() -> list[dict[str, Any]]:
    import yaml

    tree = build_tree(render_source(PROJECT / "examples"))
    objs = [
        yaml.safe_load(data)
        for rel, data in sorted(tree.files.items())
        if rel.endswith(".yaml") and not rel.endswith("kustomization.yaml")
    ]
    return sorted(objs, key=lambda o: int(o["metadata"].get("annotations", {}).get(WAVE, "0")))


def _collection(kube: Kube, obj: dict[str, Any]) -> str:
    api = obj["apiVersion"]
    plural = kube.plural(api, obj["kind"])
    assert plural, f"{api} {obj['kind']} is not served"
    base = f"/apis/{api}" if "/" in api else f"/api/{api}"
    ns = obj["metadata"].get("namespace")
    return f"{base}/namespaces/{ns}/{plural}" if ns else f"{base}/{plural}"


def _gated(server: FakeApiServer) -> list[str]:
    return sorted(
        p["metadata"]["name"]
        for p in server.store.list_objects("pods", WATCHED_NAMESPACE)
        if any(g.get("name") == GATE for g in p["spec"].get("schedulingGates") or [])
    )


def _initialized(server: FakeApiServer) -> bool:
    gangs = server.store.list_objects("podgangs.scheduler.grove.io", WATCHED_NAMESPACE)
    return bool(gangs) and all(
        any(c.get("type") == "Initialized" for c in (g.get("status") or {}).get("conditions") or []) for g in gangs
    )


def _gang_refs() -> list[ObjectRef]:
    """One reference per backend gang kind and API version the renderer can list."""
    apis = {
        (grove_gitops_backends.kai.PODGROUP_API_VERSION, "PodGroup"),
        (grove_gitops_backends.volcano.PODGROUP_API_VERSION, "PodGroup"),
        (grove_gitops_backends.koordinator.PODGROUP_API_VERSION, "PodGroup"),
        (grove_gitops_backends.coscheduling.API_VERSION, "PodGroup"),
        (grove_gitops_backends.workload_api.COMPOSITE_API, "CompositePodGroup"),
    }
    for info in grove_gitops_backends.workload_api.VERSIONS.values():
        apis.add((info.workload_api, "Workload"))
        if info.podgroup_api:
            apis.add((info.podgroup_api, "PodGroup"))
    return [ObjectRef(api, kind, WATCHED_NAMESPACE, "not-there") for api, kind in sorted(apis)]


def _serve_workload_api(server: FakeApiServer) -> None:
    """The fake serves CRDs from ../shared/crds; the built-in Workload API kinds are added here."""
    served: set[tuple[str, str]] = set()
    for ref in _gang_refs():
        group, version = ref.api_version.split("/", 1)
        if group != grove_gitops_backends.workload_api.GROUP or (version, ref.kind) in served:
            continue
        served.add((version, ref.kind))
        server.register_resource(group, version, f"{ref.kind.lower()}s", ref.kind)


def _drifted_binding(kube: Kube) -> None:
    """A ClusterTopologyBinding whose KAI topology is external and has other levels."""
    kube.raw(
        "POST",
        "/apis/kai.scheduler/v1alpha1/topologies",
        {
            "apiVersion": grove_gitops_backends.kai.TOPOLOGY_API_VERSION,
            "kind": "Topology",
            "metadata": {"name": "fabric-external"},
            "spec": {"levels": [{"nodeLabel": "kubernetes.io/hostname"}]},
        },
    )
    kube.raw(
        "POST",
        "/apis/grove.io/v1alpha1/clustertopologybindings",
        {
            "apiVersion": "grove.io/v1alpha1",
            "kind": "ClusterTopologyBinding",
            "metadata": {"name": "fabric"},
            "spec": {
                "levels": [
                    {"domain": "zone", "key": "topology.kubernetes.io/zone"},
                    {"domain": "host", "key": "kubernetes.io/hostname"},
                ],
                "schedulerTopologyBindings": [
                    {"schedulerName": grove_gitops_backends.kai.NAME, "topologyReference": "fabric-external"}
                ],
            },
        },
    )


def _components_needed(objs: list[dict[str, Any]]) -> set[str]:
    """The gate-lifter components whose kinds the rendered objects include (a backend's gang
    objects, ResourceClaims): what an install of these workloads must enable."""
    kinds = {(o["apiVersion"].split("/", 1)[0] if "/" in o["apiVersion"] else "", o["kind"].lower() + "s") for o in objs}
    return {c for c, perms in COMPONENT_PERMISSIONS.items() if any((g, r) in kinds for g, r, _ in perms)}


def _exercise(
    server: FakeApiServer, watch_namespace: str | None, lease_namespace: str, lease_name: str, gang_groups: set[str]
) -> None:
    """Everything the gate-lifter process does, through the real client code, with the settings
    the overlay's Deployment gives it."""
    api = server.api_client()
    kube = Kube(api)
    # Leader election: create, renew, a rival that reads and backs off, a clean release.
    leases = kubernetes.client.CoordinationV1Api(api)
    leader = LeaderElector(leases, lease_namespace, lease_name, "grove-gitops-gate-lifter-a")
    rival = LeaderElector(leases, lease_namespace, lease_name, "grove-gitops-gate-lifter-b")
    assert leader.try_acquire_or_renew()
    assert leader.try_acquire_or_renew()
    assert not rival.try_acquire_or_renew()
    # The lifter: release every gang; one pod patch conflicts (409) and the pod is re-read.
    server.faults.add(verb="patch", resource="pods", status=409, times=1)
    lifter = Agent(kube, AgentConfig(namespace=watch_namespace, watch_timeout=1, grace=0.0), Registry())
    stop = threading.Event()
    worker = threading.Thread(target=lifter.run, args=(stop,), daemon=True)
    worker.start()
    try:
        assert server.wait_for(lambda: len(_gated(server)) == 4, timeout=20), _gated(server)
        for pod in server.store.list_objects("pods", WATCHED_NAMESPACE):
            if not pod["spec"].get("schedulingGates"):
                server.schedule_pod(WATCHED_NAMESPACE, pod["metadata"]["name"])
        assert server.wait_for(lambda: _gated(server) == [], timeout=20), _gated(server)
        assert server.wait_for(lambda: _initialized(server), timeout=20)
        # Scale-in: a managed pod no PodGang wants is deleted (grace 0 here).
        stray = copy.deepcopy(server.store.list_objects("pods", WATCHED_NAMESPACE)[0])
        stray["metadata"] = {
            "name": "stray-0-abcdefgh",
            "namespace": WATCHED_NAMESPACE,
            "labels": {**stray["metadata"]["labels"], "grove.io/podgang": "none"},
        }
        stray["spec"]["hostname"] = "stray-0"
        stray.pop("status", None)
        ownership.stamp(stray)  # a rendered pod (it carries the render's proof) that no PodGang wants
        server.put_object({"apiVersion": "v1", "kind": "Pod", **stray})  # made by the test, not traced
        assert server.wait_for(
            lambda: all(p["metadata"]["name"] != "stray-0-abcdefgh" for p in server.store.list_objects("pods", WATCHED_NAMESPACE)),
            timeout=20,
        )
        _exercise_autoscaling(server)
    finally:
        stop.set()
        worker.join(timeout=20)
    assert not worker.is_alive()
    # Topology drift: list bindings, GET the external Topology, record a Warning Event.
    results = DriftChecker(kube, Registry()).check()
    assert results.get(("fabric", grove_gitops_backends.kai.NAME)), results
    # Backend gang objects: an existence check of every kind of the enabled backends.
    refs = [ref for ref in _gang_refs() if ref.api_version.split("/", 1)[0] in gang_groups]
    assert refs
    for ref in refs:
        assert kube.object_exists(ref) is False
    leader._leader = True
    leader._release()


SCALE_TARGET = "llama-disagg-0-prefill"
#: Autoscaling grants the example (a KAI scaling group) cannot use: a standalone clique's scale
#: target and base PodGang. (ResourceClaims and the other backends' gang objects are not granted
#: at all: their components are not enabled.) The property test
#: (tests/agent/test_scaling_property.py) drives them through the same Kube calls, every backend.
ELSEWHERE: frozenset[tuple[str, str, str]] = frozenset(
    {("gitops.grove.io", "podcliques", v) for v in ("create", "patch", "delete")}
    | {("gitops.grove.io", "podcliques/status", "patch"), ("scheduler.grove.io", "podgangs", "patch")}
    # No request uses it: the OwnerReferencesPermissionEnforcement admission plugin checks it on
    # every create that names the workload as owner with blockOwnerDeletion. The fake has no such
    # plugin; the real control plane runs it (tests/controlplane/test_agent.py, a scale write).
    | {("gitops.grove.io", "podcliquesets/finalizers", "update")}
)


def _exercise_autoscaling(server: FakeApiServer) -> None:
    """Scale the example's prefill group out and in, move its bounds in Git, then drop it. The
    test's own reads and writes go to the store directly: only the agent's requests are traced."""
    groups, records = "podcliquescalinggroups.gitops.grove.io", "podcliquesets.gitops.grove.io"

    def pods() -> int:
        return len(server.store.list_objects("pods", WATCHED_NAMESPACE))

    def target() -> dict[str, Any] | None:
        return server.get_object(groups, WATCHED_NAMESPACE, SCALE_TARGET)

    def write(resource: str, name: str, change: Any) -> None:  # a scaler's /scale write, or Git's
        obj = server.get_object(resource, WATCHED_NAMESPACE, name)
        assert obj is not None
        change(obj)
        server.put_object(obj)

    assert server.wait_for(lambda: target() is not None, timeout=20)
    before = pods()
    write(groups, SCALE_TARGET, lambda o: o["spec"].update(replicas=3))
    assert server.wait_for(lambda: pods() == before + 4, timeout=20), pods()
    write(groups, SCALE_TARGET, lambda o: o["spec"].update(replicas=2))
    def gangs() -> list[str]:
        return sorted(g["metadata"]["name"] for g in server.store.list_objects("podgangs.scheduler.grove.io",
                                                                              WATCHED_NAMESPACE))

    assert server.wait_for(lambda: pods() == before and len(gangs()) == 2, timeout=20), (
        pods(), before, gangs(), [r for r in server.requests if "prefill-1" in r.path and r.verb == "delete"][:3])
    write(records, "llama-disagg", lambda o: o["spec"]["scaleTargets"][0].update(maxReplicas=5))
    assert server.wait_for(lambda: (target() or {}).get("spec", {}).get("maxReplicas") == 5, timeout=20)
    write(records, "llama-disagg", lambda o: o["spec"].update(scaleTargets=[]))
    assert server.wait_for(lambda: target() is None, timeout=20)


@pytest.mark.parametrize(
    ("overlays", "components", "watch_namespace"),
    [
        ((GATE_LIFTER,), (), None),  # it enables DEFAULT_COMPONENTS itself
        ((NAMESPACED, DRIFT_EVENTS), DEFAULT_COMPONENTS, WATCHED_NAMESPACE),  # enables none
    ],
    ids=["cluster", "namespaced"],
)
def test_every_request_is_allowed_and_every_grant_used(
    overlays: tuple[Path, ...], components: tuple[str, ...], watch_namespace: str | None
) -> None:
    """The examples' workloads with the overlay and the component of the backend they render
    for (KAI): every request allowed, every grant of the install used."""
    require_kubectl()
    objs = _rendered_examples()
    assert _components_needed(objs) == set(DEFAULT_COMPONENTS)
    if components:
        objs_installed = build_with(overlays, components)
    else:
        objs_installed = [o for overlay in overlays for o in build(overlay)]
    deployment = one(objs_installed, "Deployment", "grove-gitops-gate-lifter")
    params = deployment_params(deployment, "gate-lifter")
    assert params["namespace"] == watch_namespace
    authz = Authorizer(
        objs_installed, deployment["metadata"]["namespace"], deployment["spec"]["template"]["spec"]["serviceAccountName"]
    )
    granted = {
        (g, r, v)
        for o in objs_installed
        if o["kind"] in ("Role", "ClusterRole")
        for rule in o["rules"]
        for g in rule["apiGroups"]
        for r in rule["resources"]
        for v in rule["verbs"]
    }
    enabled = LIFTER_PERMISSIONS.union(*(COMPONENT_PERMISSIONS[c] for c in DEFAULT_COMPONENTS))
    assert granted == enabled | LEASE_PERMISSIONS
    gang_groups = {g for c in DEFAULT_COMPONENTS for g, _, _ in COMPONENT_PERMISSIONS[c]}
    with FakeApiServer(namespaces=(*DEFAULT_NAMESPACES, LIFTER_NAMESPACE)) as server:
        _serve_workload_api(server)
        setup = Kube(server.api_client())
        for obj in objs:
            setup.raw("POST", _collection(setup, obj), obj)
        _drifted_binding(setup)
        assert len(_gated(server)) == 12
        server.clear_requests()

        _exercise(server, params["namespace"], params["lease_namespace"], params["lease_name"], gang_groups)
        records = server.requests
        assert not server.internal_errors

    denied, used, discovery = [], set(), set()
    for record in records:
        if is_discovery_path(record.path):
            assert record.verb == "get", record
            discovery.add(record.path)
            continue
        req = parse_resource_path(record.verb, record.path)
        used.add(req.permission)
        if not authz.allows(req):
            denied.append(req)
    assert denied == []
    # Every grant used, the agent's pod delete included (the autoscaling grants once the agent's
    # autoscaling code is in the tree: then this run must exercise it).
    assert used | pending_autoscaling_permissions() | ELSEWHERE == granted
    assert not used & ELSEWHERE - {("scheduler.grove.io", "podgangs", "patch")}  # keep ELSEWHERE honest
    # Discovery is only per group-version (system:discovery covers it), never a resource.
    # (``/api/v1``: the core group's, read by the agent's pod creates above the floor.)
    assert discovery and all(
        (p.startswith("/apis/") and p.count("/") == 3) or p == "/api/v1" for p in discovery
    ), discovery
    # The drift Event went to `default`, the conflicting pod was re-read in the watched namespace.
    events = [r for r in records if r.verb == "create" and "/events" in r.path]
    assert events and all("/namespaces/default/" in r.path for r in events)
    assert any(r.verb == "get" and r.resource == "pods" and r.namespace == WATCHED_NAMESPACE for r in records)
    if watch_namespace:
        # The namespaced lifter never lists or watches across namespaces.
        assert all(
            r.namespace is not None
            for r in records
            if r.verb in ("list", "watch") and r.resource in ("pods", "podgangs")
        )


def test_denied_requests_are_denied() -> None:
    """The authorizer used above is not a rubber stamp."""
    require_kubectl()
    authz = Authorizer(build(NAMESPACED) + build(DRIFT_EVENTS), sa_namespace=WATCHED_NAMESPACE, sa_name=NAMESPACED_SA)
    assert authz.allows(Request("update", "coordination.k8s.io", "leases", WATCHED_NAMESPACE, LEASE_NAME))
    for req in (
        Request("list", "", "pods", None, None),
        Request("get", "", "secrets", WATCHED_NAMESPACE, "x"),
        Request("delete", "", "pods", "team-b", "x"),  # pods delete: the watched namespace only
        Request("deletecollection", "", "pods", WATCHED_NAMESPACE, None),
        Request("delete", "", "services", WATCHED_NAMESPACE, "x"),
        Request("update", "scheduler.grove.io", "podgangs", WATCHED_NAMESPACE, "x"),
        Request("create", "events.k8s.io", "events", "kube-system", None),
        Request("update", "coordination.k8s.io", "leases", WATCHED_NAMESPACE, "someone-else"),
        Request("update", "coordination.k8s.io", "leases", LIFTER_NAMESPACE, LEASE_NAME),
        # No component: no backend's gang objects, no ResourceClaims (issue 31.7).
        Request("get", "scheduling.run.ai", "podgroups", WATCHED_NAMESPACE, "x"),
        Request("create", "scheduling.k8s.io", "workloads", WATCHED_NAMESPACE, None),
        Request("create", "resource.k8s.io", "resourceclaims", WATCHED_NAMESPACE, None),
    ):
        assert not authz.allows(req), req
