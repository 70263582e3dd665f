"""``render --jobs N`` (issue 10): worker processes give the same bytes as one process, report
the same errors, and keep the render cache's semantics."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from bench.generate import generate, generate_disaggregated
from grove_gitops.cache import RenderCache
from grove_gitops.cli import main
from grove_gitops.errors import InvalidInputError
from grove_gitops.output import layout, parallel
from grove_gitops.output.layout import Tree, build_tree_from_plan
from grove_gitops.output.writer import render_to, write_tree
from grove_gitops.procs import free_cpus
from grove_gitops.render import PlannedPCS, plan_source
from tests.support import PROJECT


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return generate(tmp_path_factory.mktemp("par") / "src", 8)


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _serial_and_two_workers(source: Path, method: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Tree, Tree]:
    """The tree of one process, and the same source's tree from two workers started by
    ``method`` (checked to be two: the work alone would not start a pool this small)."""
    serial = build_tree_from_plan(plan_source(source), jobs=1)
    monkeypatch.setattr(parallel, "start_method", lambda: method)
    used: list[int] = []
    real = parallel.worker_count
    monkeypatch.setattr(parallel, "worker_count", lambda *a: used.append(real(*a)) or used[-1])
    par = build_tree_from_plan(plan_source(source), jobs=2, min_pods=0)
    assert used == [2]
    return serial, par


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_workers_give_the_same_tree_as_one_process(source: Path, method: str, monkeypatch: pytest.MonkeyPatch) -> None:
    serial, par = _serial_and_two_workers(source, method, monkeypatch)
    assert list(par.files) == list(serial.files)
    assert par.files == serial.files
    assert (par.objects, par.warnings, par.shards) == (serial.objects, serial.warnings, serial.shards)


def test_cli_jobs_2_writes_the_same_bytes_as_jobs_1(source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "MIN_PODS", 0)
    runner = CliRunner()
    for jobs in ("1", "2"):
        result = runner.invoke(main, ["render", str(source), "--out", str(tmp_path / jobs), "--jobs", jobs, "-q"])
        assert result.exit_code == 0, result.output
    assert _files(tmp_path / "1") == _files(tmp_path / "2")


def test_jobs_must_be_positive(source: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["render", str(source), "--out", str(tmp_path / "o"), "--jobs", "0"])
    assert result.exit_code == 2
    assert "--jobs" in result.output


def test_small_renders_stay_in_one_process(source: Path) -> None:
    plan = plan_source(source)
    assert parallel.worker_count(2, plan.items) == 0  # a few hundred pods: workers cost more than they save
    assert parallel.worker_count(2, plan.items, min_pods=0) == 2
    assert parallel.worker_count(1, plan.items, min_pods=0) == 0


def test_an_error_in_a_worker_is_the_same_error(monkeypatch: pytest.MonkeyPatch) -> None:
    # As in test_robustness: a real over-size object needs minutes; the check is the same at any size.
    monkeypatch.setattr(layout, "MAX_OBJECT_BYTES", 1000)
    monkeypatch.setattr(parallel, "start_method", lambda: "fork")  # workers see the patched limit
    errors: list[str] = []
    for jobs in (1, 2):
        with pytest.raises(InvalidInputError) as info:
            build_tree_from_plan(plan_source(PROJECT / "examples"), jobs=jobs, min_pods=0)
        errors.append(str(info.value))
    assert errors[0] == errors[1]
    assert "bytes, above the 1000 byte limit of what etcd stores" in errors[0]


def test_cache_is_filled_and_used_as_with_one_process(source: Path) -> None:
    cache = RenderCache()
    cache.start()
    first = build_tree_from_plan(plan_source(source, cache), cache, jobs=2, min_pods=0)
    cache.finish()
    assert cache.misses == 8 and len(cache.shards) == 8
    cache.start()
    plan = plan_source(source, cache)
    assert all(item.pcs is None for item in plan.items)  # all hits: nothing to send to workers
    second = build_tree_from_plan(plan, cache, jobs=2, min_pods=0)
    cache.finish()
    assert cache.hits == 8 and second.files == first.files


def test_without_processes_the_render_runs_in_this_one(source: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A sandbox that refuses new processes (no /dev/shm, seccomp) still renders, serially."""
    import multiprocessing.context

    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError(38, "Function not implemented")

    monkeypatch.setattr(multiprocessing.context.ForkContext, "Pool", refuse)
    monkeypatch.setattr(multiprocessing.context.SpawnContext, "Pool", refuse)
    serial = build_tree_from_plan(plan_source(source), jobs=1)
    assert build_tree_from_plan(plan_source(source), jobs=2, min_pods=0).files == serial.files


def test_default_jobs_is_the_cpus_this_process_may_use() -> None:
    import os

    expected = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert parallel.default_jobs() == expected


