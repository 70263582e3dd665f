"""Workers that write their PodCliqueSets' files straight into the output's staging tree
(grove_gitops/output/staging.py, issue 35.4): the same bytes as one process, and every
failure (a worker's write, the parent's after workers wrote, a later invalid document)
leaves the previous output as it was, no temporary directory and no worker behind."""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from bench.generate import generate_disaggregated
from grove_gitops import pipeline
from grove_gitops.cache import CachedShard
from grove_gitops.cli import main
from grove_gitops.errors import OutputError
from grove_gitops.output import layout, parallel, staging
from grove_gitops.output.writer import TreeWriter, render_to
from grove_gitops.render import plan_source
from tests.support import with_invalid_last_workload

#: Pods of one copy of bench.generate's disaggregated workload (see tests/test_early_render.py).
COPY_PODS = 64


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return generate_disaggregated(tmp_path_factory.mktemp("staged") / "src", 6)


@pytest.fixture
def small_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers pay from one copy's pods on; fork, so they see the test's patches."""
    monkeypatch.setattr(parallel, "MIN_PODS", COPY_PODS)
    monkeypatch.setattr(parallel, "start_method", lambda: "fork")


@pytest.fixture
def gated(monkeypatch: pytest.MonkeyPatch) -> None:
    """The early pool's workers wait for the staging tree before each shard (it is opened once
    the plan is complete), so every shard is written by a worker whatever the timing."""
    real = pipeline.render_shard

    def render_shard(plan: Any, item: Any) -> CachedShard:
        deadline = time.monotonic() + 60
        while not parallel._STAGING.value and time.monotonic() < deadline:
            time.sleep(0.005)
        return real(plan, item)

    monkeypatch.setattr(pipeline, "render_shard", render_shard)


@pytest.fixture
def adopted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Paths the parent took over from workers (TreeWriter.adopt)."""
    paths: list[str] = []
    real = TreeWriter.adopt

    def adopt(self: TreeWriter, written: Any) -> None:
        written = list(written)
        paths.extend(written)
        real(self, written)

    monkeypatch.setattr(TreeWriter, "adopt", adopt)
    return paths


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _render(source: Path, out: Path, jobs: int) -> Any:
    return CliRunner().invoke(main, ["render", str(source), "--out", str(out), "--jobs", str(jobs), "--output", "json"])


def _assert_untouched(out: Path, before: dict[str, bytes]) -> None:
    assert _files(out) == before
    assert sorted(p.name for p in out.parent.iterdir() if p.name.startswith(".")) == []  # no staging tree left
    assert multiprocessing.active_children() == []


def test_workers_write_their_shards_and_the_output_is_that_of_one_process(
    source: Path, tmp_path: Path, small_workers: None, gated: None, adopted: list[str]
) -> None:
    serial = _render(source, tmp_path / "serial", 1)
    assert serial.exit_code == 0 and adopted == []
    early = _render(source, tmp_path / "early", 2)  # the pool that starts while planning
    assert early.exit_code == 0, early.output
    assert len({p.rsplit("/", 1)[0] for p in adopted}) == 6  # every PodCliqueSet's directory
    assert _files(tmp_path / "early") == _files(tmp_path / "serial")
    assert early.output == serial.output  # the same file count in the summary
    adopted.clear()
    tree = render_to(plan_source(source), tmp_path / "later", 2, fsync=False)  # a pool started for the output
    assert len(adopted) == len(tree.written) > 0 and not set(adopted) & set(tree.files)
    assert _files(tmp_path / "later") == _files(tmp_path / "serial")


def _plant(monkeypatch: pytest.MonkeyPatch, names: list[str]) -> None:
    """A directory in the way of each of these PodCliqueSets' directories, made in the staging
    tree as soon as the writer opens it to workers."""
    real = TreeWriter.open_for_workers

    def open_for_workers(self: TreeWriter, namespaces: Any) -> staging.Published:
        published = real(self, namespaces)
        for name in names:
            (Path(published.root) / "inference" / name).mkdir()
        return published

    monkeypatch.setattr(TreeWriter, "open_for_workers", open_for_workers)


def test_a_workers_write_error_keeps_the_previous_output(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_workers: None
) -> None:
    out = tmp_path / "out"
    assert _render(source, out, 1).exit_code == 0
    before = _files(out)
    _plant(monkeypatch, ["llama-0003"])
    spilled: list[str] = []
    real_spill = staging.spill_shard

    def spill(shard: CachedShard, published: staging.Published) -> CachedShard:
        spilled.append(shard.key[1])  # in the worker: seen here only if the failure came back from it
        return real_spill(shard, published)

    monkeypatch.setattr(parallel, "spill_shard", spill)
    with pytest.raises(OutputError, match=r"cannot write the output: .*File exists.*llama-0003"):
        render_to(plan_source(source), out, 2, fsync=False)
    assert spilled == []  # forked: the parent never spilled a shard itself
    _assert_untouched(out, before)


