"""The semantic summary is generic: every backend's gang objects by field names alone.

The backend objects here are hand-written in the upstream shapes (spec/backend-crs.md):
KAI, Volcano, Koordinator, coscheduling, the Kubernetes Workload API, and a made-up
scheduler nobody wrote diff code for.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from grove_gitops.diff.markdown import code
from grove_gitops.diff.model import ChangeType, ObjectKey, compare, load_objects
from grove_gitops.diff.paths import changed_paths
from grove_gitops.diff.report import Side, build_report
from grove_gitops.diff.semantic import field_changes, rank, semantic_fields
from tests.diff.diffhelpers import run_diff, write_rendered

NS = "llm"


def _meta(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "namespace": NS, **extra}


KAI: dict[str, Any] = {
    "apiVersion": "scheduling.run.ai/v2alpha2",
    "kind": "PodGroup",
    "metadata": _meta("disagg-0", labels={"kai.scheduler/queue": "team-a"}),
    "spec": {
        "minMember": 5,
        "queue": "team-a",
        "priorityClassName": "high",
        "topologyConstraint": {"topology": "cluster-topology", "requiredTopologyLevel": "block"},
        "subGroups": [
            {"name": "disagg-0-pleader", "minMember": 1},
            {"name": "disagg-0-pworker", "minMember": 4, "topologyConstraint": {"requiredTopologyLevel": "rack"}},
        ],
    },
}
VOLCANO: dict[str, Any] = {
    "apiVersion": "scheduling.volcano.sh/v1beta1",
    "kind": "PodGroup",
    "metadata": _meta("disagg-0"),
    "spec": {
        "minMember": 5,
        "queue": "team-a",
        "networkTopology": {"mode": "hard", "highestTierName": "block"},
        "subGroupPolicy": [{"name": "disagg-0-pworker", "subGroupSize": 4, "minSubGroups": 1}],
    },
}
KOORD: dict[str, Any] = {
    "apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
    "kind": "PodGroup",
    "metadata": _meta(
        "disagg-0-pworker",
        annotations={
            "gang.scheduling.koordinator.sh/network-topology-spec": '{"gatherStrategy":[{"layer":"BlockLayer"}]}',
            "gang.scheduling.koordinator.sh/mode": "Strict",
        },
    ),
    "spec": {"minMember": 4, "scheduleTimeoutSeconds": 600},
}
COSCHED: dict[str, Any] = {
    "apiVersion": "scheduling.x-k8s.io/v1alpha1",
    "kind": "PodGroup",
    "metadata": _meta("disagg-0"),
    "spec": {"minMember": 5, "scheduleTimeoutSeconds": 60},
}
WORKLOAD: dict[str, Any] = {
    "apiVersion": "scheduling.k8s.io/v1alpha2",
    "kind": "Workload",
    "metadata": _meta("disagg"),
    "spec": {
        "podGroupTemplates": [
            {
                "name": "replica",
                "schedulingPolicy": {"gang": {"minCount": 5}},
                "schedulingConstraints": {"topology": [{"key": "network.topology.nvidia.com/block"}]},
            }
        ]
    },
}
COMPOSITE: dict[str, Any] = {
    "apiVersion": "scheduling.k8s.io/v1alpha3",
    "kind": "CompositePodGroup",
    "metadata": _meta("disagg-0"),
    "spec": {
        "workloadRef": {"workloadName": "disagg", "templateName": "replica"},
        "schedulingPolicy": {"gang": {"minGroupCount": 2}},
    },
}
NEW_BACKEND: dict[str, Any] = {
    "apiVersion": "gangs.example.com/v1",
    "kind": "Gang",
    "metadata": _meta("disagg-0"),
    "spec": {"minMember": 5, "queueName": "batch", "placement": {"topologyKey": "rack"}},
}
CONFIGMAP: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": _meta("settings"),
    "data": {"minMember": "7"},
}


def _pod(host: str, image: str, suffix: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": _meta(
            f"{host}-{suffix}", labels={"grove.io/pod-template-hash": suffix, "kai.scheduler/queue": "team-a"}
        ),
        "spec": {"hostname": host, "priorityClassName": "high", "containers": [{"name": "main", "image": image}]},
    }


def _tree(objs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {
        f"{NS}/disagg/20-{o['kind'].lower()}.{o['apiVersion'].split('/')[0]}--{o['metadata']['name']}.yaml": o
        for o in objs
    }


BASE = [KAI, VOLCANO, KOORD, COSCHED, WORKLOAD, COMPOSITE, NEW_BACKEND, CONFIGMAP]


def _bumped() -> list[dict[str, Any]]:
    kai, volcano, koord, cosched, workload, composite, new, cm = copy.deepcopy(BASE)
    kai["spec"]["minMember"] = 6
    kai["spec"]["queue"] = "team-b"
    kai["spec"]["priorityClassName"] = "low"
    kai["spec"]["subGroups"][1]["minMember"] = 5
    kai["spec"]["subGroups"][1]["topologyConstraint"]["requiredTopologyLevel"] = "host"
    volcano["spec"]["networkTopology"]["highestTierName"] = "rack"
    volcano["spec"]["subGroupPolicy"][0]["subGroupSize"] = 5
    koord["metadata"]["annotations"]["gang.scheduling.koordinator.sh/network-topology-spec"] = '{"gatherStrategy":[]}'
    cosched["spec"]["minMember"] = 6
    workload["spec"]["podGroupTemplates"][0]["schedulingPolicy"]["gang"]["minCount"] = 6
    composite["spec"]["schedulingPolicy"]["gang"]["minGroupCount"] = 3
    new["spec"]["minMember"] = 6
    new["spec"]["queueName"] = "interactive"
    new["spec"]["placement"]["topologyKey"] = "zone"
    cm["data"]["minMember"] = "8"
    return [kai, volcano, koord, cosched, workload, composite, new, cm]


EXPECTED_ROWS = [
    ("Gang.gangs.example.com", "spec.minMember", "5", "6"),
    ("Gang.gangs.example.com", "spec.queueName", "batch", "interactive"),
    ("Gang.gangs.example.com", "spec.placement.topologyKey", "rack", "zone"),
    ("PodGroup.scheduling.run.ai", "spec.minMember", "5", "6"),
    ("PodGroup.scheduling.run.ai", "spec.queue", "team-a", "team-b"),
    ("PodGroup.scheduling.run.ai", "spec.priorityClassName", "high", "low"),
    ("PodGroup.scheduling.run.ai", "spec.subGroups[disagg-0-pworker].minMember", "4", "5"),
    (
        "PodGroup.scheduling.run.ai",
        "spec.subGroups[disagg-0-pworker].topologyConstraint.requiredTopologyLevel",
        "rack",
        "host",
    ),
    ("PodGroup.scheduling.volcano.sh", "spec.networkTopology.highestTierName", "block", "rack"),
    ("PodGroup.scheduling.volcano.sh", "spec.subGroupPolicy[disagg-0-pworker].subGroupSize", "4", "5"),
    (
        "PodGroup.scheduling.sigs.k8s.io",
        "metadata.annotations['gang.scheduling.koordinator.sh/network-topology-spec']",
        '{"gatherStrategy":[{"layer":"BlockLayer"}]}',
        '{"gatherStrategy":[]}',
    ),
    ("PodGroup.scheduling.x-k8s.io", "spec.minMember", "5", "6"),
    ("Workload.scheduling.k8s.io", "spec.podGroupTemplates[replica].schedulingPolicy.gang.minCount", "5", "6"),
    ("CompositePodGroup.scheduling.k8s.io", "spec.schedulingPolicy.gang.minGroupCount", "2", "3"),
]


def test_every_backend_summarised_by_field_names(tmp_path: Path) -> None:
    base = write_rendered(tmp_path / "base", _tree(BASE))
    head = write_rendered(tmp_path / "head", _tree(_bumped()))
    result = run_diff(["--rendered", str(base), str(head)])
    assert result.exit_code == 0, result.output
    md = result.stdout
    for kind, path, old, new in EXPECTED_ROWS:
        assert f"| {code(path)} | {code(old)} | {code(new)} |" in md, (kind, path)
    # A ConfigMap whose data happens to say minMember is not a gang object.
    assert "data.minMember" not in md.split("<details>")[0]
    assert "**Scheduler gang / topology objects:** ~7" in md
    assert "**Other objects:** ~1" in md
    # Gang objects come before other objects in the diffs.
    assert md.index("ConfigMap</code>") > md.index("PodGroup.scheduling.run.ai</code>")


def test_field_categories() -> None:
    key = ObjectKey("s", KAI["apiVersion"], "PodGroup", NS, "disagg-0")
    fields = semantic_fields(key, KAI)
    assert fields["spec.minMember"] == ("size", 5)
    assert fields["spec.queue"] == ("queue", "team-a")
    assert fields["metadata.labels['kai.scheduler/queue']"] == ("queue", "team-a")
    assert fields["spec.priorityClassName"] == ("priority", "high")
    assert fields["spec.topologyConstraint.topology"] == ("topology", "cluster-topology")
    assert fields["spec.subGroups[disagg-0-pworker].topologyConstraint.requiredTopologyLevel"] == ("topology", "rack")
    pod_key = ObjectKey("s", "v1", "Pod", NS, "p")
    assert semantic_fields(pod_key, _pod("h", "x", "1")) == {}
    # Topology definitions: all their spec fields are topology settings.
    ctb = {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "ClusterTopologyBinding",
        "metadata": {"name": "t"},
        "spec": {"levels": [{"domain": "zone", "key": "topology.kubernetes.io/zone"}]},
    }
    ctb_key = ObjectKey("_cluster", "grove.io/v1alpha1", "ClusterTopologyBinding", "", "t")
    assert semantic_fields(ctb_key, ctb) == {
        "spec.levels[0].key": ("topology", "topology.kubernetes.io/zone"),
        "spec.levels[0].domain": ("topology", "zone"),
    }


def test_added_and_removed_gang_objects_list_their_settings() -> None:
    base = load_objects({})
    head = load_objects({"ns/p/x.yaml": yaml.safe_dump(COSCHED).encode()})
    (change,) = compare(base, head)
    assert change.type == ChangeType.ADDED
    (fc,) = field_changes(change)
    assert (fc.path, fc.old, fc.new, fc.category) == ("spec.minMember", None, "5", "size")
    assert rank(change) == 0


def test_pods_pair_by_hostname_and_scheduler_switch(tmp_path: Path) -> None:
    def gang(scheduler: str) -> dict[str, Any]:
        return {
            "apiVersion": "scheduler.grove.io/v1alpha1",
            "kind": "PodGang",
            "metadata": _meta("demo-0", labels={"grove.io/scheduler-name": scheduler}),
            "spec": {"podgroups": [{"name": "demo-0-w", "minReplicas": 2}]},
        }

    base = write_rendered(
        tmp_path / "b",
        {
            "llm/demo/20-podgang--demo-0.yaml": gang("kai-scheduler"),
            "llm/demo/30-pod--demo-0-w-0-aaaa.yaml": _pod("demo-0-w-0", "img:1", "aaaa"),
            "llm/demo/30-pod--demo-0-w-1-bbbb.yaml": _pod("demo-0-w-1", "img:1", "bbbb"),
            "llm/demo/30-pod--demo-0-w-2-cccc.yaml": _pod("demo-0-w-2", "img:1", "cccc"),
        },
    )
    head = write_rendered(
        tmp_path / "h",
        {
            "llm/demo/20-podgang--demo-0.yaml": gang("volcano"),
            "llm/demo/30-pod--demo-0-w-0-dddd.yaml": _pod("demo-0-w-0", "img:2", "dddd"),
            "llm/demo/30-pod--demo-0-w-1-bbbb.yaml": _pod("demo-0-w-1", "img:1", "bbbb"),
            "llm/demo/30-pod--demo-0-w-3-eeee.yaml": _pod("demo-0-w-3", "img:1", "eeee"),
        },
    )
    result = run_diff(["--rendered", str(base), str(head), "--output", "text"])
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert "Scheduler switch: kai-scheduler → volcano" in text
    assert "Pods added (1): demo-0-w-3-eeee" in text
    assert "Pods removed (1): demo-0-w-2-cccc" in text
    assert "Pods replaced (1), by hostname: demo-0-w-0; changed fields: spec.containers[main].image" in text
    assert "### ⇄ Pod llm/demo-0-w-0-dddd | replaces demo-0-w-0-aaaa | +3 −3 | spec.containers[main].image" in text
    # The replaced pod is diffed against its predecessor, hash label included in the body.
    assert "-    grove.io/pod-template-hash: aaaa" in text and "+    grove.io/pod-template-hash: dddd" in text
    # Pod queue labels / priority are not reported as gang settings.
    assert "kai.scheduler/queue" not in text.split("\n### ")[0]
    assert "Gang settings" not in text


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ({"a": 1}, {"a": 1}, []),
        ({"a": 1}, {"a": 2}, ["a"]),
        ({"a": 1}, {"a": "1"}, ["a"]),
        ({"a": {"b": 1}}, {"a": {"b": 1, "c": 2}}, ["a.c"]),
        (
            {"c": [{"name": "x", "v": 1}, {"name": "y", "v": 1}]},
            {"c": [{"name": "y", "v": 2}, {"name": "x", "v": 1}]},
            ["c[y].v"],
        ),
        ({"c": [{"name": "x"}]}, {"c": [{"name": "x"}, {"name": "y"}]}, ["c"]),
        ({"c": [{"name": "x"}, {"name": "y"}]}, {"c": [{"name": "y"}, {"name": "x"}]}, ["c"]),
        ({"l": [1, 2]}, {"l": [1, 3]}, ["l[1]"]),
        ({"l": [1, 2]}, {"l": [1]}, ["l"]),
        (
            {"metadata": {"labels": {"grove.io/x": "a"}}},
            {"metadata": {"labels": {"grove.io/x": "b"}}},
            ["metadata.labels['grove.io/x']"],
        ),
    ],
)
def test_changed_paths(old: Any, new: Any, expected: list[str]) -> None:
    assert changed_paths(old, new) == expected


def test_report_counts_and_identical() -> None:
    objs = load_objects({"ns/p/a.yaml": b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: ns}\n"})
    same = build_report(Side("a", objs), Side("b", dict(objs)))
    assert same.identical and same.totals().total == 0


def test_duplicate_objects_are_an_error() -> None:
    from grove_gitops.diff.errors import DiffError

    doc = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: ns}\n"
    with pytest.raises(DiffError, match="also defined in"):
        load_objects({"ns/p/a.yaml": doc, "ns/p/b.yaml": doc})
    multi = load_objects({"ns/p/m.yaml": doc + b"---\n" + doc.replace(b"name: a", b"name: b")})
    assert sorted(k.name for k in multi) == ["a", "b"]


def test_inline_code_escaping() -> None:
    assert code("a|b") == "`a\\|b`"
    assert code("x`y") == "``x`y``"
    assert code("`edge`") == "`` `edge` ``"
