"""The ``volcano`` backend: Volcano PodGroups, pods, queues and HyperNode-tier topology
(spec/grove-backends.md §4.3, §6.1, §8; spec/backend-crs.md §4)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from grove_gitops.render import RenderResult
from tests.schemas import CRDRegistry
from tests.support import (
    GPU_FABRIC,
    assert_schema_valid,
    objects_by_kind,
    problems_of,
    render_files,
    without_namespace_warnings,
)

VOLCANO_ENABLED = """
apiVersion: operator.config.grove.io/v1alpha1
kind: OperatorConfiguration
topologyAwareScheduling: {enabled: true}
scheduler:
  profiles: [{name: default-scheduler}, {name: volcano}]
"""

TIERS = """
apiVersion: operator.config.grove.io/v1alpha1
kind: OperatorConfiguration
topologyAwareScheduling: {enabled: true}
scheduler:
  defaultProfileName: volcano
  profiles:
  - name: volcano
    config:
      hyperNodeTiers:
        gpu-fabric: {zone: 3, rack: 2, host: 1}
"""

QUEUE_GPU = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: gpu}
spec: {weight: 1, reclaimable: true}
"""

# spec/grove-backends.md §8, Volcano variant: no constraints, queue annotation, schedulerName volcano.
INF = """
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata: {name: inf, namespace: ml, annotations: {scheduling.grove.io/volcano-queue: gpu}}
spec:
  replicas: 1
  template:
    priorityClassName: high
    cliques:
    - {name: router, spec: {roleName: router, replicas: 1, minAvailable: 1, podSpec: {schedulerName: volcano, containers: [{name: c, image: x}]}}}
    - {name: pleader, spec: {roleName: pleader, replicas: 1, minAvailable: 1, podSpec: {schedulerName: volcano, containers: [{name: c, image: x}]}}}
    - name: pworker
      spec: {roleName: pworker, replicas: 2, minAvailable: 2, podSpec: {schedulerName: volcano, containers: [{name: c, image: x}]}}
    podCliqueScalingGroups:
    - {name: prefill, cliqueNames: [pleader, pworker], replicas: 2, minAvailable: 1}
"""

# The same with topology constraints at every level (rendered through hyperNodeTiers).
INF_TAS = """
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata: {name: inf, namespace: ml, annotations: {scheduling.grove.io/volcano-queue: gpu}}
spec:
  replicas: 1
  template:
    topologyConstraint: {topologyName: gpu-fabric, pack: {required: zone}}
    cliques:
    - name: router
      topologyConstraint: {pack: {preferred: host}}
      spec: {roleName: router, replicas: 2, minAvailable: 1, podSpec: {containers: [{name: c, image: x}]}}
    - {name: pleader, spec: {roleName: pleader, replicas: 1, podSpec: {containers: [{name: c, image: x}]}}}
    - {name: pworker, spec: {roleName: pworker, replicas: 2, podSpec: {containers: [{name: c, image: x}]}}}
    podCliqueScalingGroups:
    - {name: prefill, cliqueNames: [pleader, pworker], replicas: 3, minAvailable: 2, topologyConstraint: {pack: {required: rack}}}
"""

TIERS_PATH = "scheduler.profiles[volcano].config.hyperNodeTiers[gpu-fabric]"

PODGANG_LABELS = {
    "app.kubernetes.io/managed-by": "grove-gitops",
    "app.kubernetes.io/part-of": "inf",
    "app.kubernetes.io/component": "podgang",
    "grove.io/scheduler-name": "volcano",
}


