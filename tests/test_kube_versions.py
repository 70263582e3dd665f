"""Kubernetes 1.31 to 1.37 (issue 24 §3): each version renders, against its own schemas.

Scheduling gates went GA in 1.30, so gated pods, PodGangs and the scheduler backends' custom
resources are valid on every supported version; what needs a newer API (the Workload API gangs
of ``default-scheduler``, 1.35+; ``resource.k8s.io/v1`` ResourceClaims and MNNVL's dynamic
resource allocation, 1.34+) refuses an older target naming the version it needs. An unquoted
version is refused before YAML's number can be misread (``1.30`` is the number 1.3).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from grove_gitops.api.renderconfig import SUPPORTED_KUBERNETES_VERSIONS
from grove_gitops.errors import InvalidInputError
from grove_gitops.output.layout import build_tree
from grove_gitops.prcheck.lines import line_in_file
from grove_gitops.render import RenderResult, render_source
from tests.schemas import CRDRegistry, builtin_errors, validate_any
from tests.support import PROJECT, SAMPLES, SMALL_PCS, objects_by_kind, write_source

VERSIONS = ("1.31", "1.32", "1.33", "1.34", "1.35", "1.36", "1.37")
BEFORE_DRA = ("1.31", "1.32", "1.33")
BEFORE_WORKLOAD_API = ("1.31", "1.32", "1.33", "1.34")
PCS = yaml.safe_dump(SMALL_PCS)


def render_config(version: str) -> str:
    return f'apiVersion: gitops.grove.io/v1alpha1\nkind: RenderConfiguration\nkubernetesVersion: "{version}"\n'


def problems(tmp_path: Path, files: dict[str, str]) -> list[tuple[str, str, str]]:
    with pytest.raises(InvalidInputError) as caught:
        render_source(write_source(tmp_path / "src", files))
    return [(p.file, p.field, p.message) for p in caught.value.problems]


def test_the_supported_range_is_1_31_to_1_37() -> None:
    assert SUPPORTED_KUBERNETES_VERSIONS == VERSIONS


# --- the version itself ------------------------------------------------------------------------


def test_an_unquoted_version_is_refused_with_quote_it(tmp_path: Path) -> None:
    files = {"config/render.yaml": render_config("1.35").replace('"1.35"', "1.35"), "pcs.yaml": PCS}
    found = problems(tmp_path, files)
    assert len(found) == 1
    file, field, message = found[0]
    assert (file, field) == ("config/render.yaml", "kubernetesVersion")
    assert "quote it: the version must be a string" in message
    # The field path gives the line the error output shows.
    assert line_in_file(tmp_path / "src" / file, field) == 3


def test_an_unquoted_1_30_is_not_read_as_1_3(tmp_path: Path) -> None:
    """YAML reads 1.30 as 1.3: the message must not talk about a version "1.3"."""
    found = problems(tmp_path, {"r.yaml": render_config("1.30").replace('"1.30"', "1.30")})
    assert [(f, m.split(": ", 1)[1][:40]) for _, f, m in found] == [
        ("kubernetesVersion", "1.3: quote it: the version must be a str")
    ]


@pytest.mark.parametrize("version", ["1.30", "1.38", "v1.35", "1.35.2"])
def test_an_unsupported_version_lists_the_supported_ones(tmp_path: Path, version: str) -> None:
    found = problems(tmp_path, {"r.yaml": render_config(version)})
    supported = ", ".join(f'"{v}"' for v in VERSIONS)
    assert found == [
        ("r.yaml", "kubernetesVersion", f'Unsupported value: "{version}": supported values: {supported}')
    ]


# --- every example and Grove sample, on each version, against that version's schemas ----------


def _tree_for(tmp_path: Path, source: Path, version: str) -> Path:
    """A copy of ``source`` whose RenderConfiguration targets ``version``."""
    copy = tmp_path / "src"
    shutil.copytree(source, copy)
    configs = [p for p in copy.rglob("*.yaml") if "kind: RenderConfiguration" in p.read_text()]
    for path in configs:
        text = path.read_text()
        start = text.index("kubernetesVersion:")
        end = text.index("\n", start)
        path.write_text(f'{text[:start]}kubernetesVersion: "{version}"{text[end:]}')
    if not configs:
        (copy / "render-configuration.yaml").write_text(render_config(version))
    return copy


def _schema_problems(result: RenderResult, crds: CRDRegistry, version: str) -> list[str]:
    """Every output file (rendered and passed-through objects) against ``version``'s schemas."""
    found: list[str] = []
    for rel, data in build_tree(result).files.items():
        if rel.endswith(".yaml") and not rel.endswith("kustomization.yaml"):
            found += [f"{rel}: {e}" for e in validate_any(yaml.safe_load(data), crds, version)]
    return found


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("source", ["examples", "samples"])
def test_each_source_renders_valid_objects_for_each_version(
    tmp_path: Path, crds: CRDRegistry, source: str, version: str
) -> None:
    root = PROJECT / "examples" if source == "examples" else SAMPLES
    result = render_source(_tree_for(tmp_path, root, version))
    assert result.config.kubernetesVersion == version
    assert _schema_problems(result, crds, version) == []
    pods = [o.obj for o in result.objects if o.obj["kind"] == "Pod"]
    assert pods and all(p["spec"]["schedulingGates"] for p in pods)


# --- a user's podSpec is judged by the Pod schema of the target version -----------------------


