"""``koord-scheduler``: Koordinator PodGroups, GangGroups, network topology and rejections
(``spec/backend-crs.md`` §6, GREP-537)."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from grove_gitops.api.podcliqueset import PodCliqueSet
from grove_gitops.api.renderconfig import RenderConfig
from grove_gitops.api.topology import ClusterTopologyBinding
from grove_gitops.backendapi import BackendContext, BackendFinding
from grove_gitops.errors import InvalidInputError
from grove_gitops.render import RenderResult
from grove_gitops_backends.koordinator import (
    KoordinatorBackend,
    cluster_network_topology,
    derived_layer_name,
    podgroup_name,
)
from tests.schemas import CRDRegistry
from tests.support import assert_schema_valid, objects_by_kind, plain, render_files, without_namespace_warnings

T = "spec.template"
GROUPS = "gang.scheduling.koordinator.sh/groups"
MODE = "gang.scheduling.koordinator.sh/mode"
MATCH = "gang.scheduling.koordinator.sh/match-policy"
TOTAL = "gang.scheduling.koordinator.sh/total-number"
NTS = "gang.scheduling.koordinator.sh/network-topology-spec"
POD_GROUP_LABEL = "pod-group.scheduling.sigs.k8s.io"
QOS = "koordinator.sh/qosClass"

CTB = """\
apiVersion: grove.io/v1alpha1
kind: ClusterTopologyBinding
metadata: {name: fabric}
spec:
  levels:
  - {domain: block, key: network.topology.nvidia.com/block}
  - {domain: rack, key: topology.kubernetes.io/rack}
  - {domain: host, key: kubernetes.io/hostname}
