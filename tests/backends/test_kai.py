"""The ``kai-scheduler`` backend: KAI PodGroups, pods and Topologies (spec/grove-backends.md §4.2, §6.2, §8)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from grove_gitops.api.topology import ClusterTopologyBinding
from grove_gitops.expand import ownership
from grove_gitops.render import RenderResult
from grove_gitops_backends.kai import NODE_LABEL_PATTERN, topology_problems
from tests.schemas import CRDRegistry
from tests.support import (
    GPU_FABRIC,
    INF,
    assert_schema_valid,
    objects_by_kind,
    problems_of,
    render_files,
    without_namespace_warnings,
)

KAI_DEFAULT = """
apiVersion: operator.config.grove.io/v1alpha1
kind: OperatorConfiguration
topologyAwareScheduling: {enabled: true}
scheduler:
  defaultProfileName: kai-scheduler
  profiles: [{name: default-scheduler}, {name: kai-scheduler}]
"""

PLAIN = """
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata: {name: plain, namespace: ml}
spec:
  replicas: 1
  template:
    cliques:
    - name: a
      labels: {kai.scheduler/queue: q1}
      spec: {roleName: a, replicas: 1, podSpec: {containers: [{name: c, image: x}]}}
    - name: b
      annotations: {kai.scheduler/queue: q1, kai.scheduler/skip-podgrouper: "false"}
      spec: {roleName: b, replicas: 2, minAvailable: 1, podSpec: {containers: [{name: c, image: x}]}}
