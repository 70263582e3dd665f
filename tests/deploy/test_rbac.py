"""Least-privilege RBAC of the gate-lifter: exactly the table in ``helpers.RBAC_TABLE`` (and
docs/deploy.md), tied to the code's calls; the controller has none."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest

import grove_gitops_backends.coscheduling
import grove_gitops_backends.default
import grove_gitops_backends.kai
import grove_gitops_backends.koordinator
import grove_gitops_backends.volcano
import grove_gitops_backends.workload_api
from grove_gitops.agent import drift, kube

from .helpers import (
    ALL_LIFTER_PERMISSIONS,
    AUTOSCALING_PERMISSIONS,
    BACKEND_GANG_RESOURCES,
    CLUSTER_EVENT_NAMESPACE,
    CLUSTER_SCOPED,
    COMPONENT_PERMISSIONS,
    DEFAULT_COMPONENTS,
    DEPLOY_DOC,
    DRIFT_EVENTS,
    GATE_LIFTER,
    GATE_LIFTER_BASE,
    LEASE_NAME,
    LEASE_PERMISSIONS,
    LIFTER_NAMESPACE,
    LIFTER_PERMISSIONS,
    LIFTER_SA,
    NAMESPACED,
    NAMESPACED_POLICIES,
    NAMESPACED_SA,
    POLICIES,
    PROJECT,
    RBAC_TABLE,
    SCALERS,
    WATCHED_NAMESPACE,
    Authorizer,
    Permission,
    Request,
    build,
    build_with,
    component_dir,
    find,
    one,
    pending_autoscaling_permissions,
    pending_day2_permissions,
    rule_permissions,
)

Objects = list[dict[str, Any]]
RBAC_KINDS = ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")
DANGEROUS_VERBS = {"*", "escalate", "bind", "impersonate", "delete", "deletecollection"}
#: The deletes the agent needs: day 2 (it retires, heals and scales in pods) and autoscaling (it
#: deletes what it created above the floor on scale-in: pods, PodGangs, backend gang objects,
#: ResourceClaims, and the scale targets of a replica or workload that left Git). Never the
#: gitops.grove.io PodCliqueSets: Git owns them.
ALLOWED_DANGEROUS = {("", "pods", "delete")} | {p for p in AUTOSCALING_PERMISSIONS if p[2] == "delete"}
SENSITIVE_RESOURCES = {"*", "secrets", "configmaps", "serviceaccounts/token", "pods/exec", "pods/attach", "nodes"}


def _all_rules(objs: Objects) -> list[dict[str, Any]]:
    return [rule for o in objs if o["kind"] in ("Role", "ClusterRole") for rule in o.get("rules") or []]


# -- the cluster-wide overlay ----------------------------------------------------------------------
def test_cluster_role_grants_exactly_the_table(lifter_objs: Objects) -> None:
    """The cluster-wide overlay: the base and the components it enables (KAI, the examples')."""
    role = one(lifter_objs, "ClusterRole", "grove-gitops-gate-lifter")
    assert "aggregationRule" not in role
    assert DEFAULT_COMPONENTS == ("backends/kai-scheduler",)
    assert rule_permissions(role["rules"]) == LIFTER_PERMISSIONS.union(*(COMPONENT_PERMISSIONS[c] for c in DEFAULT_COMPONENTS))
    for rule in role["rules"]:
        assert set(rule) <= {"apiGroups", "resources", "verbs"}, rule  # no nonResourceURLs, no resourceNames


def test_no_wildcards_secrets_or_dangerous_verbs(lifter_objs: Objects, namespaced_objs: Objects) -> None:
    every = sorted(COMPONENT_PERMISSIONS)
    for objs in (lifter_objs, namespaced_objs, build_with([GATE_LIFTER], every), build_with([NAMESPACED], every)):
        rules = _all_rules(objs)
        assert rules
        for rule in rules:
            assert "nonResourceURLs" not in rule, rule
            for key in ("apiGroups", "resources", "verbs", "resourceNames"):
                assert not any("*" in value for value in rule.get(key) or []), rule
            dangerous = {
                (group, resource, verb)
                for group in rule["apiGroups"]
                for resource in rule["resources"]
                for verb in set(rule["verbs"]) & DANGEROUS_VERBS
            }
            assert dangerous <= ALLOWED_DANGEROUS, rule
            assert not set(rule["resources"]) & SENSITIVE_RESOURCES, rule


def test_cluster_role_binding(lifter_objs: Objects) -> None:
    binding = one(lifter_objs, "ClusterRoleBinding")
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "grove-gitops-gate-lifter",
    }
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": LIFTER_SA, "namespace": LIFTER_NAMESPACE}]
    sa = one(lifter_objs, "ServiceAccount", LIFTER_SA)
    assert sa["metadata"]["namespace"] == LIFTER_NAMESPACE