@pytest.mark.parametrize("jobs", [1, 2])
def test_render_to_writes_what_write_tree_writes(
    source: Path, tmp_path: Path, jobs: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CLI writes each PodCliqueSet's files while the next ones render: same tree."""
    monkeypatch.setattr(parallel, "MIN_PODS", 0)
    write_tree(build_tree_from_plan(plan_source(source)), tmp_path / "a")
    tree = render_to(plan_source(source), tmp_path / "b", jobs)
    written = _files(tmp_path / "b")
    assert _files(tmp_path / "a") == written
    # Workers wrote some files themselves (tests/test_staged_writes.py): the tree names them.
    assert tree.files == {p: d for p, d in written.items() if p not in tree.written}
    assert set(written) == set(tree.files) | tree.written and tree.file_count == len(written)


def test_a_render_failing_midway_keeps_the_previous_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    render_to(plan_source(PROJECT / "examples"), out, 1)
    before = _files(out)
    monkeypatch.setattr(layout, "MAX_OBJECT_BYTES", 1000)  # a later object is "too large"
    with pytest.raises(InvalidInputError):
        render_to(plan_source(PROJECT / "examples"), out, 1)
    assert _files(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no temporary directory left


def test_fork_only_when_single_threaded_on_linux(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys
    import threading
    from types import SimpleNamespace

    def threads(*names: str) -> Callable[[], list[Any]]:
        return lambda: [SimpleNamespace(name=n) for n in ("MainThread", *names)]

    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setattr(threading, "enumerate", threads())
    assert parallel.start_method() == "fork"
    monkeypatch.setattr(threading, "enumerate", threads("metrics", "health"))  # e.g. the controller's server
    assert parallel.start_method() == "spawn"
    # The writer's fsync threads only call os.open/fsync/close: they do not rule out fork.
    monkeypatch.setattr(threading, "enumerate", threads("grove-gitops-fsync_0", "grove-gitops-fsync_1"))
    assert parallel.start_method() == "fork"
    monkeypatch.setattr(threading, "enumerate", threads())
    monkeypatch.setattr(sys, "platform", "darwin")
    assert parallel.start_method() == "spawn"


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_workers_give_autoscaled_workloads_the_same_render_inputs(
    method: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each copy autoscales its prefill group: its gitops PodCliqueSet object carries the render's
    # inputs (spec.source, the agent's input). Workers once got a plan without the source's
    # configurations, so --jobs 2 wrote another spec.source than --jobs 1 (issue 35.4).
    source = generate_disaggregated(tmp_path / "src", 3)
    serial, par = _serial_and_two_workers(source, method, monkeypatch)
    workload = "inference/llama-0001/30-podcliqueset.gitops.grove.io--llama-0001.yaml"
    assert b"kind: RenderConfiguration" in serial.files[workload]
    assert par.files[workload] == serial.files[workload]
    assert par.files == serial.files


def _items(pods: list[int]) -> list[PlannedPCS]:
    return [PlannedPCS(f"w{i}.yaml", ("ns", f"w{i}"), f"d{i}", None, [], n) for i, n in enumerate(pods)]


def test_the_worker_count_follows_the_work_not_only_the_cpus() -> None:
    # Issue 35.4: each worker must get MIN_PODS pods to pay for its start-up; --jobs (the CPUs by
    # default) is only the upper bound. 150 PodCliqueSets of 36 pods (5,400 pods):
    midsize = _items([36] * 150)
    assert parallel.worker_count(2, midsize) == 2
    assert parallel.worker_count(8, midsize) == 5400 // parallel.MIN_PODS
    assert parallel.worker_count(64, midsize) < 64
    # Too little work for two workers: no pool at all (not a pool of one).
    assert parallel.worker_count(8, _items([parallel.MIN_PODS - 1, parallel.MIN_PODS])) == 0
    assert parallel.worker_count(8, _items([parallel.MIN_PODS, parallel.MIN_PODS])) == 2
    # One PodCliqueSet is never split, whatever its size; --jobs 1 never starts workers.
    assert parallel.worker_count(8, _items([100_000])) == 0
    assert parallel.worker_count(1, midsize) == 0
    # min_pods=0 (the tests' way to force a pool): jobs, bounded by the items.
    assert parallel.worker_count(8, _items([1, 1, 1]), min_pods=0) == 3


def test_the_default_jobs_leave_out_cpus_other_processes_keep_busy() -> None:
    # /proc/loadavg's fourth field counts the runnable tasks, this process included (issue 35.4:
    # on a loaded machine a pool of two was slower than one process).
    assert free_cpus("0.10 0.20 0.30 1/250 31463", cpus=2) == 2
    assert free_cpus("1.90 1.20 0.90 2/250 31463", cpus=2) == 1
    assert free_cpus("12.57 12.57 11.21 19/250 31463", cpus=2) == 1
    assert free_cpus("3.00 2.00 1.00 3/250 31463", cpus=8) == 6
    assert free_cpus("garbage", cpus=4) == free_cpus("1 2 3 x/250 1", cpus=4) == 4
    assert 1 <= free_cpus() <= parallel.default_jobs()
