"""``default-scheduler`` with ``gangScheduling``: the Kubernetes Workload API per version.

Every rendered built-in object (Workload, PodGroup, CompositePodGroup, Pod) is validated
against the strict OpenAPI schemas of the targeted Kubernetes minor, every PodGang against
Grove's CRD; pods are also checked *not* to validate for the other versions' pod field, so a
version mix-up cannot pass silently.
"""

from __future__ import annotations

import copy
import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from grove_gitops.errors import InvalidInputError
from grove_gitops.render import RenderResult, render_source
from grove_gitops_backends.workload_api import fit_label
from tests.schemas import CRDRegistry, builtin_errors
from tests.support import CRDS, plain, without_namespace_warnings, write_source

VERSIONS = ("1.35", "1.36", "1.37")
GANG_OBJECTS = "gitops.grove.io/gang-objects"
POD_BINDING = "gitops.grove.io/pod-binding"
GATE = [{"name": "grove.io/podgang-pending-creation"}]
LABELS = {
    "app.kubernetes.io/managed-by": "grove-gitops",
    "app.kubernetes.io/part-of": "disagg",
    "app.kubernetes.io/component": "podgang",
    "grove.io/scheduler-name": "default-scheduler",
}
CTRL = {"apiGroup": "scheduler.grove.io", "kind": "PodGang"}

# Standalone router + scaling group prefill (leader + 4 workers), replicas 3 > minAvailable 1:
# base PodGang disagg-0 and scaled PodGangs disagg-0-prefill-0 / -1.
DISAGG = """
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata: {name: disagg, namespace: llm}
spec:
  replicas: 1
  template:
    cliques:
    - {name: router, spec: {roleName: router, replicas: 1, podSpec: {containers: [{name: c, image: busybox}]}}}
    - {name: pleader, spec: {roleName: pleader, replicas: 1, podSpec: {containers: [{name: c, image: busybox}]}}}
    - {name: pworker, spec: {roleName: pworker, replicas: 4, podSpec: {containers: [{name: c, image: busybox}]}}}
    podCliqueScalingGroups:
    - {name: prefill, cliqueNames: [pleader, pworker], replicas: 3, minAvailable: 1}
"""
SOLO = """
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata: {name: solo, namespace: llm}
spec:
  replicas: 2
  template:
    cliques:
    - {name: worker, spec: {roleName: worker, replicas: 3, minAvailable: 2, podSpec: {containers: [{name: c, image: x}]}}}
"""
FABRIC = """
apiVersion: grove.io/v1alpha1
kind: ClusterTopologyBinding
metadata: {name: fabric}
spec:
  levels:
  - {domain: block, key: network.topology.nvidia.com/block}
  - {domain: rack, key: topology.kubernetes.io/rack}
  - {domain: host, key: kubernetes.io/hostname}
"""
# The reference gang's topology (spec/backend-crs.md §1): gang in one block, each prefill
# replica in one rack, workers preferably on one host.
TOPO_DISAGG = """
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata: {name: disagg, namespace: llm}
spec:
  replicas: 1
  template:
    topologyConstraint: {topologyName: fabric, pack: {required: block}}
    cliques:
    - {name: router, spec: {roleName: router, replicas: 1, podSpec: {containers: [{name: c, image: busybox}]}}}
    - {name: pleader, spec: {roleName: pleader, replicas: 1, podSpec: {containers: [{name: c, image: busybox}]}}}
    - name: pworker
      topologyConstraint: {pack: {required: rack, preferred: host}}
      spec: {roleName: pworker, replicas: 4, podSpec: {containers: [{name: c, image: busybox}]}}
    podCliqueScalingGroups:
    - {name: prefill, cliqueNames: [pleader, pworker], replicas: 2, minAvailable: 1, topologyConstraint: {pack: {required: rack}}}
"""


def config(version: str, gang: Any = True, tas: bool = False, gitops: str = "both") -> str:
    profile = (
        {"name": "default-scheduler"}
        if gang is None
        else {"name": "default-scheduler", "config": {"gangScheduling": gang}}
    )
    return textwrap.dedent(
        f"""
        apiVersion: operator.config.grove.io/v1alpha1
        kind: OperatorConfiguration
        topologyAwareScheduling: {{enabled: {str(tas).lower()}}}
        scheduler:
          profiles:
          - {json.dumps(profile)}
        ---
        apiVersion: gitops.grove.io/v1alpha1
        kind: RenderConfiguration
        kubernetesVersion: "{version}"
        gitops: {gitops}
        """
    )


def render(
    tmp_path: Path, version: str, *pcs: str, gang: Any = True, tas: bool = False, gitops: str = "both"
) -> RenderResult:
    files = {"config.yaml": config(version, gang, tas, gitops), "ctb.yaml": FABRIC}
    files.update({f"pcs{i}.yaml": text for i, text in enumerate(pcs)})
    return render_source(write_source(tmp_path / f"src-{version}-{gang}-{gitops}", files))


def by_kind(result: RenderResult, kind: str) -> dict[str, dict[str, Any]]:
    return {o.obj["metadata"]["name"]: o.obj for o in result.objects if o.obj["kind"] == kind}