def test_lease_role_is_namespaced_and_named(lifter_objs: Objects) -> None:
    assert not find(lifter_objs, "ClusterRole", "grove-gitops-gate-lifter-leader-election")
    role = one(lifter_objs, "Role", "grove-gitops-gate-lifter-leader-election")
    assert role["metadata"]["namespace"] == LIFTER_NAMESPACE
    assert rule_permissions(role["rules"]) == LEASE_PERMISSIONS
    for rule in role["rules"]:
        if "create" in rule["verbs"]:
            # RBAC cannot match `create` by name (the name is not in the URL): its own rule.
            assert rule["verbs"] == ["create"] and not rule.get("resourceNames"), rule
        else:
            assert rule.get("resourceNames") == [LEASE_NAME], rule
    binding = one(lifter_objs, "RoleBinding", "grove-gitops-gate-lifter-leader-election")
    assert binding["metadata"]["namespace"] == LIFTER_NAMESPACE
    assert binding["roleRef"]["kind"] == "Role" and binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": LIFTER_SA, "namespace": LIFTER_NAMESPACE}]


def test_lease_access_is_limited(lifter_objs: Objects) -> None:
    authz = Authorizer(lifter_objs)
    lease = "coordination.k8s.io"
    assert authz.allows(Request("get", lease, "leases", LIFTER_NAMESPACE, LEASE_NAME))
    assert authz.allows(Request("update", lease, "leases", LIFTER_NAMESPACE, LEASE_NAME))
    assert authz.allows(Request("create", lease, "leases", LIFTER_NAMESPACE, None))
    assert not authz.allows(Request("get", lease, "leases", LIFTER_NAMESPACE, "kube-scheduler"))
    assert not authz.allows(Request("update", lease, "leases", "kube-system", LEASE_NAME))
    assert not authz.allows(Request("create", lease, "leases", "kube-system", None))
    assert not authz.allows(Request("delete", lease, "leases", LIFTER_NAMESPACE, LEASE_NAME))
    assert not authz.allows(Request("list", "", "secrets", LIFTER_NAMESPACE, None))


# -- the namespaced overlay ------------------------------------------------------------------------
def test_namespaced_overlay_splits_the_same_permissions(namespaced_objs: Objects, drift_event_objs: Objects) -> None:
    """The namespaced install (plus its drift-events grant) is the cluster-wide table split by
    scope, everything namespaced in the one namespace the agent runs in."""
    cluster_role = one(namespaced_objs, "ClusterRole", "grove-gitops-gate-lifter-namespaced")
    cluster = rule_permissions(cluster_role["rules"])
    assert cluster == {p for p in LIFTER_PERMISSIONS if (p[0], p[1]) in CLUSTER_SCOPED}
    watched = one(namespaced_objs, "Role", "grove-gitops-gate-lifter")
    assert watched["metadata"]["namespace"] == WATCHED_NAMESPACE
    assert rule_permissions(watched["rules"]) == LIFTER_PERMISSIONS - cluster
    lease = one(namespaced_objs, "Role", "grove-gitops-gate-lifter-leader-election")
    assert lease["metadata"]["namespace"] == WATCHED_NAMESPACE
    assert rule_permissions(lease["rules"]) == LEASE_PERMISSIONS
    events = one(drift_event_objs, "Role", "grove-gitops-gate-lifter-events")
    assert events["metadata"]["namespace"] == CLUSTER_EVENT_NAMESPACE
    assert rule_permissions(events["rules"]) == {("events.k8s.io", "events", "create")}
    assert {o["kind"] for o in drift_event_objs} == {"Role", "RoleBinding"}
    # Every Role is bound to the agent's ServiceAccount, in the agent's namespace, in its own namespace.
    objs = namespaced_objs + drift_event_objs
    assert len(find(objs, "Role")) == 3
    for role in find(objs, "Role"):
        binding = one(objs, "RoleBinding", role["metadata"]["name"])
        assert binding["metadata"]["namespace"] == role["metadata"]["namespace"]
        assert binding["roleRef"] == {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "Role",
            "name": role["metadata"]["name"],
        }
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": NAMESPACED_SA, "namespace": WATCHED_NAMESPACE}]
    crb = one(objs, "ClusterRoleBinding")
    assert crb["subjects"] == [{"kind": "ServiceAccount", "name": NAMESPACED_SA, "namespace": WATCHED_NAMESPACE}]


