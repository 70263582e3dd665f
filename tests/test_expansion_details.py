"""Expansion rules beyond the worked examples: sharing, startup orders, defaulting quirks."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from grove_gitops.errors import InvalidInputError
from tests.schemas import CRDRegistry, validate_any
from tests.support import objects_by_kind, render_files

SHARING = """
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata: {name: rs, namespace: ml}
spec:
  replicas: 2
  template:
    resourceClaimTemplates:
    - name: gpu
      templateSpec:
        spec:
          devices:
            requests:
            - name: gpu
              exactly: {deviceClassName: gpu.nvidia.com, count: 1}
    resourceSharing:
    - {name: gpu, scope: AllReplicas, filter: {childScalingGroupNames: [grp]}}
    - {name: ext-tpl, scope: PerReplica}
    cliques:
    - name: solo
      resourceSharing: [{name: gpu, scope: PerReplica}]
      spec: {roleName: solo, replicas: 2, podSpec: {containers: [{name: c, image: x}]}}
    - name: member
      spec: {roleName: member, replicas: 1, podSpec: {containers: [{name: c, image: x}], initContainers: [{name: i, image: x}]}}
    podCliqueScalingGroups:
    - name: grp
      cliqueNames: [member]
      replicas: 2
      minAvailable: 1
      resourceSharing: [{name: gpu, scope: AllReplicas}, {name: gpu2, scope: PerReplica, namespace: shared}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: ext-tpl, namespace: ml}
spec:
  spec:
    devices:
      requests:
      - name: nic
        exactly: {deviceClassName: nic.example.com}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: gpu2, namespace: shared}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: gpu.nvidia.com}