def workload_api_objects(result: RenderResult) -> list[dict[str, Any]]:
    return [o.obj for o in result.objects if o.obj["apiVersion"].startswith("scheduling.k8s.io/")]


def pods_by_podclique(result: RenderResult) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for pod in by_kind(result, "Pod").values():
        out.setdefault(pod["metadata"]["labels"]["grove.io/podclique"], []).append(pod)
    return out


def assert_all_valid(result: RenderResult, version: str, crds: CRDRegistry) -> None:
    """Every Workload API object and pod validates for ``version``; pods fail for the others'
    pod field; every PodGang validates against Grove's CRD."""
    for obj in workload_api_objects(result):
        assert builtin_errors(obj, version) == [], obj["metadata"]["name"]
    for pod in by_kind(result, "Pod").values():
        assert builtin_errors(pod, version) == [], pod["metadata"]["name"]
        assert pod["spec"]["schedulingGates"] == GATE
        assert pod["spec"]["schedulerName"] == "default-scheduler"
    wrong = {"1.35": ["1.36", "1.37"], "1.36": ["1.35"], "1.37": ["1.35"]}[version]
    field = "workloadRef" if version == "1.35" else "schedulingGroup"
    for other in wrong:
        for pod in by_kind(result, "Pod").values():
            errors = builtin_errors(pod, other)
            assert any(f"spec.{field}: unknown field" in e for e in errors), (other, errors)
    for gang in by_kind(result, "PodGang").values():
        assert crds.validate(gang) == []


def gang_objects_annotation(result: RenderResult) -> dict[str, list[dict[str, str]]]:
    return {n: json.loads(g["metadata"]["annotations"][GANG_OBJECTS]) for n, g in by_kind(result, "PodGang").items()}


@pytest.fixture(scope="module")
def crds() -> CRDRegistry:
    return CRDRegistry.from_dir(CRDS)


# --- gangScheduling off: Grove's behaviour -----------------------------------------------------


@pytest.mark.parametrize("gang", [None, False])
def test_without_gang_scheduling_only_scheduler_name(tmp_path: Path, gang: bool | None, crds: CRDRegistry) -> None:
    result = render(tmp_path, "1.36", DISAGG, gang=gang)
    assert workload_api_objects(result) == []
    assert set(by_kind(result, "PodGang")) == {"disagg-0", "disagg-0-prefill-0", "disagg-0-prefill-1"}
    assert gang_objects_annotation(result) == {n: [] for n in ("disagg-0", "disagg-0-prefill-0", "disagg-0-prefill-1")}
    for pod in by_kind(result, "Pod").values():
        assert "workloadRef" not in pod["spec"] and "schedulingGroup" not in pod["spec"]
        assert builtin_errors(pod, "1.36") == [] and builtin_errors(pod, "1.35") == []
        assert pod["spec"]["schedulerName"] == "default-scheduler"
        assert pod["spec"]["schedulingGates"] == GATE
    assert without_namespace_warnings(result.warnings) == []


def test_without_gang_scheduling_topology_is_recorded_not_enforced(tmp_path: Path) -> None:
    result = render(tmp_path, "1.37", TOPO_DISAGG, gang=False, tas=True)
    assert workload_api_objects(result) == []
    assert without_namespace_warnings(result.warnings) == [
        "pcs0.yaml: spec.template: topology constraints are recorded in the PodGang but the default-scheduler does "
        "not enforce them"
    ]


def test_gang_scheduling_false_renders_exactly_like_absent(tmp_path: Path) -> None:
    absent = render(tmp_path, "1.37", DISAGG, gang=None)
    off = render(tmp_path, "1.37", DISAGG, gang=False)
    assert [o.obj for o in absent.objects] == [o.obj for o in off.objects]


# --- 1.35: Workload v1alpha1 + pod spec.workloadRef ---------------------------------------------


def test_135_one_workload_per_podgang_with_merged_pod_group(tmp_path: Path, crds: CRDRegistry) -> None:
    result = render(tmp_path, "1.35", DISAGG)
    assert_all_valid(result, "1.35", crds)
    workloads = by_kind(result, "Workload")
    assert [o["kind"] for o in workload_api_objects(result)] == ["Workload"] * 3
    assert workloads["disagg-0"] == {
        "apiVersion": "scheduling.k8s.io/v1alpha1",
        "kind": "Workload",
        "metadata": {
            "name": "disagg-0",
            "namespace": "llm",
            "labels": LABELS,
            "annotations": {"argocd.argoproj.io/sync-wave": "-2"},
        },
        "spec": {
            "controllerRef": {**CTRL, "name": "disagg-0"},
            # router 1 + prefill-0 leader 1 + prefill-0 workers 4
            "podGroups": [{"name": "disagg-0", "policy": {"gang": {"minCount": 6}}}],
        },
    }
    for scaled in ("disagg-0-prefill-0", "disagg-0-prefill-1"):
        assert workloads[scaled]["spec"]["podGroups"] == [{"name": scaled, "policy": {"gang": {"minCount": 5}}}]
        assert workloads[scaled]["spec"]["controllerRef"] == {**CTRL, "name": scaled}
    pods = pods_by_podclique(result)
    refs = {fqn: {json.dumps(p["spec"]["workloadRef"]) for p in members} for fqn, members in pods.items()}
    base = json.dumps({"name": "disagg-0", "podGroup": "disagg-0"})
    assert refs["disagg-0-router"] == {base}
    assert refs["disagg-0-prefill-0-pworker"] == {base}
    assert refs["disagg-0-prefill-2-pleader"] == {
        json.dumps({"name": "disagg-0-prefill-1", "podGroup": "disagg-0-prefill-1"})
    }
    annotation = gang_objects_annotation(result)
    assert annotation["disagg-0"] == [
        {"apiVersion": "scheduling.k8s.io/v1alpha1", "kind": "Workload", "name": "disagg-0"}
    ]
    # Every pod minimum equals replicas, so the merged gang is exact: no merge warning.
    assert not any("all-or-nothing" in w for w in result.warnings)