def test_namespaced_overlay_never_reuses_a_cluster_wide_name(namespaced_objs: Objects, lifter_objs: Objects) -> None:
    """Issue 32.7: installed beside the cluster-wide agent, the namespaced overlay must not rewrite
    (ClusterRole, policies) or re-point (ClusterRoleBinding, policy bindings) any cluster-scoped
    object of the cluster-wide install; only the CRDs, identical in both, are shared."""

    def cluster_scoped(objs: Objects) -> dict[tuple[str, str], dict[str, Any]]:
        return {(o["kind"], o["metadata"]["name"]): o for o in objs if "namespace" not in o["metadata"]}

    narrow_objs = namespaced_objs + build(NAMESPACED_POLICIES)
    wide, narrow = cluster_scoped(lifter_objs), cluster_scoped(narrow_objs)
    shared = set(wide) & set(narrow)
    assert {kind for kind, _ in shared} == {"CustomResourceDefinition"}
    assert all(wide[k] == narrow[k] for k in shared)
    kinds = {kind for kind, _ in narrow}
    assert {"ClusterRole", "ClusterRoleBinding", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} <= kinds
    crb = one(namespaced_objs, "ClusterRoleBinding")
    assert crb["roleRef"]["name"] == one(namespaced_objs, "ClusterRole")["metadata"]["name"]
    policies = {o["metadata"]["name"] for o in find(narrow_objs, "ValidatingAdmissionPolicy")}
    assert {o["spec"]["policyName"] for o in find(narrow_objs, "ValidatingAdmissionPolicyBinding")} == policies
    assert len(policies) == 1


def test_namespaced_overlay_denies_other_namespaces(
    namespaced_objs: Objects, drift_event_objs: Objects, lifter_objs: Objects
) -> None:
    every = sorted(COMPONENT_PERMISSIONS)  # the components' rules land in the Role, namespaced
    narrow = Authorizer(build_with([NAMESPACED], every) + drift_event_objs, sa_namespace=WATCHED_NAMESPACE, sa_name=NAMESPACED_SA)
    wide = Authorizer(build_with([GATE_LIFTER], every))
    for group, resource, verb in sorted(ALL_LIFTER_PERMISSIONS):
        if (group, resource) in CLUSTER_SCOPED:
            req = Request(verb, group, resource, None, None if verb == "list" else "x")
            assert narrow.allows(req) and wide.allows(req), req
            continue
        name = None if verb in ("list", "watch", "create") else "x"
        inside = Request(verb, group, resource, WATCHED_NAMESPACE, name)
        outside = Request(verb, group, resource, "team-b", name)
        assert narrow.allows(inside) and wide.allows(inside), inside
        assert wide.allows(outside), outside
        assert not narrow.allows(outside), outside
        if verb in ("list", "watch"):
            everywhere = Request(verb, group, resource, None, None)
            assert wide.allows(everywhere) and not narrow.allows(everywhere), everywhere
    drift_event = Request("create", "events.k8s.io", "events", CLUSTER_EVENT_NAMESPACE, None)
    assert narrow.allows(drift_event) and wide.allows(drift_event)
    # Without the drift-events grant the namespaced agent reaches `default` not at all.
    assert not Authorizer(namespaced_objs, sa_namespace=WATCHED_NAMESPACE, sa_name=NAMESPACED_SA).allows(drift_event)


# -- the controller --------------------------------------------------------------------------------
def test_controller_has_no_rbac(controller_objs: Objects) -> None:
    assert not [o for o in controller_objs if o["kind"] in RBAC_KINDS]
    sa = one(controller_objs, "ServiceAccount")
    assert sa["automountServiceAccountToken"] is False
    assert not Authorizer(controller_objs, sa["metadata"]["namespace"], sa["metadata"]["name"]).allows(
        Request("get", "", "pods", "grove-gitops", "x")
    )


# -- the table, the docs and the code --------------------------------------------------------------
def _doc_table() -> set[tuple[str, str, str, str]]:
    text = DEPLOY_DOC.read_text()
    start, end = text.index("<!-- rbac-table -->"), text.index("<!-- /rbac-table -->")
    rows = set()
    for line in text[start:end].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 5 or not cells[1].startswith("`"):
            continue
        group = "" if cells[0] == "core" else cells[0].strip("`")
        component = ""
        if cells[3].startswith("component "):
            binding, component = "ClusterRole", cells[3].removeprefix("component ").strip("`")
        else:
            binding = "Role" if cells[3].startswith("Role") else cells[3]
        rows.add((group, cells[1].strip("`"), cells[2].strip("`"), binding, component))
    return rows