def test_a_workers_write_error_in_the_early_pool_keeps_the_previous_output(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_workers: None, gated: None
) -> None:
    out = tmp_path / "out"
    assert _render(source, out, 1).exit_code == 0
    before = _files(out)
    _plant(monkeypatch, ["llama-0004"])
    result = _render(source, out, 2)
    assert result.exit_code == 1 and "File exists" in result.output
    _assert_untouched(out, before)


def test_an_error_in_the_parent_after_workers_wrote_keeps_the_previous_output(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_workers: None, gated: None, adopted: list[str]
) -> None:
    """The failure comes while other workers may still be writing: they are stopped before the
    staging tree is removed, so nothing of it survives."""
    out = tmp_path / "out"
    assert _render(source, out, 1).exit_code == 0
    before = _files(out)
    real = layout._index

    def index(tree: layout.Tree, summary: Any, paths: Any) -> None:
        if adopted:
            raise OutputError("failed after a worker wrote")
        real(tree, summary, paths)

    monkeypatch.setattr(layout, "_index", index)
    result = _render(source, out, 2)
    assert result.exit_code == 1 and "failed after a worker wrote" in result.output
    assert adopted
    _assert_untouched(out, before)


def test_a_later_invalid_document_keeps_the_previous_output(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_workers: None
) -> None:
    broken = with_invalid_last_workload(source, tmp_path / "src")  # planned after the pool started
    out = tmp_path / "out"
    assert _render(source, out, 1).exit_code == 0
    before = _files(out)
    started: list[int] = []
    real_start = parallel._start_pool
    monkeypatch.setattr(parallel, "_start_pool", lambda ctx, n, *a: started.append(n) or real_start(ctx, n, *a))
    result = _render(broken, out, 2)
    assert started == [2] and result.exit_code == 1 and "replicas" in result.output
    _assert_untouched(out, before)


def _shard(files: dict[str, bytes]) -> CachedShard:
    return CachedShard(("ns", "p"), "p.yaml", {}, [], [], files=files)


def test_spill_writes_only_the_shards_own_directory(tmp_path: Path) -> None:
    (tmp_path / "ns").mkdir()
    published = staging.Published(str(tmp_path), "OUT", chmod=True, fsync_each=True)
    assert staging.Published.decode(published.encode()) == published
    files = {"ns/p/a.yaml": b"a", "ns/p/README.md": b"r", "_cluster/n.yaml": b"n", "ns/other/x.yaml": b"x"}
    spilled = staging.spill_shard(_shard(files), published)
    assert spilled.written == ("ns/p/a.yaml", "ns/p/README.md")
    assert spilled.files == {"_cluster/n.yaml": b"n", "ns/other/x.yaml": b"x"}
    assert _files(tmp_path) == {"ns/p/a.yaml": b"a", "ns/p/README.md": b"r"}
    assert (tmp_path / "ns" / "p" / "a.yaml").stat().st_mode & 0o777 == 0o644
    with pytest.raises(OutputError, match=r"^OUT: cannot write the output: .*File exists"):
        staging.spill_shard(_shard(files), published)  # its directory is there: never written into


def test_spill_never_follows_a_symlink_in_the_way(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "ns").mkdir(parents=True)
    outside.mkdir()
    (root / "ns" / "p").symlink_to(outside)
    with pytest.raises(OutputError, match="File exists"):
        staging.spill_shard(_shard({"ns/p/a.yaml": b"a"}), staging.Published(str(root), "OUT", False, False))
    assert list(outside.iterdir()) == []


@pytest.mark.parametrize("key", [("ns", "../escape"), ("ns/../..", "p"), ("..", "p"), ("ns", "a/b"), ("ns", "")])
def test_spill_refuses_a_key_that_is_not_two_plain_names(tmp_path: Path, key: tuple[str, str]) -> None:
    """A plan's keys are validated names; a worker still writes nowhere else if one is not."""
    root = tmp_path / "root"
    (root / "ns").mkdir(parents=True)
    shard = CachedShard(key, "p.yaml", {}, [], [], files={f"{key[0]}/{key[1]}/a.yaml": b"a"})
    with pytest.raises(OutputError, match="not <namespace>/<name>"):
        staging.spill_shard(shard, staging.Published(str(root), "OUT", False, False))
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == ["root", "root/ns"]