# --- 1.36: Workload + PodGroup v1alpha2 + pod spec.schedulingGroup --------------------------------


def test_136_workload_and_merged_podgroup(tmp_path: Path, crds: CRDRegistry) -> None:
    result = render(tmp_path, "1.36", DISAGG)
    assert_all_valid(result, "1.36", crds)
    objects = workload_api_objects(result)
    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [
        ("Workload", "disagg-0"),
        ("PodGroup", "disagg-0"),
        ("Workload", "disagg-0-prefill-0"),
        ("PodGroup", "disagg-0-prefill-0"),
        ("Workload", "disagg-0-prefill-1"),
        ("PodGroup", "disagg-0-prefill-1"),
    ]
    assert objects[0]["spec"] == {
        "controllerRef": {**CTRL, "name": "disagg-0"},
        "podGroupTemplates": [{"name": "disagg-0", "schedulingPolicy": {"gang": {"minCount": 6}}}],
    }
    assert objects[1] == {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": "disagg-0", "namespace": "llm", "labels": LABELS},
        "spec": {
            "podGroupTemplateRef": {"workload": {"workloadName": "disagg-0", "podGroupTemplateName": "disagg-0"}},
            "schedulingPolicy": {"gang": {"minCount": 6}},
        },
    }
    assert objects[5]["spec"]["schedulingPolicy"] == {"gang": {"minCount": 5}}
    pods = pods_by_podclique(result)
    for fqn, gang in (
        ("disagg-0-router", "disagg-0"),
        ("disagg-0-prefill-0-pleader", "disagg-0"),
        ("disagg-0-prefill-1-pworker", "disagg-0-prefill-0"),
        ("disagg-0-prefill-2-pworker", "disagg-0-prefill-1"),
    ):
        assert all(p["spec"]["schedulingGroup"] == {"podGroupName": gang} for p in pods[fqn]), fqn
    assert gang_objects_annotation(result)["disagg-0-prefill-1"] == [
        {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "Workload", "name": "disagg-0-prefill-1"},
        {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup", "name": "disagg-0-prefill-1"},
    ]


# --- 1.37: v1beta1 Workload/PodGroup + v1alpha3 CompositePodGroup --------------------------------


def test_137_composite_tree_for_multi_group_gangs(tmp_path: Path, crds: CRDRegistry) -> None:
    result = render(tmp_path, "1.37", DISAGG)
    assert_all_valid(result, "1.37", crds)
    objects = {(o["kind"], o["metadata"]["name"]): o for o in workload_api_objects(result)}
    assert list(objects) == [
        ("Workload", "disagg-0"),
        ("CompositePodGroup", "disagg-0"),
        ("CompositePodGroup", "disagg-0-prefill-0-pcsg"),
        ("PodGroup", "disagg-0-router"),
        ("PodGroup", "disagg-0-prefill-0-pleader"),
        ("PodGroup", "disagg-0-prefill-0-pworker"),
        ("Workload", "disagg-0-prefill-0"),
        ("CompositePodGroup", "disagg-0-prefill-0"),
        ("PodGroup", "disagg-0-prefill-1-pleader"),
        ("PodGroup", "disagg-0-prefill-1-pworker"),
        ("Workload", "disagg-0-prefill-1"),
        ("CompositePodGroup", "disagg-0-prefill-1"),
        ("PodGroup", "disagg-0-prefill-2-pleader"),
        ("PodGroup", "disagg-0-prefill-2-pworker"),
    ]
    workload = objects[("Workload", "disagg-0")]
    assert workload["apiVersion"] == "scheduling.k8s.io/v1beta1"
    assert workload["spec"] == {
        "controllerRef": {**CTRL, "name": "disagg-0"},
        "compositePodGroupTemplates": [
            {
                "name": "disagg",
                "schedulingPolicy": {"gang": {"minGroupCount": 2}},
                "podGroupTemplates": [{"name": "router", "schedulingPolicy": {"gang": {"minCount": 1}}}],
                "compositePodGroupTemplates": [
                    {
                        "name": "prefill",
                        "schedulingPolicy": {"gang": {"minGroupCount": 2}},
                        "podGroupTemplates": [
                            {"name": "pleader", "schedulingPolicy": {"gang": {"minCount": 1}}},
                            {"name": "pworker", "schedulingPolicy": {"gang": {"minCount": 4}}},
                        ],
                    }
                ],
            }
        ],
    }
    assert objects[("CompositePodGroup", "disagg-0")] == {
        "apiVersion": "scheduling.k8s.io/v1alpha3",
        "kind": "CompositePodGroup",
        "metadata": {
            "name": "disagg-0",
            "namespace": "llm",
            "labels": LABELS,
            "annotations": {"argocd.argoproj.io/sync-wave": "-1"},
        },
        "spec": {
            "workloadRef": {"workloadName": "disagg-0", "templateName": "disagg"},
            "schedulingPolicy": {"gang": {"minGroupCount": 2}},
        },
    }
    assert objects[("CompositePodGroup", "disagg-0-prefill-0-pcsg")]["spec"] == {
        "parentCompositePodGroupName": "disagg-0",
        "workloadRef": {"workloadName": "disagg-0", "templateName": "prefill"},
        "schedulingPolicy": {"gang": {"minGroupCount": 2}},
    }
    assert objects[("PodGroup", "disagg-0-prefill-0-pworker")] == {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "disagg-0-prefill-0-pworker", "namespace": "llm", "labels": LABELS},
        "spec": {
            "parentCompositePodGroupName": "disagg-0-prefill-0-pcsg",
            "workloadRef": {"workloadName": "disagg-0", "templateName": "pworker"},
            "schedulingPolicy": {"gang": {"minCount": 4}},
        },
    }
    assert objects[("PodGroup", "disagg-0-router")]["spec"]["parentCompositePodGroupName"] == "disagg-0"
    # Scaled gang: its root is the scaling-group replica itself (no nesting).
    assert objects[("Workload", "disagg-0-prefill-1")]["spec"]["compositePodGroupTemplates"][0]["name"] == "prefill"
    assert objects[("PodGroup", "disagg-0-prefill-2-pleader")]["spec"] == {
        "parentCompositePodGroupName": "disagg-0-prefill-1",
        "workloadRef": {"workloadName": "disagg-0-prefill-1", "templateName": "pleader"},
        "schedulingPolicy": {"gang": {"minCount": 1}},
    }
    for fqn, members in pods_by_podclique(result).items():
        assert all(p["spec"]["schedulingGroup"] == {"podGroupName": fqn} for p in members), fqn
        assert ("PodGroup", fqn) in objects
    assert [r["kind"] for r in gang_objects_annotation(result)["disagg-0"]] == [
        "Workload",
        "CompositePodGroup",
        "CompositePodGroup",
        "PodGroup",
        "PodGroup",
        "PodGroup",
    ]
    assert any("feature gate CompositePodGroup (alpha)" in w for w in result.warnings)


