"""``diff`` and ``plan`` reuse rendered PodCliqueSets (issue 14): between base and head in one
run, and across runs with ``--cache-dir``; the report is the same with and without."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from bench.generate import generate
from grove_gitops.cli import main
from grove_gitops.render import RenderPlan


@pytest.fixture(scope="module")
def sides(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("diffcache")
    base = generate(root / "base", 5)
    head = root / "head"
    shutil.copytree(base, head)
    _edit(head, 0, "replicas: 1\n", "replicas: 2\n")
    # One PodCliqueSet switches to OnDelete: ``plan`` must know it from a cache hit too.
    last = sorted((head / "workloads").rglob("*.yaml"))[-1]
    last.write_text(last.read_text().replace("spec:\n", "spec:\n  updateStrategy: {type: OnDelete}\n", 1))
    return base, head


def _edit(source: Path, index: int, old: str, new: str) -> None:
    """Replace the first ``old`` in the ``index``-th workload file (sorted) of ``source``."""
    path = sorted((source / "workloads").rglob("*.yaml"))[index]
    text = path.read_text()
    path.write_text(text.replace(old, new, 1))
    assert path.read_text() != text


@pytest.fixture
def expansions(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    real = RenderPlan.expand

    def spy(self: RenderPlan, item: object, *args: object, **kwargs: object) -> object:
        seen.append(item.file)  # type: ignore[attr-defined]
        return real(self, item, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(RenderPlan, "expand", spy)
    return seen


def _run(*args: str) -> str:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


def test_a_podcliqueset_equal_on_both_sides_is_rendered_once(sides: tuple[Path, Path], expansions: list[str]) -> None:
    base, head = sides
    _run("diff", str(base), str(head), "--output", "text")
    assert len(expansions) == 5 + 2  # every base PodCliqueSet, and the two that changed


def test_the_report_is_the_same_with_a_cold_a_warm_and_no_cache(
    sides: tuple[Path, Path], tmp_path: Path, expansions: list[str]
) -> None:
    base, head = sides
    cache = ["--cache-dir", str(tmp_path / "c")]
    for command in (["diff", "--output", "text"], ["diff"], ["plan"], ["plan", "--output", "json"]):
        plain = _run(*command, str(base), str(head))
        expansions.clear()
        cold = _run(*command, str(base), str(head), *cache)
        assert len(expansions) <= 7
        expansions.clear()
        warm = _run(*command, str(base), str(head), *cache)
        assert expansions == []  # nothing rendered: every PodCliqueSet of both sides is cached
        assert plain == cold == warm
    assert "OnDelete" in _run("plan", str(base), str(head), *cache)


def test_a_warm_diff_parses_no_rendered_file_again(
    sides: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import yaml

    from grove_gitops.diff import model

    base, head = sides
    cache = ["--cache-dir", str(tmp_path / "c")]
    parsed: list[str] = []
    real = yaml.load_all
    monkeypatch.setattr(model.yaml, "load_all", lambda text, Loader: (parsed.append(text), real(text, Loader))[1])
    cold = _run("diff", str(base), str(head), *cache)
    # Cold: the changed shards were rendered in this run, their objects kept from the
    # render; the shards equal on both sides, and ``_cluster``, are never parsed.
    assert parsed == []
    assert _run("diff", str(base), str(head), *cache) == cold
    assert parsed == []  # warm: the objects of both sides' changed shards are stored
    # A damaged entry of parsed objects is a miss: that shard's files are parsed again.
    for entry in sorted(p for p in (tmp_path / "c" / "objects").rglob("*") if p.is_file()):
        entry.write_bytes(entry.read_bytes()[:-5])
    assert _run("diff", str(base), str(head), *cache) == cold
    assert len(parsed) == len(_object_files(base, head, changed=True))
    parsed.clear()
    assert _run("diff", str(base), str(head), *cache) == cold
    assert parsed == []  # stored again


def _object_files(base: Path, head: Path, changed: bool) -> set[tuple[str, bytes]]:
    """The object files (base's and head's: a file equal on both counts once) of the shards
    that differ, or of those that do not."""
    from grove_gitops.diff.sides import shard_files
    from grove_gitops.sourcetree import render_source_tree

    b = shard_files(render_source_tree(base).tree.files)
    h = shard_files(render_source_tree(head).tree.files)
    out: set[tuple[str, bytes]] = set()
    for shard in b.keys() | h.keys():
        if (b.get(shard) != h.get(shard)) == changed:
            out |= set(b.get(shard, {}).items()) | set(h.get(shard, {}).items())
    return out


def test_shards_equal_on_both_sides_still_count_in_the_overview(sides: tuple[Path, Path]) -> None:
    base, head = sides
    text = _run("diff", str(base), str(head), "--output", "text")
    every = _object_files(base, head, changed=True) | _object_files(base, head, changed=False)
    shards = {path.rpartition("/")[0] for path, _ in every}
    assert len(shards) > 2 + 1  # three equal PodCliqueSets and _cluster besides the two changed
    assert f"Shards changed: 2 of {len(shards)};" in text


def test_a_warm_diff_reads_the_files_of_the_changed_podcliquesets_only(
    sides: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A PodCliqueSet cached under the same key on both sides is equal on both: planning
    reads its meta, and its files are never read (issue 14: 2 of 1,000 in the benchmark)."""
    from grove_gitops.cachestore import ShardStore

    base, head = sides
    cache = ["--cache-dir", str(tmp_path / "c")]
    cold = _run("diff", str(base), str(head), *cache)
    loaded: list[str] = []
    real = ShardStore.load
    monkeypatch.setattr(ShardStore, "load", lambda self, key: (loaded.append(key), real(self, key))[1])
    assert _run("diff", str(base), str(head), *cache) == cold
    assert len(loaded) == 4  # the two changed PodCliqueSets, base and head
    loaded.clear()
    same = _run("diff", str(base), str(base), *cache)
    assert loaded == [] and "No changes" in same
    assert same == _run("diff", str(base), str(base))  # the object count too, without a cache


def test_objects_kept_from_rendering_report_what_parsing_the_rendered_files_reports(
    sides: tuple[Path, Path], tmp_path: Path
) -> None:
    """A diff of sources takes a freshly rendered shard's objects from the render (not
    parsing its bytes back); ``--rendered`` parses the very files ``render`` wrote. Every
    summary, diagram and plan must agree, cold cache, warm cache and none."""
    base, head = sides
    head2 = tmp_path / "head2"
    shutil.copytree(head, head2)
    _edit(head2, 1, "image: ", "image: registry.example.com/")
    outs = []
    for name, src in (("base", base), ("head", head2)):
        out = tmp_path / f"out-{name}"
        _run("render", str(src), "--out", str(out), "-q", "--no-fsync")
        outs.append(str(out))
    labels = ["--base-label", "b", "--head-label", "h"]
    for command in (["diff", "--output", "text"], ["diff"], ["plan", "--output", "json"]):
        # a source side's JSON lists its render warnings as problems; a rendered side has none
        parsed = _plan_only(_run(*command, "--rendered", *outs, *labels))
        assert _plan_only(_run(*command, str(base), str(head2), *labels)) == parsed
        for _ in range(2):  # cold, then warm
            again = _run(*command, str(base), str(head2), *labels, "--cache-dir", str(tmp_path / "c"))
            assert _plan_only(again) == parsed


def _plan_only(output: str) -> str:
    """``plan --output json`` without its ``problems`` (the warnings); any other output as is."""
    if not output.startswith("{"):
        return output
    doc = json.loads(output)
    doc.pop("problems", None)
    return json.dumps(doc)
