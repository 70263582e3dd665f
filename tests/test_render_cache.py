"""The streaming render and the render cache give exactly the bytes of a plain render."""

from __future__ import annotations

import shutil
from pathlib import Path

from grove_gitops.cache import RenderCache
from grove_gitops.output.layout import build_tree, build_tree_from_plan
from grove_gitops.render import plan_source, render_source
from tests.support import PROJECT, SAMPLES, pcs_yaml, write_source


def test_streaming_tree_equals_materialised_tree() -> None:
    for source in (SAMPLES, PROJECT / "examples"):
        assert build_tree_from_plan(plan_source(source)).files == build_tree(render_source(source)).files


def test_cache_reuses_unchanged_podcliquesets_and_gives_identical_bytes(tmp_path: Path) -> None:
    def doc(name: str) -> str:  # examples/ makes KAI the default scheduler, which needs a queue
        return pcs_yaml(name).replace("  namespace: ml\n", "  namespace: ml\n  labels: {kai.scheduler/queue: q}\n")

    src = write_source(tmp_path / "src", {f"p{i}.yaml": doc(f"pcs{i}") for i in range(5)})
    shutil.copytree(PROJECT / "examples", src / "examples")
    cache = RenderCache()
    cache.start()
    first = build_tree_from_plan(plan_source(src, cache), cache)
    cache.finish()
    assert (cache.hits, cache.misses) == (0, 6)
    (src / "p3.yaml").write_text(doc("pcs3").replace("replicas: 2", "replicas: 4"))
    cache.start()
    second = build_tree_from_plan(plan_source(src, cache), cache)
    cache.finish()
    assert (cache.hits, cache.misses) == (5, 1)
    assert second.files == build_tree(render_source(src)).files
    changed = {p for p in second.files if first.files.get(p) != second.files[p]} | (set(first.files) - set(second.files))
    assert changed and all(p.startswith(("ml/pcs3/", "README.md", "render.meta", "ml/kustomization")) for p in changed)
    # A global input (the render configuration) invalidates every entry.
    cfg = src / "examples" / "config" / "render-configuration.yaml"
    cfg.write_text(cfg.read_text().replace("gitops: both", "gitops: flux"))
    cache.start()
    third = build_tree_from_plan(plan_source(src, cache), cache)
    cache.finish()
    assert cache.hits == 0
    assert third.files == build_tree(render_source(src)).files
    assert len(cache.shards) == 6