def test_137_single_group_gang_needs_no_composite(tmp_path: Path, crds: CRDRegistry) -> None:
    result = render(tmp_path, "1.37", SOLO)
    assert_all_valid(result, "1.37", crds)
    objects = workload_api_objects(result)
    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [
        ("Workload", "solo-0"),
        ("PodGroup", "solo-0-worker"),
        ("Workload", "solo-1"),
        ("PodGroup", "solo-1-worker"),
    ]
    assert objects[0]["spec"] == {
        "controllerRef": {**CTRL, "name": "solo-0"},
        "podGroupTemplates": [{"name": "worker", "schedulingPolicy": {"gang": {"minCount": 2}}}],
    }
    assert objects[1]["spec"] == {
        "workloadRef": {"workloadName": "solo-0", "templateName": "worker"},
        "schedulingPolicy": {"gang": {"minCount": 2}},
    }
    assert not any("CompositePodGroup" in w for w in result.warnings)


def test_137_single_clique_scaling_group_replicas_share_a_template(tmp_path: Path, crds: CRDRegistry) -> None:
    text = """
    apiVersion: grove.io/v1alpha1
    kind: PodCliqueSet
    metadata: {name: flat, namespace: llm}
    spec:
      replicas: 1
      template:
        cliques:
        - {name: router, spec: {roleName: router, replicas: 1, podSpec: {containers: [{name: c, image: x}]}}}
        - {name: w, spec: {roleName: w, replicas: 2, podSpec: {containers: [{name: c, image: x}]}}}
        podCliqueScalingGroups:
        - {name: sg, cliqueNames: [w], replicas: 3, minAvailable: 2}
    """
    result = render(tmp_path, "1.37", text)
    assert_all_valid(result, "1.37", crds)
    assert set(by_kind(result, "CompositePodGroup")) == {"flat-0"}  # no nesting for one clique without topology
    assert by_kind(result, "Workload")["flat-0"]["spec"]["compositePodGroupTemplates"] == [
        {
            "name": "flat",
            "schedulingPolicy": {"gang": {"minGroupCount": 3}},
            "podGroupTemplates": [
                {"name": "router", "schedulingPolicy": {"gang": {"minCount": 1}}},
                {"name": "w", "schedulingPolicy": {"gang": {"minCount": 2}}},
            ],
        }
    ]
    groups = by_kind(result, "PodGroup")
    for name in ("flat-0-sg-0-w", "flat-0-sg-1-w"):
        assert groups[name]["spec"]["parentCompositePodGroupName"] == "flat-0"
        assert groups[name]["spec"]["workloadRef"] == {"workloadName": "flat-0", "templateName": "w"}
    # The scaled gang (scaling-group replica 2) holds one podgroup: a plain PodGroup.
    assert groups["flat-0-sg-2-w"]["spec"] == {
        "workloadRef": {"workloadName": "flat-0-sg-0", "templateName": "w"},
        "schedulingPolicy": {"gang": {"minCount": 2}},
    }


