"""Review-only mode's output (issue 33.1): what Argo CD / Flux apply is the grove.io
PodCliqueSets themselves and the objects that do not depend on the OperatorConfiguration,
never the expansion; the generated wiring applies them and validates against the Argo CD and
Flux CRDs (shared/crds/gitops)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from grove_gitops.cli import main
from tests.schemas import CRDRegistry
from tests.support import PROJECT

GITOPS_CRDS = PROJECT.parent / "shared" / "crds" / "gitops"


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("review")
    src = tmp / "src"
    shutil.copytree(PROJECT / "examples", src)
    config = src / "config" / "render-configuration.yaml"
    config.write_text(config.read_text() + "mode: review\nwiring: {}\n")
    out = tmp / "out"
    result = CliRunner().invoke(main, ["render", str(src), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


def _objects(out: Path, folder: str = "") -> list[dict[str, Any]]:
    files = sorted((out / folder).rglob("*.yaml")) if folder else sorted(out.rglob("*.yaml"))
    docs = [yaml.safe_load(f.read_text()) for f in files if f.name != "kustomization.yaml"]
    return [d for d in docs if d]


def test_the_cluster_gets_the_podcliquesets_as_written_and_no_expansion(rendered: Path) -> None:
    kinds = {(o["apiVersion"], o["kind"]) for o in _objects(rendered) if o["kind"] not in ("Application", "Kustomization")}
    assert ("grove.io/v1alpha1", "PodCliqueSet") in kinds
    assert ("grove.io/v1alpha1", "ClusterTopologyBinding") in kinds
    assert not kinds & {("v1", "Pod"), ("scheduler.grove.io/v1alpha1", "PodGang"), ("kai.scheduler/v1alpha1", "Topology")}
    assert all(k[0] != "gitops.grove.io/v1alpha1" for k in kinds)  # no agent objects
    pcs_file = rendered / "inference" / "llama-disagg" / "20-podcliqueset.grove.io--llama-disagg.yaml"
    source = yaml.safe_load((PROJECT / "examples" / "workloads" / "llm-inference" / "llama-disagg.yaml").read_text())
    assert yaml.safe_load(pcs_file.read_text()) == source  # as written
    meta = (rendered / "render.meta").read_text()
    assert '"mode": "review"' in meta


def test_generated_wiring_applies_the_podcliquesets_and_validates_against_the_crds(rendered: Path) -> None:
    registry = CRDRegistry.from_dir(GITOPS_CRDS)
    flux = _objects(rendered, "_flux")
    argo = _objects(rendered, "_argocd")
    assert flux and argo
    for doc in flux + argo:
        assert registry.validate(doc) == [], doc["metadata"]["name"]
    shard = next(d for d in flux if d["spec"]["path"] == "./inference/llama-disagg")
    assert shard["spec"]["healthChecks"] == [
        {"apiVersion": "grove.io/v1alpha1", "kind": "PodCliqueSet", "name": "llama-disagg", "namespace": "inference"}
    ]
    expr = next(e for e in shard["spec"]["healthCheckExprs"] if e["apiVersion"] == "grove.io/v1alpha1")
    assert "status.?availableReplicas.orValue(0) >= spec.replicas" in expr["current"]
    assert "updateProgress.updateEndedAt" in expr["inProgress"]
    # no grove-gitops CRDs to wait for: nothing of grove-gitops runs in the cluster
    assert all(dep["name"] != "grove-gitops-crds" for d in flux for dep in d["spec"].get("dependsOn", []))
    assert {a["spec"]["source"]["path"] for a in argo} >= {"_cluster", "inference/llama-disagg"}


def test_plan_still_reads_the_expansion_of_a_review_source(tmp_path: Path) -> None:
    """The review output leaves the expansion out, but diff and plan compare it (what Grove's
    operator creates): the examples' vLLM bump has steps in Grove's order."""
    base, head = tmp_path / "base", tmp_path / "head"
    for side in (base, head):
        shutil.copytree(PROJECT / "examples", side)
        config = side / "config" / "render-configuration.yaml"
        config.write_text(config.read_text() + "mode: review\n")
    wl = head / "workloads" / "llm-inference" / "llama-disagg.yaml"
    wl.write_text(wl.read_text().replace("vllm:0.9.1", "vllm:0.9.2"))
    result = CliRunner().invoke(main, ["plan", str(base), str(head)])
    assert result.exit_code == 0, result.output
    assert "RollingRecreate; Grove's order; 10 pods replaced in 3 steps (2 rounds)" in result.stdout
    assert "1. round 1, replica 0, scaling group llama-disagg-0-decode replica 0" in result.stdout
    assert "2. round 1, replica 0, scaling group llama-disagg-0-prefill replica 0" in result.stdout


def test_review_mode_is_refused_in_a_fleet(tmp_path: Path) -> None:
    src = tmp_path / "fleet"
    shutil.copytree(PROJECT / "examples-fleet", src)
    configs = [p for p in src.rglob("*.yaml") if "kind: RenderConfiguration" in p.read_text()]
    assert configs
    configs[0].write_text(configs[0].read_text() + "mode: review\n")
    result = CliRunner().invoke(main, ["validate", str(src)])
    assert result.exit_code == 1, result.output
    assert "mode: Forbidden: Cluster" in result.output and "review-only mode is for a single-cluster source" in result.output


def test_the_controller_pushes_the_review_tree(tmp_path: Path) -> None:
    """The controller renders a review-only source like ``render`` does: the PodCliqueSet as
    written for Grove's operator, no pods (the namespace filled in from defaultNamespace)."""
    from grove_gitops.gitops.controller import Controller
    from tests.gitops.test_controller import Remote, config
    from tests.review.reviewsource import REVIEW_CONFIG, SERVE

    remote = Remote(tmp_path)
    config_text = REVIEW_CONFIG + "defaultNamespace: ml\n"
    sha = remote.push_source(
        {"render.yaml": config_text, "serve.yaml": SERVE.replace("  namespace: default\n", "")}, "review only"
    )
    with Controller(config(remote)) as ctl:
        assert ctl.run_once().rendered == [sha]
    files = remote.files_at("rendered")
    pcs = yaml.safe_load(files["ml/serve/20-podcliqueset.grove.io--serve.yaml"])
    assert pcs["apiVersion"] == "grove.io/v1alpha1" and pcs["metadata"] == {"name": "serve", "namespace": "ml"}
    assert not [p for p in files if "/30-pod--" in p or "podgang" in p]
    assert b'"mode": "review"' in files["render.meta"]


def test_every_applied_object_validates_against_its_upstream_crd(rendered: Path) -> None:
    """What Argo CD / Flux apply in review mode is accepted by Grove's CRDs (shared/crds/grove)."""
    registry = CRDRegistry.from_dir(PROJECT.parent / "shared" / "crds" / "grove")
    grove = [o for o in _objects(rendered) if o["apiVersion"].split("/")[0] == "grove.io"]
    assert {o["kind"] for o in grove} == {"PodCliqueSet", "ClusterTopologyBinding"}
    for obj in grove:
        assert registry.validate(obj) == [], obj["metadata"]["name"]