def policy(name: str, size: int, topology: dict[str, Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": name,
        "labelSelector": {"matchLabels": {"grove.io/podclique": name}},
        "matchLabelKeys": ["grove.io/podclique"],
        "subGroupSize": size,
        "minSubGroups": 1,
    }
    if topology is not None:
        out["networkTopology"] = topology
    return out


def test_worked_example_podgroups_and_pods(tmp_path: Path, crds: CRDRegistry) -> None:
    result = render_files(tmp_path, {"cfg.yaml": VOLCANO_ENABLED, "inf.yaml": INF, "queue.yaml": QUEUE_GPU})
    groups = objects_by_kind(result, "PodGroup")
    assert set(groups) == {"inf-0", "inf-0-prefill-0"}
    assert groups["inf-0"] == {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "inf-0", "namespace": "ml", "labels": PODGANG_LABELS},
        "spec": {
            "minMember": 4,
            "queue": "gpu",
            "priorityClassName": "high",
            "subGroupPolicy": [
                policy("inf-0-router", 1),
                policy("inf-0-prefill-0-pleader", 1),
                policy("inf-0-prefill-0-pworker", 2),
            ],
        },
    }
    assert groups["inf-0-prefill-0"]["spec"] == {
        "minMember": 3,
        "queue": "gpu",
        "priorityClassName": "high",
        "subGroupPolicy": [policy("inf-0-prefill-1-pleader", 1), policy("inf-0-prefill-1-pworker", 2)],
    }
    gangs = objects_by_kind(result, "PodGang")
    for name, gang in gangs.items():
        assert json.loads(gang["metadata"]["annotations"]["gitops.grove.io/gang-objects"]) == [
            {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "name": name}
        ]
    pods = list(objects_by_kind(result, "Pod").values())
    assert len(pods) == 7
    for pod in pods:
        gang = pod["metadata"]["labels"]["grove.io/podgang"]
        assert pod["spec"]["schedulerName"] == "volcano"
        assert pod["metadata"]["annotations"].pop("gitops.grove.io/rendered-by")  # the ownership proof
        assert pod["metadata"]["annotations"] == {
            "scheduling.volcano.sh/group-name": gang,
            "scheduling.k8s.io/group-name": gang,
        }
        assert pod["spec"]["schedulingGates"] == [{"name": "grove.io/podgang-pending-creation"}]
    # The Queue passes through; Volcano has no topology object to render.
    assert set(objects_by_kind(result, "Queue")) == {"gpu"}
    assert objects_by_kind(result, "HyperNode") == {}
    assert without_namespace_warnings(result.warnings) == []
    assert_schema_valid(result, crds)


def test_missing_queue_is_a_warning_and_default_needs_nothing(tmp_path: Path) -> None:
    result = render_files(tmp_path, {"cfg.yaml": VOLCANO_ENABLED, "inf.yaml": INF})
    assert without_namespace_warnings(result.warnings) == [
        "inf.yaml: metadata.annotations[scheduling.grove.io/volcano-queue]: volcano queue \"gpu\" is not defined "
        'in the source tree (no scheduling.volcano.sh/v1beta1 Queue "gpu"); it must exist and be Open in the '
        "cluster or Volcano keeps the PodGroups pending"
    ]
    no_queue = INF.replace(", annotations: {scheduling.grove.io/volcano-queue: gpu}", "")
    result = render_files(tmp_path / "d", {"cfg.yaml": VOLCANO_ENABLED, "inf.yaml": no_queue})
    assert without_namespace_warnings(result.warnings) == []
    assert {g["spec"]["queue"] for g in objects_by_kind(result, "PodGroup").values()} == {"default"}


def test_queue_from_clique_templates_is_used(tmp_path: Path) -> None:
    """Grove bug §11.3: a queue set on every clique (and not on the PCS) must reach the PodGroup."""
    text = INF.replace(", annotations: {scheduling.grove.io/volcano-queue: gpu}", "")
    text = text.replace("{name: router, spec:", "{name: router, annotations: {scheduling.grove.io/volcano-queue: ' gpu '}, spec:")
    text = text.replace("{name: pleader, spec:", "{name: pleader, annotations: {scheduling.grove.io/volcano-queue: gpu}, spec:")
    text = text.replace("- name: pworker\n", "- name: pworker\n      annotations: {scheduling.grove.io/volcano-queue: gpu}\n")
    result = render_files(tmp_path, {"cfg.yaml": VOLCANO_ENABLED, "inf.yaml": text, "queue.yaml": QUEUE_GPU})
    assert {g["spec"]["queue"] for g in objects_by_kind(result, "PodGroup").values()} == {"gpu"}
    assert without_namespace_warnings(result.warnings) == []


