"""Generated Argo CD / Flux wiring of a single-cluster render (issue 24: a RenderConfiguration
``wiring:`` opts in): one Application and one Flux Kustomization per shard, valid against the
upstream CRDs in ../shared/crds/gitops, health checks that follow the rendered PodGangs, names
equal to the shipped ApplicationSet's, and no whole-tree Application anywhere."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grove_gitops.output.wiring import GITOPS_HEALTH, app_name
from tests.schemas import CRDRegistry
from tests.support import CRDS

from .helpers import ARGOCD, EXAMPLES, FLUX, kubectl, load_docs, load_one, venv_bin

WIRING = """
wiring:
  repoURL: https://git.example.com/platform/grove-rendered.git
  targetRevision: rendered
  flux:
    sourceRef: {name: grove-rendered}
"""
SHARDS = ("_cluster", "inference/llama-disagg")


@pytest.fixture(scope="module")
def gitops_crds() -> CRDRegistry:
    return CRDRegistry.from_dir(CRDS / "gitops")


def _render(source: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(venv_bin() / "grove-gitops"), "render", str(source), "--out", str(out), "--quiet"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _source(tmp_path: Path, extra: str = WIRING, edit: tuple[str, str] | None = None) -> Path:
    src = tmp_path / "src"
    shutil.copytree(EXAMPLES, src)
    cfg = src / "config" / "render-configuration.yaml"
    text = cfg.read_text() + extra
    if edit is not None:
        text = text.replace(*edit)
    cfg.write_text(text)
    return src


def _rendered(tmp_path: Path, **kwargs: Any) -> Path:
    out = tmp_path / "out"
    proc = _render(_source(tmp_path, **kwargs), out)
    assert proc.returncode == 0, proc.stderr
    return out


def _folder(out: Path, folder: str) -> dict[str, dict[str, Any]]:
    return {p.name: load_one(p) for p in sorted((out / folder).glob("*.yaml")) if p.name != "kustomization.yaml"}


def test_no_wiring_unless_asked(rendered_examples: Path) -> None:
    assert not (rendered_examples / "_flux").exists() and not (rendered_examples / "_argocd").exists()


def test_one_application_and_one_kustomization_per_shard(tmp_path: Path, gitops_crds: CRDRegistry) -> None:
    out = _rendered(tmp_path)
    flux, argo = _folder(out, "_flux"), _folder(out, "_argocd")
    names = {f"{app_name(s)}.yaml" for s in SHARDS}
    assert set(flux) == set(argo) == names
    for folder in ("_flux", "_argocd"):
        kustomization = yaml.safe_load((out / folder / "kustomization.yaml").read_text())
        assert sorted(kustomization["resources"]) == sorted(names)
    for name, obj in {**flux, **argo}.items():
        assert gitops_crds.validate(obj) == [], name
    # The root kustomization (what a whole-tree Application would build) does not include them.
    root = yaml.safe_load((out / "kustomization.yaml").read_text())
    assert not {"_flux", "_argocd"} & set(root["resources"])

    app = argo[f"{app_name('inference/llama-disagg')}.yaml"]
    assert app["metadata"]["namespace"] == "argocd"
    assert app["spec"]["source"] == {
        "repoURL": "https://git.example.com/platform/grove-rendered.git",
        "targetRevision": "rendered",
        "path": "inference/llama-disagg",
    }
    assert app["spec"]["destination"] == {"server": "https://kubernetes.default.svc"}
    # The settings of the shipped ApplicationSet's template, byte for byte.
    template = load_one(ARGOCD / "applicationset.yaml")["spec"]["template"]["spec"]
    for key in ("ignoreDifferences", "syncPolicy", "revisionHistoryLimit"):
        assert app["spec"][key] == template[key], key


def test_names_match_the_shipped_applicationset(tmp_path: Path) -> None:
    """Moving from overlays/argocd/applicationset.yaml to generated Applications keeps every
    Application's name (a rename would delete and recreate the shard's objects)."""
    from tests.wiring.test_argocd_wiring import appset_name

    for shard in SHARDS:
        assert app_name(shard) == appset_name(shard)


def test_flux_health_checks_follow_the_rendered_podgangs(tmp_path: Path) -> None:
    out = _rendered(tmp_path)
    shard = load_one(out / "_flux" / f"{app_name('inference/llama-disagg')}.yaml")["spec"]
    gangs = sorted(p.name.split("--", 1)[1][: -len(".yaml")] for p in (out / "inference/llama-disagg").glob("20-podgang.*"))
    assert sorted(c["name"] for c in shard["healthChecks"] if c["kind"] == "PodGang") == gangs
    assert ("PodCliqueSet", "llama-disagg") in {(c["kind"], c["name"]) for c in shard["healthChecks"]}
    assert shard["path"] == "./inference/llama-disagg"
    assert shard["dependsOn"] == [{"name": app_name("_cluster")}]
    assert (shard["prune"], shard["force"], shard["wait"]) == (True, False, False)
    cluster = load_one(out / "_flux" / f"{app_name('_cluster')}.yaml")["spec"]
    assert cluster["dependsOn"] == [{"name": "grove-gitops-crds"}]  # overlays/flux/kustomization-crds.yaml

    more = _rendered(tmp_path / "more", edit=("gitops: both", "gitops: flux"))
    before = {c["name"] for c in shard["healthChecks"] if c["kind"] == "PodGang"}
    assert not (more / "_argocd").exists()
    assert {c["name"] for c in load_one(more / "_flux" / f"{app_name('inference/llama-disagg')}.yaml")["spec"]["healthChecks"] if c["kind"] == "PodGang"} == before


def test_health_checks_grow_with_replicas(tmp_path: Path) -> None:
    pcs = next(p for p in (EXAMPLES / "workloads").rglob("*.yaml") if "kind: PodCliqueSet" in p.read_text())
    src = _source(tmp_path)
    target = src / pcs.relative_to(EXAMPLES)
    text = target.read_text()
    spec_replicas = re.search(r"^spec:\n(?:  .*\n)*?  replicas: (\d+)", text, re.M)
    assert spec_replicas is not None
    target.write_text(text[: spec_replicas.start(1)] + "2" + text[spec_replicas.end(1) :])
    out = tmp_path / "out"
    proc = _render(src, out)
    assert proc.returncode == 0, proc.stderr
    checks = load_one(out / "_flux" / f"{app_name('inference/llama-disagg')}.yaml")["spec"]["healthChecks"]
    gangs = {p.name.split("--", 1)[1][: -len(".yaml")] for p in (out / "inference/llama-disagg").glob("20-podgang.*")}
    assert {c["name"] for c in checks if c["kind"] == "PodGang"} == gangs
    assert any(g.startswith("llama-disagg-1") for g in gangs)


def test_repository_path_and_destination_name(tmp_path: Path, gitops_crds: CRDRegistry) -> None:
    extra = WIRING + "  path: clusters/prod\n  argocd: {destinationName: prod, project: ml}\n  flux:\n    crdsKustomization: null\n"
    extra = extra.replace("  flux:\n    sourceRef: {name: grove-rendered}\n", "")
    out = _rendered(tmp_path, extra=extra)
    app = load_one(out / "_argocd" / f"{app_name('inference/llama-disagg')}.yaml")
    assert app["spec"]["source"]["path"] == "clusters/prod/inference/llama-disagg"
    assert app["spec"]["destination"] == {"name": "prod"} and app["spec"]["project"] == "ml"
    ks = load_one(out / "_flux" / f"{app_name('_cluster')}.yaml")
    assert ks["spec"]["path"] == "./clusters/prod/_cluster" and "dependsOn" not in ks["spec"]
    assert gitops_crds.validate(ks) == [] and gitops_crds.validate(app) == []


@pytest.mark.parametrize(
    ("extra", "field", "secret"),
    [
        (WIRING.replace("https://git.example.com", "https://user:hunter2@git.example.com"), "wiring.repoURL", "hunter2"),
        (WIRING + "  path: ../elsewhere\n", "wiring.path", None),
        (WIRING.replace("targetRevision: rendered", "targetRevision: --upload-pack=x"), "wiring.targetRevision", None),
        (WIRING + "  argocd: {namespace: Not_A_Namespace}\n", "wiring.argocd.namespace", None),
        (WIRING.replace("sourceRef: {name: grove-rendered}", "sourceRef: {name: x}\n    timeout: forever"), "wiring.flux.timeout", None),
    ],
)
def test_bad_wiring_is_refused_by_file_and_field(tmp_path: Path, extra: str, field: str, secret: str | None) -> None:
    out = tmp_path / "out"
    proc = _render(_source(tmp_path, extra=extra), out)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    # file, line and column when known, then the field
    assert re.search(rf"render-configuration\.yaml(:\d+:\d+)?: {re.escape(field)}: ", proc.stderr), proc.stderr
    if secret:
        assert secret not in proc.stderr + proc.stdout
    assert not out.exists()


def test_a_fleet_refuses_render_configuration_wiring(tmp_path: Path) -> None:
    from tests.support import PROJECT

    src = tmp_path / "fleet"
    shutil.copytree(PROJECT / "examples-fleet", src)
    cfg = src / "config/kai/render-configuration.yaml"
    cfg.write_text(cfg.read_text() + WIRING)
    proc = _render(src, tmp_path / "out")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert re.search(r"render-configuration\.yaml(:\d+:\d+)?: wiring: Forbidden", proc.stderr), proc.stderr


def test_health_expressions_are_the_shipped_overlays(tmp_path: Path) -> None:
    """The gitops.grove.io expressions of overlays/flux/kustomization-shard.yaml and of the
    generated Kustomizations are the same (whitespace of YAML folding aside)."""
    shipped = load_docs(FLUX / "kustomization-shard.yaml")[0]["spec"]["healthCheckExprs"]
    by_kind = {e["kind"]: e for e in shipped if e["apiVersion"].startswith("gitops.grove.io/")}

    def norm(s: str) -> str:
        return " ".join(s.split())

    assert set(by_kind) == set(GITOPS_HEALTH)
    for kind, rules in GITOPS_HEALTH.items():
        assert {k: norm(v) for k, v in rules.items()} == {
            k: norm(v) for k, v in by_kind[kind].items() if k not in ("apiVersion", "kind")
        }, kind


def test_each_shard_builds_and_the_wiring_builds(tmp_path: Path) -> None:
    out = _rendered(tmp_path)
    for path in (*SHARDS, "_flux", "_argocd"):
        proc = subprocess.run([kubectl(), "kustomize", str(out / path)], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, (path, proc.stderr)


# --- untrusted values: every accepted wiring yields valid objects --------------------------------
_TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=40) | st.sampled_from(
    ["", ".", "..", "a/../b", "/abs", "-x", "ok", "clusters/prod", "https://h.example/r.git", "ssh://git@h/r", "HEAD", "v1.0"]
)


@pytest.fixture(scope="module")
def example_tree() -> Any:
    from grove_gitops.sourcetree import render_source_tree

    return render_source_tree(EXAMPLES).tree


_BASELINE = {
    "repo": "https://git.example.com/platform/grove-rendered.git",
    "rev": "rendered",
    "path": "clusters/prod",
    "ns": "flux-system",
    "project": "default",
    "source": "grove-rendered",
    "dest": None,
    "crds": "grove-gitops-crds",
}


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(overrides=st.dictionaries(st.sampled_from(sorted(_BASELINE)), _TEXT, max_size=3))
def test_accepted_wiring_is_always_valid(
    example_tree: Any, gitops_crds: CRDRegistry, overrides: dict[str, str]
) -> None:
    """Whatever a pull request writes into ``wiring:``: either a ``wiring.<field>`` problem, or
    objects the upstream CRDs accept, with repository paths that stay relative and inside."""
    from grove_gitops.api.gitopswiring import GitOpsWiring, wiring_problems
    from grove_gitops.output.wiring import WiringTarget, wiring_files

    v: dict[str, Any] = {**_BASELINE, **overrides}
    repo, rev, path, ns, project, source, dest, crds = (
        v[k] for k in ("repo", "rev", "path", "ns", "project", "source", "dest", "crds")
    )
    settings_ = GitOpsWiring.model_validate(
        {
            "repoURL": repo,
            "targetRevision": rev,
            "path": path,
            "flux": {"namespace": ns, "sourceRef": {"name": source}, "crdsKustomization": crds},
            "argocd": {"namespace": ns, "project": project, "destinationName": dest},
        }
    )
    problems = wiring_problems("render-configuration.yaml", settings_, "wiring")
    assert all(p.field.startswith("wiring.") for p in problems)
    if problems:
        return
    files = wiring_files(WiringTarget(settings_, "both"), example_tree.files, example_tree.shards)
    for name, data in files.items():
        if name.endswith("kustomization.yaml"):
            continue
        obj = yaml.safe_load(data)
        assert gitops_crds.validate(obj) == [], (name, obj)
        where = obj["spec"].get("path") or obj["spec"]["source"]["path"]
        parts = PurePosixPath(where.removeprefix("./")).parts
        assert not where.startswith("/") and ".." not in parts, where