def test_docs_show_the_same_table() -> None:
    assert _doc_table() == {(r.group, r.resource, r.verb, r.binding, r.component) for r in RBAC_TABLE}
    assert len(RBAC_TABLE) == len({r.permission for r in RBAC_TABLE})


def test_gang_and_topology_groups_come_from_the_backends() -> None:
    """The backend kinds the lifter may GET are the backends' own API groups."""

    def group(api_version: str) -> str:
        return api_version.split("/", 1)[0]

    own = {"gitops.grove.io", "resource.k8s.io"}  # our CRDs, and the claims of scaled replicas
    gang_gets = {
        (g, r)
        for g, r, v in ALL_LIFTER_PERMISSIONS
        if v == "get" and r != "pods" and (g, r) not in CLUSTER_SCOPED and g not in own and g != kube.PODGANG_GROUP
    }
    assert gang_gets == BACKEND_GANG_RESOURCES
    wapi = grove_gitops_backends.workload_api.GROUP
    assert gang_gets == {
        (group(grove_gitops_backends.kai.PODGROUP_API_VERSION), "podgroups"),
        (group(grove_gitops_backends.volcano.PODGROUP_API_VERSION), "podgroups"),
        (group(grove_gitops_backends.koordinator.PODGROUP_API_VERSION), "podgroups"),
        (group(grove_gitops_backends.coscheduling.API_VERSION), "podgroups"),
        (wapi, "workloads"),
        (wapi, "podgroups"),
        (group(grove_gitops_backends.workload_api.COMPOSITE_API), "compositepodgroups"),
    }
    kai_topology = (group(grove_gitops_backends.kai.TOPOLOGY_API_VERSION), "topologies", "get")
    assert kai_topology in COMPONENT_PERMISSIONS["backends/kai-scheduler"]
    assert (kube.PODGANG_GROUP, kube.PODGANG_PLURAL, "list") in LIFTER_PERMISSIONS
    assert (kube.PODGANG_GROUP, f"{kube.PODGANG_PLURAL}/status", "patch") in LIFTER_PERMISSIONS
    assert drift.EVENT_NAMESPACE == CLUSTER_EVENT_NAMESPACE


