"""Helpers for the deployment tests (``overlays/gate-lifter``, ``overlays/controller``, ``Dockerfile``).

* :data:`LIFTER_PERMISSIONS` / :data:`LEASE_PERMISSIONS`: the least-privilege table, one row per
  (API group, resource, verb) with the call that needs it. ``docs/deploy.md`` shows the same table
  (a test keeps the two equal) and the manifests must grant exactly this.
* :class:`Authorizer`: Kubernetes RBAC evaluation over built manifests (ClusterRole/Role rules reached
  through bindings of one ServiceAccount), enough to ask "would this request be allowed?".
* :func:`dockerfile_stages` and :class:`DockerIgnore`: a static reading of the Dockerfile and of
  ``.dockerignore`` with Docker's rules (line continuations, last matching pattern wins, a pattern
  that matches a parent directory matches everything below it).
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

PROJECT = Path(__file__).resolve().parents[2]
OVERLAYS = PROJECT / "overlays"
GATE_LIFTER = OVERLAYS / "gate-lifter"
GATE_LIFTER_BASE = GATE_LIFTER / "base"
NAMESPACED = GATE_LIFTER / "namespaced"
DRIFT_EVENTS = GATE_LIFTER / "drift-events"
POLICIES = GATE_LIFTER / "policies"
NAMESPACED_POLICIES = GATE_LIFTER / "namespaced-policies"
CONTROLLER = OVERLAYS / "controller"
CRDS = OVERLAYS / "crds"
SCALERS = OVERLAYS / "scalers"
DOCKERFILE = PROJECT / "Dockerfile"
DOCKERIGNORE = PROJECT / ".dockerignore"
DEPLOY_DOC = PROJECT / "docs" / "deploy.md"

#: Every overlay a user applies, by the path they pass to ``kubectl apply -k``.
OVERLAY_DIRS = {
    "gate-lifter": GATE_LIFTER,
    "gate-lifter/base": GATE_LIFTER_BASE,
    "gate-lifter/namespaced": NAMESPACED,
    "gate-lifter/drift-events": DRIFT_EVENTS,
    "gate-lifter/policies": POLICIES,
    "gate-lifter/namespaced-policies": NAMESPACED_POLICIES,
    "controller": CONTROLLER,
    "crds": CRDS,
    "scalers": SCALERS,
}
KUBE_VERSIONS = ("1.31", "1.32", "1.33", "1.34", "1.35", "1.36", "1.37")

LIFTER_NAMESPACE = "grove-gitops"
LIFTER_SA = "grove-gitops-gate-lifter"
#: The namespaced overlay's agent: an identity the cluster-wide pod policy does not judge.
NAMESPACED_SA = "grove-gitops-gate-lifter-namespaced"
LEASE_NAME = "grove-gitops-gate-lifter"
#: The namespace overlays/gate-lifter/namespaced runs in and watches (its kustomization's
#: ``namespace:``; the namespace of examples/).
WATCHED_NAMESPACE = "inference"
#: Where Events about cluster-scoped objects go (grove_gitops/agent/drift.py EVENT_NAMESPACE).
CLUSTER_EVENT_NAMESPACE = "default"

Permission = tuple[str, str, str]  # (apiGroup, resource, verb); "" is the core group


@dataclass(frozen=True)
class Row:
    """One least-privilege grant and the code that needs it."""

    group: str
    resource: str
    verb: str
    binding: str  # "ClusterRole" (the lifter's watch scope) or "Role" (the lease namespace)
    why: str
    #: "" for the base; else the kustomize Component under overlays/gate-lifter that grants it
    #: ("backends/<profile name>" for a scheduler backend's rules, "claims" for ResourceClaims).
    component: str = ""

    @property
    def permission(self) -> Permission:
        return (self.group, self.resource, self.verb)


_G = "grove_gitops/agent/"
_S = "grove_gitops/agent autoscaling (docs/autoscaling.md): "
#: The table. ``why`` names the call; docs/deploy.md repeats it for readers.
RBAC_TABLE: tuple[Row, ...] = (
    Row(
        "",
        "pods",
        "get",
        "ClusterRole",
        f"{_G}kube.py Kube.read_pod: re-read after a 409 / failed test op in Executor.ungate",
    ),
    Row("", "pods", "list", "ClusterRole", f"{_G}kube.py Kube.list_pods (managed-by label selector)"),
    Row("", "pods", "watch", "ClusterRole", f"{_G}kube.py Kube.watch_pods"),
    Row("", "pods", "patch", "ClusterRole", f"{_G}kube.py Kube.patch_pod_json: JSON patch test+remove of the gate"),
    Row(
        "",
        "pods",
        "delete",
        "ClusterRole",
        "grove_gitops/agent: DELETE with preconditions.uid of a managed pod (rolling retire, Failed pod, "
        "gang termination, unwanted pod after the grace period; docs/day2.md)",
    ),
    Row("scheduler.grove.io", "podgangs", "list", "ClusterRole", f"{_G}kube.py Kube.list_podgangs"),
    Row("scheduler.grove.io", "podgangs", "watch", "ClusterRole", f"{_G}kube.py Kube.watch_podgangs"),
    Row(
        "scheduler.grove.io",
        "podgangs/status",
        "patch",
        "ClusterRole",
        f"{_G}kube.py Kube.patch_podgang_status: merge patch of Initialized",
    ),
    Row("scheduling.run.ai", "podgroups", "get", "ClusterRole", f"{_G}kube.py Kube.object_exists (KAI gang objects)", component="backends/kai-scheduler"),
    Row(
        "scheduling.volcano.sh",
        "podgroups",
        "get",
        "ClusterRole",
        f"{_G}kube.py Kube.object_exists (Volcano gang objects)",
        component="backends/volcano",
    ),
    Row(
        "scheduling.sigs.k8s.io",
        "podgroups",
        "get",
        "ClusterRole",
        f"{_G}kube.py Kube.object_exists (Koordinator gang objects)",
        component="backends/koord-scheduler",
    ),
    Row(
        "scheduling.x-k8s.io",
        "podgroups",
        "get",
        "ClusterRole",
        f"{_G}kube.py Kube.object_exists (coscheduling gang objects)",
        component="backends/scheduler-plugins-scheduler",
    ),
    Row(
        "scheduling.k8s.io",
        "workloads",
        "get",
        "ClusterRole",
        f"{_G}kube.py Kube.object_exists (Workload API gang objects)",
        component="backends/default-scheduler",
    ),
    Row(
        "scheduling.k8s.io",
        "podgroups",
        "get",
        "ClusterRole",
        f"{_G}kube.py Kube.object_exists (Workload API gang objects)",
        component="backends/default-scheduler",
    ),
    Row(
        "scheduling.k8s.io",
        "compositepodgroups",
        "get",
        "ClusterRole",
        f"{_G}kube.py Kube.object_exists (Workload API gang objects)",
        component="backends/default-scheduler",
    ),
    Row(
        "grove.io",
        "clustertopologybindings",
        "list",
        "ClusterRole",
        f"{_G}drift.py DriftChecker.check: GET the collection",
    ),
    Row(
        "kai.scheduler",
        "topologies",
        "get",
        "ClusterRole",
        f"{_G}kube.py Kube.get_cluster_object (external KAI Topology)",
        component="backends/kai-scheduler",
    ),
    Row("events.k8s.io", "events", "create", "ClusterRole", f"{_G}kube.py Kube.emit_event: POST a Warning Event"),
    Row("", "pods", "create", "ClusterRole", f"{_S}POST the pods of replicas above the floor Git renders"),
    Row("scheduler.grove.io", "podgangs", "get", "ClusterRole", f"{_S}read a scaled PodGang afresh before a scale-in resets its Initialized"),
    Row("scheduler.grove.io", "podgangs", "create", "ClusterRole", f"{_S}POST the PodGang of a scaled gang"),
    Row("scheduler.grove.io", "podgangs", "patch", "ClusterRole", f"{_S}a base PodGang whose podReferences depend on a standalone clique's live count"),
    Row("scheduler.grove.io", "podgangs", "delete", "ClusterRole", f"{_S}a scaled PodGang on scale-in, after its pods"),
    Row("scheduling.run.ai", "podgroups", "list", "ClusterRole", f"{_S}list a workload's gang objects (those it owns, after a restart)", component="backends/kai-scheduler"),
    Row("scheduling.run.ai", "podgroups", "create", "ClusterRole", f"{_S}POST the KAI gang objects of a scaled gang", component="backends/kai-scheduler"),
    Row("scheduling.run.ai", "podgroups", "delete", "ClusterRole", f"{_S}the KAI gang objects of a scaled gang on scale-in, after its PodGang", component="backends/kai-scheduler"),
    Row("scheduling.volcano.sh", "podgroups", "list", "ClusterRole", f"{_S}list a workload's gang objects (those it owns, after a restart)", component="backends/volcano"),
    Row("scheduling.volcano.sh", "podgroups", "create", "ClusterRole", f"{_S}POST the Volcano gang objects of a scaled gang", component="backends/volcano"),
    Row("scheduling.volcano.sh", "podgroups", "delete", "ClusterRole", f"{_S}the Volcano gang objects of a scaled gang on scale-in, after its PodGang", component="backends/volcano"),
    Row("scheduling.sigs.k8s.io", "podgroups", "list", "ClusterRole", f"{_S}list a workload's gang objects (those it owns, after a restart)", component="backends/koord-scheduler"),
    Row("scheduling.sigs.k8s.io", "podgroups", "create", "ClusterRole", f"{_S}POST the Koordinator gang objects of a scaled gang", component="backends/koord-scheduler"),
    Row("scheduling.sigs.k8s.io", "podgroups", "delete", "ClusterRole", f"{_S}the Koordinator gang objects of a scaled gang on scale-in, after its PodGang", component="backends/koord-scheduler"),
    Row("scheduling.x-k8s.io", "podgroups", "list", "ClusterRole", f"{_S}list a workload's gang objects (those it owns, after a restart)", component="backends/scheduler-plugins-scheduler"),
    Row("scheduling.x-k8s.io", "podgroups", "create", "ClusterRole", f"{_S}POST the coscheduling gang objects of a scaled gang", component="backends/scheduler-plugins-scheduler"),
    Row("scheduling.x-k8s.io", "podgroups", "delete", "ClusterRole", f"{_S}the coscheduling gang objects of a scaled gang on scale-in, after its PodGang", component="backends/scheduler-plugins-scheduler"),
    Row("scheduling.k8s.io", "workloads", "list", "ClusterRole", f"{_S}list a workload's gang objects (those it owns, after a restart)", component="backends/default-scheduler"),
    Row("scheduling.k8s.io", "workloads", "create", "ClusterRole", f"{_S}POST the Workload API gang objects of a scaled gang", component="backends/default-scheduler"),
    Row("scheduling.k8s.io", "workloads", "delete", "ClusterRole", f"{_S}the Workload API gang objects of a scaled gang on scale-in, after its PodGang", component="backends/default-scheduler"),
    Row("scheduling.k8s.io", "podgroups", "list", "ClusterRole", f"{_S}list a workload's gang objects (those it owns, after a restart)", component="backends/default-scheduler"),
    Row("scheduling.k8s.io", "podgroups", "create", "ClusterRole", f"{_S}POST the Workload API gang objects of a scaled gang", component="backends/default-scheduler"),
    Row("scheduling.k8s.io", "podgroups", "delete", "ClusterRole", f"{_S}the Workload API gang objects of a scaled gang on scale-in, after its PodGang", component="backends/default-scheduler"),
    Row("scheduling.k8s.io", "compositepodgroups", "list", "ClusterRole", f"{_S}list a workload's gang objects (those it owns, after a restart)", component="backends/default-scheduler"),
    Row("scheduling.k8s.io", "compositepodgroups", "create", "ClusterRole", f"{_S}POST the Workload API gang objects of a scaled gang", component="backends/default-scheduler"),
    Row("scheduling.k8s.io", "compositepodgroups", "delete", "ClusterRole", f"{_S}the Workload API gang objects of a scaled gang on scale-in, after its PodGang", component="backends/default-scheduler"),
    Row("gitops.grove.io", "podcliquesets", "list", "ClusterRole", f"{_S}list the gitops.grove.io PodCliqueSets Git holds"),
    Row("gitops.grove.io", "podcliquesets", "watch", "ClusterRole", f"{_S}watch them"),
    Row("gitops.grove.io", "podcliquesets/status", "patch", "ClusterRole", f"{_S}status: replicas, available, updated, conditions"),
    Row("gitops.grove.io", "podcliquesets/finalizers", "update", "ClusterRole", f"{_S}owner with blockOwnerDeletion under OwnerReferencesPermissionEnforcement"),
    Row("gitops.grove.io", "podcliquescalinggroups", "list", "ClusterRole", f"{_S}list the scale targets (the live counts)"),
    Row("gitops.grove.io", "podcliquescalinggroups", "watch", "ClusterRole", f"{_S}watch them: a scaler's /scale write changes spec.replicas"),
    Row("gitops.grove.io", "podcliquescalinggroups", "create", "ClusterRole", f"{_S}POST a scale target at initialReplicas"),
    Row("gitops.grove.io", "podcliquescalinggroups", "patch", "ClusterRole", f"{_S}copy minAvailable/minReplicas/maxReplicas from Git (never spec.replicas)"),
    Row("gitops.grove.io", "podcliquescalinggroups", "delete", "ClusterRole", f"{_S}a scale target whose replica or workload left Git"),
    Row("gitops.grove.io", "podcliquescalinggroups/status", "patch", "ClusterRole", f"{_S}status: replicas, ready, updated, available, selector, conditions"),
    Row("gitops.grove.io", "podcliques", "list", "ClusterRole", f"{_S}list the scale targets (the live counts)"),
    Row("gitops.grove.io", "podcliques", "watch", "ClusterRole", f"{_S}watch them: a scaler's /scale write changes spec.replicas"),
    Row("gitops.grove.io", "podcliques", "create", "ClusterRole", f"{_S}POST a scale target at initialReplicas"),
    Row("gitops.grove.io", "podcliques", "patch", "ClusterRole", f"{_S}copy minAvailable/minReplicas/maxReplicas from Git (never spec.replicas)"),
    Row("gitops.grove.io", "podcliques", "delete", "ClusterRole", f"{_S}a scale target whose replica or workload left Git"),
    Row("gitops.grove.io", "podcliques/status", "patch", "ClusterRole", f"{_S}status: replicas, ready, updated, available, selector, conditions"),
    Row("resource.k8s.io", "resourceclaims", "list", "ClusterRole", f"{_S}list a workload's ResourceClaims (those it owns, after a restart)", component="claims"),
    Row("resource.k8s.io", "resourceclaims", "create", "ClusterRole", f"{_S}POST the ResourceClaims of replicas above the floor", component="claims"),
    Row("resource.k8s.io", "resourceclaims", "delete", "ClusterRole", f"{_S}those ResourceClaims on scale-in", component="claims"),
    Row("coordination.k8s.io", "leases", "get", "Role", f"{_G}leader.py read_namespaced_lease (only the named Lease)"),
    Row(
        "coordination.k8s.io",
        "leases",
        "update",
        "Role",
        f"{_G}leader.py replace_namespaced_lease (only the named Lease)",
    ),
    Row(
        "coordination.k8s.io",
        "leases",
        "create",
        "Role",
        f"{_G}leader.py create_namespaced_lease (cannot be limited by name)",
    ),
)
#: What the base grants (overlays/gate-lifter/base's ClusterRole; namespaced: its Role and ClusterRole).
LIFTER_PERMISSIONS: frozenset[Permission] = frozenset(
    r.permission for r in RBAC_TABLE if r.binding == "ClusterRole" and not r.component
)
#: What each Component adds (overlays/gate-lifter/<component>), by its path under gate-lifter.
COMPONENT_PERMISSIONS: dict[str, frozenset[Permission]] = {
    c: frozenset(r.permission for r in RBAC_TABLE if r.component == c)
    for c in sorted({r.component for r in RBAC_TABLE if r.component})
}
#: Everything the agent may be granted: the base and every component.
ALL_LIFTER_PERMISSIONS: frozenset[Permission] = LIFTER_PERMISSIONS.union(*COMPONENT_PERMISSIONS.values())
#: The components overlays/gate-lifter enables: the examples' scheduler (kai-scheduler).
DEFAULT_COMPONENTS = ("backends/kai-scheduler",)
LEASE_PERMISSIONS: frozenset[Permission] = frozenset(r.permission for r in RBAC_TABLE if r.binding == "Role")
#: Day-2 grants used only by the agent package (issue 13: pods delete). Until
#: ``grove_gitops/agent`` exists in the tree, no code can exercise them; the code-to-table
#: checks then accept them as pending, and become exact once the package is there.
AGENT_PACKAGE = PROJECT / "grove_gitops" / "agent"
DAY2_PERMISSIONS: frozenset[Permission] = frozenset({("", "pods", "delete")})


def pending_day2_permissions() -> frozenset[Permission]:
    """Day-2 grants no code in this tree can exercise yet (empty once the agent package exists)."""
    return frozenset() if AGENT_PACKAGE.is_dir() else DAY2_PERMISSIONS


#: Autoscaling grants (issue 23): every row whose reason is the agent's autoscaling.
AUTOSCALING_PERMISSIONS: frozenset[Permission] = frozenset(r.permission for r in RBAC_TABLE if r.why.startswith(_S))


def agent_scales() -> bool:
    """The agent's autoscaling code is in the tree: a module of grove_gitops/agent imports
    grove_gitops.expand.scaling (the gitops.grove.io kinds and the scale units)."""
    return any(
        "grove_gitops.expand.scaling" in p.read_text() for p in sorted(AGENT_PACKAGE.rglob("*.py"))
    )


def pending_autoscaling_permissions() -> frozenset[Permission]:
    """Autoscaling grants no code in this tree can exercise yet: all of them until the agent's
    autoscaling code lands, then none (the code-to-table checks become exact again)."""
    return frozenset() if agent_scales() else AUTOSCALING_PERMISSIONS


#: Backend gang objects (resource per backend API group): what Kube.object_exists reads (each
#: backend's in its own component, COMPONENT_PERMISSIONS).
BACKEND_GANG_RESOURCES = frozenset(
    {
        ("scheduling.run.ai", "podgroups"),
        ("scheduling.volcano.sh", "podgroups"),
        ("scheduling.sigs.k8s.io", "podgroups"),
        ("scheduling.x-k8s.io", "podgroups"),
        ("scheduling.k8s.io", "workloads"),
        ("scheduling.k8s.io", "podgroups"),
        ("scheduling.k8s.io", "compositepodgroups"),
    }
)
#: Resources of the table that are cluster-scoped (everything else is namespaced).
CLUSTER_SCOPED = frozenset({("grove.io", "clustertopologybindings"), ("kai.scheduler", "topologies")})


# -- kustomize ------------------------------------------------------------------------------------
def require_kubectl() -> str:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed: `kubectl kustomize` cannot build the overlays")
    return kubectl


@functools.cache
def _build(directory: str) -> str:
    kubectl = require_kubectl()
    proc = subprocess.run([kubectl, "kustomize", directory], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"kubectl kustomize {directory} failed:\n{proc.stderr}"
    return proc.stdout


def build(directory: Path) -> list[dict[str, Any]]:
    """``kubectl kustomize DIRECTORY`` as objects (a fresh copy on every call)."""
    return [d for d in yaml.safe_load_all(_build(str(directory))) if d is not None]


def component_dir(component: str) -> Path:
    """The directory of a Component of the gate-lifter (``backends/kai-scheduler``, ``claims``)."""
    return GATE_LIFTER / component


@functools.cache
def _build_with(resources: tuple[str, ...], components: tuple[str, ...]) -> str:
    import tempfile

    with tempfile.TemporaryDirectory(prefix="kustomization-") as tmp:
        directory = Path(tmp)
        text = yaml.safe_dump(
            {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                "resources": [os.path.relpath(r, directory) for r in resources],
                "components": [os.path.relpath(component_dir(c), directory) for c in components],
            }
        )
        (directory / "kustomization.yaml").write_text(text)
        return _build(str(directory))


def build_with(resources: Iterable[Path], components: Iterable[str]) -> list[dict[str, Any]]:
    """A user's kustomization: ``resources`` (overlay directories) plus ``components`` (paths under
    overlays/gate-lifter), built from a directory outside the project as a user would."""
    out = _build_with(tuple(str(r) for r in resources), tuple(components))
    return [d for d in yaml.safe_load_all(out) if d is not None]


def find(objs: Iterable[dict[str, Any]], kind: str, name: str | None = None) -> list[dict[str, Any]]:
    return [o for o in objs if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]


def one(objs: Iterable[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    found = find(objs, kind, name)
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]


def load_yaml(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


# -- RBAC -----------------------------------------------------------------------------------------
def rule_permissions(rules: Iterable[dict[str, Any]]) -> set[Permission]:
    """Every (group, resource, verb) the rules grant (wildcards are kept as ``*``)."""
    return {
        (group, resource, verb)
        for rule in rules
        for group in rule.get("apiGroups") or []
        for resource in rule.get("resources") or []
        for verb in rule.get("verbs") or []
    }


@dataclass
class Request:
    verb: str
    group: str
    resource: str  # "pods" or "podgangs/status"
    namespace: str | None
    name: str | None

    @property
    def permission(self) -> Permission:
        return (self.group, self.resource, self.verb)


@dataclass
class Authorizer:
    """RBAC's allow decision for one ServiceAccount over a set of manifests."""

    objs: list[dict[str, Any]]
    sa_namespace: str = LIFTER_NAMESPACE
    sa_name: str = LIFTER_SA
    _cluster: list[dict[str, Any]] = field(default_factory=list, init=False)
    _namespaced: dict[str, list[dict[str, Any]]] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        roles = {
            (o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]): o
            for o in self.objs
            if o["kind"] in ("Role", "ClusterRole")
        }
        for binding in self.objs:
            if binding["kind"] not in ("RoleBinding", "ClusterRoleBinding") or not self._binds_me(binding):
                continue
            ref = binding["roleRef"]
            ns = binding["metadata"].get("namespace") if binding["kind"] == "RoleBinding" else None
            role = roles.get((ref["kind"], ns if ref["kind"] == "Role" else None, ref["name"]))
            assert role is not None, f"{binding['kind']} {binding['metadata']['name']} refers to a missing {ref}"
            if binding["kind"] == "ClusterRoleBinding":
                self._cluster.extend(role.get("rules") or [])
            else:
                self._namespaced.setdefault(str(ns), []).extend(role.get("rules") or [])

    def _binds_me(self, binding: dict[str, Any]) -> bool:
        return any(
            s.get("kind") == "ServiceAccount"
            and s.get("name") == self.sa_name
            and s.get("namespace") == self.sa_namespace
            for s in binding.get("subjects") or []
        )

    @staticmethod
    def _matches(rule: dict[str, Any], req: Request) -> bool:
        names = rule.get("resourceNames") or []
        return (
            (req.verb in rule.get("verbs", []) or "*" in rule.get("verbs", []))
            and (req.group in rule.get("apiGroups", []) or "*" in rule.get("apiGroups", []))
            and (req.resource in rule.get("resources", []) or "*" in rule.get("resources", []))
            and (not names or (req.name is not None and req.name in names))
        )

    def allows(self, req: Request) -> bool:
        rules = list(self._cluster)
        if req.namespace is not None:
            rules += self._namespaced.get(req.namespace, [])
        return any(self._matches(rule, req) for rule in rules)


