"""Issue 32.6: the fake stays honest. The same requests go to tests/fakeserver and to the real
kube-apiserver, and the answers (status code, Status reason/message/causes, objects) must be equal
once what must differ is normalised (uid, resourceVersion, timestamps, generated name suffixes).

Covered, because the project's tests rely on the fake for them: Events (events.k8s.io/v1), the
OwnerReferencesPermissionEnforcement refusals for a restricted ServiceAccount, the scale targets'
CEL messages, ``/scale`` reads, writes and refusals, ResourceQuota refusals, server-side apply
(fix 8: managers, conflicts, force, removal of fields a manager dropped) and garbage collection
after foreground, background and orphan deletion. The fake was fixed wherever it differed.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import kubernetes.client
import kubernetes.config
import pytest

from tests.controlplane.plane import Plane, service_account_kubeconfig, wait_until
from tests.fakeserver import FakeApiServer

NS = "contract"
LIMITED = "limited"
LIMITED_TOKEN = "contract-limited-token"
AP = "application/apply-patch+yaml"
MERGE = "application/merge-patch+json"
CM = f"/api/v1/namespaces/{NS}/configmaps"
TARGETS = f"/apis/gitops.grove.io/v1alpha1/namespaces/{NS}/podcliques"
Answer = tuple[int, Any]


@dataclass
class Side:
    """One API server and how to reach it as the admin and as the restricted ServiceAccount."""

    name: str
    admin: kubernetes.client.ApiClient
    limited: kubernetes.client.ApiClient

    def call(self, method: str, path: str, body: Any = None, content_type: str = "application/json", *, limited: bool = False) -> Answer:
        client = self.limited if limited else self.admin
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type
            body = json.dumps(body) if content_type == AP else body
        m, url, hdrs, data, _ = client.param_serialize(method, path, header_params=headers, body=body, auth_settings=["BearerToken"])
        response = client.call_api(m, url, header_params=hdrs, body=data, _request_timeout=30)
        response.read()  # type: ignore[no-untyped-call]
        return response.status, json.loads(response.data or b"null")


# -- normalising what must differ ----------------------------------------------------------------
_GENERATED = re.compile(r'((?:^|[^a-z0-9])[a-z0-9.-]*\.)[bcdfghjklmnpqrstvwxz2456789]{5}\b')
_VOLATILE = ("uid", "resourceVersion", "creationTimestamp", "deletionTimestamp")


def _managed(entries: list[dict[str, Any]]) -> list[Any]:
    """Apply entries whole (minus time); Update entries by who and where (the fake records them
    from the first apply on only, see tests/fakeserver/apply.py)."""
    if not any(e.get("operation") == "Apply" for e in entries):
        return []
    return sorted(
        json.dumps([e["manager"], e["operation"], e.get("subresource", ""), e.get("fieldsV1") if e["operation"] == "Apply" else None])
        for e in entries
    )


def normal(answer: Answer, *, whole: bool = True) -> Answer:
    code, body = answer
    if not isinstance(body, dict):
        return code, body
    if body.get("kind") == "Status":
        body = json.loads(_GENERATED.sub(r"\1<generated>", json.dumps(body)))
        if "uid" in (body.get("details") or {}):
            body["details"]["uid"] = "<set>"
        return code, body
    if not whole:
        return code, body.get("kind")
    body = json.loads(json.dumps(body))
    meta = body.get("metadata") or {}
    for key in _VOLATILE:
        if key in meta:
            meta[key] = "<set>"
    if "managedFields" in meta:
        meta["managedFields"] = _managed(meta["managedFields"])
        if not meta["managedFields"]:
            del meta["managedFields"]
    if meta.get("generateName"):
        meta["name"] = "<generated>"
    for ref in meta.get("ownerReferences") or []:
        ref["uid"] = "<owner>"
    return code, body


# -- the two servers ---------------------------------------------------------------------------
def _prepare(side: Side) -> None:
    """The namespace the contract's objects live in."""
    assert side.call("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})[0] == 201


RIGHTS = [("create", "", "configmaps"), ("get", "", "configmaps"), ("update", "", "configmaps"), ("patch", "", "configmaps")]


@pytest.fixture(scope="module")
def sides(installed: Plane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Side, Side]]:
    real_admin = installed.api_client()
    real = Side("real", real_admin, real_admin)
    _prepare(real)
    rules = [{"apiGroups": [g], "resources": [r], "verbs": [v]} for v, g, r in RIGHTS]
    objects: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": LIMITED}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": LIMITED}, "rules": rules},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": LIMITED},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": LIMITED},
         "subjects": [{"kind": "ServiceAccount", "name": LIMITED, "namespace": NS}]},
    ]
    for body in objects:
        group = "/api/v1" if body["apiVersion"] == "v1" else f"/apis/{body['apiVersion']}"
        plural = {"ServiceAccount": "serviceaccounts", "Role": "roles", "RoleBinding": "rolebindings"}[body["kind"]]
        code, answer = real.call("POST", f"{group}/namespaces/{NS}/{plural}", body)
        assert code == 201, answer
    kubeconfig = service_account_kubeconfig(installed, NS, LIMITED, tmp_path_factory.mktemp("contract") / "kubeconfig")
    real.limited = kubernetes.config.new_client_from_config(config_file=str(kubeconfig))  # type: ignore[no-untyped-call]
    with FakeApiServer() as server:
        server.restrict(LIMITED_TOKEN, RIGHTS)
        fake = Side("fake", server.api_client(), server.api_client(token=LIMITED_TOKEN))
        _prepare(fake)
        wait_until("the restricted ServiceAccount's rights", lambda: real.call("GET", f"{CM}/none", limited=True)[0] == 404)
        yield fake, real
    real.call("DELETE", f"/api/v1/namespaces/{NS}")  # its quota and objects, out of later modules' way