#: Every API client method the gate-lifter touches, and what RBAC it needs. A method missing here
#: fails test_every_client_call_is_in_the_table: review the RBAC before adding it.
GANG_GETS = frozenset(p for p in ALL_LIFTER_PERMISSIONS if p[2] == "get" and (p[0], p[1]) in BACKEND_GANG_RESOURCES)
CLIENT_CALLS: dict[str, frozenset[Permission]] = {
    "list_namespaced_pod": frozenset({("", "pods", "list"), ("", "pods", "watch")}),
    "list_pod_for_all_namespaces": frozenset({("", "pods", "list"), ("", "pods", "watch")}),
    "read_namespaced_pod": frozenset({("", "pods", "get")}),
    "patch_namespaced_pod": frozenset({("", "pods", "patch")}),
    "delete_namespaced_pod": frozenset({("", "pods", "delete")}),
    "list_namespaced_custom_object": frozenset(
        {("scheduler.grove.io", "podgangs", "list"), ("scheduler.grove.io", "podgangs", "watch")}
        # Kube.watch_objects: the gitops.grove.io records and scale targets
        | {("gitops.grove.io", r, "watch") for r in ("podcliquesets", "podcliquescalinggroups", "podcliques")}
    ),
    "list_cluster_custom_object": frozenset(
        {("scheduler.grove.io", "podgangs", "list"), ("scheduler.grove.io", "podgangs", "watch")}
        # Kube.watch_objects: the gitops.grove.io records and scale targets
        | {("gitops.grove.io", r, "watch") for r in ("podcliquesets", "podcliquescalinggroups", "podcliques")}
    ),
    "patch_namespaced_custom_object_status": frozenset({("scheduler.grove.io", "podgangs/status", "patch")}),
    "get_namespaced_custom_object": GANG_GETS,
    "get_cluster_custom_object": frozenset({("kai.scheduler", "topologies", "get")}),
    "read_namespaced_lease": frozenset({("coordination.k8s.io", "leases", "get")}),
    "create_namespaced_lease": frozenset({("coordination.k8s.io", "leases", "create")}),
    "replace_namespaced_lease": frozenset({("coordination.k8s.io", "leases", "update")}),
}
#: ``Kube.raw`` call sites: (method, constant start of the path) → RBAC. Discovery (a path held in a
#: variable) needs none beyond system:discovery; core-group gang objects (``/api/``) need none
#: because no backend renders one (test_gang_and_topology_groups_come_from_the_backends).
RAW_CALLS: dict[tuple[str, str], frozenset[Permission]] = {
    ("GET", "/apis/grove.io/v1alpha1/clustertopologybindings"): frozenset(
        {("grove.io", "clustertopologybindings", "list")}
    ),
    ("POST", "/apis/events.k8s.io/v1/namespaces/"): frozenset({("events.k8s.io", "events", "create")}),
    ("DELETE", "/api/v1/namespaces/"): frozenset({("", "pods", "delete")}),
    # Kube.patch_pod_json (the gate's removal) and Kube.patch_podgang_status (Initialized)
    ("PATCH", "/api/v1/namespaces/"): frozenset({("", "pods", "patch")}),
    ("PATCH", "/apis/scheduler.grove.io/v1alpha1/namespaces/"): frozenset(
        {("scheduler.grove.io", "podgangs/status", "patch")}
    ),
    # a variable path: discovery, or a scaled PodGang read afresh before a scale-in (autoscaling)
    ("GET", "<variable>"): frozenset({("scheduler.grove.io", "podgangs", "get")}),
    ("GET", "/api/"): frozenset(),
    # Kube.create / list_objects / patch_object / delete_object (autoscaling, docs/autoscaling.md):
    # the path is built from discovery, so the table names every kind the agent writes that way.
    # Each created object names its workload as owner with blockOwnerDeletion: under
    # OwnerReferencesPermissionEnforcement that needs UPDATE of the owner's finalizers.
    ("POST", "<variable>"): frozenset(p for p in AUTOSCALING_PERMISSIONS if p[2] == "create")
    | {("gitops.grove.io", "podcliquesets/finalizers", "update")},
    # Kube.object_exists (a backend's gang objects, ``{api_root}/namespaces/...``) and the lists
    ("GET", ""): GANG_GETS | frozenset(
        {(g, r, "list") for g, r in BACKEND_GANG_RESOURCES}
        | {("resource.k8s.io", "resourceclaims", "list")}
        | {("gitops.grove.io", r, "list") for r in ("podcliquesets", "podcliquescalinggroups", "podcliques")}
    ),
    ("PATCH", ""): frozenset(p for p in AUTOSCALING_PERMISSIONS if p[2] == "patch"),
    ("DELETE", "<variable>"): frozenset(p for p in AUTOSCALING_PERMISSIONS if p[2] == "delete"),
}
CLIENT_OBJECTS = {"core", "custom", "events", "api"}


def _lifter_sources() -> dict[Path, ast.Module]:
    """The in-cluster process: the agent package."""
    folder = PROJECT / "grove_gitops" / "agent"
    return {p: ast.parse(p.read_text(), str(p)) for p in sorted(folder.rglob("*.py"))}


def _client_methods() -> set[str]:
    """Attributes read from ``self.core`` / ``self.custom`` / ``self.events`` / ``self.api``."""
    found = set()
    for tree in _lifter_sources().values():
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Attribute)
                and node.value.attr in CLIENT_OBJECTS
                and isinstance(node.value.value, ast.Name)
                and node.value.value.id == "self"
            ):
                found.add(node.attr)
    return found


def _raw_calls() -> set[tuple[str, str]]:
    found = set()
    for tree in _lifter_sources().values():
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "raw"):
                continue
            method, path = node.args[0], node.args[1]
            assert isinstance(method, ast.Constant), ast.dump(node)
            if isinstance(path, ast.Constant):
                prefix = str(path.value)
            elif isinstance(path, ast.JoinedStr):
                prefix = "".join(str(v.value) for v in path.values[:1] if isinstance(v, ast.Constant))
            else:
                prefix = "<variable>"
            found.add((str(method.value), prefix))
    return found


def test_every_client_call_is_in_the_table() -> None:
    methods, raws = _client_methods(), _raw_calls()
    assert methods, "no client calls found: did grove_gitops/agent move?"
    assert methods <= set(CLIENT_CALLS), f"review RBAC for new API calls: {sorted(methods - set(CLIENT_CALLS))}"
    assert raws <= set(RAW_CALLS), f"review RBAC for new raw requests: {sorted(raws - set(RAW_CALLS))}"
    needed = set().union(*(CLIENT_CALLS[m] for m in methods), *(RAW_CALLS[r] for r in raws))
    # Nothing the code needs is missing, and nothing is granted that no call needs (the agent's
    # pods delete counts as needed only once grove_gitops/agent is in the tree, the autoscaling
    # grants once the agent's autoscaling code is).
    pending = pending_day2_permissions() | pending_autoscaling_permissions()
    assert needed | pending == ALL_LIFTER_PERMISSIONS | LEASE_PERMISSIONS


