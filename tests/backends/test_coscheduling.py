"""``scheduler-plugins-scheduler``: one Coscheduling PodGroup per PodGang (``spec/backend-crs.md`` §7)."""

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
from grove_gitops.backendapi import BackendContext
from grove_gitops.errors import InvalidInputError
from grove_gitops.render import RenderResult
from grove_gitops_backends.coscheduling import CoschedulingBackend
from tests.schemas import CRDRegistry
from tests.support import assert_schema_valid, objects_by_kind, plain, render_files, without_namespace_warnings

T = "spec.template"
OBJ = 'Invalid value'
LABEL = "scheduling.x-k8s.io/pod-group"
CFG = "scheduler.profiles[scheduler-plugins-scheduler].config"
CTB = """\
apiVersion: grove.io/v1alpha1
kind: ClusterTopologyBinding
metadata: {name: fabric}
spec:
  levels:
  - {domain: zone, key: topology.kubernetes.io/zone}
  - {domain: rack, key: topology.kubernetes.io/rack}
"""
WARNING = (
    f"pcs.yaml: {T}: scheduler-plugins Coscheduling has one flat PodGroup per PodGang: only the total minMember "
    "(the sum of minAvailable) is enforced for {gangs}, not each clique's own minAvailable"
)


def opcfg(
    config: dict[str, Any] | None = None, *, tas: bool = False, default: str = "scheduler-plugins-scheduler"
) -> str:
    profile: dict[str, Any] = {"name": "scheduler-plugins-scheduler"}
    if config is not None:
        profile["config"] = config
    doc = {
        "apiVersion": "operator.config.grove.io/v1alpha1",
        "kind": "OperatorConfiguration",
        "topologyAwareScheduling": {"enabled": tas},
        "scheduler": {"defaultProfileName": default, "profiles": [profile, {"name": "default-scheduler"}]},
    }
    return yaml.safe_dump(doc, sort_keys=False)


def clique(name: str, replicas: int, min_available: int | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "roleName": name,
        "replicas": replicas,
        "podSpec": {"containers": [{"name": "main", "image": "nginx:1.27"}]},
    }
    if min_available is not None:
        spec["minAvailable"] = min_available
    return {"name": name, "spec": spec}