# --- warnings: requirements, merged gangs, topology ----------------------------------------------


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        (
            "1.35",
            "pcs0.yaml: scheduler.profiles[default-scheduler].config.gangScheduling: gangScheduling renders Kubernetes "
            "1.35 scheduling.k8s.io/v1alpha1 Workloads and pod spec.workloadRef: the cluster needs feature gates "
            "GenericWorkload and GangScheduling (alpha) on kube-apiserver and kube-scheduler and "
            "--runtime-config=scheduling.k8s.io/v1alpha1=true on kube-apiserver; without them the Workload API kinds "
            "are not served (the apply fails) and kube-apiserver drops spec.workloadRef from the pods, so nothing is "
            "gang-scheduled",
        ),
        (
            "1.36",
            "pcs0.yaml: scheduler.profiles[default-scheduler].config.gangScheduling: gangScheduling renders Kubernetes "
            "1.36 scheduling.k8s.io/v1alpha2 Workloads and PodGroups and pod spec.schedulingGroup: the cluster needs "
            "feature gates GenericWorkload and GangScheduling (alpha) on kube-apiserver and kube-scheduler and "
            "--runtime-config=scheduling.k8s.io/v1alpha2=true on kube-apiserver; without them the Workload API kinds "
            "are not served (the apply fails) and kube-apiserver drops spec.schedulingGroup from the pods, so nothing "
            "is gang-scheduled",
        ),
        (
            "1.37",
            "pcs0.yaml: scheduler.profiles[default-scheduler].config.gangScheduling: gangScheduling renders Kubernetes "
            "1.37 scheduling.k8s.io/v1beta1 Workloads and PodGroups and pod spec.schedulingGroup: the cluster needs "
            "feature gate GenericWorkload (beta, but off by default) on kube-apiserver and kube-scheduler and "
            "--runtime-config=scheduling.k8s.io/v1beta1=true on kube-apiserver; without them the Workload API kinds "
            "are not served (the apply fails) and kube-apiserver drops spec.schedulingGroup from the pods, so nothing "
            "is gang-scheduled",
        ),
    ],
)
def test_requirement_warning_once_per_render(tmp_path: Path, version: str, expected: str) -> None:
    # Argo CD: the Flux warning of 1.35 (the next test) is not one of these
    result = render(tmp_path, version, SOLO, SOLO.replace("name: solo", "name: solo2"), gitops="argocd")
    assert without_namespace_warnings(result.warnings) == [expected]  # two PodCliqueSets, one warning, no topology / composite extras


def test_flux_on_1_35_warns_that_flux_drops_the_pods_workload_ref(tmp_path: Path) -> None:
    """Real Flux strips spec.workloadRef from 1.35 pods (tests/controlplane/test_flux.py pins it
    on the real control plane): a flux (or both) render for 1.35 says so once; Argo CD renders, 1.36+
    (spec.schedulingGroup, which Flux keeps) and renders without gang scheduling do not."""
    def flux_warnings(version: str, gitops: str, gang: Any = True) -> list[str]:
        result = render(tmp_path, version, SOLO, SOLO.replace("name: solo", "name: solo2"), gang=gang, gitops=gitops)
        return [w for w in result.warnings if "spec.workloadRef when it applies" in w]

    assert flux_warnings("1.35", "flux") == [
        "pcs0.yaml: scheduler.profiles[default-scheduler].config.gangScheduling: gitops: flux on Kubernetes 1.35: "
        "Flux (2.9 and later) drops pod spec.workloadRef when it applies the pods (its server-side apply passes "
        "them through client-go's typed PodSpec, which no longer has the field), so the pods lose their gang "
        "and the agent releases none of them; apply with Argo CD, or use another gang backend on 1.35 "
        "(docs/backends/default-scheduler.md, GitOps notes)"
    ]
    # ``both`` renders for either engine: the same warning, conditional on Flux (before: none)
    assert flux_warnings("1.35", "both") == [
        "pcs0.yaml: scheduler.profiles[default-scheduler].config.gangScheduling: gitops: both on Kubernetes 1.35: "
        "if Flux applies this output, Flux (2.9 and later) drops pod spec.workloadRef when it applies the pods "
        "(its server-side apply passes them through client-go's typed PodSpec, which no longer has the field), so "
        "the pods lose their gang and the agent releases none of them; apply with Argo CD, or use another gang backend "
        "on 1.35 (docs/backends/default-scheduler.md, GitOps notes)"
    ]
    assert flux_warnings("1.35", "argocd") == []
    assert flux_warnings("1.36", "flux") == []
    assert flux_warnings("1.35", "flux", gang=False) == []