"""

PODGANG_LABELS = {
    "kai.scheduler/queue": "team-a",
    "app.kubernetes.io/managed-by": "grove-gitops",
    "app.kubernetes.io/part-of": "inf",
    "app.kubernetes.io/component": "podgang",
    "grove.io/scheduler-name": "kai-scheduler",
}
ANNOTATIONS = {"grove.io/topology-name": "gpu-fabric", "kai.scheduler/skip-podgrouper": "true"}


def render(tmp_path: Path, files: dict[str, str]) -> RenderResult:
    return render_files(tmp_path, files)


def test_worked_example_podgroups_pods_and_topology(tmp_path: Path, crds: CRDRegistry) -> None:
    result = render(tmp_path, {"ctb.yaml": GPU_FABRIC, "cfg.yaml": KAI_DEFAULT, "inf.yaml": INF})
    groups = objects_by_kind(result, "PodGroup")
    assert set(groups) == {"inf-0", "inf-0-prefill-0"}
    assert groups["inf-0"] == {
        "apiVersion": "scheduling.run.ai/v2alpha2",
        "kind": "PodGroup",
        "metadata": {"name": "inf-0", "namespace": "ml", "labels": PODGANG_LABELS, "annotations": ANNOTATIONS},
        "spec": {
            "minMember": 4,
            "queue": "team-a",
            "priorityClassName": "high",
            "topologyConstraint": {"topology": "gpu-fabric", "requiredTopologyLevel": "topology.kubernetes.io/zone"},
            "subGroups": [
                {
                    "name": "inf-0-prefill-0",
                    "minSubGroup": 2,
                    "topologyConstraint": {
                        "topology": "gpu-fabric",
                        "requiredTopologyLevel": "topology.kubernetes.io/rack",
                    },
                },
                {"name": "inf-0-router", "minMember": 1},
                {"name": "inf-0-prefill-0-pleader", "minMember": 1, "parent": "inf-0-prefill-0"},
                {
                    "name": "inf-0-prefill-0-pworker",
                    "minMember": 2,
                    "parent": "inf-0-prefill-0",
                    "topologyConstraint": {"topology": "gpu-fabric", "preferredTopologyLevel": "kubernetes.io/hostname"},
                },
            ],
        },
    }
    # The scaled PodGang: minMember 3, the PCSG constraint at the top, two leaves without parent.
    assert groups["inf-0-prefill-0"]["spec"] == {
        "minMember": 3,
        "queue": "team-a",
        "priorityClassName": "high",
        "topologyConstraint": {"topology": "gpu-fabric", "requiredTopologyLevel": "topology.kubernetes.io/rack"},
        "subGroups": [
            {"name": "inf-0-prefill-1-pleader", "minMember": 1},
            {
                "name": "inf-0-prefill-1-pworker",
                "minMember": 2,
                "topologyConstraint": {"topology": "gpu-fabric", "preferredTopologyLevel": "kubernetes.io/hostname"},
            },
        ],
    }
    assert groups["inf-0-prefill-0"]["metadata"]["labels"] == PODGANG_LABELS
    assert all("ownerReferences" not in g["metadata"] and "status" not in g for g in groups.values())

    # The PodGangs carry the skip annotation too, and list their PodGroup for the gate-lifter.
    gangs = objects_by_kind(result, "PodGang")
    for name, gang in gangs.items():
        annotations = gang["metadata"]["annotations"]
        assert annotations["kai.scheduler/skip-podgrouper"] == "true"
        assert json.loads(annotations["gitops.grove.io/gang-objects"]) == [
            {"apiVersion": "scheduling.run.ai/v2alpha2", "kind": "PodGroup", "name": name}
        ]

    # Pods: schedulerName, pod-group-name, subgroup label, gate untouched.
    pods = list(objects_by_kind(result, "Pod").values())
    assert len(pods) == 7
    router = next(p for p in pods if p["metadata"]["labels"]["grove.io/podclique"] == "inf-0-router")
    assert router["spec"]["schedulerName"] == "kai-scheduler"
    assert router["metadata"]["annotations"] == {"kai.scheduler/skip-podgrouper": "true", "pod-group-name": "inf-0",
                                                 "gitops.grove.io/rendered-by": ownership.proof("ml", router["metadata"]["name"],
                                                                                                router["metadata"]["labels"])}
    assert router["metadata"]["labels"]["kai.scheduler/subgroup-name"] == "inf-0-router"
    assert router["metadata"]["labels"]["grove.io/podgang"] == "inf-0"
    assert router["spec"]["schedulingGates"] == [{"name": "grove.io/podgang-pending-creation"}]
    for pod in pods:
        labels = pod["metadata"]["labels"]
        assert labels["kai.scheduler/subgroup-name"] == labels["grove.io/podclique"]
        assert pod["metadata"]["annotations"]["pod-group-name"] == labels["grove.io/podgang"]
    scaled = [p for p in pods if p["metadata"]["labels"]["grove.io/podgang"] == "inf-0-prefill-0"]
    assert sorted(p["metadata"]["labels"]["kai.scheduler/subgroup-name"] for p in scaled) == [
        "inf-0-prefill-1-pleader",
        "inf-0-prefill-1-pworker",
        "inf-0-prefill-1-pworker",
    ]

    # The auto-managed KAI Topology, cluster-scoped.
    topologies = [o for o in result.objects if o.obj["kind"] == "Topology"]
    assert len(topologies) == 1 and topologies[0].shard == "_cluster"
    assert topologies[0].obj == {
        "apiVersion": "kai.scheduler/v1alpha1",
        "kind": "Topology",
        "metadata": {
            "name": "gpu-fabric",
            "labels": {"app.kubernetes.io/managed-by": "grove-gitops"},
            # nodeLabels are immutable in KAI: Argo CD and Flux delete and re-create it (issue 32.3)
            "annotations": {
                "argocd.argoproj.io/sync-options": "Force=true,Replace=true",
                "kustomize.toolkit.fluxcd.io/force": "enabled",
            },
        },
        "spec": {
            "levels": [
                {"nodeLabel": "topology.kubernetes.io/zone"},
                {"nodeLabel": "topology.kubernetes.io/rack"},
                {"nodeLabel": "kubernetes.io/hostname"},
            ]
        },
    }
    assert without_namespace_warnings(result.warnings) == []
    assert_schema_valid(result, crds)


def test_clique_template_queues_and_no_topology(tmp_path: Path, crds: CRDRegistry) -> None:
    """Queue from a clique label and a clique annotation that agree; no constraint, no group config."""
    result = render(tmp_path, {"cfg.yaml": KAI_DEFAULT, "plain.yaml": PLAIN})
    group = objects_by_kind(result, "PodGroup")["plain-0"]
    assert group["spec"] == {
        "minMember": 2,
        "queue": "q1",
        "subGroups": [{"name": "plain-0-a", "minMember": 1}, {"name": "plain-0-b", "minMember": 1}],
    }
    assert group["metadata"]["annotations"] == {"kai.scheduler/skip-podgrouper": "true"}
    # The pods keep their clique annotations, but the skip annotation is always "true".
    b_pods = [p for p in objects_by_kind(result, "Pod").values() if p["metadata"]["labels"]["grove.io/podclique"] == "plain-0-b"]
    assert len(b_pods) == 2
    for pod in b_pods:
        assert pod["metadata"]["annotations"].pop("gitops.grove.io/rendered-by")  # the ownership proof
        assert pod["metadata"]["annotations"] == {
            "kai.scheduler/queue": "q1",
            "kai.scheduler/skip-podgrouper": "true",
            "pod-group-name": "plain-0",
        }
    assert objects_by_kind(result, "Topology") == {}
    assert_schema_valid(result, crds)


def test_pcs_annotation_queue_is_a_fallback_for_the_label(tmp_path: Path) -> None:
    text = INF.replace("labels: {kai.scheduler/queue: team-a}", "annotations: {kai.scheduler/queue: team-b}")
    result = render(tmp_path, {"ctb.yaml": GPU_FABRIC, "cfg.yaml": KAI_DEFAULT, "inf.yaml": text})
    group = objects_by_kind(result, "PodGroup")["inf-0"]
    assert group["spec"]["queue"] == "team-b"
    # The PCS annotation is mirrored onto the PodGang, hence onto the PodGroup (§6.2 side effects).
    assert group["metadata"]["annotations"]["kai.scheduler/queue"] == "team-b"
    assert "kai.scheduler/queue" not in group["metadata"]["labels"]


def test_external_kai_topology_is_referenced_and_not_rendered(tmp_path: Path, crds: CRDRegistry) -> None:
    """Grove bug §11.2: the PodGroup must name the external Topology, not the binding."""
    ctb = GPU_FABRIC + "  schedulerTopologyBindings:\n  - {schedulerName: kai-scheduler, topologyReference: fabric-v2}\n"
    result = render(tmp_path, {"ctb.yaml": ctb, "cfg.yaml": KAI_DEFAULT, "inf.yaml": INF})
    assert objects_by_kind(result, "Topology") == {}
    groups = objects_by_kind(result, "PodGroup")
    base = groups["inf-0"]["spec"]
    assert base["topologyConstraint"] == {"topology": "fabric-v2", "requiredTopologyLevel": "topology.kubernetes.io/zone"}
    assert [sg.get("topologyConstraint", {}).get("topology") for sg in base["subGroups"]] == [
        "fabric-v2",
        None,
        None,
        "fabric-v2",
    ]
    assert groups["inf-0-prefill-0"]["spec"]["topologyConstraint"]["topology"] == "fabric-v2"
    # The PodGang still names the binding (that is Grove's contract with every backend).
    assert groups["inf-0"]["metadata"]["annotations"]["grove.io/topology-name"] == "gpu-fabric"
    assert_schema_valid(result, crds)


def test_topology_rendered_even_with_tas_disabled(tmp_path: Path) -> None:
    """Grove creates KAI Topologies whenever the kai profile is enabled (§11.11)."""
    cfg = KAI_DEFAULT.replace("enabled: true", "enabled: false")
    result = render(tmp_path, {"ctb.yaml": GPU_FABRIC, "cfg.yaml": cfg, "plain.yaml": PLAIN})
    assert set(objects_by_kind(result, "Topology")) == {"gpu-fabric"}
    assert "topologyConstraint" not in objects_by_kind(result, "PodGroup")["plain-0"]["spec"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            PLAIN.replace("labels: {kai.scheduler/queue: q1}", "labels: {}").replace("kai.scheduler/queue: q1, ", ""),
            "plain.yaml: metadata.labels[kai.scheduler/queue]: Required value: "
            "no KAI queue is configured on PodCliqueSet ml/plain or its PodClique templates; set the label "
            "kai.scheduler/queue: <queue> under metadata.labels, naming the KAI Queue its gangs are submitted to "
            "(KAI has no default queue)",
        ),
        (
            PLAIN.replace("labels: {kai.scheduler/queue: q1}", "labels: {kai.scheduler/queue: q2}"),
            'plain.yaml: spec.template.cliques[1].annotations[kai.scheduler/queue]: Invalid value: '
            "conflicting KAI queues on PodCliqueSet ml/plain PodClique templates: [q1 q2]",
        ),
        (
            PLAIN.replace("metadata: {name: plain, namespace: ml}", "metadata: {name: plain, namespace: ml, labels: {kai.scheduler/queue: q0}}"),
            'plain.yaml: spec.template.cliques[0].labels[kai.scheduler/queue]: Invalid value: '
            'KAI queue on PodCliqueSet ml/plain is "q0" but PodClique template "a" resolves to "q1"',
        ),
        (
            PLAIN.replace("name: plain,", "name: pl.ain,"),
            'plain.yaml: metadata.name: Invalid value: PodCliqueSet name "pl.ain" contains \'.\': '
            "KAI SubGroup names are built from it and must be DNS labels (RFC 1123), which cannot contain '.'",
        ),
        (
            PLAIN.replace("- name: b\n", "- name: b.x\n"),
            'plain.yaml: spec.template.cliques[1].name: Invalid value: PodClique name "b.x" contains \'.\': '
            "KAI SubGroup names are built from it and must be DNS labels (RFC 1123), which cannot contain '.'",
        ),
    ],
    ids=["no-queue", "clique-conflict", "pcs-vs-clique", "dotted-pcs", "dotted-clique"],
)
def test_rejections(tmp_path: Path, text: str, expected: str) -> None:
    assert problems_of(tmp_path, {"cfg.yaml": KAI_DEFAULT, "plain.yaml": text}) == [expected]


def test_dotted_scaling_group_name_is_rejected(tmp_path: Path) -> None:
    text = INF.replace("name: prefill,", "name: pre.fill,")
    assert problems_of(tmp_path, {"ctb.yaml": GPU_FABRIC, "cfg.yaml": KAI_DEFAULT, "inf.yaml": text}) == [
        'inf.yaml: spec.template.podCliqueScalingGroups[0].name: Invalid value: PodCliqueScalingGroup '
        "name \"pre.fill\" contains '.': KAI SubGroup names are built from it and must be DNS labels (RFC 1123), "
        "which cannot contain '.'"
    ]


def test_binding_kai_would_refuse_is_rejected(tmp_path: Path) -> None:
    """hostname must be the last level of a KAI Topology (§11.15); Grove finds out at start-up."""
    ctb = """