"""


def opcfg(config: dict[str, Any] | None = None, *, tas: bool = False, default: str = "koord-scheduler") -> str:
    profile: dict[str, Any] = {"name": "koord-scheduler"}
    if config is not None:
        profile["config"] = config
    doc = {
        "apiVersion": "operator.config.grove.io/v1alpha1",
        "kind": "OperatorConfiguration",
        "topologyAwareScheduling": {"enabled": tas},
        "scheduler": {"defaultProfileName": default, "profiles": [{"name": "default-scheduler"}, profile]},
    }
    return yaml.safe_dump(doc, sort_keys=False)


def pcs_doc() -> dict[str, Any]:
    """A standalone clique (``router``, 2 pods, minAvailable 1) and a scaling group ``prefill``
    (``pleader`` 1 pod + ``pworker`` 3 pods / minAvailable 2) with replicas 3 > minAvailable 1."""

    def clique(name: str, replicas: int, min_available: int | None = None) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "roleName": name,
            "replicas": replicas,
            "podSpec": {"containers": [{"name": "main", "image": "nginx:1.27"}]},
        }
        if min_available is not None:
            spec["minAvailable"] = min_available
        return {"name": name, "spec": spec}

    return {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueSet",
        "metadata": {"name": "disagg", "namespace": "llm"},
        "spec": {
            "replicas": 1,
            "template": {
                "cliques": [clique("router", 2, 1), clique("pleader", 1), clique("pworker", 3, 2)],
                "podCliqueScalingGroups": [
                    {"name": "prefill", "cliqueNames": ["pleader", "pworker"], "replicas": 3, "minAvailable": 1}
                ],
            },
        },
    }


def render(
    tmp_path: Path,
    doc: dict[str, Any],
    config: dict[str, Any] | None = None,
    *,
    tas: bool = False,
    ctb: str | None = None,
    default: str = "koord-scheduler",
) -> RenderResult:
    files = {"opcfg.yaml": opcfg(config, tas=tas, default=default), "pcs.yaml": yaml.safe_dump(doc, sort_keys=False)}
    if ctb is not None:
        files["ctb.yaml"] = ctb
    return render_files(tmp_path, files)


def problems(tmp_path: Path, doc: dict[str, Any], config: dict[str, Any] | None = None, **kw: Any) -> list[str]:
    with pytest.raises(InvalidInputError) as info:
        render(tmp_path, doc, config, **kw)
    return [plain(str(p)) for p in info.value.problems]


def pod_groups(result: RenderResult) -> dict[str, dict[str, Any]]:
    return objects_by_kind(result, "PodGroup")


def with_topology(doc: dict[str, Any], pcs: dict[str, Any] | None = None, **cliques: dict[str, Any]) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    if pcs is not None:
        doc["spec"]["template"]["topologyConstraint"] = pcs
    for clique in doc["spec"]["template"]["cliques"]:
        if clique["name"] in cliques:
            clique["topologyConstraint"] = cliques[clique["name"]]
    return doc


BASE_MEMBERS = ["disagg-0-router", "disagg-0-prefill-0-pleader", "disagg-0-prefill-0-pworker"]


# -- gang objects and pods ----------------------------------------------------------------------


def test_podgroups_per_podgroup_linked_into_one_ganggroup(tmp_path: Path, crds: CRDRegistry) -> None:
    result = render(tmp_path, pcs_doc())
    assert_schema_valid(result, crds)
    gangs = objects_by_kind(result, "PodGang")
    assert list(gangs) == ["disagg-0", "disagg-0-prefill-0", "disagg-0-prefill-1"]
    groups = pod_groups(result)
    assert set(groups) == {
        *BASE_MEMBERS,
        "disagg-0-prefill-1-pleader",
        "disagg-0-prefill-1-pworker",
        "disagg-0-prefill-2-pleader",
        "disagg-0-prefill-2-pworker",
    }
    base_groups = json.dumps([f"llm/{n}" for n in BASE_MEMBERS], separators=(",", ":"))
    assert groups["disagg-0-prefill-0-pworker"] == {
        "apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {
            "name": "disagg-0-prefill-0-pworker",
            "namespace": "llm",
            "labels": {
                "app.kubernetes.io/managed-by": "grove-gitops",
                "app.kubernetes.io/part-of": "disagg",
                "app.kubernetes.io/component": "podgang",
                "grove.io/scheduler-name": "koord-scheduler",
                "grove.io/podgang": "disagg-0",
            },
            "annotations": {GROUPS: base_groups, MODE: "Strict", TOTAL: "3"},
        },
        "spec": {"minMember": 2, "scheduleTimeoutSeconds": 600},
    }
    assert base_groups == '["llm/disagg-0-router","llm/disagg-0-prefill-0-pleader","llm/disagg-0-prefill-0-pworker"]'
    # Every member of a GangGroup carries the identical list; scaled PodGangs are their own GangGroup.
    for name in BASE_MEMBERS:
        assert groups[name]["metadata"]["annotations"][GROUPS] == base_groups
    scaled = '["llm/disagg-0-prefill-1-pleader","llm/disagg-0-prefill-1-pworker"]'
    assert groups["disagg-0-prefill-1-pleader"]["metadata"]["annotations"][GROUPS] == scaled
    assert groups["disagg-0-prefill-1-pworker"]["metadata"]["labels"]["grove.io/podgang"] == "disagg-0-prefill-0"
    assert {n: g["spec"]["minMember"] for n, g in groups.items()} == {
        "disagg-0-router": 1,
        "disagg-0-prefill-0-pleader": 1,
        "disagg-0-prefill-0-pworker": 2,
        "disagg-0-prefill-1-pleader": 1,
        "disagg-0-prefill-1-pworker": 2,
        "disagg-0-prefill-2-pleader": 1,
        "disagg-0-prefill-2-pworker": 2,
    }
    assert groups["disagg-0-router"]["metadata"]["annotations"][TOTAL] == "2"
    for group in groups.values():
        assert NTS not in group["metadata"]["annotations"]
        assert MATCH not in group["metadata"]["annotations"]
        assert "ownerReferences" not in group["metadata"] and "status" not in group
    # The gate-lifter's list names exactly this PodGang's PodGroups.
    refs = json.loads(gangs["disagg-0-prefill-1"]["metadata"]["annotations"]["gitops.grove.io/gang-objects"])
    assert refs == [
        {"apiVersion": "scheduling.sigs.k8s.io/v1alpha1", "kind": "PodGroup", "name": "disagg-0-prefill-2-pleader"},
        {"apiVersion": "scheduling.sigs.k8s.io/v1alpha1", "kind": "PodGroup", "name": "disagg-0-prefill-2-pworker"},
    ]
    assert not objects_by_kind(result, "ClusterNetworkTopology")
    shards = {o.obj["metadata"]["name"]: o.shard for o in result.objects if o.obj["kind"] == "PodGroup"}
    assert set(shards.values()) == {"llm/disagg"}


def test_pods_bind_to_their_podgroup(tmp_path: Path) -> None:
    result = render(tmp_path, pcs_doc())
    pods = objects_by_kind(result, "Pod")
    assert len(pods) == 2 + 3 * (1 + 3)
    groups = pod_groups(result)
    for pod in pods.values():
        labels = pod["metadata"]["labels"]
        assert pod["spec"]["schedulerName"] == "koord-scheduler"
        assert labels[POD_GROUP_LABEL] == labels["grove.io/podclique"]
        assert labels[POD_GROUP_LABEL] in groups
        assert QOS not in labels
        assert pod["spec"]["schedulingGates"] == [{"name": "grove.io/podgang-pending-creation"}]


def test_profile_config_sets_gang_keys_timeout_and_qos(tmp_path: Path, crds: CRDRegistry) -> None:
    doc = pcs_doc()
    doc["spec"]["template"]["cliques"][0]["labels"] = {QOS: "LSR"}
    config = {
        "gangMode": "NonStrict",
        "matchPolicy": "only-waiting",
        "scheduleTimeoutSeconds": 120,
        "defaultQoSClass": "BE",
    }
    result = render(tmp_path, doc, config)
    assert_schema_valid(result, crds)
    for group in pod_groups(result).values():
        annotations = group["metadata"]["annotations"]
        assert annotations[MODE] == "NonStrict"
        assert annotations[MATCH] == "only-waiting"
        assert group["spec"]["scheduleTimeoutSeconds"] == 120
    qos = {
        p["metadata"]["labels"]["grove.io/podclique"]: p["metadata"]["labels"][QOS]
        for p in objects_by_kind(result, "Pod").values()
    }
    assert qos["disagg-0-router"] == "LSR"  # the clique's own label wins over the profile default
    assert {v for k, v in qos.items() if k != "disagg-0-router"} == {"BE"}


# -- topology ----------------------------------------------------------------------------------

GATHER_RACK = '{"gatherStrategy":[{"layer":"RackLayer","strategy":"MustGather"}]}'


def test_required_domain_becomes_gang_wide_gather_and_default_topology(tmp_path: Path, crds: CRDRegistry) -> None:
    doc = with_topology(
        pcs_doc(),
        {"topologyName": "fabric", "pack": {"required": "rack", "preferred": "host"}},
        pworker={"pack": {"required": "rack"}},
    )
    result = render(tmp_path, doc, {"clusterNetworkTopology": "fabric"}, tas=True, ctb=CTB)
    assert_schema_valid(result, crds)
    groups = pod_groups(result)
    assert len(groups) == 7
    for group in groups.values():
        assert group["metadata"]["annotations"][NTS] == GATHER_RACK
    assert without_namespace_warnings(result.warnings) == [
        f"pcs.yaml: {T}.topologyConstraint.pack.preferred: preferred domain 'host' is not rendered: Koordinator's "
        "solver does not read PreferGather; only the required domain 'rack' is enforced"
    ]
    topologies = [o for o in result.objects if o.obj["kind"] == "ClusterNetworkTopology"]
    assert [t.shard for t in topologies] == ["_cluster"]
    assert topologies[0].obj == {
        "apiVersion": "scheduling.koordinator.sh/v1alpha1",
        "kind": "ClusterNetworkTopology",
        "metadata": {
            "name": "default",
            "labels": {"app.kubernetes.io/managed-by": "grove-gitops"},
            "annotations": {"gitops.grove.io/cluster-topology-binding": "fabric"},
        },
        "spec": {
            "networkTopologySpec": [
                {"topologyLayer": "BlockLayer", "labelKey": ["network.topology.nvidia.com/block"]},
                {
                    "topologyLayer": "RackLayer",
                    "parentTopologyLayer": "BlockLayer",
                    "labelKey": ["topology.kubernetes.io/rack"],
                },
                {"topologyLayer": "NodeTopologyLayer", "parentTopologyLayer": "RackLayer"},
            ]
        },
    }


def test_clique_level_constraints_on_every_clique_with_configured_layer(tmp_path: Path, crds: CRDRegistry) -> None:
    tc = {"topologyName": "fabric", "pack": {"required": "block"}}
    doc = with_topology(pcs_doc(), None, router=tc, pleader=tc, pworker=tc)
    config = {"networkTopologyLayers": {"fabric": {"block": "SpineLayer"}}}
    result = render(tmp_path, doc, config, tas=True, ctb=CTB)
    assert_schema_valid(result, crds)
    assert {g["metadata"]["annotations"][NTS] for g in pod_groups(result).values()} == {
        '{"gatherStrategy":[{"layer":"SpineLayer","strategy":"MustGather"}]}'
    }
    assert not objects_by_kind(result, "ClusterNetworkTopology")  # the admin owns it unless asked


def test_host_domain_gathers_on_one_node(tmp_path: Path) -> None:
    doc = with_topology(pcs_doc(), {"topologyName": "fabric", "pack": {"required": "host"}})
    result = render(tmp_path, doc, {"clusterNetworkTopology": "fabric"}, tas=True, ctb=CTB)
    assert {g["metadata"]["annotations"][NTS] for g in pod_groups(result).values()} == {
        '{"gatherStrategy":[{"layer":"NodeTopologyLayer","strategy":"MustGather"}]}'
    }


def _binding(levels: list[tuple[str, str]]) -> ClusterTopologyBinding:
    return ClusterTopologyBinding.model_validate(
        {
            "apiVersion": "grove.io/v1alpha1",
            "kind": "ClusterTopologyBinding",
            "metadata": {"name": "b"},
            "spec": {"levels": [{"domain": d, "key": k} for d, k in levels]},
        }
    )


@pytest.mark.parametrize(
    ("levels", "expected"),
    [
        # no hostname level: NodeTopologyLayer is appended under the narrowest level
        (
            [("zone", "topology.kubernetes.io/zone"), ("gpu-rack", "example.com/rack")],
            [
                {"topologyLayer": "ZoneLayer", "labelKey": ["topology.kubernetes.io/zone"]},
                {"topologyLayer": "GpuRackLayer", "parentTopologyLayer": "ZoneLayer", "labelKey": ["example.com/rack"]},
                {"topologyLayer": "NodeTopologyLayer", "parentTopologyLayer": "GpuRackLayer"},
            ],
        ),
        # levels narrower than the node cannot exist in Koordinator's tree
        (
            [("rack", "example.com/rack"), ("host", "kubernetes.io/hostname"), ("numa", "example.com/numa")],
            [
                {"topologyLayer": "RackLayer", "labelKey": ["example.com/rack"]},
                {"topologyLayer": "NodeTopologyLayer", "parentTopologyLayer": "RackLayer"},
            ],
        ),
        ([("host", "kubernetes.io/hostname")], [{"topologyLayer": "NodeTopologyLayer"}]),
        # a domain whose derived name would collide with a built-in layer gets a prefix
        (
            [("node-topology", "example.com/nt")],
            [
                {"topologyLayer": "GroveNodeTopologyLayer", "labelKey": ["example.com/nt"]},
                {"topologyLayer": "NodeTopologyLayer", "parentTopologyLayer": "GroveNodeTopologyLayer"},
            ],
        ),
    ],
)
def test_cluster_network_topology_shapes(
    levels: list[tuple[str, str]], expected: list[dict[str, Any]], crds: CRDRegistry
) -> None:
    obj = cluster_network_topology(_binding(levels))
    assert obj["spec"]["networkTopologySpec"] == expected
    assert crds.validate(obj) == []


def test_derived_layer_names() -> None:
    assert derived_layer_name("block") == "BlockLayer"
    assert derived_layer_name("gpu-rack") == "GpuRackLayer"
    assert derived_layer_name("cluster-topology") == "GroveClusterTopologyLayer"


# -- naming --------------------------------------------------------------------------------------

LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def test_podgroup_name_always_fits_a_label_value() -> None:
    assert podgroup_name("disagg-0-pleader") == "disagg-0-pleader"
    exactly = "a" * 63
    assert podgroup_name(exactly) == exactly
    long = "x" * 50 + "-0-prefill-12-pworker"
    name = podgroup_name(long)
    assert len(name) == 63 and name.startswith("x" * 50 + "-0") and name == podgroup_name(long)
    assert podgroup_name(long + "2") != name
    assert LABEL_VALUE.match(name) and SUBDOMAIN.match(name)
    # a cut that ends on "-" or "." is trimmed so the name stays a DNS subdomain
    dotted = "a" * 51 + ".-b" + "c" * 20
    short = podgroup_name(dotted)
    assert short.startswith("a" * 51 + "-") and len(short) == 62 and SUBDOMAIN.match(short)


# -- rejections ---------------------------------------------------------------------------------

OBJ = 'Invalid value'


def test_scaling_group_topology_is_rejected(tmp_path: Path) -> None:
    doc = pcs_doc()
    doc["spec"]["template"]["podCliqueScalingGroups"][0]["topologyConstraint"] = {
        "topologyName": "fabric",
        "pack": {"required": "rack"},
    }
    assert problems(tmp_path, doc, {"clusterNetworkTopology": "fabric"}, tas=True, ctb=CTB) == [
        f"pcs.yaml: {T}.podCliqueScalingGroups[0].topologyConstraint: {OBJ}: koord-scheduler does not support "
        "PodCliqueScalingGroup-level topology constraints: a PodGang becomes one Koordinator GangGroup, which "
        "carries a single network-topology-spec for all of its pods; put the constraint on "
        "spec.template.topologyConstraint instead"
    ]


def test_two_required_levels_are_rejected(tmp_path: Path) -> None:
    doc = with_topology(
        pcs_doc(), {"topologyName": "fabric", "pack": {"required": "block"}}, pworker={"pack": {"required": "rack"}}
    )
    assert problems(tmp_path, doc, {"clusterNetworkTopology": "fabric"}, tas=True, ctb=CTB) == [
        f"pcs.yaml: {T}.cliques[2].topologyConstraint.pack.required: {OBJ}: koord-scheduler enforces one topology "
        f"layer per gang: required domain 'rack' differs from 'block' required at {T}.topologyConstraint; "
        "Koordinator shares one network-topology-spec across a GangGroup and gathers only at its deepest "
        "MustGather layer"
    ]


def test_constraint_on_some_cliques_only_is_rejected(tmp_path: Path) -> None:
    doc = with_topology(pcs_doc(), None, pworker={"topologyName": "fabric", "pack": {"required": "rack"}})
    assert problems(tmp_path, doc, {"clusterNetworkTopology": "fabric"}, tas=True, ctb=CTB) == [
        f"pcs.yaml: {T}.cliques[2].topologyConstraint: {OBJ}: koord-scheduler applies one network-topology-spec "
        "to every pod of a gang, but clique(s) 'router', 'pleader' have no required topology domain; set "
        "pack.required: rack on spec.template.topologyConstraint or on every clique"
    ]


def test_preferred_only_is_rejected(tmp_path: Path) -> None:
    doc = with_topology(pcs_doc(), {"topologyName": "fabric", "pack": {"preferred": "rack"}})
    assert problems(tmp_path, doc, {"clusterNetworkTopology": "fabric"}, tas=True, ctb=CTB) == [
        f"pcs.yaml: {T}.topologyConstraint.pack.preferred: {OBJ}: koord-scheduler cannot honour a preferred-only "
        "topology constraint: Koordinator accepts PreferGather but its solver does not read it, so the preference "
        "would silently do nothing; use pack.required or remove the constraint"
    ]


def test_unmapped_domain_is_rejected(tmp_path: Path) -> None:
    doc = with_topology(pcs_doc(), {"topologyName": "fabric", "pack": {"required": "rack"}})
    assert problems(tmp_path, doc, None, tas=True, ctb=CTB) == [
        f"pcs.yaml: {T}.topologyConstraint.pack.required: {OBJ}: no Koordinator topology layer for domain 'rack' "
        "of ClusterTopologyBinding 'fabric': set networkTopologyLayers.fabric.rack in the koord-scheduler profile "
        "config, or clusterNetworkTopology: fabric to render the ClusterNetworkTopology from this binding"
    ]


def test_domain_below_the_node_is_rejected(tmp_path: Path) -> None:
    ctb = CTB + "  - {domain: numa, key: example.com/numa}\n"
    doc = with_topology(pcs_doc(), {"topologyName": "fabric", "pack": {"required": "numa"}})
    assert problems(tmp_path, doc, {"clusterNetworkTopology": "fabric"}, tas=True, ctb=ctb) == [
        f"pcs.yaml: {T}.topologyConstraint.pack.required: {OBJ}: domain 'numa' lies below the "
        "kubernetes.io/hostname level of ClusterTopologyBinding 'fabric'; Koordinator's topology tree ends at "
        "NodeTopologyLayer"
    ]


def test_bad_qos_label_is_rejected(tmp_path: Path) -> None:
    doc = pcs_doc()
    doc["spec"]["template"]["cliques"][1]["labels"] = {QOS: "gold"}
    assert problems(tmp_path, doc) == [
        f'pcs.yaml: {T}.cliques[1].labels[koordinator.sh/qosClass]: {OBJ}: must be one of LSE, LSR, LS, BE, SYSTEM (got "gold")'
    ]


CFG = "scheduler.profiles[koord-scheduler].config"


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (
            {"gangMode": "Loose"},
            [f'{CFG}.gangMode: {OBJ}: OperatorConfiguration: must be one of "Strict", "NonStrict" (got "Loose")'],
        ),
        (
            {"matchPolicy": "sometimes"},
            [
                f'{CFG}.matchPolicy: {OBJ}: OperatorConfiguration: must be one of "once-satisfied", "only-waiting", "waiting-and-running" (got "sometimes")'
            ],
        ),
        (
            {"scheduleTimeoutSeconds": 0},
            [
                f"{CFG}.scheduleTimeoutSeconds: {OBJ}: OperatorConfiguration: must be an integer between 1 and 2147483647"
            ],
        ),
        (
            {"defaultQoSClass": "SYSTEM"},
            [
                f'{CFG}.defaultQoSClass: {OBJ}: OperatorConfiguration: must be one of "LSE", "LSR", "LS", "BE" (got "SYSTEM")'
            ],
        ),
        (
            {"gangmode": "Strict"},
            [
                f"{CFG}.gangmode: {OBJ}: OperatorConfiguration: unknown key; supported keys: gangMode, matchPolicy, scheduleTimeoutSeconds, defaultQoSClass, networkTopologyLayers, clusterNetworkTopology"
            ],
        ),
        (
            {"clusterNetworkTopology": "nope"},
            [
                f'{CFG}.clusterNetworkTopology: {OBJ}: OperatorConfiguration: must name a ClusterTopologyBinding of the source tree (got "nope")'
            ],
        ),
        (
            {"networkTopologyLayers": {"fabric": {"zone": "ZoneLayer", "rack": "ClusterTopologyLayer"}}},
            [
                f"{CFG}.networkTopologyLayers.fabric.zone: {OBJ}: OperatorConfiguration: domain is not a level of ClusterTopologyBinding 'fabric'",
                f"{CFG}.networkTopologyLayers.fabric.rack: {OBJ}: OperatorConfiguration: must be a Koordinator topology layer name other than ClusterTopologyLayer",
            ],
        ),
        (
            {"clusterNetworkTopology": "fabric", "networkTopologyLayers": {"fabric": {"rack": "R"}}},
            [
                f"{CFG}.networkTopologyLayers.fabric: {OBJ}: OperatorConfiguration: cannot be combined with clusterNetworkTopology: fabric; the rendered ClusterNetworkTopology defines the layer names of that binding"
            ],
        ),
    ],
)
def test_bad_profile_config_is_rejected(tmp_path: Path, config: dict[str, Any], expected: list[str]) -> None:
    assert problems(tmp_path, pcs_doc(), config, ctb=CTB) == [f"pcs.yaml: {e}" for e in expected]


def test_bad_profile_config_is_reported_without_any_koordinator_workload(tmp_path: Path) -> None:
    """The ClusterNetworkTopology hook still refuses a broken config when no PCS selects the backend."""
    doc = pcs_doc()
    for clique in doc["spec"]["template"]["cliques"]:
        clique["spec"]["podSpec"]["schedulerName"] = "default-scheduler"
    with pytest.raises(InvalidInputError) as info:
        render(tmp_path, doc, {"gangMode": "Loose"}, ctb=CTB, default="default-scheduler")
    assert [plain(str(p)) for p in info.value.problems] == [
        f'OperatorConfiguration: {CFG}.gangMode: must be one of "Strict", "NonStrict" (got "Loose")'
    ]


def _context(config: dict[str, Any] | None = None, tas: bool = False) -> BackendContext:
    return BackendContext(render=RenderConfig(), profile_config=config or {}, tas_enabled=tas)


def test_mnnvl_is_rejected(tmp_path: Path) -> None:
    """The core refuses MNNVL today (it renders no ComputeDomains), so the backend's own check is
    exercised directly; through render_source the PCS is refused either way."""
    doc = pcs_doc()
    doc["metadata"]["annotations"] = {"grove.io/mnnvl-group": "nvl-a"}
    doc["spec"]["template"]["cliques"][0]["annotations"] = {"grove.io/mnnvl-group": "none"}
    doc["spec"]["template"]["podCliqueScalingGroups"][0]["annotations"] = {"grove.io/mnnvl-group": "nvl-b"}
    pcs = PodCliqueSet.model_validate(doc)
    message = (
        "koord-scheduler does not support MNNVL: ComputeDomain ResourceClaims are incompatible with Koordinator's "
        'device scheduling; remove the grove.io/mnnvl-group annotation (or set it to "none") or use kai-scheduler'
    )
    assert KoordinatorBackend(_context()).validate(pcs) == [
        BackendFinding("metadata.annotations[grove.io/mnnvl-group]", message),
        BackendFinding(f"{T}.podCliqueScalingGroups[0].annotations[grove.io/mnnvl-group]", message),
    ]
    found = problems(tmp_path, doc)
    assert found and all("mnnvl-group" in p for p in found)


# -- switching from default-scheduler ---------------------------------------------------------

HASHED_POD = re.compile(r"^(?P<stem>.+-\d+)-[a-z0-9]{8}$")


def _normalise(result: RenderResult, scheduler_fields: dict[str, tuple[str, ...]]) -> dict[tuple[str, str], Any]:
    """Objects keyed by (kind, name), minus what a backend is allowed to change: pod names (they
    hash the pod), pod scheduling fields, the PodGang's scheduler label and gate-lifter list."""
    out: dict[tuple[str, str], Any] = {}
    for item in result.objects:
        obj = copy.deepcopy(item.obj)
        name = obj["metadata"]["name"]
        if obj["kind"] == "Pod":
            match = HASHED_POD.match(name)
            assert match, name
            name = match["stem"]
            del obj["metadata"]["name"]
            del obj["spec"]["schedulerName"]
            obj["metadata"]["annotations"].pop("gitops.grove.io/rendered-by")  # binds the (hashed) name
            if not obj["metadata"]["annotations"]:
                del obj["metadata"]["annotations"]
            for key in scheduler_fields.get("pod-labels", ()):
                obj["metadata"]["labels"].pop(key, None)
        elif obj["kind"] == "PodGang":
            del obj["metadata"]["labels"]["grove.io/scheduler-name"]
            del obj["metadata"]["annotations"]["gitops.grove.io/gang-objects"]
            del obj["metadata"]["annotations"]["gitops.grove.io/pod-binding"]  # what binds the pods: below
            for group in obj["spec"]["podgroups"]:
                group["podReferences"] = [HASHED_POD.match(r["name"])["stem"] for r in group["podReferences"]]  # type: ignore[index]
        elif obj["kind"] in scheduler_fields.get("backend-kinds", ()):
            continue
        out[(obj["kind"], name)] = obj
    return out


