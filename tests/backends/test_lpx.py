"""``lpx-scheduler``: Grove's LPX backend (``spec/grove-backends.md`` §4.4): pods only get the
scheduler name, there are no gang objects, and every topology constraint is refused."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from grove_gitops.errors import InvalidInputError
from grove_gitops.render import RenderResult
from tests.schemas import CRDRegistry, validate_any
from tests.support import objects_by_kind, plain, render_files, without_namespace_warnings

KUBE_VERSIONS = ("1.35", "1.36", "1.37")
T = "spec.template"
#: errTopologyConstraintsUnsupported, word for word (operator/internal/scheduler/lpx/backend.go).
GROVE_MESSAGE = (
    "lpx-scheduler does not support Grove topology constraints; placement topology must be expressed through "
    "the LPX workload contract"
)
CTB = """\
apiVersion: grove.io/v1alpha1
kind: ClusterTopologyBinding
metadata: {name: fabric}
spec:
  levels:
  - {domain: zone, key: topology.kubernetes.io/zone}
  - {domain: rack, key: topology.kubernetes.io/rack}
"""
#: The kinds a default-scheduler render produces; LPX adds none.
#: ... and the workload's gitops.grove.io PodCliqueSet record (docs/autoscaling.md).
CORE_KINDS = {"ServiceAccount", "Role", "RoleBinding", "Secret", "Service", "Pod", "PodGang", "PodCliqueSet"}


def opcfg(*, tas: bool = False, default: str = "lpx-scheduler") -> str:
    doc = {
        "apiVersion": "operator.config.grove.io/v1alpha1",
        "kind": "OperatorConfiguration",
        "topologyAwareScheduling": {"enabled": tas},
        "scheduler": {
            "defaultProfileName": default,
            "profiles": [{"name": "default-scheduler"}, {"name": "lpx-scheduler"}],
        },
    }
    return yaml.safe_dump(doc, sort_keys=False)


def pcs_doc() -> dict[str, Any]:
    """Standalone ``router`` and scaling group ``prefill`` (``pleader`` + ``pworker``) with
    replicas 3 > minAvailable 1, all selecting LPX explicitly."""

    def clique(name: str, replicas: int) -> dict[str, Any]:
        pod = {"schedulerName": "lpx-scheduler", "containers": [{"name": "main", "image": "nginx:1.27"}]}
        return {"name": name, "spec": {"roleName": name, "replicas": replicas, "podSpec": pod}}

    return {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueSet",
        "metadata": {"name": "disagg", "namespace": "llm"},
        "spec": {
            "replicas": 1,
            "template": {
                "cliques": [clique("router", 1), clique("pleader", 1), clique("pworker", 2)],
                "podCliqueScalingGroups": [
                    {"name": "prefill", "cliqueNames": ["pleader", "pworker"], "replicas": 3, "minAvailable": 1}
                ],
            },
        },
    }


def render(tmp_path: Path, doc: dict[str, Any], *, tas: bool = False, default: str = "lpx-scheduler") -> RenderResult:
    files = {"opcfg.yaml": opcfg(tas=tas, default=default), "pcs.yaml": yaml.safe_dump(doc, sort_keys=False)}
    if tas:
        files["ctb.yaml"] = CTB
    return render_files(tmp_path, files)


def test_pods_get_the_scheduler_name_and_nothing_else(tmp_path: Path, crds: CRDRegistry) -> None:
    result = render(tmp_path, pcs_doc())
    assert without_namespace_warnings(result.warnings) == []
    assert {o.obj["kind"] for o in result.objects} == CORE_KINDS
    for item in result.objects:
        for version in KUBE_VERSIONS:
            assert validate_any(item.obj, crds, version) == [], item.obj["metadata"]["name"]
    gangs = objects_by_kind(result, "PodGang")
    assert list(gangs) == ["disagg-0", "disagg-0-prefill-0", "disagg-0-prefill-1"]
    for gang in gangs.values():
        assert gang["metadata"]["labels"]["grove.io/scheduler-name"] == "lpx-scheduler"
        assert gang["metadata"]["annotations"]["gitops.grove.io/gang-objects"] == "[]"
    assert [g["name"] for g in gangs["disagg-0"]["spec"]["podgroups"]] == [
        "disagg-0-router",
        "disagg-0-prefill-0-pleader",
        "disagg-0-prefill-0-pworker",
    ]
    pods = objects_by_kind(result, "Pod")
    assert len(pods) == 1 + 3 * 3
    for pod in pods.values():
        assert pod["spec"]["schedulerName"] == "lpx-scheduler"
        assert pod["spec"]["schedulingGates"] == [{"name": "grove.io/podgang-pending-creation"}]
        assert list(pod["metadata"]["annotations"]) == ["gitops.grove.io/rendered-by"]  # the ownership proof only
        assert not [k for k in pod["metadata"]["labels"] if not k.startswith(("grove.io/", "app.kubernetes.io/"))]


@pytest.mark.parametrize("where", ["pcs", "clique", "group", "preferred-only"])
def test_topology_constraints_are_rejected_with_groves_message(tmp_path: Path, where: str) -> None:
    doc = pcs_doc()
    tmpl = doc["spec"]["template"]
    required = {"topologyName": "fabric", "pack": {"required": "rack"}}
    if where == "pcs":
        tmpl["topologyConstraint"] = required
    elif where == "clique":
        tmpl["cliques"][0]["topologyConstraint"] = required
    elif where == "group":
        tmpl["podCliqueScalingGroups"][0]["topologyConstraint"] = required
    else:
        tmpl["topologyConstraint"] = {"topologyName": "fabric", "pack": {"preferred": "zone"}}
    with pytest.raises(InvalidInputError) as info:
        render(tmp_path, doc, tas=True)
    assert [plain(str(p)) for p in info.value.problems] == [f'pcs.yaml: spec: Invalid value: {GROVE_MESSAGE}']


def test_without_constraints_tas_on_is_fine(tmp_path: Path) -> None:
    result = render(tmp_path, pcs_doc(), tas=True)
    assert "grove.io/topology-name" not in objects_by_kind(result, "PodGang")["disagg-0"]["metadata"].get(
        "annotations", {}
    )


HASHED_POD = re.compile(r"^(?P<stem>.+-\d+)-[a-z0-9]{8}$")


def _normalise(result: RenderResult) -> dict[tuple[str, str], Any]:
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
        elif obj["kind"] == "PodGang":
            del obj["metadata"]["labels"]["grove.io/scheduler-name"]
            assert json.loads(obj["metadata"]["annotations"].pop("gitops.grove.io/gang-objects")) == []
            # the pods are bound by their scheduler name alone (compared above, on the pods)
            binding = json.loads(obj["metadata"]["annotations"].pop("gitops.grove.io/pod-binding"))
            assert list(binding["all"]) == ["/spec/schedulerName"] and binding["each"] == {}
            for group in obj["spec"]["podgroups"]:
                group["podReferences"] = [HASHED_POD.match(r["name"])["stem"] for r in group["podReferences"]]  # type: ignore[index]
        out[(obj["kind"], name)] = obj
    return out


def test_switching_from_default_scheduler_changes_only_the_scheduler_name(tmp_path: Path) -> None:
    plain = pcs_doc()
    for c in plain["spec"]["template"]["cliques"]:
        del c["spec"]["podSpec"]["schedulerName"]
    before = render(tmp_path / "a", plain, default="default-scheduler")
    after = render(tmp_path / "b", plain)  # the same PCS, with LPX as the default profile
    assert _normalise(before) == _normalise(after)
    assert {p["spec"]["schedulerName"] for p in objects_by_kind(before, "Pod").values()} == {"default-scheduler"}
    assert {p["spec"]["schedulerName"] for p in objects_by_kind(after, "Pod").values()} == {"lpx-scheduler"}