apiVersion: grove.io/v1alpha1
kind: ClusterTopologyBinding
metadata: {name: odd}
spec:
  levels:
  - {domain: host, key: kubernetes.io/hostname}
  - {domain: numa, key: example.com/numa}
"""
    assert problems_of(tmp_path, {"ctb.yaml": ctb, "cfg.yaml": KAI_DEFAULT, "plain.yaml": PLAIN}) == [
        'ctb.yaml: spec.levels[0].key: Invalid value: "kubernetes.io/hostname": '
        'KAI Topology "odd" would be refused: the kubernetes.io/hostname label can only be used at the lowest '
        "level of topology"
    ]
    # Pointing KAI at an external Topology means nothing is rendered from it, so nothing to refuse.
    external = ctb + "  schedulerTopologyBindings:\n  - {schedulerName: kai-scheduler, topologyReference: odd-ext}\n"
    result = render(tmp_path / "ext", {"ctb.yaml": external, "cfg.yaml": KAI_DEFAULT, "plain.yaml": PLAIN})
    assert objects_by_kind(result, "Topology") == {}


def test_topology_problems_unit() -> None:
    """The CRD rules the core's binding validation cannot already catch: checked directly."""
    levels = [{"domain": f"l{i}", "key": f"example.com/l{i}"} for i in range(17)]
    levels[3]["key"] = "Example.com/rack"
    binding = ClusterTopologyBinding.model_validate(
        {"apiVersion": "grove.io/v1alpha1", "kind": "ClusterTopologyBinding", "metadata": {"name": "big"}, "spec": {"levels": levels}}
    )
    assert [str(e) for e in topology_problems(binding)] == [
        'spec.levels: Too many: 17: KAI Topology "big" would be refused: must have at most 16 items',
        'spec.levels[3].key: Invalid value: "Example.com/rack": KAI Topology "big" would be refused: nodeLabel should '
        f"match '{NODE_LABEL_PATTERN}' (an optional lowercase DNS-subdomain prefix, '/', and a label name)",
    ]