def test_merged_gang_warns_when_per_clique_minimum_is_lost(tmp_path: Path) -> None:
    text = DISAGG.replace("replicas: 4, podSpec", "replicas: 4, minAvailable: 3, podSpec")
    for version in ("1.35", "1.36"):
        result = render(tmp_path, version, text)
        assert by_kind(result, "Workload")["disagg-0"]["spec"] is not None
        lost = [w for w in result.warnings if "all-or-nothing" in w]
        assert lost == [
            f"pcs0.yaml: spec.template.cliques[2].spec.minAvailable: Kubernetes {version} cannot make several pod "
            "groups all-or-nothing together, so PodGang disagg-0 is rendered as one pod group with minCount 5 (the "
            "sum of its cliques' minAvailable) over 6 pods: the scheduler starts it as soon as any 5 of them fit, so "
            "clique pworker (minAvailable 3, replicas 4) may start with fewer than 3 pods (per-clique minimums need "
            "Kubernetes 1.37 CompositePodGroups)",
            f"pcs0.yaml: spec.template.cliques[2].spec.minAvailable: Kubernetes {version} cannot make several pod "
            "groups all-or-nothing together, so every scaled PodGang of scaling group prefill is rendered as one pod "
            "group with minCount 4 (the sum of its cliques' minAvailable) over 5 pods: the scheduler starts it as "
            "soon as any 4 of them fit, so clique pworker (minAvailable 3, replicas 4) may start with fewer than 3 "
            "pods (per-clique minimums need Kubernetes 1.37 CompositePodGroups)",
        ]
    result = render(tmp_path, "1.37", text)
    assert not any("all-or-nothing" in w for w in result.warnings)
    assert by_kind(result, "PodGroup")["disagg-0-prefill-0-pworker"]["spec"]["schedulingPolicy"] == {
        "gang": {"minCount": 3}
    }


def test_single_group_gang_with_spare_replicas_is_exact(tmp_path: Path) -> None:
    result = render(tmp_path, "1.36", SOLO)
    assert by_kind(result, "PodGroup")["solo-1"]["spec"]["schedulingPolicy"] == {"gang": {"minCount": 2}}
    assert not any("all-or-nothing" in w for w in result.warnings)


def test_135_topology_cannot_be_expressed(tmp_path: Path, crds: CRDRegistry) -> None:
    result = render(tmp_path, "1.35", TOPO_DISAGG, tas=True)
    assert_all_valid(result, "1.35", crds)
    none = "the Kubernetes 1.35 Workload API has no topology constraints: required packing by {} is not enforced"
    pref = "the Kubernetes Workload API has required topology constraints only: preferred packing by {} is not enforced"
    assert without_namespace_warnings(result.warnings)[:4] == [
        "pcs0.yaml: spec.template.topologyConstraint.pack.required: "
        + none.format("network.topology.nvidia.com/block"),
        "pcs0.yaml: spec.template.podCliqueScalingGroups[0].topologyConstraint.pack.required: "
        + none.format("topology.kubernetes.io/rack"),
        "pcs0.yaml: spec.template.cliques[2].topologyConstraint.pack.required: "
        + none.format("topology.kubernetes.io/rack"),
        "pcs0.yaml: spec.template.cliques[2].topologyConstraint.pack.preferred: "
        + pref.format("kubernetes.io/hostname"),
    ]
    assert not any("TopologyAwareWorkloadScheduling" in w for w in result.warnings)
    assert "schedulingConstraints" not in json.dumps(workload_api_objects(result))


def test_136_topology_on_the_merged_podgroup(tmp_path: Path, crds: CRDRegistry) -> None:
    result = render(tmp_path, "1.36", TOPO_DISAGG, tas=True)
    assert_all_valid(result, "1.36", crds)
    groups = by_kind(result, "PodGroup")
    block = {"topology": [{"key": "network.topology.nvidia.com/block"}]}
    rack = {"topology": [{"key": "topology.kubernetes.io/rack"}]}
    assert groups["disagg-0"]["spec"]["schedulingConstraints"] == block
    assert by_kind(result, "Workload")["disagg-0"]["spec"]["podGroupTemplates"][0]["schedulingConstraints"] == block
    # The scaled gang's own constraint is its scaling group's.
    assert groups["disagg-0-prefill-0"]["spec"]["schedulingConstraints"] == rack
    lost = (
        "Kubernetes 1.36 renders {} as one PodGroup with a single topology key and it carries the PodGang's ({}): "
        "required packing by topology.kubernetes.io/rack of this part of the gang alone is not enforced (needs "
        "Kubernetes 1.37 CompositePodGroups)"
    )
    block_key = "network.topology.nvidia.com/block"
    assert without_namespace_warnings(result.warnings) == [
        "pcs0.yaml: spec.template.podCliqueScalingGroups[0].topologyConstraint.pack.required: "
        + lost.format("PodGang disagg-0", block_key),
        "pcs0.yaml: spec.template.cliques[2].topologyConstraint.pack.required: "
        + lost.format("PodGang disagg-0", block_key),
        "pcs0.yaml: spec.template.cliques[2].topologyConstraint.pack.preferred: the Kubernetes Workload API has "
        "required topology constraints only: preferred packing by kubernetes.io/hostname is not enforced",
        # The scaled gangs' PodGroups carry the scaling group's rack, which implies the workers' rack.
        without_namespace_warnings(result.warnings)[3],
        "pcs0.yaml: scheduler.profiles[default-scheduler].config.gangScheduling: PodGroup topology constraints need "
        "feature gate TopologyAwareWorkloadScheduling (alpha) on kube-apiserver and kube-scheduler; without it "
        "kube-apiserver drops schedulingConstraints (the pods are placed without topology and Argo CD / Flux report "
        "the objects out of sync)",
    ]
    assert "GenericWorkload and GangScheduling" in without_namespace_warnings(result.warnings)[3]