Step = Callable[[Side], list[Answer]]


def same(sides: tuple[Side, Side], step: Step) -> list[Answer]:
    """Run ``step`` on both servers; their normalised answers must be equal. Returns the real ones."""
    fake, real = sides
    on_fake, on_real = step(fake), step(real)
    assert on_fake == on_real, f"\nfake: {json.dumps(on_fake, indent=1)}\nreal: {json.dumps(on_real, indent=1)}"
    return on_real


def cm(name: str, data: dict[str, str] | None = None, **meta: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": NS, **meta}}
    if data is not None:
        obj["data"] = data
    return obj


# -- Events ------------------------------------------------------------------------------------
def event(meta: dict[str, Any], regarding_namespace: str | None) -> dict[str, Any]:
    regarding = {"apiVersion": "v1", "kind": "ConfigMap", "name": "subject"}
    if regarding_namespace is not None:
        regarding["namespace"] = regarding_namespace
    return {
        "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": meta,
        "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "gitops.grove.io/agent",
        "reportingInstance": "agent-0", "action": "Lift", "reason": "RollingUpdateStarted", "type": "Normal",
        "note": "rolling update started", "regarding": regarding,
    }


def test_events_are_refused_and_accepted_alike(sides: tuple[Side, Side]) -> None:
    path = f"/apis/events.k8s.io/v1/namespaces/{NS}/events"

    def step(side: Side) -> list[Answer]:
        return [
            normal(side.call("POST", path, event({"generateName": "subject."}, NS))),  # the old trailing dot
            normal(side.call("POST", path, event({"name": "subject.1"}, None))),  # regarding without namespace
            normal(side.call("POST", path, event({"name": "subject.2"}, "elsewhere"))),  # accepted
            normal(side.call("POST", "/apis/events.k8s.io/v1/namespaces/default/events", event({"name": "subject.4"}, None))),
            normal(side.call("POST", path, event({"generateName": "subject-"}, NS))),
            normal(side.call("POST", path, event({"name": "subject.3"}, NS))),
        ]

    answers = same(sides, step)
    assert [a[0] for a in answers] == [422, 422, 201, 201, 201, 201]
    assert "involvedObject.namespace: Invalid value" in answers[1][1]["message"]


# -- OwnerReferencesPermissionEnforcement --------------------------------------------------------
def test_owner_references_of_a_restricted_caller_are_refused_alike(sides: tuple[Side, Side]) -> None:
    def step(side: Side) -> list[Answer]:
        code, owner = side.call("POST", CM, cm("owner"))
        assert code == 201, owner
        ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}
        return [
            normal(side.call("POST", CM, cm("blocking", ownerReferences=[{**ref, "blockOwnerDeletion": True}]), limited=True)),
            normal(side.call("POST", CM, cm("plain", ownerReferences=[{**ref, "blockOwnerDeletion": False}]), limited=True)),
            normal(side.call("PATCH", f"{CM}/plain", {"metadata": {"ownerReferences": [{**ref, "blockOwnerDeletion": True}]}}, MERGE, limited=True)),
            normal(side.call("PATCH", f"{CM}/plain", {"data": {"k": "v"}}, MERGE, limited=True)),
            normal(side.call("POST", CM, cm("by-admin", ownerReferences=[{**ref, "blockOwnerDeletion": True}]))),
        ]

    answers = same(sides, step)
    assert [a[0] for a in answers] == [403, 201, 403, 200, 201]
    assert "cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on" in answers[0][1]["message"]