_DISCOVERY = re.compile(r"^/(api(/[^/]+)?|apis(/[^/]+){0,2})/?$")


def is_discovery_path(path: str) -> bool:
    """``/api``, ``/api/v1``, ``/apis``, ``/apis/<group>``, ``/apis/<group>/<version>``: non-resource
    URLs Kubernetes' default ``system:discovery`` ClusterRole grants every authenticated user."""
    return bool(_DISCOVERY.match(path.split("?", 1)[0]))


def parse_resource_path(verb: str, path: str) -> Request:
    """``/apis/scheduler.grove.io/v1alpha1/namespaces/ns/podgangs/x/status`` → a :class:`Request`."""
    parts = [p for p in path.split("?", 1)[0].split("/") if p]
    if parts[0] == "api":
        group, rest = "", parts[2:]
    else:
        group, rest = parts[1], parts[3:]
    namespace = None
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else None
    if len(rest) > 2:
        resource = f"{resource}/{rest[2]}"
    return Request(verb, group, resource, namespace, name)


# -- Deployments ----------------------------------------------------------------------------------
def pod_spec(deployment: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = deployment["spec"]["template"]["spec"]
    return spec


def container(deployment: dict[str, Any], name: str) -> dict[str, Any]:
    matches = [c for c in pod_spec(deployment)["containers"] if c["name"] == name]
    assert len(matches) == 1, f"container {name}"
    return matches[0]


def expand_args(deployment: dict[str, Any], ctr: dict[str, Any]) -> list[str]:
    """The container's args with ``$(VAR)`` expanded as the kubelet does (fieldRefs resolved from
    the Deployment's own metadata/name placeholders)."""
    values = container_env(deployment, ctr)

    def sub(match: re.Match[str]) -> str:
        return values.get(match.group(1), match.group(0))

    return [re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", sub, arg) for arg in ctr.get("args") or []]


#: click's ``auto_envvar_prefix`` of the CLI: ``agent --namespace`` is GROVE_GITOPS_AGENT_NAMESPACE.
ENV_PREFIX = "GROVE_GITOPS"


def container_env(deployment: dict[str, Any], ctr: dict[str, Any]) -> dict[str, str]:
    """The container's environment as the kubelet resolves it for one pod of ``deployment``:
    literal values, and downward-API ``metadata.namespace`` / ``metadata.name`` from the
    Deployment's own namespace and a generated pod name (other sources are left out)."""
    values: dict[str, str] = {}
    for env in ctr.get("env") or []:
        if "value" in env:
            values[env["name"]] = str(env["value"])
            continue
        ref = (env.get("valueFrom") or {}).get("fieldRef", {}).get("fieldPath")
        if ref == "metadata.namespace":
            values[env["name"]] = deployment["metadata"]["namespace"]
        elif ref == "metadata.name":
            values[env["name"]] = f"{deployment['metadata']['name']}-abcde-12345"
    return values


def cli_params(args: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    """Parse ``grove-gitops <command> ...`` exactly as the CLI would (unknown flags raise), with
    ``env`` as the process environment (only it: the test's own GROVE_GITOPS_* never leak in)."""
    import os

    import click

    from grove_gitops.cli import main

    saved = {k: v for k, v in os.environ.items() if k.startswith(ENV_PREFIX + "_")}
    for key in saved:
        del os.environ[key]
    os.environ.update({k: v for k, v in (env or {}).items() if k.startswith(ENV_PREFIX + "_")})
    try:
        with click.Context(main, auto_envvar_prefix=ENV_PREFIX) as ctx:
            command = main.get_command(ctx, args[0])
            assert command is not None, f"unknown command {args[0]!r}"
            sub = command.make_context(args[0], list(args[1:]), parent=ctx)
            return dict(sub.params)
    finally:
        for key in [k for k in os.environ if k.startswith(ENV_PREFIX + "_")]:
            del os.environ[key]
        os.environ.update(saved)


def deployment_params(deployment: dict[str, Any], name: str) -> dict[str, Any]:
    """The CLI parameters the container ``name`` of ``deployment`` runs with: its args (``$(VAR)``
    expanded) and its GROVE_GITOPS_* environment, parsed by the real CLI."""
    ctr = container(deployment, name)
    return cli_params(expand_args(deployment, ctr), container_env(deployment, ctr))


def mount_for(deployment: dict[str, Any], ctr: dict[str, Any], path: str) -> dict[str, Any] | None:
    """The volume behind the deepest mount containing ``path`` (None: the read-only root fs)."""
    best: dict[str, Any] | None = None
    best_len = -1
    for m in ctr.get("volumeMounts") or []:
        mount = m["mountPath"].rstrip("/")
        if (path == mount or path.startswith(mount + "/")) and len(mount) > best_len:
            best = next(v for v in pod_spec(deployment)["volumes"] if v["name"] == m["name"])
            best_len = len(mount)
    return best


# -- Dockerfile -----------------------------------------------------------------------------------
@dataclass
class Instruction:
    keyword: str  # upper case
    args: str
    flags: dict[str, str] = field(default_factory=dict)

    @property
    def words(self) -> list[str]:
        return self.args.split()


def dockerfile_instructions(text: str) -> list[Instruction]:
    """Instructions with continuation lines joined and comment lines dropped (Docker's rules)."""
    logical: list[str] = []
    current = ""
    for raw in text.splitlines():
        stripped = raw.strip()
        if stripped.startswith("#") or (not stripped and not current):
            continue
        if stripped.endswith("\\"):
            current += stripped[:-1] + " "
            continue
        current += stripped
        if current.strip():
            logical.append(current.strip())
        current = ""
    if current.strip():
        logical.append(current.strip())
    out = []
    for line in logical:
        keyword, _, rest = line.partition(" ")
        flags: dict[str, str] = {}
        rest = rest.strip()
        while rest.startswith("--"):
            flag, _, rest = rest.partition(" ")
            key, _, value = flag[2:].partition("=")
            flags[key] = value
            rest = rest.strip()
        out.append(Instruction(keyword.upper(), rest, flags))
    return out


def dockerfile_stages(text: str) -> list[list[Instruction]]:
    """Instructions grouped by stage (each list starts with its FROM); the global ARGs before the
    first FROM are in :func:`dockerfile_global_args`."""
    stages: list[list[Instruction]] = []
    for ins in dockerfile_instructions(text):
        if ins.keyword == "FROM":
            stages.append([ins])
        elif stages:
            stages[-1].append(ins)
        else:
            assert ins.keyword == "ARG", f"{ins.keyword} before the first FROM"
    return stages


def dockerfile_global_args(text: str) -> dict[str, str]:
    """``ARG name=default`` lines before the first FROM (what FROM lines may use)."""
    args: dict[str, str] = {}
    for ins in dockerfile_instructions(text):
        if ins.keyword == "FROM":
            break
        name, _, default = ins.args.partition("=")
        args[name] = default
    return args


def exec_form(args: str) -> list[str] | None:
    """The JSON array of an exec-form ENTRYPOINT/CMD (None for shell form)."""
    try:
        value = json.loads(args)
    except ValueError:
        return None
    return value if isinstance(value, list) and all(isinstance(v, str) for v in value) else None


def _glob_regex(pattern: str) -> re.Pattern[str]:
    out = ""
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out += "(?:.*/)?"
            i += 3
        elif pattern.startswith("**", i):
            out += ".*"
            i += 2
        elif c == "*":
            out += "[^/]*"
            i += 1
        elif c == "?":
            out += "[^/]"
            i += 1
        elif c == "[":
            end = pattern.index("]", i)
            out += "[" + pattern[i + 1 : end].replace("!", "^", 1) + "]"
            i = end + 1
        else:
            out += re.escape(c)
            i += 1
    return re.compile(out + r"\Z")


class DockerIgnore:
    """``.dockerignore`` semantics: the last matching pattern decides; ``!`` re-includes; a pattern
    that matches a parent directory of a path matches the path."""

    def __init__(self, text: str) -> None:
        self.patterns: list[tuple[bool, re.Pattern[str]]] = []
        for raw in text.splitlines():
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            negate = line.startswith("!")
            pattern = line[1:].strip() if negate else line
            pattern = pattern.strip("/")
            pattern = re.sub(r"/+", "/", pattern)
            self.patterns.append((negate, _glob_regex(pattern)))

    def excluded(self, path: str) -> bool:
        parts = path.strip("/").split("/")
        candidates = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        result = False
        for negate, regex in self.patterns:
            if any(regex.match(c) for c in candidates):
                result = not negate
        return result