def test_136_single_group_gang_takes_the_narrowest_key(tmp_path: Path) -> None:
    text = """
    apiVersion: grove.io/v1alpha1
    kind: PodCliqueSet
    metadata: {name: one, namespace: llm}
    spec:
      replicas: 1
      template:
        topologyConstraint: {topologyName: fabric, pack: {required: block}}
        cliques:
        - name: w
          topologyConstraint: {pack: {required: rack}}
          spec: {roleName: w, replicas: 2, podSpec: {containers: [{name: c, image: x}]}}
    """
    result = render(tmp_path, "1.36", text, tas=True)
    group = by_kind(result, "PodGroup")["one-0"]
    assert group["spec"]["schedulingConstraints"] == {"topology": [{"key": "topology.kubernetes.io/rack"}]}
    assert not any("not enforced" in w for w in result.warnings)


def test_137_topology_at_every_level(tmp_path: Path, crds: CRDRegistry) -> None:
    result = render(tmp_path, "1.37", TOPO_DISAGG, tas=True)
    assert_all_valid(result, "1.37", crds)
    block = {"topology": [{"key": "network.topology.nvidia.com/block"}]}
    rack = {"topology": [{"key": "topology.kubernetes.io/rack"}]}
    composites = by_kind(result, "CompositePodGroup")
    groups = by_kind(result, "PodGroup")
    assert composites["disagg-0"]["spec"]["schedulingConstraints"] == block
    assert composites["disagg-0-prefill-0-pcsg"]["spec"]["schedulingConstraints"] == rack
    assert composites["disagg-0-prefill-0"]["spec"]["schedulingConstraints"] == rack
    assert groups["disagg-0-prefill-0-pworker"]["spec"]["schedulingConstraints"] == rack
    assert groups["disagg-0-prefill-1-pworker"]["spec"]["schedulingConstraints"] == rack
    assert "schedulingConstraints" not in groups["disagg-0-router"]["spec"]
    assert "schedulingConstraints" not in groups["disagg-0-prefill-0-pleader"]["spec"]
    template = by_kind(result, "Workload")["disagg-0"]["spec"]["compositePodGroupTemplates"][0]
    assert template["schedulingConstraints"] == block
    assert template["compositePodGroupTemplates"][0]["schedulingConstraints"] == rack
    assert template["compositePodGroupTemplates"][0]["podGroupTemplates"][1]["schedulingConstraints"] == rack
    not_enforced = [w for w in result.warnings if "not enforced" in w]
    assert not_enforced == [
        "pcs0.yaml: spec.template.cliques[2].topologyConstraint.pack.preferred: the Kubernetes Workload API has "
        "required topology constraints only: preferred packing by kubernetes.io/hostname is not enforced"
    ]
    assert sum("TopologyAwareWorkloadScheduling" in w for w in result.warnings) == 1


# --- rejections ---------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["true", 1, {"enabled": True}])
def test_rejects_non_boolean_gang_scheduling(tmp_path: Path, value: Any) -> None:
    with pytest.raises(InvalidInputError) as info:
        render(tmp_path, "1.36", SOLO, gang=value)
    assert [plain(str(p)) for p in info.value.problems] == [
        'pcs0.yaml: scheduler.profiles[default-scheduler].config.gangScheduling: Invalid value: '
        f"gangScheduling must be a boolean (true or false), not {value!r}"
    ]


def test_137_rejects_more_than_eight_templates_per_composite(tmp_path: Path) -> None:
    cliques = "\n".join(
        f"    - {{name: c{i}, spec: {{roleName: c{i}, replicas: 1, podSpec: {{containers: [{{name: c, image: x}}]}}}}}}"
        for i in range(9)
    )
    text = (
        "apiVersion: grove.io/v1alpha1\nkind: PodCliqueSet\nmetadata: {name: wide, namespace: llm}\n"
        f"spec:\n  replicas: 1\n  template:\n    cliques:\n{cliques}\n"
    )
    with pytest.raises(InvalidInputError) as info:
        render(tmp_path, "1.37", text)
    assert [plain(str(p)) for p in info.value.problems] == [
        'pcs0.yaml: spec.template.cliques: Invalid value: Kubernetes 1.37 allows at most 8 pod group '
        "templates under one CompositePodGroup template, but PodGang wide-0 needs 9 (c0, c1, c2, c3, c4, c5, c6, "
        "c7, c8)"
    ]
    # 1.36 merges the gang into one PodGroup, which has no such limit.
    merged = render(tmp_path, "1.36", text)
    assert by_kind(merged, "PodGroup")["wide-0"]["spec"]["schedulingPolicy"] == {"gang": {"minCount": 9}}


# --- names, waves, and what switching gang scheduling on changes ---------------------------------


def test_fit_label_keeps_labels_and_hashes_the_rest() -> None:
    assert fit_label("disagg-0-prefill-0-pworker") == "disagg-0-prefill-0-pworker"
    dotted = fit_label("demo-0-w.v2")
    assert dotted.startswith("demo-0-w-v2-") and len(dotted) == len("demo-0-w-v2-") + 8
    assert dotted != fit_label("demo-0-w-v2")
    long = fit_label("x" * 70)
    assert len(long) == 63 and long.startswith("x" * 54 + "-")
    assert long != fit_label("x" * 71)