# -- the scale targets: CEL and /scale ----------------------------------------------------------
def target(name: str, replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": "gitops.grove.io/v1alpha1", "kind": "PodClique", "metadata": {"name": name, "namespace": NS},
        "spec": {"replicas": replicas, "minAvailable": 2, "minReplicas": 2, "maxReplicas": 5},
    }


def scale(name: str, replicas: int) -> dict[str, Any]:
    return {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": name, "namespace": NS}, "spec": {"replicas": replicas}}


def test_scale_target_rules_and_scale_subresource_answer_alike(sides: tuple[Side, Side]) -> None:
    t = f"{TARGETS}/t1"

    def step(side: Side) -> list[Answer]:
        return [
            normal(side.call("POST", TARGETS, target("over", 9))),
            normal(side.call("POST", TARGETS, target("under", 1))),
            normal(side.call("POST", TARGETS, target("t1", 3))),
            normal(side.call("PATCH", t, {"spec": {"replicas": 50, "maxReplicas": 100}}, MERGE)),
            normal(side.call("GET", f"{t}/scale")),
            normal(side.call("PUT", f"{t}/scale", scale("t1", 9))),
            normal(side.call("PUT", f"{t}/scale", scale("other", 4))),
            normal(side.call("PATCH", f"{t}/scale", {"spec": {"replicas": 1}}, MERGE)),
            normal(side.call("PATCH", f"{t}/scale", {"spec": {"replicas": 4}}, MERGE)),
            normal(side.call("GET", f"{TARGETS}/none/scale")),
            normal(side.call("GET", t)),
        ]

    answers = same(sides, step)
    assert [a[0] for a in answers] == [422, 422, 201, 200, 200, 200, 400, 422, 200, 404, 200]
    assert answers[-1][1]["spec"]["replicas"] == 4


# -- ResourceQuota -----------------------------------------------------------------------------
def pod(name: str, cpu: str, gpu: str) -> dict[str, Any]:
    resources = {"requests": {"cpu": cpu, "nvidia.com/gpu": gpu}, "limits": {"nvidia.com/gpu": gpu}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "main", "image": "registry.invalid/x", "resources": resources}]}}


def _quota_counted(side: Side) -> bool:
    return "used" in (side.call("GET", f"/api/v1/namespaces/{NS}/resourcequotas/q")[1].get("status") or {})


def test_quota_refusals_carry_the_same_message(sides: tuple[Side, Side]) -> None:
    pods = f"/api/v1/namespaces/{NS}/pods"
    quota = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"},
             "spec": {"hard": {"requests.cpu": "1", "requests.nvidia.com/gpu": "1", "pods": "2"}}}
    for side in sides:
        assert side.call("POST", f"/api/v1/namespaces/{NS}/resourcequotas", quota)[0] == 201
        wait_until(f"quota status on the {side.name} server", functools.partial(_quota_counted, side))

    def step(side: Side) -> list[Answer]:
        return [normal(side.call("POST", pods, pod(*args)), whole=False)
                for args in (("p1", "600m", "1"), ("p2", "600m", "1"), ("p3", "100m", "0"), ("p4", "100m", "0"))]

    answers = same(sides, step)
    assert [a[0] for a in answers] == [201, 403, 201, 403]
    assert answers[3][1]["message"] == 'pods "p4" is forbidden: exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2'


