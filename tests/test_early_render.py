"""Workers that start while the plan is still being validated (issue 35.4): the parent validates
the PodCliqueSets one by one and used to start the pool only afterwards, about a sixth of a
mid-size render spent with one core. Same bytes, same errors, no output on a failure."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from bench.generate import generate_disaggregated
from grove_gitops import pipeline, render
from grove_gitops.cli import main
from grove_gitops.output import parallel
from grove_gitops.render import PlannedPCS
from tests.support import with_invalid_last_workload

#: Pods planning counts for one copy of bench.generate's disaggregated workload (its
#: autoscaled units at their most).
COPY_PODS = 64


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return generate_disaggregated(tmp_path_factory.mktemp("early") / "src", 6)


@pytest.fixture
def small_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker pays for itself from one copy's pods on (the real 1,000 would need 16 copies):
    the pool may start once one copy is planned. Fork, so the workers see the patch."""
    monkeypatch.setattr(parallel, "MIN_PODS", COPY_PODS)
    monkeypatch.setattr(parallel, "start_method", lambda: "fork")


def _render(source: Path, out: Path, jobs: int) -> Any:
    return CliRunner().invoke(main, ["render", str(source), "--out", str(out), "--jobs", str(jobs), "-q"])


def test_the_pool_starts_before_the_last_podcliqueset_is_validated(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_workers: None
) -> None:
    assert _render(source, tmp_path / "serial", 1).exit_code == 0
    events: list[str] = []
    real_validate, real_start = render._validate_pcs, parallel._start_pool

    def validate(*args: Any) -> Any:
        events.append("validate")
        return real_validate(*args)

    def start(ctx: Any, workers: int, *args: Any) -> Any:
        events.append(f"pool of {workers}")
        return real_start(ctx, workers, *args)

    monkeypatch.setattr(render, "_validate_pcs", validate)
    monkeypatch.setattr(parallel, "_start_pool", start)
    monkeypatch.setattr(parallel, "render_shards", lambda *a: pytest.fail("a second pool after planning"))
    result = _render(source, tmp_path / "early", 2)
    assert result.exit_code == 0, result.output
    # One copy planned, then the pool; the five other copies are validated while it renders.
    assert events == ["validate"] + ["pool of 2"] + ["validate"] * 5
    assert _files(tmp_path / "early") == _files(tmp_path / "serial")


def test_a_later_invalid_document_fails_the_render_as_without_workers(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_workers: None
) -> None:
    broken = with_invalid_last_workload(source, tmp_path / "src")  # planned after the pool started
    started: list[int] = []
    real_start = parallel._start_pool
    monkeypatch.setattr(parallel, "_start_pool", lambda ctx, n, *a: started.append(n) or real_start(ctx, n, *a))
    results = {jobs: _render(broken, tmp_path / f"out{jobs}", jobs) for jobs in (1, 2)}
    assert started == [2]
    assert results[1].exit_code == results[2].exit_code == 1
    assert "replicas" in results[1].output and results[2].output == results[1].output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src"]  # no output, no temporary directory


#: Stands for a parsed PodCliqueSet: the pool only tells an item to render from a cache hit.
_PCS: Any = object()


def _items(pods: list[int], hits: int = 0) -> list[PlannedPCS]:
    """PodCliqueSets of these pods, the first ``hits`` of them cache hits (no ``pcs``)."""
    return [
        PlannedPCS(f"w{i}.yaml", ("ns", f"w{i}"), f"d{i}", None if i < hits else _PCS, [], n)
        for i, n in enumerate(pods)
    ]


class _FakePool:
    def __init__(self) -> None:
        self.queued: list[PlannedPCS] = []

    def apply_async(self, func: Any, args: tuple[PlannedPCS]) -> None:
        self.queued.append(args[0])


def _offered(
    jobs: int, pods: list[int], monkeypatch: pytest.MonkeyPatch, hits: int = 0
) -> tuple[int | None, int]:
    """(workers started or None, items to render planned when they started) for items of these
    pods, the first ``hits`` of them cache hits."""
    early = parallel.EarlyPool(jobs, len(pods), lambda plan, item: pytest.fail("rendered here"))
    pool = _FakePool()
    found: list[tuple[int, int]] = []

    def start(ctx: Any, workers: int, *args: Any) -> _FakePool:
        found.append((workers, len(early._offered)))
        return pool

    monkeypatch.setattr(parallel, "_start_pool", start)
    items = _items(pods, hits)
    for item in items:
        early.offer(None, item)  # type: ignore[arg-type]  # the context only goes to _start_pool
    assert len(found) <= 1
    assert pool.queued == (items[hits:] if found else [])  # every item to render, once, in order
    return found[0] if found else (None, 0)


