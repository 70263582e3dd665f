"""MNNVL: ComputeDomains and claims for enrolled GPU cliques (spec/grove-desired-state.md §7.6)."""

from __future__ import annotations

from pathlib import Path

from tests.schemas import builtin_errors
from tests.support import KUBE_VERSIONS, objects_by_kind, problems_of, render_files

MNNVL_ON = """
apiVersion: operator.config.grove.io/v1alpha1
kind: OperatorConfiguration
network: {autoMNNVLEnabled: true}
"""
PCS = """
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata: {name: nv, namespace: ml, annotations: {grove.io/mnnvl-group: fabric}}
spec:
  replicas: 2
  template:
    cliques:
    - name: router
      spec: {roleName: router, replicas: 1, podSpec: {containers: [{name: c, image: x}]}}
    - name: leader
      annotations: {grove.io/mnnvl-group: none}
      spec:
        roleName: leader
        replicas: 1
        podSpec: {containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: "8"}}}]}
    - name: worker
      spec:
        roleName: worker
        replicas: 2
        podSpec:
          containers:
          - {name: gpu, image: x, resources: {requests: {nvidia.com/gpu: 4}, limits: {nvidia.com/gpu: 4}}}
          - {name: sidecar, image: x}
    - name: decode
      spec:
        roleName: decode
        replicas: 1
        podSpec: {containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: "1"}}}]}
    podCliqueScalingGroups:
    - {name: dec, cliqueNames: [decode], annotations: {grove.io/mnnvl-group: dgroup}}
"""


def _claims(pod: dict) -> list[dict]:
    return pod["spec"].get("resourceClaims", [])


def test_compute_domains_and_claims(tmp_path: Path) -> None:
    result = render_files(tmp_path, {"cfg.yaml": MNNVL_ON, "pcs.yaml": PCS})
    domains = objects_by_kind(result, "ComputeDomain")
    assert sorted(domains) == ["nv-0-dgroup", "nv-0-fabric", "nv-1-dgroup", "nv-1-fabric"]
    domain = domains["nv-1-fabric"]
    assert domain["apiVersion"] == "resource.nvidia.com/v1beta1"
    assert domain["spec"] == {"numNodes": 0, "channel": {"resourceClaimTemplate": {"name": "nv-1-fabric"}}}
    assert domain["metadata"]["labels"] == {
        "app.kubernetes.io/managed-by": "grove-gitops",
        "app.kubernetes.io/part-of": "nv",
        "app.kubernetes.io/name": "nv-1-fabric",
        "app.kubernetes.io/component": "pcs-computedomain",
        "grove.io/podcliqueset-replica-index": "1",
        "grove.io/mnnvl-group": "fabric",
    }
    pods = {p["spec"]["hostname"]: p for p in objects_by_kind(result, "Pod").values()}
    worker = pods["nv-1-worker-0"]
    assert _claims(worker) == [{"name": "mnnvl-claim", "resourceClaimTemplateName": "nv-1-fabric"}]
    gpu, sidecar = worker["spec"]["containers"]
    assert gpu["resources"]["claims"] == [{"name": "mnnvl-claim"}]
    assert "claims" not in sidecar.get("resources", {})
    assert _claims(pods["nv-0-router-0"]) == []  # no GPU: not enrolled
    assert _claims(pods["nv-0-leader-0"]) == []  # opted out with "none"
    assert _claims(pods["nv-0-dec-0-decode-0"]) == [{"name": "mnnvl-claim", "resourceClaimTemplateName": "nv-0-dgroup"}]
    for pod in pods.values():
        for version in KUBE_VERSIONS:
            assert builtin_errors(pod, version) == []


def test_annotation_without_mnnvl_enabled_is_rejected(tmp_path: Path) -> None:
    problems = problems_of(tmp_path, {"pcs.yaml": PCS})
    assert problems[0] == (
        'pcs.yaml: metadata.annotations.grove.io/mnnvl-group: Invalid value: "fabric": MNNVL is not enabled in the '
        "operator configuration. Either enable MNNVL globally or remove the grove.io/mnnvl-group annotation"
    )


def test_no_annotation_no_compute_domain(tmp_path: Path) -> None:
    text = PCS.replace(", annotations: {grove.io/mnnvl-group: fabric}}", "}").replace(
        ", annotations: {grove.io/mnnvl-group: dgroup}", ""
    )
    result = render_files(tmp_path, {"cfg.yaml": MNNVL_ON, "pcs.yaml": text})
    assert objects_by_kind(result, "ComputeDomain") == {}
    assert all(_claims(p) == [] for p in objects_by_kind(result, "Pod").values())


def test_koordinator_refuses_mnnvl(tmp_path: Path) -> None:
    cfg = MNNVL_ON + "scheduler:\n  defaultProfileName: koord-scheduler\n  profiles: [{name: koord-scheduler}]\n"
    problems = problems_of(tmp_path, {"cfg.yaml": cfg, "pcs.yaml": PCS})
    assert any("koord-scheduler does not support MNNVL" in p for p in problems), problems
