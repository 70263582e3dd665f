"""Grove's worked examples (spec/grove-desired-state.md §9, spec/grove-backends.md §8)."""

from __future__ import annotations

from pathlib import Path

from tests.support import GPU_FABRIC, INF, objects_by_kind, render_files, sample_text

PCLQ_INDEX = "metadata.labels['grove.io/podclique-pod-index']"


def podgroups(gang: dict) -> list[tuple[str, int]]:
    return [(g["name"], g["minReplicas"]) for g in gang["spec"]["podgroups"]]


def pods_of(pods: dict[str, dict], pclq: str) -> list[dict]:
    return sorted(
        (p for p in pods.values() if p["metadata"]["labels"]["grove.io/podclique"] == pclq),
        key=lambda p: p["spec"]["hostname"],
    )


def init_args(pod: dict) -> list[str] | None:
    for c in pod["spec"].get("initContainers", []):
        if c["name"] == "grove-initc":
            return list(c["args"])
    return None


def test_simple3_objects_gangs_and_init_args(tmp_path: Path) -> None:
    # pca is autoscaled, so the base PodGang (whose podReferences follow its live count) is the
    # agent's: the whole workload at the start counts is Git's objects plus the agent's.
    result = render_files(tmp_path, {"simple3.yaml": sample_text("simple/simple3-explicit-startup-order.yaml")},
                          at="initial")
    assert set(objects_by_kind(result, "ServiceAccount")) == {"simple3"}
    assert set(objects_by_kind(result, "Role")) == {"grove.io:pcs:simple3"}
    assert set(objects_by_kind(result, "RoleBinding")) == {"grove.io:pcs:simple3"}
    assert set(objects_by_kind(result, "Secret")) == {"simple3-ic-sat"}
    assert set(objects_by_kind(result, "Service")) == {"simple3-0"}
    # pca is autoscaled: Grove's HPA, aimed at our scale target (docs/autoscaling.md)
    hpa = objects_by_kind(result, "HorizontalPodAutoscaler")["simple3-0-pca"]
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "gitops.grove.io/v1alpha1", "kind": "PodClique",
                                             "name": "simple3-0-pca"}
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (3, 5)
    assert hpa["metadata"]["labels"]["app.kubernetes.io/component"] == "pcs-hpa"
    assert not objects_by_kind(result, "PodClique")
    gangs = objects_by_kind(result, "PodGang")
    assert set(gangs) == {"simple3-0", "simple3-0-sga-0"}
    assert podgroups(gangs["simple3-0"]) == [
        ("simple3-0-pca", 3),
        ("simple3-0-pce", 2),
        ("simple3-0-sga-0-pcb", 2),
        ("simple3-0-sga-0-pcc", 2),
        ("simple3-0-sga-0-pcd", 2),
        ("simple3-0-sga-1-pcb", 2),
        ("simple3-0-sga-1-pcc", 2),
        ("simple3-0-sga-1-pcd", 2),
    ]
    assert podgroups(gangs["simple3-0-sga-0"]) == [
        ("simple3-0-sga-2-pcb", 2),
        ("simple3-0-sga-2-pcc", 2),
        ("simple3-0-sga-2-pcd", 2),
    ]
    for gang in gangs.values():
        labels = gang["metadata"]["labels"]
        assert labels["app"] == "simple3"
        assert labels["app.kubernetes.io/part-of"] == "simple3"
        assert labels["app.kubernetes.io/component"] == "podgang"
        assert labels["app.kubernetes.io/managed-by"] == "grove-gitops"
        assert labels["grove.io/scheduler-name"] == "default-scheduler"
        assert "topologyConstraint" not in gang["spec"]
        assert "ownerReferences" not in gang["metadata"]

    pods = objects_by_kind(result, "Pod")
    assert len(pods) == 23
    sga = "simple3-0-sga"
    deps_base_pcb_pcc = [
        f"--podcliques={sga}-0-pcb:2",
        f"--podcliques={sga}-1-pcb:2",
        f"--podcliques={sga}-0-pcc:2",
        f"--podcliques={sga}-1-pcc:2",
    ]
    expected_args = {
        "simple3-0-pca": None,
        "simple3-0-pce": deps_base_pcb_pcc,
        f"{sga}-0-pcb": ["--podcliques=simple3-0-pca:3"],
        f"{sga}-1-pcc": ["--podcliques=simple3-0-pca:3"],
        f"{sga}-1-pcd": deps_base_pcb_pcc,
        f"{sga}-2-pcb": None,
        f"{sga}-2-pcc": None,
        f"{sga}-2-pcd": [f"--podcliques={sga}-2-pcb:2", f"--podcliques={sga}-2-pcc:2"],
    }
    for pclq, args in expected_args.items():
        members = pods_of(pods, pclq)
        assert members, pclq
        for pod in members:
            assert init_args(pod) == args, pclq

    # The fully rendered pod of simple3-0-sga-2-pcd, index 0 (§9.2).
    pod = pods_of(pods, f"{sga}-2-pcd")[0]
    meta, spec = pod["metadata"], pod["spec"]
    assert meta["name"].startswith(f"{sga}-2-pcd-0-") and len(meta["name"]) == len(f"{sga}-2-pcd-0-") + 8
    assert meta["labels"] == {
        "app.kubernetes.io/managed-by": "grove-gitops",
        "app.kubernetes.io/part-of": "simple3",
        "app.kubernetes.io/name": f"{sga}-2-pcd",
        "app.kubernetes.io/component": "pcsg-podclique",
        "grove.io/podcliquescalinggroup": sga,
        "grove.io/podcliquescalinggroup-replica-index": "2",
        "grove.io/podcliqueset-replica-index": "0",
        "grove.io/podgang": "simple3-0-sga-0",
        "grove.io/base-podgang": "simple3-0",
        "grove.io/pod-template-hash": meta["labels"]["grove.io/pod-template-hash"],
        "grove.io/podclique": f"{sga}-2-pcd",
        "grove.io/podclique-pod-index": "0",
    }
    assert "ownerReferences" not in meta and "generateName" not in meta
    assert spec["schedulingGates"] == [{"name": "grove.io/podgang-pending-creation"}]
    assert spec["schedulerName"] == "default-scheduler"
    assert spec["hostname"] == f"{sga}-2-pcd-0"
    assert spec["subdomain"] == "simple3-0"
    assert spec["restartPolicy"] == "Always"
    assert spec["terminationGracePeriodSeconds"] == 30
    env = spec["containers"][0]["env"]
    assert [e["name"] for e in env] == [
        "GROVE_PCS_NAME",
        "GROVE_PCS_INDEX",
        "GROVE_PCLQ_NAME",
        "GROVE_HEADLESS_SERVICE",
        "GROVE_PCLQ_POD_INDEX",
        "GROVE_PCSG_NAME",
        "GROVE_PCSG_TEMPLATE_NUM_PODS",
        "GROVE_PCSG_INDEX",
    ]
    values = {e["name"]: e.get("value") for e in env}
    assert values["GROVE_PCS_NAME"] == "simple3"
    assert values["GROVE_PCS_INDEX"] == "0"
    assert values["GROVE_PCLQ_NAME"] == f"{sga}-2-pcd"
    assert values["GROVE_HEADLESS_SERVICE"] == "simple3-0.default.svc.cluster.local"
    assert values["GROVE_PCSG_TEMPLATE_NUM_PODS"] == "6"
    assert env[4]["valueFrom"]["fieldRef"]["fieldPath"] == PCLQ_INDEX
    initc = spec["initContainers"][-1]
    assert initc["name"] == "grove-initc"
    assert "env" not in initc
    assert initc["volumeMounts"] == [
        {"name": "pod-info-vol", "readOnly": True, "mountPath": "/var/grove/pod-info"},
        {"name": "sa-token-secret-vol", "readOnly": True, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"},
    ]
    assert spec["volumes"][0] == {
        "name": "sa-token-secret-vol",
        "secret": {"secretName": "simple3-ic-sat", "defaultMode": 420},
    }
    assert spec["volumes"][1]["downwardAPI"]["items"] == [
        {"path": "namespace", "fieldRef": {"fieldPath": "metadata.namespace"}},
        {"path": "podgangname", "fieldRef": {"fieldPath": "metadata.labels['grove.io/podgang']"}},
    ]
    # podReferences are the rendered pod names, sorted.
    base = objects_by_kind(result, "PodGang")["simple3-0"]
    pca = next(g for g in base["spec"]["podgroups"] if g["name"] == "simple3-0-pca")
    assert [r["name"] for r in pca["podReferences"]] == sorted(p["metadata"]["name"] for p in pods_of(pods, "simple3-0-pca"))
    assert [p["spec"]["hostname"] for p in pods_of(pods, "simple3-0-pca")] == [f"simple3-0-pca-{k}" for k in range(3)]


def test_simple2_standalone_and_two_replicas(tmp_path: Path) -> None:
    text = sample_text("simple/simple2-explicit-startup-order.yaml")
    result = render_files(tmp_path, {"simple2.yaml": text}, at="initial")
    gangs = objects_by_kind(result, "PodGang")
    assert podgroups(gangs["simple2-0"]) == [
        ("simple2-0-pca", 3),
        ("simple2-0-pcb", 2),
        ("simple2-0-pcc", 2),
        ("simple2-0-pcd", 2),
    ]
    pods = objects_by_kind(result, "Pod")
    hostnames = sorted(p["spec"]["hostname"] for p in pods.values())
    assert hostnames == sorted(
        ["simple2-0-pca-0", "simple2-0-pca-1", "simple2-0-pca-2"]
        + [f"simple2-0-{c}-{k}" for c in ("pcb", "pcc", "pcd") for k in (0, 1)]
    )
    assert init_args(pods_of(pods, "simple2-0-pcb")[0]) == ["--podcliques=simple2-0-pca:3"]
    assert init_args(pods_of(pods, "simple2-0-pcc")[1]) == ["--podcliques=simple2-0-pca:3"]
    assert init_args(pods_of(pods, "simple2-0-pcd")[0]) == ["--podcliques=simple2-0-pcb:2", "--podcliques=simple2-0-pcc:2"]
    for pod in pods.values():
        names = [e["name"] for c in pod["spec"]["containers"] for e in c["env"]]
        assert not any(n.startswith("GROVE_PCSG") for n in names)

    two = render_files(tmp_path / "two", {"simple2.yaml": text.replace("replicas: 1\n", "replicas: 2\n", 1)},
                       at="initial")
    gangs2 = objects_by_kind(two, "PodGang")
    assert set(gangs2) == {"simple2-0", "simple2-1"}
    assert set(objects_by_kind(two, "Service")) == {"simple2-0", "simple2-1"}
    assert set(objects_by_kind(two, "ServiceAccount")) == {"simple2"}
    replica1 = [p for p in objects_by_kind(two, "Pod").values() if p["metadata"]["labels"]["grove.io/podgang"] == "simple2-1"]
    assert len(replica1) == 9
    env = {e["name"]: e.get("value") for e in replica1[0]["spec"]["containers"][0]["env"]}
    assert env["GROVE_PCS_INDEX"] == "1"
    assert env["GROVE_HEADLESS_SERVICE"] == "simple2-1.default.svc.cluster.local"


TOPOLOGY = """
apiVersion: grove.io/v1alpha1
kind: ClusterTopologyBinding
metadata: {name: grove-topology}
spec:
  levels:
  - {domain: zone, key: kubernetes.io/zone}
  - {domain: block, key: kubernetes.io/block}
  - {domain: rack, key: kubernetes.io/rack}
  - {domain: host, key: kubernetes.io/hostname}
"""
TAS_ON = """
apiVersion: operator.config.grove.io/v1alpha1
kind: OperatorConfiguration
topologyAwareScheduling: {enabled: true}
"""
TAS_PREFERRED_PACK = """
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata: {name: tas-preferred-pack}
spec:
  replicas: 1
  template:
    topologyConstraint: {topologyName: grove-topology, pack: {required: block, preferred: rack}}
    cliques:
    - name: worker
      spec: {roleName: worker, replicas: 1, podSpec: {containers: [{name: w, image: busybox}]}}
    - name: router
      topologyConstraint: {pack: {preferred: host}}
      spec: {roleName: router, replicas: 1, podSpec: {containers: [{name: r, image: busybox}]}}
    podCliqueScalingGroups:
    - name: workers
      cliqueNames: [worker]
      replicas: 2
      minAvailable: 1
      topologyConstraint: {pack: {preferred: host}}
"""


def test_topology_example_tas_preferred_pack(tmp_path: Path) -> None:
    result = render_files(tmp_path, {"ctb.yaml": TOPOLOGY, "cfg.yaml": TAS_ON, "pcs.yaml": TAS_PREFERRED_PACK})
    gangs = objects_by_kind(result, "PodGang")
    base = gangs["tas-preferred-pack-0"]
    spec = base["spec"]
    assert spec["topologyConstraint"] == {
        "packConstraint": {"required": "kubernetes.io/block", "preferred": "kubernetes.io/rack"}
    }
    # Standalone router precedes the scaling group although worker is listed first (§5.2).
    assert [g["name"] for g in spec["podgroups"]] == ["tas-preferred-pack-0-router", "tas-preferred-pack-0-workers-0-worker"]
    router, worker = spec["podgroups"]
    assert router["minReplicas"] == 1 and worker["minReplicas"] == 1
    assert router["topologyConstraint"] == {"packConstraint": {"preferred": "kubernetes.io/hostname"}}
    assert "topologyConstraint" not in worker
    assert spec["topologyConstraintGroupConfigs"] == [
        {
            "name": "tas-preferred-pack-0-workers-0",
            "podGroupNames": ["tas-preferred-pack-0-workers-0-worker"],
            "topologyConstraint": {"packConstraint": {"preferred": "kubernetes.io/hostname"}},
        }
    ]
    assert base["metadata"]["annotations"]["grove.io/topology-name"] == "grove-topology"
    scaled = gangs["tas-preferred-pack-0-workers-0"]
    assert scaled["spec"]["topologyConstraint"] == {"packConstraint": {"preferred": "kubernetes.io/hostname"}}
    assert [g["name"] for g in scaled["spec"]["podgroups"]] == ["tas-preferred-pack-0-workers-1-worker"]
    assert "topologyConstraintGroupConfigs" not in scaled["spec"]
    assert scaled["metadata"]["annotations"]["grove.io/topology-name"] == "grove-topology"
    # The binding itself is rendered cluster-scoped.
    assert "grove-topology" in objects_by_kind(result, "ClusterTopologyBinding")



def test_backends_worked_example_podgangs(tmp_path: Path) -> None:
    """spec/grove-backends.md §8 PodGangs (rendered for default-scheduler)."""
    result = render_files(tmp_path, {"ctb.yaml": GPU_FABRIC, "cfg.yaml": TAS_ON, "inf.yaml": INF})
    gangs = objects_by_kind(result, "PodGang")
    base, scaled = gangs["inf-0"], gangs["inf-0-prefill-0"]
    assert base["metadata"]["labels"]["kai.scheduler/queue"] == "team-a"
    assert podgroups(base) == [("inf-0-router", 1), ("inf-0-prefill-0-pleader", 1), ("inf-0-prefill-0-pworker", 2)]
    assert base["spec"]["podgroups"][2]["topologyConstraint"] == {"packConstraint": {"preferred": "kubernetes.io/hostname"}}
    assert base["spec"]["topologyConstraint"] == {"packConstraint": {"required": "topology.kubernetes.io/zone"}}
    assert base["spec"]["topologyConstraintGroupConfigs"] == [
        {
            "name": "inf-0-prefill-0",
            "podGroupNames": ["inf-0-prefill-0-pleader", "inf-0-prefill-0-pworker"],
            "topologyConstraint": {"packConstraint": {"required": "topology.kubernetes.io/rack"}},
        }
    ]
    assert base["spec"]["priorityClassName"] == "high"
    assert podgroups(scaled) == [("inf-0-prefill-1-pleader", 1), ("inf-0-prefill-1-pworker", 2)]
    assert scaled["spec"]["topologyConstraint"] == {"packConstraint": {"required": "topology.kubernetes.io/rack"}}
    assert scaled["spec"]["priorityClassName"] == "high"
    # priorityClassName reaches the PodGang only, never the pods (§4.9).
    assert all("priorityClassName" not in p["spec"] for p in objects_by_kind(result, "Pod").values())


def test_scaled_gang_without_pcsg_constraint_falls_back_to_pcs(tmp_path: Path) -> None:
    text = INF.replace(", topologyConstraint: {pack: {required: rack}}}", "}")
    result = render_files(tmp_path, {"ctb.yaml": GPU_FABRIC, "cfg.yaml": TAS_ON, "inf.yaml": text})
    scaled = objects_by_kind(result, "PodGang")["inf-0-prefill-0"]
    assert scaled["spec"]["topologyConstraint"] == {"packConstraint": {"required": "topology.kubernetes.io/zone"}}
    assert "topologyConstraintGroupConfigs" not in objects_by_kind(result, "PodGang")["inf-0"]["spec"]