def test_the_early_pool_follows_the_rule_of_the_finished_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    # The mid-size tree: 150 copies of 36 pods. The pool starts once a worker's 1,000 pods are
    # planned (28 copies), sized from the pods extrapolated to all 150 documents (5,400: 5 workers).
    midsize = [36] * 150
    assert _offered(2, midsize, monkeypatch) == (2, 28)
    assert _offered(8, midsize, monkeypatch) == (5, 28)
    assert _offered(64, midsize, monkeypatch)[0] == parallel.worker_count(64, _items(midsize))
    # Below two workers' worth of pods, or with one job, no pool (the output stage decides).
    assert _offered(8, [36] * 50, monkeypatch)[0] is None
    assert _offered(1, midsize, monkeypatch)[0] is None
    # At most one worker per document.
    assert _offered(8, [100_000, 100_000], monkeypatch) == (2, 1)
    # 1,000 pods known but 1,800 in all by the extrapolation: not yet, and then never.
    assert _offered(8, [300] * 6, monkeypatch) == (None, 0)
    # Cache hits are not rendered and count as documents without pods: one miss of 1,500 pods
    # after 149 hits is one worker's work, not 150 documents' worth (the cache's process, the
    # controller, would have started a pool for one PodCliqueSet).
    assert _offered(8, [36] * 149 + [1500], monkeypatch, hits=149) == (None, 0)
    # 50 hits first: the 100 misses' 3,600 pods extrapolate to 2,025 at the 30th miss (an
    # underestimate while hits come first: 2 workers where the finished plan's rule gives 3).
    assert _offered(8, [36] * 150, monkeypatch, hits=50) == (2, 30)


def test_no_early_pool_with_one_job(source: Path) -> None:
    loaded = pipeline.load(source)
    assert pipeline._early_pool(loaded, 1) is None
    assert isinstance(pipeline._early_pool(loaded, 2), parallel.EarlyPool)


def test_cache_hits_are_not_offered_and_the_tree_is_the_same(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_workers: None
) -> None:
    cache_dir = tmp_path / "cache"
    args = ["render", str(source), "--jobs", "2", "-q", "--cache-dir", str(cache_dir)]
    assert CliRunner().invoke(main, [*args, "--out", str(tmp_path / "first")]).exit_code == 0
    offered: list[PlannedPCS] = []
    real_offer = parallel.EarlyPool.offer
    monkeypatch.setattr(parallel.EarlyPool, "offer", lambda self, c, i: offered.append(i) or real_offer(self, c, i))
    monkeypatch.setattr(parallel, "_start_pool", lambda *a: pytest.fail("a pool for cache hits"))
    result = CliRunner().invoke(main, [*args, "--out", str(tmp_path / "second")])
    assert result.exit_code == 0, result.output
    assert len(offered) == 6 and all(item.pcs is None for item in offered)  # all hits of the persistent cache
    assert _files(tmp_path / "second") == _files(tmp_path / "first")


def _slow_render(plan: Any, item: PlannedPCS) -> Any:
    """A shard that takes a while, leaving marks when it begins and ends (fork: no pickling)."""
    import time

    Path(item.file + ".begun").write_text("")
    time.sleep(0.5)
    Path(item.file).write_text("rendered")
    raise AssertionError("never read")


def test_closing_skips_the_queued_work_without_killing_a_worker(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A plan that fails after the pool started drops the pool. Pool.terminate killed workers
    # mid-write of a result once, which left the result queue's lock taken and the render hung.
    import multiprocessing.pool
    import time

    monkeypatch.setattr(parallel, "start_method", lambda: "fork")
    monkeypatch.setattr(multiprocessing.pool.Pool, "terminate", lambda self: pytest.fail("a worker killed"))
    early = parallel.EarlyPool(2, 10, _slow_render, min_pods=0)
    items = [PlannedPCS(str(tmp_path / f"w{i}"), ("ns", f"w{i}"), f"d{i}", _PCS, [], 1) for i in range(10)]
    context = render.plan_source(source)
    for item in items:
        early.offer(context, item)
    assert early.started
    for _ in range(400):  # until a worker has a shard in hand (bounded: 20 s)
        if any(tmp_path.glob("*.begun")):
            break
        time.sleep(0.05)
    early.close()  # returns once the workers finished the shard in hand and exited
    begun = [item for item in items if Path(item.file + ".begun").exists()]
    rendered = [item for item in items if Path(item.file).exists()]
    assert 1 <= len(begun) < len(items)
    assert rendered == begun  # the shards in hand were finished, the queued ones skipped
    assert not early.started


def test_an_abandoned_render_shards_skips_the_queued_work_without_killing_a_worker(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The output stage's own pool (render_shards) shut down with Pool.terminate (``with pool``)
    # when its consumer stopped early (a shard's error, or the caller's): the same hang as above.
    import multiprocessing.pool
    import time

    monkeypatch.setattr(multiprocessing.pool.Pool, "terminate", lambda self: pytest.fail("a worker killed"))
    items = [PlannedPCS(str(tmp_path / f"w{i}"), ("ns", f"w{i}"), f"d{i}", _PCS, [], 1) for i in range(10)]
    shards = parallel.render_shards(render.plan_source(source), items, 2, _slow_render, method="fork")
    with pytest.raises(AssertionError, match="never read"):  # the first shard's error reaches the caller
        next(shards)
    shards.close()  # returns once the workers finished the shard in hand and exited
    time.sleep(0.2)
    begun = [item for item in items if Path(item.file + ".begun").exists()]
    rendered = [item for item in items if Path(item.file).exists()]
    assert 1 <= len(begun) < len(items)
    assert rendered == begun  # the shards in hand were finished, the queued ones skipped
