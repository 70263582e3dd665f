"""Every Grove sample and the bundled example render into objects the cluster accepts.

Custom resources are checked against the real upstream CRDs in ../shared/crds, built-in
kinds against Kubernetes' own schemas for 1.35, 1.36 and 1.37 (kubernetes-validate,
strict), and the tree against ``kubectl kustomize``.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from grove_gitops.output.layout import build_tree
from grove_gitops.output.writer import write_tree
from grove_gitops.render import RenderResult, render_source
from tests.schemas import CRDRegistry, validate_any
from tests.support import PROJECT, SAMPLES

SAMPLE_FILES = sorted(p.relative_to(SAMPLES).as_posix() for p in SAMPLES.rglob("*.yaml"))
KUBE_VERSIONS = ["1.35", "1.36", "1.37"]


def test_all_eleven_samples_are_found() -> None:
    assert len(SAMPLE_FILES) == 11


@pytest.fixture(scope="module")
def samples_result() -> RenderResult:
    return render_source(SAMPLES)


@pytest.mark.parametrize("rel", SAMPLE_FILES)
def test_each_sample_renders_on_its_own(rel: str, tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    shutil.copy(SAMPLES / rel, src / Path(rel).name)
    # at the start counts: an autoscaled standalone clique's base PodGang is the agent's, not Git's
    result = render_source(src, at="initial")
    assert len(result.podcliquesets) == 1
    kinds = {o.obj["kind"] for o in result.objects}
    assert {"Pod", "PodGang", "Service", "ServiceAccount", "Role", "RoleBinding", "Secret"} <= kinds


@pytest.mark.parametrize("version", KUBE_VERSIONS)
def test_rendered_objects_validate(samples_result: RenderResult, crds: CRDRegistry, version: str) -> None:
    problems = []
    for item in samples_result.objects:
        problems += validate_any(item.obj, crds, version)
    assert problems == []
    assert sum(1 for o in samples_result.objects if o.obj["kind"] == "Pod") > 100


@pytest.mark.parametrize("version", KUBE_VERSIONS)
def test_example_validates(crds: CRDRegistry, version: str) -> None:
    result = render_source(PROJECT / "examples")
    tree = build_tree(result)
    problems = []
    for rel, data in tree.files.items():
        if rel.endswith(".yaml") and not rel.endswith("kustomization.yaml"):
            obj = yaml.safe_load(data)
            problems += validate_any(obj, crds, version)
    assert problems == []
    gangs = [o.obj for o in result.objects if o.obj["kind"] == "PodGang"]
    assert len(gangs) == 2


def test_render_twice_is_byte_identical(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    write_tree(build_tree(render_source(SAMPLES)), first)
    write_tree(build_tree(render_source(SAMPLES)), second)
    files_a = {p.relative_to(first): p.read_bytes() for p in first.rglob("*") if p.is_file()}
    files_b = {p.relative_to(second): p.read_bytes() for p in second.rglob("*") if p.is_file()}
    assert files_a == files_b
    assert len(files_a) > 150


def test_input_key_order_does_not_change_output(tmp_path: Path) -> None:
    text = (SAMPLES / "simple/simple1.yaml").read_text()
    docs = [d for d in yaml.safe_load_all(text) if d]

    def reverse(value: object) -> object:
        if isinstance(value, dict):
            return {k: reverse(value[k]) for k in reversed(list(value))}
        if isinstance(value, list):
            return [reverse(v) for v in value]
        return value

    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "s.yaml").write_text(yaml.safe_dump_all(docs, sort_keys=False))
    (b / "s.yaml").write_text(yaml.safe_dump_all([reverse(d) for d in docs], sort_keys=False))
    tree_a, tree_b = build_tree(render_source(a)), build_tree(render_source(b))
    assert tree_a.files == tree_b.files


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed on this machine")
def test_kubectl_kustomize_builds_every_level(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = render_source(SAMPLES)
    write_tree(build_tree(result), out)
    built = subprocess.run(["kubectl", "kustomize", str(out)], capture_output=True, text=True, check=True).stdout
    docs = [d for d in yaml.safe_load_all(built) if d]
    assert len(docs) == len(result.objects)
    # One shard alone builds too (what an Argo CD app / Flux Kustomization points at).
    shard = subprocess.run(
        ["kubectl", "kustomize", str(out / "default" / "simple3")], capture_output=True, text=True, check=True
    ).stdout
    assert sum(1 for d in yaml.safe_load_all(shard) if d and d["kind"] == "Pod") == 23
    # fifo order: inside a shard the waves ascend, so gangs come before pods.
    # (kustomize sorts kinds it does not know by name: the workload's gitops.grove.io record,
    # wave 10 so that Argo CD never waits for it before applying pods, lands among the gangs;
    # Argo CD orders by the wave annotation, not by this output order.)
    shard_docs = [d for d in yaml.safe_load_all(shard) if d and not d["apiVersion"].startswith("gitops.grove.io/")]
    waves = [int(d["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"]) for d in shard_docs]
    assert waves == sorted(waves) and waves[0] == -10 and waves[-1] == 10