def test_network_topology_from_hypernode_tiers(tmp_path: Path, crds: CRDRegistry) -> None:
    result = render_files(tmp_path, {"ctb.yaml": GPU_FABRIC, "cfg.yaml": TIERS, "inf.yaml": INF_TAS, "q.yaml": QUEUE_GPU})
    groups = objects_by_kind(result, "PodGroup")
    assert set(groups) == {"inf-0", "inf-0-prefill-0"}
    base = groups["inf-0"]["spec"]
    assert base["minMember"] == 1 + 2 * 3
    assert base["networkTopology"] == {"mode": "hard", "highestTierAllowed": 3}
    scaling_entry = {
        "labelSelector": {
            "matchLabels": {"grove.io/podcliquescalinggroup": "inf-0-prefill", "grove.io/podcliquescalinggroup-replica-index": "0"}
        },
        "matchLabelKeys": ["grove.io/podcliquescalinggroup", "grove.io/podcliquescalinggroup-replica-index"],
        "subGroupSize": 3,
        "minSubGroups": 1,
        "networkTopology": {"mode": "hard", "highestTierAllowed": 2},
    }
    second = json.loads(json.dumps(scaling_entry).replace('-index": "0"', '-index": "1"'))
    assert base["subGroupPolicy"] == [
        policy("inf-0-router", 1, {"mode": "soft", "highestTierAllowed": 1}),
        {"name": "inf-0-prefill-0", **scaling_entry},
        {"name": "inf-0-prefill-1", **second},
    ]
    # The scaled PodGang carries the scaling group's constraint on the whole PodGroup.
    scaled = groups["inf-0-prefill-0"]["spec"]
    assert scaled["networkTopology"] == {"mode": "hard", "highestTierAllowed": 2}
    assert scaled["subGroupPolicy"] == [policy("inf-0-prefill-2-pleader", 1), policy("inf-0-prefill-2-pworker", 2)]
    # The selected pods really carry the labels the scaling-group entries select on.
    pworker = [
        p for p in objects_by_kind(result, "Pod").values() if p["metadata"]["labels"]["grove.io/podclique"] == "inf-0-prefill-1-pworker"
    ]
    assert len(pworker) == 2
    for pod in pworker:
        assert pod["metadata"]["labels"]["grove.io/podcliquescalinggroup"] == "inf-0-prefill"
        assert pod["metadata"]["labels"]["grove.io/podcliquescalinggroup-replica-index"] == "1"
    assert without_namespace_warnings(result.warnings) == []
    assert_schema_valid(result, crds)


def test_tier_names_and_preferred_dropped_with_warning(tmp_path: Path, crds: CRDRegistry) -> None:
    cfg = TIERS.replace("{zone: 3, rack: 2, host: 1}", "{zone: 3, rack: rack-tier, host: 1}")
    text = """
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata: {name: tn, namespace: ml}
spec:
  replicas: 1
  template:
    topologyConstraint: {topologyName: gpu-fabric, pack: {required: rack, preferred: host}}
    cliques:
    - {name: a, spec: {roleName: a, replicas: 2, podSpec: {containers: [{name: c, image: x}]}}}
"""
    result = render_files(tmp_path, {"ctb.yaml": GPU_FABRIC, "cfg.yaml": cfg, "tn.yaml": text})
    group = objects_by_kind(result, "PodGroup")["tn-0"]
    assert group["spec"]["networkTopology"] == {"mode": "hard", "highestTierName": "rack-tier"}
    assert without_namespace_warnings(result.warnings) == [
        "tn.yaml: spec.template.topologyConstraint.pack.preferred: Volcano networkTopology has one mode per "
        'constraint: the required domain "rack" is rendered (mode hard), the preferred domain "host" is not'
    ]
    assert_schema_valid(result, crds)


NO_TAS_PCS = """
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata: {name: t, namespace: ml}
spec:
  replicas: 1
  template:
    topologyConstraint: {topologyName: gpu-fabric, pack: {required: zone}}
    cliques:
    - name: a
      topologyConstraint: {pack: {required: rack}}
      spec: {roleName: a, replicas: 1, podSpec: {schedulerName: volcano, containers: [{name: c, image: x}]}}
    - {name: b, spec: {roleName: b, replicas: 1, podSpec: {schedulerName: volcano, containers: [{name: c, image: x}]}}}
    podCliqueScalingGroups:
    - {name: g, cliqueNames: [b], topologyConstraint: {pack: {required: rack}}}
"""


def test_topology_without_tier_mapping_is_rejected_with_grove_messages(tmp_path: Path) -> None:
    problems = problems_of(tmp_path, {"ctb.yaml": GPU_FABRIC, "cfg.yaml": VOLCANO_ENABLED, "t.yaml": NO_TAS_PCS})
    assert problems == [
        't.yaml: spec.template.topologyConstraint: Invalid value: '
        "volcano scheduler backend does not support topologyConstraint on PodCliqueSet",
        't.yaml: spec.template.cliques[0].topologyConstraint: Invalid value: '
        'volcano scheduler backend does not support topologyConstraint on PodClique "a"',
        't.yaml: spec.template.podCliqueScalingGroups[0].topologyConstraint: Invalid value: '
        'volcano scheduler backend does not support topologyConstraint on PodCliqueScalingGroup "g"',
    ]