def test_switching_from_default_scheduler_changes_only_scheduling(tmp_path: Path) -> None:
    doc = pcs_doc()
    before = render(tmp_path / "a", doc, default="default-scheduler")
    after = render(tmp_path / "b", doc, {"defaultQoSClass": "LS"})
    assert not pod_groups(before) and len(pod_groups(after)) == 7
    fields = {"pod-labels": (POD_GROUP_LABEL, QOS), "backend-kinds": ("PodGroup",)}
    assert _normalise(before, fields) == _normalise(after, fields)
    assert {p["spec"]["schedulerName"] for p in objects_by_kind(before, "Pod").values()} == {"default-scheduler"}
    assert {p["spec"]["schedulerName"] for p in objects_by_kind(after, "Pod").values()} == {"koord-scheduler"}
    # The pods are bound by the scheduler name and their pod-group label; the QoS class the
    # backend defaults is not a binding (a template may set its own).
    for gang in objects_by_kind(after, "PodGang").values():
        binding = json.loads(gang["metadata"]["annotations"]["gitops.grove.io/pod-binding"])
        label = "/metadata/labels/" + POD_GROUP_LABEL.replace("/", "~1")
        assert binding["all"] == {"/spec/schedulerName": "koord-scheduler"}
        assert {g: list(f) for g, f in binding["each"].items()} == {
            g["name"]: [label] for g in gang["spec"]["podgroups"]}
        assert not any(QOS.replace("/", "~1") in p for f in binding["each"].values() for p in f)