"""


def claims_of(pod: dict) -> list[str]:
    return [c["resourceClaimName"] for c in pod["spec"].get("resourceClaims", [])]


def test_resource_sharing_claims_and_injection(tmp_path: Path, crds: CRDRegistry) -> None:
    result = render_files(tmp_path, {"rs.yaml": SHARING})
    claims = objects_by_kind(result, "ResourceClaim")
    assert set(claims) == {
        "rs-all-gpu",
        "rs-0-ext-tpl",
        "rs-1-ext-tpl",
        "rs-0-solo-0-gpu",
        "rs-0-solo-1-gpu",
        "rs-1-solo-0-gpu",
        "rs-1-solo-1-gpu",
        "rs-0-grp-all-gpu",
        "rs-1-grp-all-gpu",
        "rs-0-grp-0-gpu2",
        "rs-0-grp-1-gpu2",
        "rs-1-grp-0-gpu2",
        "rs-1-grp-1-gpu2",
    }
    assert claims["rs-0-ext-tpl"]["spec"]["devices"]["requests"][0]["name"] == "nic"
    assert claims["rs-0-grp-1-gpu2"]["metadata"]["labels"]["grove.io/podcliquescalinggroup-replica-index"] == "1"
    assert claims["rs-0-solo-1-gpu"]["metadata"]["labels"]["grove.io/podclique-pod-index"] == "1"
    assert claims["rs-all-gpu"]["metadata"]["labels"]["app.kubernetes.io/component"] == "resource-claim"
    pods = objects_by_kind(result, "Pod")
    solo = next(p for p in pods.values() if p["spec"]["hostname"] == "rs-1-solo-1")
    # PCS-All is filtered to the scaling group; PCS-Per applies; then the clique's own per-pod claim.
    assert claims_of(solo) == ["rs-1-ext-tpl", "rs-1-solo-1-gpu"]
    member = next(p for p in pods.values() if p["spec"]["hostname"] == "rs-0-grp-1-member-0")
    assert claims_of(member) == ["rs-all-gpu", "rs-0-ext-tpl", "rs-0-grp-all-gpu", "rs-0-grp-1-gpu2"]
    for key in ("containers", "initContainers"):
        assert [c["name"] for c in member["spec"][key][0]["resources"]["claims"]] == claims_of(member)
    for version in ("1.35", "1.36", "1.37"):
        for obj in [*claims.values(), solo, member]:
            assert validate_any(obj, crds, version) == []


def test_pod_fields_grove_does_not_model_are_kept(tmp_path: Path) -> None:
    """Fields of the target Kubernetes version's PodSpec pass through untouched; a field that version
    does not know is refused (tests/test_podspec_validation.py), as the API server would."""
    text = yaml.safe_dump(
        {
            "apiVersion": "grove.io/v1alpha1",
            "kind": "PodCliqueSet",
            "metadata": {"name": "keep"},
            "spec": {
                "replicas": 1,
                "template": {
                    "cliques": [
                        {
                            "name": "a",
                            "spec": {
                                "roleName": "a",
                                "replicas": 1,
                                "podSpec": {
                                    "containers": [{"name": "c", "image": "x", "stdin": True}],
                                    "shareProcessNamespace": True,
                                    "tolerations": [{"key": "gpu", "operator": "Exists"}],
                                    "schedulingGates": [{"name": "user-gate"}],
                                },
                            },
                        }
                    ]
                },
            },
        }
    )
    pod = next(iter(objects_by_kind(render_files(tmp_path, {"k.yaml": text}), "Pod").values()))
    assert pod["spec"]["shareProcessNamespace"] is True
    assert pod["spec"]["containers"][0]["stdin"] is True
    assert pod["spec"]["tolerations"] == [{"key": "gpu", "operator": "Exists"}]
    assert pod["spec"]["schedulingGates"] == [{"name": "grove.io/podgang-pending-creation"}]  # Grove replaces gates
    assert pod["metadata"]["namespace"] == "default"


def _inorder(startup: str) -> str:
    return f"""
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata: {{name: io, namespace: ml}}
spec:
  replicas: 1
  template:
    cliqueStartupType: {startup}
    cliques:
    - {{name: a, spec: {{roleName: a, replicas: 1, podSpec: {{containers: [{{name: c, image: x}}]}}}}}}
    - {{name: b, spec: {{roleName: b, replicas: 2, startsAfter: [a], podSpec: {{containers: [{{name: c, image: x}}]}}}}}}
    - {{name: c, spec: {{roleName: c, replicas: 1, startsAfter: [b], podSpec: {{containers: [{{name: c, image: x}}]}}}}}}
    podCliqueScalingGroups:
    - {{name: g, cliqueNames: [b, c], replicas: 2, minAvailable: 1}}
"""


def _args(result, hostname: str) -> list[str] | None:  # type: ignore[no-untyped-def]
    pod = next(p for p in objects_by_kind(result, "Pod").values() if p["spec"]["hostname"] == hostname)
    inits = [c for c in pod["spec"].get("initContainers", []) if c["name"] == "grove-initc"]
    return inits[0]["args"] if inits else None


@pytest.mark.parametrize("startup", ["CliqueStartupTypeInOrder", "CliqueStartupTypeExplicit"])
def test_startup_orders(tmp_path: Path, startup: str) -> None:
    result = render_files(tmp_path, {"io.yaml": _inorder(startup)})
    assert _args(result, "io-0-a-0") is None
    assert _args(result, "io-0-g-0-b-0") == ["--podcliques=io-0-a:1"]
    assert _args(result, "io-0-g-0-c-0") == ["--podcliques=io-0-g-0-b:2"]
    # Scaled gang: the dependency on a (outside the group) is dropped, b stays.
    assert _args(result, "io-0-g-1-b-0") is None
    assert _args(result, "io-0-g-1-c-0") == ["--podcliques=io-0-g-1-b:2"]


def test_any_order_ignores_starts_after(tmp_path: Path) -> None:
    result = render_files(tmp_path, {"io.yaml": _inorder("CliqueStartupTypeAnyOrder")})
    assert all(_args(result, p["spec"]["hostname"]) is None for p in objects_by_kind(result, "Pod").values())


def test_absent_replicas_with_min_available_is_accepted_as_one(tmp_path: Path) -> None:
    text = """
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata: {name: dflt}
spec:
  replicas: 1
  template:
    cliques:
    - {name: a, spec: {roleName: a, minAvailable: 1, podSpec: {containers: [{name: c, image: x}]}}}