def test_unmapped_domain_and_unexpressible_scaling_group_are_rejected(tmp_path: Path) -> None:
    cfg = TIERS.replace("{zone: 3, rack: 2, host: 1}", "{rack: 2, host: 1}")
    text = INF_TAS.replace("replicas: 2, podSpec", "replicas: 2, minAvailable: 1, podSpec")
    text = text.replace("{name: pleader, spec:", "{name: pleader, topologyConstraint: {pack: {preferred: host}}, spec:")
    problems = problems_of(tmp_path, {"ctb.yaml": GPU_FABRIC, "cfg.yaml": cfg, "inf.yaml": text, "q.yaml": QUEUE_GPU})
    prefix = "volcano scheduler backend does not support topologyConstraint on"
    group = "spec.template.podCliqueScalingGroups[0].topologyConstraint"
    assert problems == [
        f'inf.yaml: spec.template.topologyConstraint.pack.required: Invalid value: {prefix} PodCliqueSet: '
        'topology domain "zone" has no HyperNode tier in the volcano profile config (hyperNodeTiers[gpu-fabric])',
        f'inf.yaml: {group}: Invalid value: {prefix} PodCliqueScalingGroup "prefill" while its PodClique '
        '"pleader" has its own topologyConstraint: a Volcano pod belongs to one subGroupPolicy entry, so the two '
        "constraints cannot be nested",
        f'inf.yaml: {group}: Invalid value: {prefix} PodCliqueScalingGroup "prefill" while its PodClique '
        '"pworker" has minAvailable 1 < replicas 2: the scaling group\'s subGroupPolicy entry could not keep '
        "per-PodClique minimums",
    ]


@pytest.mark.parametrize(
    ("tiers", "expected"),
    [
        (
            "{zone: 3, rack: -2, host: 1}",
            [
                f'inf.yaml: {TIERS_PATH}[rack]: Invalid value: HyperNode tier must be a number >= 0 '
                "(highestTierAllowed) or a tierName (highestTierName), got -2"
            ],
        ),
        (
            "{zone: 1, rack: 2, host: 3}",
            [
                f'inf.yaml: {TIERS_PATH}[zone]: Invalid value: HyperNode tiers must decrease from broader '
                'to narrower domains: "zone" (tier 1) is broader than "rack" (tier 2) in ClusterTopologyBinding '
                '"gpu-fabric"',
                f'inf.yaml: {TIERS_PATH}[rack]: Invalid value: HyperNode tiers must decrease from broader '
                'to narrower domains: "rack" (tier 2) is broader than "host" (tier 3) in ClusterTopologyBinding '
                '"gpu-fabric"',
            ],
        ),
    ],
    ids=["negative-tier", "tiers-not-decreasing"],
)
def test_bad_tier_config_is_rejected(tmp_path: Path, tiers: str, expected: list[str]) -> None:
    """Reported against the PodCliqueSet that uses the mapping (the backend sees no config file name)."""
    cfg = TIERS.replace("{zone: 3, rack: 2, host: 1}", tiers)
    files = {"ctb.yaml": GPU_FABRIC, "cfg.yaml": cfg, "inf.yaml": INF_TAS, "q.yaml": QUEUE_GPU}
    assert problems_of(tmp_path, files) == expected


def test_unknown_tier_domain_is_only_a_warning(tmp_path: Path) -> None:
    cfg = TIERS.replace("{zone: 3, rack: 2, host: 1}", "{zone: 3, rack: 2, host: 1, numa: 0}")
    result = render_files(tmp_path, {"ctb.yaml": GPU_FABRIC, "cfg.yaml": cfg, "inf.yaml": INF_TAS, "q.yaml": QUEUE_GPU})
    assert without_namespace_warnings(result.warnings) == [
        f'inf.yaml: {TIERS_PATH}[numa]: ClusterTopologyBinding "gpu-fabric" has no domain "numa"'
    ]


QUEUE_PCS = """
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata: {name: q, namespace: ml, annotations: {scheduling.grove.io/volcano-queue: PCSQ}}
spec:
  replicas: 1
  template:
    cliques:
    - name: a
      annotations: {scheduling.grove.io/volcano-queue: CQA}
      spec: {roleName: a, replicas: 1, podSpec: {schedulerName: volcano, containers: [{name: c, image: x}]}}
    - name: b
      annotations: {scheduling.grove.io/volcano-queue: CQB}
      spec: {roleName: b, replicas: 1, podSpec: {schedulerName: volcano, containers: [{name: c, image: x}]}}
"""
SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    r"'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
ANN = "annotations[scheduling.grove.io/volcano-queue]"