def test_dotted_clique_name_becomes_a_label_everywhere(tmp_path: Path) -> None:
    text = SOLO.replace("name: worker", "name: w.v2")
    result = render(tmp_path, "1.37", text)
    group = fit_label("solo-0-w.v2")
    assert group != "solo-0-w.v2"
    assert set(by_kind(result, "PodGroup")) == {group, fit_label("solo-1-w.v2")}
    assert by_kind(result, "PodGroup")[group]["spec"]["workloadRef"]["templateName"] == fit_label("w.v2")
    for pod in pods_by_podclique(result)["solo-0-w.v2"]:
        assert pod["spec"]["schedulingGroup"] == {"podGroupName": group}
    for obj in workload_api_objects(result):
        assert builtin_errors(obj, "1.37") == []


def test_template_names_stay_unique_when_a_clique_is_named_like_the_set(tmp_path: Path) -> None:
    text = DISAGG.replace("name: router", "name: disagg").replace("roleName: router", "roleName: disagg")
    result = render(tmp_path, "1.37", text)
    template = by_kind(result, "Workload")["disagg-0"]["spec"]["compositePodGroupTemplates"][0]
    assert template["name"] == "disagg"
    assert template["podGroupTemplates"][0]["name"] == "disagg-2"
    assert by_kind(result, "PodGroup")["disagg-0-disagg"]["spec"]["workloadRef"]["templateName"] == "disagg-2"


def test_sync_waves_only_for_argocd(tmp_path: Path) -> None:
    flux = render(tmp_path, "1.37", DISAGG, gitops="flux")
    for obj in workload_api_objects(flux):
        assert "annotations" not in obj["metadata"], obj["metadata"]["name"]
    argo = render(tmp_path, "1.37", DISAGG, gitops="argocd")
    waves = {
        o["kind"]: o["metadata"].get("annotations", {}).get("argocd.argoproj.io/sync-wave")
        for o in workload_api_objects(argo)
    }
    assert waves == {"Workload": "-2", "CompositePodGroup": "-1", "PodGroup": None}


def _normalised(result: RenderResult) -> dict[tuple[str, str, str], dict[str, Any]]:
    """Objects keyed by (kind, namespace, name), with pod names (which hash the pod) replaced by
    their hostnames, everywhere they appear."""
    renames = {p.obj["metadata"]["name"]: p.obj["spec"]["hostname"] for p in result.objects if p.obj["kind"] == "Pod"}
    out = {}
    for item in result.objects:
        obj = copy.deepcopy(item.obj)
        if obj["kind"] == "Pod":
            obj["metadata"]["name"] = renames[obj["metadata"]["name"]]
            obj["metadata"]["annotations"].pop("gitops.grove.io/rendered-by")  # binds the (hashed) name
            if not obj["metadata"]["annotations"]:
                del obj["metadata"]["annotations"]
        if obj["kind"] == "PodGang":
            for group in obj["spec"]["podgroups"]:
                for ref in group["podReferences"]:
                    ref["name"] = renames[ref["name"]]
        meta = obj["metadata"]
        out[(obj["kind"], meta.get("namespace", ""), meta["name"])] = obj
    return out


@pytest.mark.parametrize("version", VERSIONS)
def test_switching_gang_scheduling_on_changes_only_gang_objects_and_pod_fields(tmp_path: Path, version: str) -> None:
    off, on = render(tmp_path, version, DISAGG, gang=False), render(tmp_path, version, DISAGG, gang=True)
    # The binding field is immutable and part of the pod's name hash: every pod is replaced.
    assert set(by_kind(off, "Pod")).isdisjoint(by_kind(on, "Pod"))
    before, after = _normalised(off), _normalised(on)
    added = set(after) - set(before)
    assert set(before) <= set(after)
    assert added and all(after[k]["apiVersion"].startswith("scheduling.k8s.io/") for k in added)
    pod_field = "workloadRef" if version == "1.35" else "schedulingGroup"
    changed = []
    for key, old in before.items():
        new = after[key]
        if key[0] == "Pod":
            assert pod_field in new["spec"]
            new = copy.deepcopy(new)
            del new["spec"][pod_field]
        elif key[0] == "PodGang":
            refs = json.loads(new["metadata"]["annotations"][GANG_OBJECTS])
            assert {r["name"] for r in refs} and all(r["apiVersion"].startswith("scheduling.k8s.io/") for r in refs)
            assert json.loads(old["metadata"]["annotations"][GANG_OBJECTS]) == []
            # ... and its pods are bound by the pod field too (readmodel/binding.py)
            binding = json.loads(new["metadata"]["annotations"][POD_BINDING])
            bound = {p for fields in [binding["all"], *binding["each"].values()] for p in fields}
            assert f"/spec/{pod_field}" in bound and f"/spec/{pod_field}" not in old["metadata"]["annotations"][POD_BINDING]
            new, old = copy.deepcopy(new), copy.deepcopy(old)
            for name in (GANG_OBJECTS, POD_BINDING):
                del new["metadata"]["annotations"][name], old["metadata"]["annotations"][name]
        if new != old:
            changed.append(key)
    assert changed == []