# -- server-side apply (fix 8) ------------------------------------------------------------------
def test_server_side_apply_managers_conflicts_and_force_answer_alike(sides: tuple[Side, Side]) -> None:
    c = f"{CM}/applied"

    def step(side: Side) -> list[Answer]:
        return [
            normal(side.call("PATCH", c, cm("applied", {"a": "1"}), AP)),  # no fieldManager
            normal(side.call("PATCH", f"{c}?fieldManager=argocd-controller", cm("applied", {"a": "1", "b": "2"}), AP)),
            normal(side.call("PATCH", f"{c}?fieldManager=kustomize-controller", cm("applied", {"a": "9"}), AP)),
            normal(side.call("PATCH", f"{c}?fieldManager=kustomize-controller", cm("applied", {"a": "9", "b": "8"}), AP)),
            normal(side.call("PATCH", f"{c}?fieldManager=kustomize-controller", cm("applied", {"a": "1"}), AP)),  # shared
            normal(side.call("PATCH", f"{c}?fieldManager=agent", {"data": {"b": "5"}}, MERGE)),
            normal(side.call("PATCH", f"{c}?fieldManager=argocd-controller", cm("applied", {"a": "1", "b": "2"}), AP)),
            normal(side.call("PATCH", f"{c}?fieldManager=argocd-controller&force=true", cm("applied", {"a": "1", "b": "2"}), AP)),
            normal(side.call("PATCH", f"{c}?fieldManager=argocd-controller&force=true", cm("applied", {}), AP)),  # drops b, keeps a
            normal(side.call("PATCH", f"{c}?fieldManager=x&force=true", {"data": {"b": "5"}}, MERGE)),
            normal(side.call("PATCH", f"{c}?fieldManager=x", {"data": {"b": "5"}}, AP)),
            normal(side.call("PATCH", f"{c}?fieldManager=x", cm("other"), AP)),
            normal(side.call("PATCH", f"{CM}/dry?fieldManager=x&dryRun=All", cm("dry", {"k": "v"}), AP)),
            normal(side.call("GET", f"{CM}/dry")),
            normal(side.call("GET", c)),
        ]

    answers = same(sides, step)
    assert [a[0] for a in answers] == [422, 201, 409, 409, 200, 200, 409, 200, 200, 422, 400, 400, 201, 404, 200]
    assert answers[6][1]["message"] == 'Apply failed with 1 conflict: conflict with "agent" using v1: .data.b'
    assert answers[-1][1]["data"] == {"a": "1"}


def test_a_scale_write_then_an_apply_of_git_conflicts_alike(sides: tuple[Side, Side]) -> None:
    """The fight the agent and Argo CD / Flux have over a scale target's replicas."""
    t = f"{TARGETS}/applied"

    def step(side: Side) -> list[Answer]:
        return [
            normal(side.call("PATCH", f"{t}?fieldManager=argocd-controller", target("applied", 3), AP)),
            normal(side.call("PATCH", f"{t}/scale?fieldManager=grove-gitops-agent", {"spec": {"replicas": 4}}, MERGE)),
            normal(side.call("PATCH", f"{t}?fieldManager=argocd-controller", target("applied", 3), AP)),
            normal(side.call("PATCH", f"{t}?fieldManager=argocd-controller&force=true", target("applied", 3), AP)),
        ]

    answers = same(sides, step)
    assert [a[0] for a in answers] == [201, 200, 409, 200]
    assert answers[2][1]["message"] == (
        'Apply failed with 1 conflict: conflict with "grove-gitops-agent" with subresource "scale" using '
        "gitops.grove.io/v1alpha1: .spec.replicas"
    )


# -- garbage collection ----------------------------------------------------------------------
@pytest.mark.parametrize("policy", ["Foreground", "Background", "Orphan"])
def test_garbage_collection_leaves_the_same_objects(sides: tuple[Side, Side], policy: str) -> None:
    owner_name = f"gc-{policy.lower()}"

    def step(side: Side) -> list[Answer]:
        code, owner = side.call("POST", CM, cm(owner_name))
        assert code == 201, owner
        ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": owner_name, "uid": owner["metadata"]["uid"], "blockOwnerDeletion": True}
        for i in range(2):
            assert side.call("POST", CM, cm(f"{owner_name}-{i}", ownerReferences=[ref]))[0] == 201
        deleted = normal(side.call("DELETE", f"{CM}/{owner_name}", {"propagationPolicy": policy}))

        def settled() -> bool:
            left = [side.call("GET", f"{CM}/{n}")[0] for n in (owner_name, f"{owner_name}-0", f"{owner_name}-1")]
            return left == ([404, 200, 200] if policy == "Orphan" else [404, 404, 404])

        wait_until(f"the collector on the {side.name} server", settled, timeout=60)
        left = [normal(side.call("GET", f"{CM}/{owner_name}-{i}")) for i in range(2)]
        return [deleted, *left]

    answers = same(sides, step)
    assert answers[0][0] == 200
    if policy != "Background":
        assert answers[0][1]["metadata"]["finalizers"] == [{"Foreground": "foregroundDeletion", "Orphan": "orphan"}[policy]]