def test_podgangs_are_never_fetched_one_by_one() -> None:
    """The generated client's single-object read of custom resources is Kube.get_cluster_object
    (topologies) only; Kube.object_exists (backend gang objects) and the one PodGang read (the
    scaler's fresh look before a scale-in resets Initialized) are Kube.raw GETs, in RAW_CALLS."""
    source = (PROJECT / "grove_gitops" / "agent" / "kube.py").read_text()
    tree = ast.parse(source)
    readers = {
        fn.name
        for fn in ast.walk(tree)
        if isinstance(fn, ast.FunctionDef)
        for node in ast.walk(fn)
        if isinstance(node, ast.Attribute) and re.fullmatch(r"get_(namespaced|cluster)_custom_object", node.attr)
    }
    assert readers == {"get_cluster_object"}


# -- autoscaling (issue 23) ------------------------------------------------------------------------
def test_autoscaling_grants(lifter_objs: Objects) -> None:
    """What the agent needs to materialise replicas above the floor, and nothing that writes a count."""
    authz = Authorizer(lifter_objs)
    ns, gitops = WATCHED_NAMESPACE, "gitops.grove.io"
    for verb in ("list", "watch"):
        assert authz.allows(Request(verb, gitops, "podcliquesets", ns, None))
    assert not authz.allows(Request("get", gitops, "podcliquesets", ns, "x"))  # the watch cache answers
    assert authz.allows(Request("patch", gitops, "podcliquesets/status", ns, "x"))
    for resource in ("podcliquescalinggroups", "podcliques"):
        for verb in ("list", "watch", "create", "patch", "delete"):
            assert authz.allows(Request(verb, gitops, resource, ns, "x")), (resource, verb)
        assert authz.allows(Request("patch", gitops, f"{resource}/status", ns, "x"))
        # Scalers write counts through /scale; the agent never does.
        for verb in ("get", "update", "patch"):
            assert not authz.allows(Request(verb, gitops, f"{resource}/scale", ns, "x")), (resource, verb)
        assert not authz.allows(Request("update", gitops, resource, ns, "x"))
    for verb in ("create", "update", "patch", "delete"):
        assert not authz.allows(Request(verb, gitops, "podcliquesets", ns, "x")), f"Git owns PodCliqueSets: {verb}"
    assert not authz.allows(Request("update", gitops, "podcliquesets/status", ns, "x"))
    for verb in ("create", "patch", "delete"):
        assert authz.allows(Request(verb, "scheduler.grove.io", "podgangs", ns, "x"))
    assert authz.allows(Request("create", "", "pods", ns, None))
    for group, resource in sorted(BACKEND_GANG_RESOURCES):
        granted = {v for g, r, v in ALL_LIFTER_PERMISSIONS if (g, r) == (group, resource)}
        assert granted == {"get", "list", "create", "delete"}, (group, resource)
    granted = {v for g, r, v in ALL_LIFTER_PERMISSIONS if (g, r) == ("resource.k8s.io", "resourceclaims")}
    assert granted == {"list", "create", "delete"}
    assert not authz.allows(Request("get", "resource.k8s.io", "resourceclaimtemplates", ns, "x"))


def test_no_wildcard_subresources_anywhere(lifter_objs: Objects, namespaced_objs: Objects) -> None:
    for rule in _all_rules(lifter_objs) + _all_rules(namespaced_objs):
        assert not any(r.endswith("/scale") or r.endswith("/*") for r in rule["resources"]), rule


