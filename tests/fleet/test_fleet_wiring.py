"""The generated Flux Kustomizations and Argo CD Applications of a fleet, checked against the
upstream CRDs in ../shared/crds/gitops (Argo CD's Application and ApplicationSet, Flux's
Kustomization; ../shared/crds/SOURCES.md names their source)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from grove_gitops.fleet.wiring import shard_name
from grove_gitops.sourcetree import render_source_tree
from tests.schemas import CRDRegistry
from tests.support import CRDS, PROJECT

FLEET = PROJECT / "examples-fleet"
GITOPS_CRDS = CRDS / "gitops"


@pytest.fixture(scope="module")
def gitops_crds() -> CRDRegistry:
    return CRDRegistry.from_dir(GITOPS_CRDS)


def _objects(files: dict[str, bytes], folder: str) -> dict[str, dict[str, Any]]:
    out = {}
    for path, data in files.items():
        parts = path.split("/")
        if len(parts) == 3 and parts[1] == folder and parts[2] != "kustomization.yaml":
            out[path] = yaml.safe_load(data)
    return out


def test_every_generated_object_is_valid_against_its_crd(gitops_crds: CRDRegistry) -> None:
    files = render_source_tree(FLEET).tree.files
    objs = {**_objects(files, "_flux"), **_objects(files, "_argocd")}
    assert len(objs) == 2 * (3 + 2)  # prod-kai: _cluster + 2 PCS; staging-volcano: _cluster + 1 PCS
    for path, obj in objs.items():
        assert gitops_crds.validate(obj) == [], path


def test_overlay_applicationset_is_valid_too(gitops_crds: CRDRegistry) -> None:
    obj = yaml.safe_load((PROJECT / "overlays/argocd/applicationset.yaml").read_text())
    obj["metadata"]["namespace"] = "argocd"  # the overlay's kustomization sets it
    assert gitops_crds.validate(obj) == []


def test_flux_kustomization_per_shard() -> None:
    files = render_source_tree(FLEET).tree.files
    name = shard_name("prod-kai", "inference/llama-disagg")
    ks = yaml.safe_load(files[f"prod-kai/_flux/{name}.yaml"])
    spec = ks["spec"]
    assert spec["path"] == "./prod-kai/inference/llama-disagg"
    assert spec["prune"] is True and spec["wait"] is False and spec["force"] is False
    assert spec["sourceRef"] == {"kind": "GitRepository", "name": "grove-rendered"}
    assert spec["dependsOn"] == [{"name": shard_name("prod-kai", "_cluster")}]
    checks = {(c["kind"], c["apiVersion"], c["name"], c["namespace"]) for c in spec["healthChecks"]}
    assert checks == {
        ("PodGang", "scheduler.grove.io/v1alpha1", "llama-disagg-0", "inference"),
        ("PodGang", "scheduler.grove.io/v1alpha1", "llama-disagg-0-prefill-0", "inference"),
        ("PodGroup", "scheduling.run.ai/v2alpha2", "llama-disagg-0", "inference"),
        ("PodGroup", "scheduling.run.ai/v2alpha2", "llama-disagg-0-prefill-0", "inference"),
        ("PodCliqueSet", "gitops.grove.io/v1alpha1", "llama-disagg", "inference"),  # the workload itself
    }
    # Every rendered PodGang of the shard is listed: the names come from the render.
    gangs = {p.split("--")[1][: -len(".yaml")] for p in files if p.startswith("prod-kai/inference/llama-disagg/20-podgang.")}
    assert gangs == {c[2] for c in checks if c[0] == "PodGang"}
    kustomization = yaml.safe_load(files["prod-kai/_flux/kustomization.yaml"])
    assert f"{name}.yaml" in kustomization["resources"]


def test_health_checks_follow_replicas(tmp_path: Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(FLEET, src)
    path = src / "clusters/staging-volcano.yaml"
    path.write_text(path.read_text().replace("inference/embedder: 1", "inference/embedder: 3"))
    files = render_source_tree(src).tree.files
    ks = yaml.safe_load(files[f"staging-volcano/_flux/{shard_name('staging-volcano', 'inference/embedder')}.yaml"])
    names = sorted(c["name"] for c in ks["spec"]["healthChecks"] if c["kind"] == "PodGang")
    assert names == ["embedder-0", "embedder-1", "embedder-2"]
    kinds = {c["apiVersion"] for c in ks["spec"]["healthChecks"]}
    assert kinds == {"scheduler.grove.io/v1alpha1", "scheduling.volcano.sh/v1beta1", "gitops.grove.io/v1alpha1"}
    assert "ignore" not in ks["spec"]  # the KAI rules only where KAI PodGroups are


def test_argocd_application_per_shard() -> None:
    files = render_source_tree(FLEET).tree.files
    apps = _objects(files, "_argocd")
    cluster_app = apps[f"staging-volcano/_argocd/{shard_name('staging-volcano', '_cluster')}.yaml"]
    pcs_app = apps[f"staging-volcano/_argocd/{shard_name('staging-volcano', 'inference/embedder')}.yaml"]
    assert cluster_app["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"] == "-10"
    assert pcs_app["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"] == "0"
    spec = pcs_app["spec"]
    assert spec["destination"] == {"name": "staging"}
    assert spec["source"]["path"] == "staging-volcano/inference/embedder"
    assert spec["source"]["targetRevision"] == "rendered"
    assert {"group": "", "kind": "Pod", "jsonPointers": ["/spec/schedulingGates"]} in spec["ignoreDifferences"]
    assert "RespectIgnoreDifferences=true" in spec["syncPolicy"]["syncOptions"]
    assert spec["syncPolicy"]["automated"]["selfHeal"] is True
    # destination defaults to the Cluster's own name
    kai = apps[f"prod-kai/_argocd/{shard_name('prod-kai', 'inference/embedder')}.yaml"]
    assert kai["spec"]["destination"] == {"name": "prod-kai"}


def test_flavour_follows_the_render_configuration(tmp_path: Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(FLEET, src)
    path = src / "config/volcano/render-configuration.yaml"
    path.write_text(path.read_text().replace("gitops: both", "gitops: flux"))
    files = render_source_tree(src).tree.files
    assert any(p.startswith("staging-volcano/_flux/") for p in files)
    assert not any(p.startswith("staging-volcano/_argocd/") for p in files)
    assert any(p.startswith("prod-kai/_argocd/") for p in files)


def test_shard_names_are_unique_and_valid() -> None:
    assert shard_name("c", "a-b/c") != shard_name("c", "a/b-c")
    long = shard_name("c" * 63, "n" * 63 + "/" + "p" * 200)
    assert len(long) <= 63 and long.startswith("grove-")


def test_flux_health_of_the_gitops_kinds_and_crds_first() -> None:
    """Every shard Kustomization evaluates grove-gitops' own kinds (the workload's PodCliqueSet
    is Ready once the agent reports it available), and the first Kustomization of each cluster
    waits for grove-gitops' CRDs (overlays/flux/kustomization-crds.yaml): every shard holds a
    gitops.grove.io PodCliqueSet, which cannot be applied before its CRD."""
    files = render_source_tree(FLEET).tree.files
    for cluster in ("prod-kai", "staging-volcano"):
        first = yaml.safe_load(files[f"{cluster}/_flux/{shard_name(cluster, '_cluster')}.yaml"])
        assert first["spec"]["dependsOn"] == [{"name": "grove-gitops-crds"}]
        for path, ks in _objects(files, "_flux").items():
            if not path.startswith(f"{cluster}/"):
                continue
            exprs = {(e["apiVersion"], e["kind"]) for e in ks["spec"]["healthCheckExprs"]}
            assert {("gitops.grove.io/v1alpha1", k) for k in ("PodCliqueSet", "PodCliqueScalingGroup", "PodClique")} <= exprs
            # Every listed kind has an expression (Flux's kstatus knows none of them).
            assert {(c["apiVersion"], c["kind"]) for c in ks["spec"].get("healthChecks", [])} <= exprs