"""
    result = render_files(tmp_path, {"d.yaml": text})
    assert len(objects_by_kind(result, "Pod")) == 1
    gang = objects_by_kind(result, "PodGang")["dflt-0"]
    assert gang["spec"]["podgroups"][0]["minReplicas"] == 1
    with pytest.raises(InvalidInputError) as info:
        render_files(tmp_path / "b", {"d.yaml": text.replace("minAvailable: 1, ", "")})
    assert "spec.template.cliques[0].spec.minAvailable: Invalid value: 0: must be greater than 0" in str(info.value)


def test_zero_pcs_replicas_renders_only_rbac(tmp_path: Path) -> None:
    text = _inorder("CliqueStartupTypeAnyOrder").replace("  replicas: 1\n  template", "  replicas: 0\n  template")
    kinds = sorted(o.obj["kind"] for o in render_files(tmp_path, {"z.yaml": text}).objects)
    # and the workload's gitops.grove.io record (docs/autoscaling.md), which exists at zero too
    assert kinds == ["PodCliqueSet", "Role", "RoleBinding", "Secret", "ServiceAccount"]


def test_publish_not_ready_addresses_and_user_env_is_overridden(tmp_path: Path) -> None:
    text = """
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata: {name: svc, namespace: ml}
spec:
  replicas: 1
  template:
    headlessServiceConfig: {publishNotReadyAddresses: false}
    cliques:
    - name: a
      spec:
        roleName: a
        replicas: 1
        podSpec:
          containers:
          - name: c
            image: x
            env: [{name: GROVE_PCS_NAME, value: spoofed}, {name: MINE, value: kept}]
"""
    result = render_files(tmp_path, {"s.yaml": text})
    service = objects_by_kind(result, "Service")["svc-0"]
    assert service["spec"] == {
        "selector": {
            "app.kubernetes.io/managed-by": "grove-gitops",
            "app.kubernetes.io/part-of": "svc",
            "grove.io/podcliqueset-replica-index": "0",
        },
        "clusterIP": "None",
        "publishNotReadyAddresses": False,
    }
    env = next(iter(objects_by_kind(result, "Pod").values()))["spec"]["containers"][0]["env"]
    assert [e["name"] for e in env][-1] == "MINE"
    assert [e.get("value") for e in env if e["name"] == "GROVE_PCS_NAME"] == ["svc"]


def test_scaling_group_claims_alone_are_mounted_and_cliques_without_any_mount_none(tmp_path: Path) -> None:
    """A clique that mounts nothing costs no per-pod claim lists (issue 35.4); one whose only
    claims come from its scaling group must still mount them."""
    first, *others = SHARING.split("\n---\n")
    doc = yaml.safe_load(first)
    template = doc["spec"]["template"]
    del template["resourceSharing"]
    del template["cliques"][0]["resourceSharing"]
    result = render_files(tmp_path, {"rs.yaml": "\n---\n".join([yaml.safe_dump(doc), *others])})
    pods = objects_by_kind(result, "Pod")
    solo = next(p for p in pods.values() if p["spec"]["hostname"] == "rs-1-solo-1")
    assert "resourceClaims" not in solo["spec"]
    assert "resources" not in solo["spec"]["containers"][0]
    member = next(p for p in pods.values() if p["spec"]["hostname"] == "rs-1-grp-0-member-0")
    assert claims_of(member) == ["rs-1-grp-all-gpu", "rs-1-grp-0-gpu2"]