def test_scaler_example_grants_scale_and_reads_only() -> None:
    """overlays/scalers: a planner may read and scale the targets of its namespace, nothing else."""
    objs = build(SCALERS)
    binding = one(objs, "RoleBinding")
    subject = binding["subjects"][0]
    authz = Authorizer(objs, subject["namespace"], subject["name"])
    ns, other, gitops = binding["metadata"]["namespace"], "team-b", "gitops.grove.io"
    for resource in ("podcliquescalinggroups", "podcliques"):
        for verb in ("get", "update", "patch"):
            assert authz.allows(Request(verb, gitops, f"{resource}/scale", ns, "x")), (resource, verb)
            assert not authz.allows(Request(verb, gitops, f"{resource}/scale", other, "x")), (resource, verb)
        for verb in ("get", "list", "watch"):
            assert authz.allows(Request(verb, gitops, resource, ns, "x"))
        for verb in ("create", "update", "patch", "delete"):
            assert not authz.allows(Request(verb, gitops, resource, ns, "x")), (resource, verb)
        assert not authz.allows(Request("patch", gitops, f"{resource}/status", ns, "x"))
    assert authz.allows(Request("get", gitops, "podcliquesets", ns, "x"))
    assert not authz.allows(Request("patch", gitops, "podcliquesets", ns, "x"))
    assert not authz.allows(Request("update", "grove.io", "podcliquescalinggroups/scale", ns, "x"))
    assert not authz.allows(Request("patch", "", "pods", ns, "x"))
    role = one(objs, "ClusterRole", binding["roleRef"]["name"])
    assert rule_permissions(role["rules"]) == {
        (gitops, r, v)
        for r, verbs in (
            ("podcliquescalinggroups/scale", ("get", "update", "patch")),
            ("podcliques/scale", ("get", "update", "patch")),
            ("podcliquescalinggroups", ("get", "list", "watch")),
            ("podcliques", ("get", "list", "watch")),
            ("podcliquesets", ("get", "list", "watch")),
        )
        for v in verbs
    }


# -- scheduler backends and claims: components (issue 31.7) --------------------------------------
def _group(api_version: str) -> str:
    return api_version.split("/", 1)[0]


def _backend_components() -> dict[str, frozenset[tuple[str, str]]]:
    """Each backend that renders gang objects: its profile name (the component's directory) and
    the (group, resource) of those objects, from the backends' own constants."""
    wapi = grove_gitops_backends.workload_api
    return {
        grove_gitops_backends.kai.KaiBackend.name: frozenset({(_group(grove_gitops_backends.kai.PODGROUP_API_VERSION), "podgroups")}),
        grove_gitops_backends.volcano.VolcanoBackend.name: frozenset({(_group(grove_gitops_backends.volcano.PODGROUP_API_VERSION), "podgroups")}),
        grove_gitops_backends.koordinator.KoordinatorBackend.name: frozenset({(_group(grove_gitops_backends.koordinator.PODGROUP_API_VERSION), "podgroups")}),
        grove_gitops_backends.coscheduling.CoschedulingBackend.name: frozenset({(_group(grove_gitops_backends.coscheduling.API_VERSION), "podgroups")}),
        grove_gitops_backends.default.DefaultSchedulerBackend.name: frozenset(
            {(wapi.GROUP, "workloads"), (wapi.GROUP, "podgroups"), (_group(wapi.COMPOSITE_API), "compositepodgroups")}
        ),
    }


GANG_VERBS = ("get", "list", "create", "delete")
CLAIMS = frozenset({("resource.k8s.io", "resourceclaims", v) for v in ("list", "create", "delete")})


def _expected_component(component: str) -> frozenset[Permission]:
    if component == "claims":
        return CLAIMS
    profile = component.removeprefix("backends/")
    extra = set()
    if profile == grove_gitops_backends.kai.NAME:  # the drift check's GET of an external KAI Topology
        extra.add((_group(grove_gitops_backends.kai.TOPOLOGY_API_VERSION), "topologies", "get"))
    return frozenset({(g, r, v) for g, r in _backend_components()[profile] for v in GANG_VERBS} | extra)


def _gang_or_claim(p: Permission) -> bool:
    return (p[0], p[1]) in BACKEND_GANG_RESOURCES or p[0] in {"resource.k8s.io", "kai.scheduler"}


def test_base_grants_no_gang_objects_or_claims() -> None:
    """The base (and the namespaced overlay without components) grants no scheduler backend's
    kinds and no ResourceClaims: those come only with the component of an enabled backend."""
    base = build(GATE_LIFTER_BASE) + build(POLICIES)
    assert rule_permissions(one(base, "ClusterRole", "grove-gitops-gate-lifter")["rules"]) == LIFTER_PERMISSIONS
    namespaced = build(NAMESPACED)
    for objs in (base, namespaced):
        granted = set().union(*(rule_permissions(o["rules"]) for o in find(objs, "ClusterRole") + find(objs, "Role")))
        assert granted and not {p for p in granted if _gang_or_claim(p)}, sorted(p for p in granted if _gang_or_claim(p))
    assert not {p for p in LIFTER_PERMISSIONS if _gang_or_claim(p)}


