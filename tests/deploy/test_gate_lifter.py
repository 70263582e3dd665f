"""The gate-lifter Deployment, PodDisruptionBudget and Service (``overlays/gate-lifter``)."""

from __future__ import annotations

from typing import Any

from .helpers import (
    LEASE_NAME,
    LIFTER_NAMESPACE,
    LIFTER_SA,
    WATCHED_NAMESPACE,
    container,
    deployment_params,
    find,
    mount_for,
    one,
    pod_spec,
)

Objects = list[dict[str, Any]]
HARDENED_CONTAINER = {
    "runAsNonRoot": True,
    "runAsUser": 65532,
    "allowPrivilegeEscalation": False,
    "readOnlyRootFilesystem": True,
    "capabilities": {"drop": ["ALL"]},
    "seccompProfile": {"type": "RuntimeDefault"},
}


def _selected(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def assert_hardened(deployment: dict[str, Any]) -> None:
    """The restricted Pod Security Standard and then some, on the pod and on every container."""
    spec = pod_spec(deployment)
    pod_sc = spec["securityContext"]
    assert pod_sc["runAsNonRoot"] is True
    assert pod_sc["runAsUser"] == 65532
    assert pod_sc["seccompProfile"] == {"type": "RuntimeDefault"}
    assert not spec.get("hostNetwork") and not spec.get("hostPID") and not spec.get("hostIPC")
    for ctr in spec["containers"] + spec.get("initContainers", []):
        sc = ctr["securityContext"]
        for key, value in HARDENED_CONTAINER.items():
            assert sc.get(key) == value, (ctr["name"], key, sc.get(key))
        assert not sc.get("privileged")
        assert not (sc["capabilities"].get("add") or []), ctr["name"]
        res = ctr["resources"]
        for kind in ("requests", "limits"):
            assert set(res[kind]) >= {"cpu", "memory"}, (ctr["name"], kind, res)
        # Writable paths are emptyDirs (the root filesystem is read-only).
        for mount in ctr.get("volumeMounts") or []:
            volume = next(v for v in spec["volumes"] if v["name"] == mount["name"])
            assert "emptyDir" in volume, volume
            assert volume["emptyDir"].get("sizeLimit"), volume


def test_two_hardened_replicas(lifter_objs: Objects) -> None:
    deployment = one(lifter_objs, "Deployment", "grove-gitops-gate-lifter")
    assert deployment["metadata"]["namespace"] == LIFTER_NAMESPACE
    assert deployment["spec"]["replicas"] == 2
    assert deployment["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    assert_hardened(deployment)
    spec = pod_spec(deployment)
    assert spec["serviceAccountName"] == LIFTER_SA
    assert spec.get("automountServiceAccountToken", True) is True  # it talks to the API server
    assert [c["name"] for c in spec["containers"]] == ["gate-lifter"]
    # Python's tempfile needs a writable /tmp on a read-only root filesystem.
    assert mount_for(deployment, spec["containers"][0], "/tmp") is not None


def test_pod_name_from_the_downward_api(lifter_objs: Objects) -> None:
    deployment = one(lifter_objs, "Deployment")
    env = {e["name"]: e for e in container(deployment, "gate-lifter")["env"]}
    assert env["POD_NAME"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.name"}}
    assert env["POD_NAMESPACE"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}
    # --identity is left to its default ($POD_NAME): a unique identity per replica.
    assert deployment_params(deployment, "gate-lifter")["identity"] is None


def test_args_parse_and_match_rbac_and_probes(lifter_objs: Objects) -> None:
    deployment = one(lifter_objs, "Deployment")
    ctr = container(deployment, "gate-lifter")
    params = deployment_params(deployment, "gate-lifter")
    assert params["namespace"] is None  # all namespaces: the ClusterRole
    lease_role = one(lifter_objs, "Role", "grove-gitops-gate-lifter-leader-election")
    assert params["lease_namespace"] == lease_role["metadata"]["namespace"] == LIFTER_NAMESPACE
    named = [r for r in lease_role["rules"] if r.get("resourceNames")]
    assert named and all(r["resourceNames"] == [params["lease_name"]] for r in named)
    assert params["lease_name"] == LEASE_NAME
    host, _, port = params["metrics_address"].rpartition(":")
    assert host == "0.0.0.0" and int(port) == 8080
    assert {p["name"]: p["containerPort"] for p in ctr["ports"]} == {"http-metrics": 8080}
    assert ctr["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": 8080}
    assert ctr["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": 8080}


def test_spread_across_nodes(lifter_objs: Objects) -> None:
    deployment = one(lifter_objs, "Deployment")
    spec = pod_spec(deployment)
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    spread = [c for c in spec.get("topologySpreadConstraints") or [] if c["topologyKey"] == "kubernetes.io/hostname"]
    anti = [
        t
        for t in (spec.get("affinity") or {})
        .get("podAntiAffinity", {})
        .get("requiredDuringSchedulingIgnoredDuringExecution", [])
        + [
            w["podAffinityTerm"]
            for w in (spec.get("affinity") or {})
            .get("podAntiAffinity", {})
            .get("preferredDuringSchedulingIgnoredDuringExecution", [])
        ]
        if t["topologyKey"] == "kubernetes.io/hostname"
    ]
    assert spread or anti, "no spread across nodes"
    for c in spread:
        assert c["maxSkew"] == 1
        assert _selected(c["labelSelector"]["matchLabels"], labels)
    for t in anti:
        assert _selected(t["labelSelector"]["matchLabels"], labels)


def test_pdb_keeps_one(lifter_objs: Objects) -> None:
    deployment = one(lifter_objs, "Deployment")
    pdb = one(lifter_objs, "PodDisruptionBudget")
    assert pdb["metadata"]["namespace"] == deployment["metadata"]["namespace"]
    assert pdb["spec"]["minAvailable"] == 1
    assert "maxUnavailable" not in pdb["spec"]
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert _selected(pdb["spec"]["selector"]["matchLabels"], labels)
    assert deployment["spec"]["selector"]["matchLabels"] == pdb["spec"]["selector"]["matchLabels"]


def test_metrics_service(lifter_objs: Objects) -> None:
    deployment = one(lifter_objs, "Deployment")
    service = one(lifter_objs, "Service")
    assert service["metadata"]["namespace"] == deployment["metadata"]["namespace"]
    assert _selected(service["spec"]["selector"], deployment["spec"]["template"]["metadata"]["labels"])
    assert [(p["name"], p["port"], p["targetPort"]) for p in service["spec"]["ports"]] == [
        ("http-metrics", 8080, "http-metrics")
    ]
    assert service["spec"].get("type", "ClusterIP") == "ClusterIP"
    assert not find(lifter_objs, "ServiceMonitor")


def test_namespace_enforces_restricted(lifter_objs: Objects) -> None:
    namespace = one(lifter_objs, "Namespace")
    assert namespace["metadata"]["name"] == LIFTER_NAMESPACE
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"


def test_namespaced_overlay_watches_its_own_namespace(namespaced_objs: Objects, lifter_objs: Objects) -> None:
    """One namespace for everything: the agent runs in, leases in and watches the namespace of
    its Role and RoleBinding, and creates no Namespace of its own."""
    deployment = one(namespaced_objs, "Deployment")
    ctr = container(deployment, "gate-lifter")
    params = deployment_params(deployment, "gate-lifter")
    assert params["namespace"] == params["lease_namespace"] == WATCHED_NAMESPACE
    assert deployment["metadata"]["namespace"] == WATCHED_NAMESPACE
    role = one(namespaced_objs, "Role", "grove-gitops-gate-lifter")
    binding = one(namespaced_objs, "RoleBinding", "grove-gitops-gate-lifter")
    assert role["metadata"]["namespace"] == binding["metadata"]["namespace"] == params["namespace"]
    assert not find(namespaced_objs, "Namespace")
    # Apart from the watched namespace, the Deployment is the base's.
    base = one(lifter_objs, "Deployment")
    base_ctr = container(base, "gate-lifter")
    assert ctr["args"] == base_ctr["args"]
    assert ctr["env"][: len(base_ctr["env"])] == base_ctr["env"]
    assert ctr["env"][len(base_ctr["env"]) :] == [
        {"name": "GROVE_GITOPS_AGENT_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}}
    ]
    assert_hardened(deployment)


def test_probe_paths_are_served() -> None:
    """/healthz, /readyz and /metrics are what HealthServer answers (grove_gitops/metrics.py)."""
    import urllib.request

    from grove_gitops.metrics import HealthServer, Registry

    server = HealthServer(Registry(), "127.0.0.1", 0, healthy=lambda: True, ready=lambda: True).start()
    try:
        for path in ("/healthz", "/readyz", "/metrics"):
            with urllib.request.urlopen(f"http://127.0.0.1:{server.port}{path}", timeout=5) as resp:
                assert resp.status == 200, path
    finally:
        server.stop()