def pcs_doc() -> dict[str, Any]:
    """Standalone ``router`` (2 pods, minAvailable 1) and scaling group ``prefill`` (``pleader`` 1 pod,
    ``pworker`` 3 pods / minAvailable 2) with replicas 3 > minAvailable 2."""
    return {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueSet",
        "metadata": {"name": "disagg", "namespace": "llm", "labels": {"team": "infer"}},
        "spec": {
            "replicas": 1,
            "template": {
                "cliques": [clique("router", 2, 1), clique("pleader", 1), clique("pworker", 3, 2)],
                "podCliqueScalingGroups": [
                    {"name": "prefill", "cliqueNames": ["pleader", "pworker"], "replicas": 3, "minAvailable": 2}
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
    ctb: bool = False,
    default: str = "scheduler-plugins-scheduler",
) -> RenderResult:
    files = {"opcfg.yaml": opcfg(config, tas=tas, default=default), "pcs.yaml": yaml.safe_dump(doc, sort_keys=False)}
    if ctb:
        files["ctb.yaml"] = CTB
    return render_files(tmp_path, files)


def problems(tmp_path: Path, doc: dict[str, Any], config: dict[str, Any] | None = None, **kw: Any) -> list[str]:
    with pytest.raises(InvalidInputError) as info:
        render(tmp_path, doc, config, **kw)
    return [plain(str(p)) for p in info.value.problems]


def test_one_podgroup_per_podgang_with_the_summed_minimum(tmp_path: Path, crds: CRDRegistry) -> None:
    result = render(tmp_path, pcs_doc())
    assert_schema_valid(result, crds)
    gangs = objects_by_kind(result, "PodGang")
    groups = objects_by_kind(result, "PodGroup")
    assert list(gangs) == ["disagg-0", "disagg-0-prefill-0"]
    assert list(groups) == list(gangs)
    # base: router 1 + two prefill replicas x (pleader 1 + pworker 2) = 7; scaled: 1 + 2 = 3
    assert groups["disagg-0"] == {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {
            "name": "disagg-0",
            "namespace": "llm",
            "labels": {
                "team": "infer",
                "app.kubernetes.io/managed-by": "grove-gitops",
                "app.kubernetes.io/part-of": "disagg",
                "app.kubernetes.io/component": "podgang",
                "grove.io/scheduler-name": "scheduler-plugins-scheduler",
                "grove.io/podgang": "disagg-0",
            },
        },
        "spec": {"minMember": 7, "scheduleTimeoutSeconds": 60},
    }
    assert groups["disagg-0-prefill-0"]["spec"] == {"minMember": 3, "scheduleTimeoutSeconds": 60}
    assert json.loads(gangs["disagg-0-prefill-0"]["metadata"]["annotations"]["gitops.grove.io/gang-objects"]) == [
        {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup", "name": "disagg-0-prefill-0"}
    ]
    assert without_namespace_warnings(result.warnings) == [
        WARNING.format(gangs="the base PodGang and the scaled PodGangs of scaling group 'prefill'")
    ]
    pods = objects_by_kind(result, "Pod")
    assert len(pods) == 2 + 3 * 4
    for pod in pods.values():
        assert pod["spec"]["schedulerName"] == "scheduler-plugins-scheduler"
        assert pod["metadata"]["labels"][LABEL] == pod["metadata"]["labels"]["grove.io/podgang"]
        assert pod["spec"]["schedulingGates"] == [{"name": "grove.io/podgang-pending-creation"}]
    assert sum(1 for p in pods.values() if p["metadata"]["labels"][LABEL] == "disagg-0-prefill-0") == 4


def test_profile_config_overrides_scheduler_name_and_timeout(tmp_path: Path, crds: CRDRegistry) -> None:
    result = render(tmp_path, pcs_doc(), {"schedulerName": "coscheduler", "scheduleTimeoutSeconds": 30})
    assert_schema_valid(result, crds)
    assert {p["spec"]["schedulerName"] for p in objects_by_kind(result, "Pod").values()} == {"coscheduler"}
    assert {g["spec"]["scheduleTimeoutSeconds"] for g in objects_by_kind(result, "PodGroup").values()} == {30}


def test_no_warning_when_the_total_already_demands_every_pod(tmp_path: Path) -> None:
    doc = pcs_doc()
    for c in doc["spec"]["template"]["cliques"]:
        c["spec"].pop("minAvailable", None)
    result = render(tmp_path, doc)
    assert without_namespace_warnings(result.warnings) == []
    assert objects_by_kind(result, "PodGroup")["disagg-0"]["spec"]["minMember"] == 2 + 2 * (1 + 3)


def test_warning_names_only_the_gangs_with_slack(tmp_path: Path) -> None:
    doc = pcs_doc()
    doc["spec"]["template"]["cliques"][2]["spec"].pop("minAvailable")  # only router has slack, outside the group
    result = render(tmp_path, doc)
    assert without_namespace_warnings(result.warnings) == [WARNING.format(gangs="the base PodGang")]


def test_min_member_is_at_least_one() -> None:
    """The CRD's minimum is 1; Grove's validation already keeps minReplicas > 0, this is the guard."""
    backend = CoschedulingBackend(BackendContext(render=RenderConfig()))
    gang = {
        "metadata": {"name": "g", "namespace": "ns", "labels": {}},
        "spec": {"podgroups": [{"name": "g-a", "podReferences": [], "minReplicas": 0}]},
    }
    pcs = PodCliqueSet.model_validate(pcs_doc())
    assert backend.gang_objects(gang, pcs)[0]["spec"]["minMember"] == 1


TOPOLOGY = (
    "scheduler-plugins-scheduler does not support Grove topology constraints: the Coscheduling PodGroup "
    "(scheduling.x-k8s.io/v1alpha1) has no topology fields; remove the constraint or use a topology-aware scheduler"
)


@pytest.mark.parametrize(
    ("where", "path"),
    [
        ("pcs", f"{T}.topologyConstraint"),
        ("clique", f"{T}.cliques[1].topologyConstraint"),
        ("group", f"{T}.podCliqueScalingGroups[0].topologyConstraint"),
    ],
)
def test_topology_constraints_are_rejected(tmp_path: Path, where: str, path: str) -> None:
    doc = pcs_doc()
    tc = {"topologyName": "fabric", "pack": {"required": "rack"}}
    tmpl = doc["spec"]["template"]
    {"pcs": tmpl, "clique": tmpl["cliques"][1], "group": tmpl["podCliqueScalingGroups"][0]}[where][
        "topologyConstraint"
    ] = tc
    assert problems(tmp_path, doc, tas=True, ctb=True) == [f"pcs.yaml: {path}: {OBJ}: {TOPOLOGY}"]


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (
            {"timeout": 5},
            [
                f"{CFG}.timeout: {OBJ}: OperatorConfiguration: unknown key; supported keys: schedulerName, scheduleTimeoutSeconds"
            ],
        ),
        (
            {"scheduleTimeoutSeconds": "60"},
            [
                f"{CFG}.scheduleTimeoutSeconds: {OBJ}: OperatorConfiguration: must be an integer between 1 and 2147483647"
            ],
        ),
        (
            {"schedulerName": "Second_Scheduler"},
            [
                f'{CFG}.schedulerName: {OBJ}: OperatorConfiguration: must be a lowercase RFC 1123 subdomain (got "Second_Scheduler")'
            ],
        ),
    ],
)
def test_bad_profile_config_is_rejected(tmp_path: Path, config: dict[str, Any], expected: list[str]) -> None:
    assert problems(tmp_path, pcs_doc(), config) == [f"pcs.yaml: {e}" for e in expected]


HASHED_POD = re.compile(r"^(?P<stem>.+-\d+)-[a-z0-9]{8}$")


def _stem(name: str) -> str:
    match = HASHED_POD.match(name)
    assert match, name
    return match["stem"]


def _normalise(result: RenderResult) -> dict[tuple[str, str], Any]:
    """Everything except pod names (a hash of the pod), pod scheduling fields, the PodGang's
    scheduler label and gate-lifter list, and the backend's own PodGroups."""
    out: dict[tuple[str, str], Any] = {}
    for item in result.objects:
        obj = copy.deepcopy(item.obj)
        name = obj["metadata"]["name"]
        if obj["kind"] == "PodGroup":
            continue
        if obj["kind"] == "Pod":
            name = _stem(name)
            del obj["metadata"]["name"]
            del obj["spec"]["schedulerName"]
            obj["metadata"]["annotations"].pop("gitops.grove.io/rendered-by")  # binds the (hashed) name
            if not obj["metadata"]["annotations"]:
                del obj["metadata"]["annotations"]
            obj["metadata"]["labels"].pop(LABEL, None)
        elif obj["kind"] == "PodGang":
            del obj["metadata"]["labels"]["grove.io/scheduler-name"]
            del obj["metadata"]["annotations"]["gitops.grove.io/gang-objects"]
            del obj["metadata"]["annotations"]["gitops.grove.io/pod-binding"]  # what binds the pods: below
            for group in obj["spec"]["podgroups"]:
                group["podReferences"] = [_stem(r["name"]) for r in group["podReferences"]]
        out[(obj["kind"], name)] = obj
    return out


def test_switching_from_default_scheduler_changes_only_scheduling(tmp_path: Path) -> None:
    before = render(tmp_path / "a", pcs_doc(), default="default-scheduler")
    after = render(tmp_path / "b", pcs_doc())
    assert not objects_by_kind(before, "PodGroup") and len(objects_by_kind(after, "PodGroup")) == 2
    assert _normalise(before) == _normalise(after)
    assert {p["spec"]["schedulerName"] for p in objects_by_kind(before, "Pod").values()} == {"default-scheduler"}
    for name, gang in objects_by_kind(after, "PodGang").items():  # scheduler name and pod-group label
        assert json.loads(gang["metadata"]["annotations"]["gitops.grove.io/pod-binding"]) == {"all": {
            "/metadata/labels/scheduling.x-k8s.io~1pod-group": name,
            "/spec/schedulerName": "scheduler-plugins-scheduler"}, "each": {}}