def test_every_backend_with_gang_objects_has_its_component() -> None:
    """One component per backend that renders gang objects, named after its profile, plus claims;
    together they are every gang and claim grant of the table."""
    expected = {f"backends/{name}" for name in _backend_components()} | {"claims"}
    assert set(COMPONENT_PERMISSIONS) == expected
    on_disk = {str(p.parent.relative_to(GATE_LIFTER)) for p in GATE_LIFTER.glob("backends/*/kustomization.yaml")}
    assert on_disk | {"claims"} == expected and (component_dir("claims") / "kustomization.yaml").is_file()
    assert {(g, r) for g, r, _ in ALL_LIFTER_PERMISSIONS - LIFTER_PERMISSIONS} == (
        set(BACKEND_GANG_RESOURCES) | {("resource.k8s.io", "resourceclaims"), ("kai.scheduler", "topologies")}
    )
    for component in sorted(expected):
        text = (component_dir(component) / "kustomization.yaml").read_text()
        assert "kind: Component" in text and "kustomize.config.k8s.io/v1alpha1" in text, component


@pytest.mark.parametrize("component", sorted(COMPONENT_PERMISSIONS))
def test_each_component_grants_exactly_its_backend(component: str, drift_event_objs: Objects) -> None:
    """Cluster-wide: the component adds exactly its backend's kinds to the ClusterRole. Namespaced:
    its namespaced kinds to the Role in the watched namespace, its cluster-scoped reads (the KAI
    Topology) to the namespaced ClusterRole, which keeps cluster-scoped reads only; nothing else
    changes (a target a build lacks is skipped)."""
    expected = _expected_component(component)
    assert COMPONENT_PERMISSIONS[component] == expected
    plain = build(GATE_LIFTER_BASE) + build(POLICIES)
    wide = build_with([GATE_LIFTER_BASE, POLICIES], [component])
    role = one(wide, "ClusterRole", "grove-gitops-gate-lifter")
    assert rule_permissions(role["rules"]) == LIFTER_PERMISSIONS | expected
    others = [o for o in wide if o["kind"] != "ClusterRole"]
    assert others == [o for o in plain if o["kind"] != "ClusterRole"]

    base_ns = build(NAMESPACED)
    narrow = build_with([NAMESPACED], [component])
    cluster = {p for p in expected if (p[0], p[1]) in CLUSTER_SCOPED}
    cluster_role = one(narrow, "ClusterRole", "grove-gitops-gate-lifter-namespaced")
    granted_cluster = rule_permissions(cluster_role["rules"])
    assert granted_cluster == rule_permissions(one(base_ns, "ClusterRole")["rules"]) | cluster
    assert all((p[0], p[1]) in CLUSTER_SCOPED for p in granted_cluster), granted_cluster
    watched = one(narrow, "Role", "grove-gitops-gate-lifter")
    assert rule_permissions(watched["rules"]) == rule_permissions(one(base_ns, "Role", "grove-gitops-gate-lifter")["rules"]) | (expected - cluster)
    assert one(narrow, "Role", "grove-gitops-gate-lifter-leader-election") == one(
        base_ns, "Role", "grove-gitops-gate-lifter-leader-election"
    )
    # Authorized where the agent runs, never outside its namespace.
    authz = Authorizer(narrow + drift_event_objs, sa_namespace=WATCHED_NAMESPACE, sa_name=NAMESPACED_SA)
    for group, resource, verb in sorted(expected - cluster):
        assert authz.allows(Request(verb, group, resource, WATCHED_NAMESPACE, "x"))
        assert not authz.allows(Request(verb, group, resource, "team-b", "x"))
    for group, resource, verb in sorted(cluster):
        assert authz.allows(Request(verb, group, resource, None, "x"))


def test_components_add_up_without_touching_the_namespaced_cluster_role() -> None:
    """Every component at once: the cluster-wide ClusterRole grants the whole table; the
    namespaced ClusterRole still holds cluster-scoped reads only."""
    every = sorted(COMPONENT_PERMISSIONS)
    wide = build_with([GATE_LIFTER_BASE, POLICIES], every)
    assert rule_permissions(one(wide, "ClusterRole")["rules"]) == ALL_LIFTER_PERMISSIONS
    narrow = build_with([NAMESPACED, DRIFT_EVENTS], every)
    cluster = rule_permissions(one(narrow, "ClusterRole")["rules"])
    assert cluster == {p for p in ALL_LIFTER_PERMISSIONS if (p[0], p[1]) in CLUSTER_SCOPED}
    assert rule_permissions(one(narrow, "Role", "grove-gitops-gate-lifter")["rules"]) == ALL_LIFTER_PERMISSIONS - cluster
