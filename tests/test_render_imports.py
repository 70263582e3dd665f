"""What a plain ``render`` imports (issue 35.4): start-up is a visible share of a mid-size render,
so modules only some source trees need load with the first such tree, never at start-up.

Each check runs in a fresh interpreter: this test process has imported everything already.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

RENDER_PATH = "import grove_gitops.cli.main, grove_gitops.cli.render, grove_gitops.pipeline, grove_gitops.output.writer"


def _modules_after(code: str) -> set[str]:
    script = f"import sys\n{code}\nprint('\\n'.join(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return set(done.stdout.split())


def _write(path: Path, *docs: dict[str, object]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump_all(docs), encoding="utf-8")


def _pcs(name: str) -> dict[str, object]:
    pod = {"containers": [{"name": "main", "image": "busybox"}]}
    clique = {"name": "main", "spec": {"roleName": "main", "replicas": 1, "podSpec": pod}}
    return {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"replicas": 1, "template": {"cliques": [clique]}},
    }


def test_a_plain_render_starts_without_pathspec_or_the_inventory_models() -> None:
    loaded = _modules_after(RENDER_PATH)
    assert "grove_gitops.load.source" in loaded  # the render path really was imported
    assert not {"pathspec", "re2", "grove_gitops.load.patterns"} & loaded
    assert not {"grove_gitops.api.inventory", "grove_gitops.api.inventorycheck"} & loaded


def test_a_tree_without_ignore_file_or_inventory_is_planned_without_them(tmp_path: Path) -> None:
    _write(tmp_path / "src" / "a.yaml", _pcs("a"))
    code = f"{RENDER_PATH}\nfrom grove_gitops.render import plan_source\nplan_source(__import__('pathlib').Path({str(tmp_path / 'src')!r}))"
    loaded = _modules_after(code)
    assert "jsonschema" in loaded  # the pod specs were checked against the schema
    assert not {"pathspec", "grove_gitops.api.inventory", "kubernetes_validate"} & loaded


def test_an_ignore_file_and_an_inventory_still_load_what_they_need(tmp_path: Path) -> None:
    """The deferred imports happen when the tree needs them: the ignore file is applied and the
    inventory is parsed and checked as before."""
    from grove_gitops.load.source import load_source

    src = tmp_path / "src"
    _write(src / "a.yaml", _pcs("a"))
    _write(src / "skipped" / "b.yaml", _pcs("b"))
    (src / ".grove-gitops-ignore").write_text("skipped/\n", encoding="utf-8")
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": ""}}
    pool = {
        "apiVersion": "gitops.grove.io/v1alpha1",
        "kind": "NodeInventory",
        "metadata": {"name": "pools"},
        "pools": [{"name": "gpu", "count": 2, "allocatable": {"cpu": "8"}}],
    }
    _write(src / "nodes.yaml", pool, node)
    loaded = load_source(src)
    assert [item.obj["metadata"]["name"] for item in loaded.podcliquesets] == ["a"]
    assert len(loaded.inventories) == 1 and loaded.inventories[0].obj.pools[0].count == 2
    assert [(p.file, p.field, p.message) for p in loaded.problems] == [("nodes.yaml", "metadata.name", "Required value")]


def test_the_external_reference_grammars_compile_on_first_use() -> None:
    """The image and git URL grammars (~2.7 ms to compile) are checked only for wiring or a
    fleet's Cluster, so they are not compiled at import; they check as before."""
    import re

    from grove_gitops.fields import externalrefs

    assert [name for name, value in vars(externalrefs).items() if isinstance(value, re.Pattern)] == []
    assert externalrefs.image_reference_problems("ghcr.io/example/vllm:0.9.1") == []
    assert externalrefs.image_reference_problems("Bad Image") != []
    assert externalrefs.git_url_problems("ssh://git@example.com:22/org/repo.git") == []
    assert externalrefs.git_url_problems("https://token@example.com/org/repo") != []
    assert externalrefs.shown_url("https://user:secret@example.com/x") == externalrefs.shown("https://***@example.com/x")