@pytest.mark.parametrize(
    ("pcsq", "cqa", "cqb", "expected"),
    [
        ("Bad_Queue", "q1", "q1", [f'q.yaml: metadata.{ANN}: Invalid value: {SUBDOMAIN}']),
        ("", "q1", "Nope!", [f'q.yaml: spec.template.cliques[1].{ANN}: Invalid value: {SUBDOMAIN}']),
        (
            "q1",
            "q1",
            "q2",
            [
                f'q.yaml: spec.template.cliques[1].{ANN}: Invalid value: conflicting volcano queue '
                'annotations: PodCliqueSet has "q1", PodClique has "q2"'
            ],
        ),
        (
            "",
            "q1",
            "q2",
            [
                f'q.yaml: spec.template.cliques[1].{ANN}: Invalid value: all PodCliques in a PodCliqueSet '
                "using volcano scheduler must resolve to the same queue"
            ],
        ),
        (
            "",
            "q1",
            "",
            [
                f'q.yaml: spec.template.cliques[1].{ANN}: Invalid value: all PodCliques in a PodCliqueSet '
                "using volcano scheduler must resolve to the same queue"
            ],
        ),
    ],
    ids=["bad-pcs-queue", "bad-clique-queue", "pcs-clique-conflict", "cliques-differ", "clique-vs-default"],
)
def test_queue_rejections(tmp_path: Path, pcsq: str, cqa: str, cqb: str, expected: list[str]) -> None:
    text = QUEUE_PCS.replace("PCSQ", f"'{pcsq}'").replace("CQA", f"'{cqa}'").replace("CQB", f"'{cqb}'")
    assert problems_of(tmp_path, {"cfg.yaml": VOLCANO_ENABLED, "q.yaml": text}) == expected


def _normalised(result: RenderResult) -> dict[tuple[str, str], dict[str, Any]]:
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
    text = INF.replace("schedulerName: volcano, ", "")
    default_cfg = VOLCANO_ENABLED
    volcano_cfg = VOLCANO_ENABLED.replace("scheduler:\n", "scheduler:\n  defaultProfileName: volcano\n")
    files = {"inf.yaml": text, "queue.yaml": QUEUE_GPU}
    before = _normalised(render_files(tmp_path / "a", {**files, "cfg.yaml": default_cfg}))
    after = _normalised(render_files(tmp_path / "b", {**files, "cfg.yaml": volcano_cfg}))
    assert set(after) - set(before) == {("PodGroup", "inf-0"), ("PodGroup", "inf-0-prefill-0")}
    assert set(before) - set(after) == set()
    changed = 0
    for key, old in before.items():
        new = after[key]
        if key[0] == "Pod":
            assert old["spec"].pop("schedulerName") == "default-scheduler"
            assert new["spec"].pop("schedulerName") == "volcano"
            gang = old["metadata"]["labels"]["grove.io/podgang"]
            assert new["metadata"].pop("annotations") == {
                "scheduling.volcano.sh/group-name": gang,
                "scheduling.k8s.io/group-name": gang,
            }
            changed += 1
        elif key[0] == "PodGang":
            assert old["metadata"]["labels"].pop("grove.io/scheduler-name") == "default-scheduler"
            assert new["metadata"]["labels"].pop("grove.io/scheduler-name") == "volcano"
            assert old["metadata"]["annotations"].pop("gitops.grove.io/gang-objects") == "[]"
            assert json.loads(new["metadata"]["annotations"].pop("gitops.grove.io/gang-objects"))[0]["kind"] == "PodGroup"
            gang = new["metadata"]["name"]
            assert json.loads(old["metadata"]["annotations"].pop("gitops.grove.io/pod-binding")) == {
                "all": {"/spec/schedulerName": "default-scheduler"}, "each": {}}
            assert json.loads(new["metadata"]["annotations"].pop("gitops.grove.io/pod-binding")) == {
                "all": {"/metadata/annotations/scheduling.k8s.io~1group-name": gang,
                        "/metadata/annotations/scheduling.volcano.sh~1group-name": gang,
                        "/spec/schedulerName": "volcano"},
                "each": {}}
            changed += 1
        assert new == old, key
    assert changed == 9
