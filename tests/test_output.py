"""The output contract: layout, file names, kustomizations, annotations, atomic replacement."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from grove_gitops.errors import OutputError
from grove_gitops.expand import ownership
from grove_gitops.output import writer
from grove_gitops.output.layout import build_tree
from grove_gitops.output.writer import write_tree
from grove_gitops.render import render_source
from tests.support import PROJECT, pcs_yaml, write_source


def _tree(tmp_path: Path, files: dict[str, str]):  # type: ignore[no-untyped-def]
    return build_tree(render_source(write_source(tmp_path / "src", files)))


def test_layout_and_kustomizations(tmp_path: Path) -> None:
    tree = _tree(tmp_path, {"a.yaml": pcs_yaml("alpha"), "b.yaml": pcs_yaml("beta").replace("namespace: ml", "namespace: other")})
    files = tree.files
    root = yaml.safe_load(files["kustomization.yaml"])
    assert root["resources"] == ["ml", "other"]
    assert root["sortOptions"] == {"order": "fifo"}
    assert yaml.safe_load(files["ml/kustomization.yaml"])["resources"] == ["alpha"]
    shard = yaml.safe_load(files["ml/alpha/kustomization.yaml"])["resources"]
    assert shard == sorted(shard)
    assert shard[:4] == [
        "10-role.rbac.authorization.k8s.io--grove.io_pcs_alpha.yaml",
        "10-rolebinding.rbac.authorization.k8s.io--grove.io_pcs_alpha.yaml",
        "10-serviceaccount--alpha.yaml",
        "15-secret--alpha-ic-sat.yaml",
    ]
    assert "20-podgang.scheduler.grove.io--alpha-0.yaml" in shard
    assert all(f"ml/alpha/{name}" in files for name in shard)
    assert "ml/alpha/README.md" in files and "README.md" in files and "render.meta" in files
    pods = [n for n in shard if n.startswith("30-pod--")]
    assert len(pods) == 3
    for name in pods:
        pod = yaml.safe_load(files[f"ml/alpha/{name}"])
        assert ownership.verify(pod)  # the agent's ownership proof survives the output stage
        del pod["metadata"]["annotations"][ownership.RENDERED_BY]
        assert pod["metadata"]["annotations"] == {
            "argocd.argoproj.io/sync-wave": "10",
            "argocd.argoproj.io/sync-options": "Prune=false",
            "argocd.argoproj.io/compare-options": "IgnoreExtraneous",
            "kustomize.toolkit.fluxcd.io/ssa": "IfNotPresent",
            "kustomize.toolkit.fluxcd.io/prune": "disabled",
        }
        assert pod["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "grove-gitops"
        assert "ownerReferences" not in pod["metadata"]
        assert list(pod)[:4] == ["apiVersion", "kind", "metadata", "spec"]
        assert list(pod["metadata"]) == sorted(pod["metadata"])
    for rel, data in files.items():
        assert data.endswith(b"\n") and b"\r" not in data, rel


@pytest.mark.parametrize(("flavour", "wave", "ssa"), [("argocd", True, False), ("flux", False, True), ("both", True, True)])
def test_gitops_flavour(tmp_path: Path, flavour: str, wave: bool, ssa: bool) -> None:
    cfg = f"apiVersion: gitops.grove.io/v1alpha1\nkind: RenderConfiguration\ngitops: {flavour}\n"
    tree = _tree(tmp_path, {"a.yaml": pcs_yaml("alpha"), "r.yaml": cfg})
    pod = next(yaml.safe_load(v) for k, v in tree.files.items() if "/30-pod--" in k)
    gang = yaml.safe_load(tree.files["ml/alpha/20-podgang.scheduler.grove.io--alpha-0.yaml"])
    annotations = pod["metadata"].get("annotations", {})
    assert ("argocd.argoproj.io/sync-wave" in annotations) is wave
    assert ("kustomize.toolkit.fluxcd.io/ssa" in annotations) is ssa
    assert ("argocd.argoproj.io/sync-wave" in gang["metadata"]["annotations"]) is wave


def test_pod_name_changes_with_spec_and_only_then(tmp_path: Path) -> None:
    def pod_names(text: str, sub: str) -> set[str]:
        tree = _tree(tmp_path / sub, {"a.yaml": text})
        return {k for k in tree.files if "/30-pod--" in k}

    base = pcs_yaml("alpha")
    same = pod_names(base, "one")
    assert same == pod_names(base, "two")
    changed = pod_names(base.replace("nginx:1.27", "nginx:1.28", 1), "three")
    router_before = {n for n in same if "-router-" in n}
    router_after = {n for n in changed if "-router-" in n}
    assert router_before.isdisjoint(router_after)
    assert {n for n in same if "-worker-" in n} == {n for n in changed if "-worker-" in n}


def test_passthrough_objects(tmp_path: Path) -> None:
    ns = "apiVersion: v1\nkind: Namespace\nmetadata: {name: ml}\n"
    cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: ml}\ndata: {k: v}\n"
    tree = _tree(tmp_path, {"a.yaml": pcs_yaml("alpha"), "ns.yaml": ns, "cm.yaml": cm})
    assert yaml.safe_load(tree.files["_cluster/00-namespace--ml.yaml"])["metadata"]["annotations"] == {
        "argocd.argoproj.io/sync-wave": "-20"
    }
    assert yaml.safe_load(tree.files["ml/_resources/10-configmap--cfg.yaml"])["data"] == {"k": "v"}
    assert yaml.safe_load(tree.files["kustomization.yaml"])["resources"][0] == "_cluster"


def test_atomic_replace_and_failure_keeps_previous(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    first = _tree(tmp_path / "a", {"a.yaml": pcs_yaml("alpha")})
    write_tree(first, out)
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    second = _tree(tmp_path / "b", {"a.yaml": pcs_yaml("beta")})

    def boom(src: object, dst: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(writer.os, "rename", boom)
    with pytest.raises(OutputError, match="disk full"):
        write_tree(second, out)
    monkeypatch.undo()
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    write_tree(second, out)
    assert (out / "ml" / "beta").is_dir() and not (out / "ml" / "alpha").exists()


def test_refuses_to_replace_foreign_directory(tmp_path: Path) -> None:
    out = tmp_path / "home"
    out.mkdir()
    (out / "notes.txt").write_text("precious")
    with pytest.raises(OutputError, match="not a grove-gitops output"):
        write_tree(_tree(tmp_path, {"a.yaml": pcs_yaml("alpha")}), out)
    assert (out / "notes.txt").read_text() == "precious"


def test_output_inside_source_is_not_read_back(tmp_path: Path) -> None:
    src = write_source(tmp_path / "src", {"a.yaml": pcs_yaml("alpha")})
    write_tree(build_tree(render_source(src)), src / "rendered")
    again = render_source(src)
    assert len(again.podcliquesets) == 1
    assert not any(o.obj["kind"] == "Pod" and o.shard.endswith("_resources") for o in again.objects)


def test_example_renders_two_gangs() -> None:
    result = render_source(PROJECT / "examples")
    assert sorted(o.obj["metadata"]["name"] for o in result.objects if o.obj["kind"] == "PodGang") == [
        "llama-disagg-0",
        "llama-disagg-0-prefill-0",
    ]


def test_a_shards_own_kustomization_is_kept_only_while_its_directory_holds_just_its_files() -> None:
    """The rendered shard's kustomization.yaml is reused when the directory holds as many
    .yaml files as the shard put there, and written anew when another file joined them."""
    from grove_gitops.api.renderconfig import RenderConfig
    from grove_gitops.output import layout

    own = b"cached kustomization\n"
    for extra, expect_cached in ((False, True), (True, False)):
        tree, summary = layout.Tree(), layout._Summary(RenderConfig())
        files = {"ns/p/20-a.yaml": b"a", "ns/p/30-b.yaml": b"b", "ns/p/README.md": b"r"}
        layout._merge(tree, summary, files)
        summary.kustomizations["ns/p"] = (2, own)
        if extra:
            layout._merge(tree, summary, {"ns/p/25-c.yaml": b"c"})
        layout._finish(tree, summary)
        got = tree.files["ns/p/kustomization.yaml"]
        if expect_cached:
            assert got == own
        else:
            assert yaml.safe_load(got)["resources"] == ["20-a.yaml", "25-c.yaml", "30-b.yaml"]