def _normalised(result: RenderResult) -> dict[tuple[str, str], dict[str, Any]]:
    """Objects by (kind, name) with the pod-spec hash dropped from pod names and references."""
    text = json.dumps([o.obj for o in result.objects], sort_keys=True)
    text = re.sub(r'(-\d+)-[a-z0-9]{8}"', r'\1"', text)
    objs = json.loads(text)
    for o in objs:  # the ownership proof binds the (hashed) pod name
        if "gitops.grove.io/rendered-by" in (o["metadata"].get("annotations") or {}):
            del o["metadata"]["annotations"]["gitops.grove.io/rendered-by"]
            if not o["metadata"]["annotations"]:
                del o["metadata"]["annotations"]
    return {(o["kind"], o["metadata"]["name"]): o for o in objs}


def test_switching_from_default_scheduler_changes_only_backend_fields(tmp_path: Path) -> None:
    default_cfg = KAI_DEFAULT.replace("defaultProfileName: kai-scheduler", "defaultProfileName: default-scheduler")
    before = _normalised(render(tmp_path / "a", {"ctb.yaml": GPU_FABRIC, "cfg.yaml": default_cfg, "inf.yaml": INF}))
    after = _normalised(render(tmp_path / "b", {"ctb.yaml": GPU_FABRIC, "cfg.yaml": KAI_DEFAULT, "inf.yaml": INF}))
    assert set(after) - set(before) == {("PodGroup", "inf-0"), ("PodGroup", "inf-0-prefill-0")}
    assert set(before) - set(after) == set()
    changed = 0
    for key, old in before.items():
        new = after[key]
        if key[0] == "Pod":
            assert old["spec"].pop("schedulerName") == "default-scheduler"
            assert new["spec"].pop("schedulerName") == "kai-scheduler"
            assert new["metadata"]["labels"].pop("kai.scheduler/subgroup-name") == old["metadata"]["labels"]["grove.io/podclique"]
            assert new["metadata"].pop("annotations") == {
                "kai.scheduler/skip-podgrouper": "true",
                "pod-group-name": old["metadata"]["labels"]["grove.io/podgang"],
            }
            changed += 1
        elif key[0] == "PodGang":
            assert old["metadata"]["labels"].pop("grove.io/scheduler-name") == "default-scheduler"
            assert new["metadata"]["labels"].pop("grove.io/scheduler-name") == "kai-scheduler"
            assert old["metadata"]["annotations"].pop("gitops.grove.io/gang-objects") == "[]"
            assert json.loads(new["metadata"]["annotations"].pop("gitops.grove.io/gang-objects"))[0]["kind"] == "PodGroup"
            assert new["metadata"]["annotations"].pop("kai.scheduler/skip-podgrouper") == "true"
            gang = new["metadata"]["name"]
            assert json.loads(old["metadata"]["annotations"].pop("gitops.grove.io/pod-binding")) == {
                "all": {"/spec/schedulerName": "default-scheduler"}, "each": {}}
            assert json.loads(new["metadata"]["annotations"].pop("gitops.grove.io/pod-binding")) == {
                "all": {"/metadata/annotations/kai.scheduler~1skip-podgrouper": "true",
                        "/metadata/annotations/pod-group-name": gang, "/spec/schedulerName": "kai-scheduler"},
                "each": {g["name"]: {"/metadata/labels/kai.scheduler~1subgroup-name": g["name"]}
                         for g in new["spec"]["podgroups"]}}
            changed += 1
        assert new == old, key
    assert changed == 9  # 7 pods, 2 PodGangs
