"""Parsing the source files in worker processes (issue 10) changes nothing a user can see:
the same documents and the same problems, in the same order, cached or not."""

from __future__ import annotations

from pathlib import Path

import pytest

from grove_gitops.cache import RenderCache
from grove_gitops.errors import InvalidInputError
from grove_gitops.load import files as loadfiles
from grove_gitops.load.source import load_source
from grove_gitops.output.layout import build_tree_from_plan
from grove_gitops.render import plan_source

PROJECT = Path(__file__).resolve().parents[1]


@pytest.fixture
def always_parallel(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loadfiles, "MIN_PARALLEL_BYTES", 0)


def _docs(root: Path, jobs: int, cache: RenderCache | None = None) -> tuple[list[object], list[str], list[str]]:
    source = load_source(root, cache, jobs)
    docs = [(d.file, d.obj) for d in source.podcliquesets] + [(d.file, d.obj) for d in source.passthrough]
    return docs, [str(p) for p in source.problems], source.warnings


@pytest.mark.usefixtures("always_parallel")
def test_parallel_parse_gives_the_serial_result(tmp_path: Path) -> None:
    serial = _docs(PROJECT / "examples", 1)
    assert serial[0]
    assert _docs(PROJECT / "examples", 2) == serial
    tree = build_tree_from_plan(plan_source(PROJECT / "examples", jobs=2))
    assert tree.files == build_tree_from_plan(plan_source(PROJECT / "examples")).files


@pytest.mark.usefixtures("always_parallel")
def test_problems_of_broken_files_come_back_in_file_order(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("a: [1\n")
    (tmp_path / "b.yaml").write_bytes(b"\xff\xfe")
    (tmp_path / "c.yaml").write_text("x: 1\nx: 2\n")
    (tmp_path / "d.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok, namespace: ns}\n")
    for jobs in (1, 2):
        with pytest.raises(InvalidInputError) as exc:
            plan_source(tmp_path, jobs=jobs)
        text = str(exc.value)
        assert text.index("a.yaml") < text.index("b.yaml") < text.index("c.yaml"), text
        assert "malformed YAML" in text and "not valid UTF-8" in text and 'duplicate key "x"' in text


@pytest.mark.usefixtures("always_parallel")
def test_the_cache_is_filled_and_read_in_the_parent(tmp_path: Path) -> None:
    cache = RenderCache()
    first = _docs(PROJECT / "examples", 2, cache)
    assert cache.parsed, "parses made by workers are cached by the parent"
    assert _docs(PROJECT / "examples", 2, cache) == first == _docs(PROJECT / "examples", 1)


def test_small_trees_parse_in_this_process(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_pool(*args: object, **kwargs: object) -> None:
        raise AssertionError("a worker pool was started for a small tree")

    monkeypatch.setattr(loadfiles.multiprocessing, "get_context", no_pool)
    assert _docs(PROJECT / "examples", 2)[0]


def test_a_mid_size_tree_is_parsed_in_workers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 35.4: the mid-size bench tree (150 disaggregated workloads, 496 KB of YAML) was parsed
    # in one process under the old 1 MB bound; two workers save about a third of its load there.
    from bench.generate import generate_disaggregated

    source = generate_disaggregated(tmp_path / "src", 150)
    sizes = sum(p.stat().st_size for p in source.rglob("*.yaml"))
    assert loadfiles.MIN_PARALLEL_BYTES <= sizes < 1 << 20
    import multiprocessing.context

    pools: list[object] = []
    for context in (multiprocessing.context.ForkContext, multiprocessing.context.SpawnContext):
        real = context.Pool
        monkeypatch.setattr(context, "Pool", lambda self, n, *a, real=real, **k: pools.append(n) or real(self, n, *a, **k))
    parsed = _docs(source, 2)
    assert pools == [2]
    assert parsed == _docs(source, 1)


@pytest.mark.usefixtures("always_parallel")
def test_the_parent_works_on_while_workers_parse(tmp_path: Path) -> None:
    """Issue 35.4: ``meanwhile`` runs in this process once, after the workers were given the
    files and before their results are collected; the result is the serial one. Without
    workers it does not run (nothing to wait for)."""
    import multiprocessing

    seen: list[tuple[int, bool]] = []

    def meanwhile() -> None:
        children = multiprocessing.active_children()  # the pool's workers, started already
        seen.append((len(children), all(c.is_alive() for c in children)))

    named = [(path, path.name) for path in sorted((PROJECT / "examples").rglob("*.yaml"))]
    parsed = loadfiles.parse_files(named, 2, None, meanwhile)
    assert seen == [(2, True)]
    assert parsed == loadfiles.parse_files(named, 1, None, meanwhile) and seen == [(2, True)]


def test_the_pipeline_loads_the_schema_checker_while_workers_parse(tmp_path: Path) -> None:
    """``pipeline.load`` gives the parse its warm-up (``render.preload``): the schema validator's
    modules and the scheduler backends, which planning the first PodCliqueSet would otherwise
    import on the render's serial path."""
    import subprocess
    import sys

    code = (
        "import sys, pathlib\n"
        "from grove_gitops import pipeline\n"
        "from grove_gitops.load import files\n"
        "files.MIN_PARALLEL_BYTES = 0\n"
        "backends = lambda: sorted(m for m in sys.modules if m.startswith('grove_gitops_backends.'))\n"
        "assert 'jsonschema' not in sys.modules and not backends()\n"
        f"pipeline.load(pathlib.Path({str(PROJECT / 'examples')!r}), None, 2)\n"
        "print('jsonschema' in sys.modules, bool(backends()))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "True True"