def test_gang_objects_never_drop_a_required_constraint() -> None:
    """A PodGang that validate() would have refused (two required keys) fails loudly, not silently."""
    binding = _binding([("block", "example.com/block"), ("rack", "example.com/rack")])
    context = BackendContext(
        render=RenderConfig(), profile_config={"clusterNetworkTopology": "b"}, bindings={"b": binding}, tas_enabled=True
    )
    gang = {
        "metadata": {"name": "g", "namespace": "ns", "annotations": {"grove.io/topology-name": "b"}},
        "spec": {
            "topologyConstraint": {"packConstraint": {"required": "example.com/block"}},
            "podgroups": [
                {"name": "g-a", "podReferences": [], "minReplicas": 1},
                {
                    "name": "g-b",
                    "podReferences": [],
                    "minReplicas": 1,
                    "topologyConstraint": {"packConstraint": {"required": "example.com/rack"}},
                },
            ],
        },
    }
    backend = KoordinatorBackend(context)
    with pytest.raises(InvalidInputError, match="cannot express the required topology keys"):
        backend.gang_objects(gang, PodCliqueSet.model_validate(pcs_doc()))
    gang["spec"]["podgroups"][1].pop("topologyConstraint")  # type: ignore[attr-defined]
    annotations = backend.gang_objects(gang, PodCliqueSet.model_validate(pcs_doc()))[1]["metadata"]["annotations"]
    assert annotations[NTS] == '{"gatherStrategy":[{"layer":"BlockLayer","strategy":"MustGather"}]}'
    assert annotations[GROUPS] == '["ns/g-a","ns/g-b"]'