def test_a_pod_field_newer_than_the_target_is_refused_at_its_path(tmp_path: Path) -> None:
    """Pod-level ``resources`` (PodLevelResources) exists in the 1.32+ Pod schema, not in 1.31's."""
    doc = yaml.safe_load(PCS)
    doc["spec"]["template"]["cliques"][0]["spec"]["podSpec"]["resources"] = {"limits": {"cpu": "2"}}
    files = {"pcs.yaml": yaml.safe_dump(doc)}
    found = problems(tmp_path / "a", {**files, "r.yaml": render_config("1.31")})
    assert [(f, fld) for f, fld, _ in found] == [("pcs.yaml", "spec.template.cliques[0].spec.podSpec.resources")]
    result = render_source(write_source(tmp_path / "b", {**files, "r.yaml": render_config("1.32")}))
    assert all(builtin_errors(p, "1.32") == [] for p in objects_by_kind(result, "Pod").values())


# --- features that need a newer API -----------------------------------------------------------

GANG_CONFIG = """\
apiVersion: operator.config.grove.io/v1alpha1
kind: OperatorConfiguration
scheduler:
  profiles:
  - {name: default-scheduler, config: {gangScheduling: true}}
"""


@pytest.mark.parametrize("version", BEFORE_WORKLOAD_API)
def test_workload_api_gangs_refuse_a_target_before_1_35(tmp_path: Path, version: str) -> None:
    found = problems(tmp_path, {"o.yaml": GANG_CONFIG, "r.yaml": render_config(version), "pcs.yaml": PCS})
    assert [(f, fld) for f, fld, _ in found] == [
        ("pcs.yaml", "scheduler.profiles[default-scheduler].config.gangScheduling")
    ]
    message = found[0][2]
    assert "need Kubernetes 1.35 or later" in message
    assert f'kubernetesVersion is "{version}"' in message


def test_without_gang_scheduling_the_default_scheduler_renders_on_1_31(tmp_path: Path, crds: CRDRegistry) -> None:
    config = GANG_CONFIG.replace("true", "false")
    files = {"o.yaml": config, "r.yaml": render_config("1.31"), "pcs.yaml": PCS}
    result = render_source(write_source(tmp_path / "src", files))
    assert _schema_problems(result, crds, "1.31") == []


SHARING = """\
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata: {name: rs, namespace: ml}
spec:
  replicas: 1
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
    - {name: gpu, scope: AllReplicas}
    cliques:
    - name: solo
      resourceSharing: [{name: gpu, scope: PerReplica}]
      spec: {roleName: solo, replicas: 2, podSpec: {containers: [{name: c, image: x}]}}
"""


@pytest.mark.parametrize("version", BEFORE_DRA)
def test_resource_claims_refuse_a_target_before_1_34(tmp_path: Path, version: str) -> None:
    found = problems(tmp_path, {"r.yaml": render_config(version), "pcs.yaml": SHARING})
    assert [(f, fld) for f, fld, _ in found] == [
        ("pcs.yaml", "spec.template.resourceSharing"),
        ("pcs.yaml", "spec.template.cliques[0].resourceSharing"),
    ]
    assert all("ResourceClaims (resource.k8s.io/v1) need Kubernetes 1.34 or later" in m for _, _, m in found)


def test_resource_claims_render_and_validate_on_1_34(tmp_path: Path, crds: CRDRegistry) -> None:
    result = render_source(write_source(tmp_path / "src", {"r.yaml": render_config("1.34"), "pcs.yaml": SHARING}))
    claims = objects_by_kind(result, "ResourceClaim")
    assert len(claims) == 3  # one for the PodCliqueSet replica, one per solo pod
    assert _schema_problems(result, crds, "1.34") == []
    # ... and the same claims are not served by 1.33: why the older target is refused.
    assert all(builtin_errors(c, "1.33") for c in claims.values())


MNNVL = """\
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata: {name: nv, namespace: ml, annotations: {grove.io/mnnvl-group: fabric}}
spec:
  replicas: 1
  template:
    cliques:
    - name: worker
      spec:
        roleName: worker
        replicas: 2
        podSpec: {containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: "8"}}}]}
"""
MNNVL_ON = "apiVersion: operator.config.grove.io/v1alpha1\nkind: OperatorConfiguration\nnetwork: {autoMNNVLEnabled: true}\n"


def test_mnnvl_refuses_a_target_before_1_34_and_renders_on_1_34(tmp_path: Path) -> None:
    files = {"o.yaml": MNNVL_ON, "pcs.yaml": MNNVL}
    found = problems(tmp_path / "a", {**files, "r.yaml": render_config("1.33")})
    assert [(f, fld) for f, fld, _ in found] == [("pcs.yaml", "metadata.annotations.grove.io/mnnvl-group")]
    assert "need Kubernetes 1.34 or later" in found[0][2]
    result = render_source(write_source(tmp_path / "b", {**files, "r.yaml": render_config("1.34")}))
    assert len(objects_by_kind(result, "ComputeDomain")) == 1


def test_a_cliques_own_resource_claims_warn_before_1_34(tmp_path: Path) -> None:
    """The user's own field: valid in the 1.31-1.33 Pod schema, dropped unless DRA is enabled."""
    doc = yaml.safe_load(PCS)
    pod = doc["spec"]["template"]["cliques"][1]["spec"]["podSpec"]
    pod["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "gpu"}]
    files = {"pcs.yaml": yaml.safe_dump(doc)}
    old = render_source(write_source(tmp_path / "a", {**files, "r.yaml": render_config("1.33")}))
    assert [w for w in old.warnings if "resourceClaims" in w] == [
        "pcs.yaml: spec.template.cliques[1].spec.podSpec.resourceClaims: pod resourceClaims need dynamic resource "
        'allocation, on by default from Kubernetes 1.34; on "1.33" kube-apiserver drops the field unless the '
        "DynamicResourceAllocation feature gate is on"
    ]
    new = render_source(write_source(tmp_path / "b", {**files, "r.yaml": render_config("1.34")}))
    assert [w for w in new.warnings if "resourceClaims" in w] == []
