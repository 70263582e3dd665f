"""The render cache on disk (issue 14): keyed like the in-memory cache, a broken entry is a
miss with a log line, concurrent processes and a kill -9 never leave an entry that is read
half-written, the size is bounded, and the output bytes never depend on the cache."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

import grove_gitops
from bench.generate import generate
from grove_gitops import cachestore
from grove_gitops.cache import CachedShard, RenderCache
from grove_gitops.cachestore import ShardStore, decode, encode
from grove_gitops.cli import main
from grove_gitops.output.layout import build_tree_from_plan
from grove_gitops.render import plan_source
from tests.support import PROJECT


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return generate(tmp_path_factory.mktemp("cache") / "src", 6)


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _render(source: Path, store_dir: Path | None) -> tuple[dict[str, bytes], RenderCache]:
    cache = RenderCache(store=ShardStore(store_dir) if store_dir is not None else None)
    cache.start()
    tree = build_tree_from_plan(plan_source(source, cache), cache)
    cache.finish()
    return tree.files, cache


def _entries(store_dir: Path) -> list[Path]:
    return sorted(p for p in (store_dir / "shards").rglob("*") if p.is_file() and not p.name.startswith(".tmp-"))


def _shard(n: int) -> CachedShard:
    files = {f"ns/w/{i:02d}-pod--w-{i}.yaml": (f"# {n} {i}\n" * 2000).encode() for i in range(8)}
    return CachedShard(("ns", f"w{n}"), "w.yaml", {"ns/w\0Pod": 8}, [("g", "kai", "`a` (1)")], ["w"], 8, files=files)


def test_output_is_byte_identical_with_a_cold_a_warm_and_no_cache(source: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    args = ["render", str(source), "-q", "--no-fsync"]
    for name, extra in (
        ("none", []),
        ("cold", ["--cache-dir", str(tmp_path / "c")]),
        ("warm", ["--cache-dir", str(tmp_path / "c")]),
    ):
        result = runner.invoke(main, [*args, "--out", str(tmp_path / name), *extra])
        assert result.exit_code == 0, result.output
    assert _files(tmp_path / "none") == _files(tmp_path / "cold") == _files(tmp_path / "warm")
    assert len(_entries(tmp_path / "c")) == 6
    files, cache = _render(source, tmp_path / "c")
    assert (cache.hits, cache.misses) == (6, 0)
    assert files == _files(tmp_path / "none")


def test_one_changed_podcliqueset_is_the_only_miss(source: Path, tmp_path: Path) -> None:
    import shutil

    src = tmp_path / "src"
    shutil.copytree(source, src)
    _render(src, tmp_path / "c")
    changed = sorted((src / "workloads").rglob("*.yaml"))[0]
    changed.write_text(changed.read_text().replace("replicas: 1\n", "replicas: 2\n", 1))
    files, cache = _render(src, tmp_path / "c")
    assert (cache.hits, cache.misses) == (5, 1)
    assert files == _render(src, None)[0]


def test_another_version_or_configuration_is_never_used(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    src = tmp_path / "src"
    shutil.copytree(source, src)
    store = tmp_path / "c"
    _render(src, store)
    ours = _entries(store)  # the entries this version wrote
    # Another grove-gitops version: every key differs (the version is part of the digest) ...
    monkeypatch.setattr(grove_gitops, "__version__", "99.0.0")
    _, cache = _render(src, store)
    assert (cache.hits, cache.misses) == (0, 6)
    monkeypatch.undo()
    # ... and an entry whose header names another version is refused even under the right key.
    entry = ours[0]
    shard = decode(entry.name, entry.read_bytes())
    monkeypatch.setattr(cachestore, "__version__", "99.0.0")
    foreign = encode(entry.name, shard)
    monkeypatch.undo()
    entry.write_bytes(foreign)
    assert ShardStore(store).load(entry.name) is None
    # ... and so is one that code of an earlier revision of this version wrote (issue 21: its
    # pods lack the ownership proof), or code that knew no revisions at all.
    for revision in (cachestore.REVISION - 1, None):
        monkeypatch.setattr(cachestore, "REVISION", revision)
        older = encode(entry.name, shard)
        monkeypatch.undo()
        entry.write_bytes(older)
        assert ShardStore(store).load(entry.name) is None
        assert ShardStore(store).load_meta(entry.name) is None
    # Another configuration (any global input): every PodCliqueSet is rendered again.
    config = next(p for p in src.rglob("*.yaml") if "kind: RenderConfiguration" in p.read_text())
    config.write_text(config.read_text().replace("kubernetesVersion:", "# changed\nkubernetesVersion:"))
    _, cache = _render(src, store)
    assert (cache.hits, cache.misses) == (5, 1)  # a comment changes no input; the foreign entry is a miss
    config.write_text(config.read_text() + "gitops: flux\n")
    files, cache = _render(src, store)
    assert (cache.hits, cache.misses) == (0, 6)
    assert files == _render(src, None)[0]


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[: len(data) // 2],
        lambda data: b"",
        lambda data: os.urandom(len(data)),
        lambda data: data[:-10] + b"0123456789",
        lambda data: data.replace(b'"pods":', b'"podz":', 1),
    ],
    ids=["truncated", "empty", "garbage", "flipped-tail", "edited-body"],
)
def test_a_corrupt_entry_is_a_miss_with_a_log_line(
    source: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture, damage: object
) -> None:
    store = tmp_path / "c"
    clean, _ = _render(source, store)
    entry = _entries(store)[0]
    entry.write_bytes(damage(entry.read_bytes()))  # type: ignore[operator]
    with caplog.at_level(logging.WARNING, logger="grove_gitops.cache"):
        files, cache = _render(source, store)
    assert (cache.hits, cache.misses) == (5, 1)
    assert files == clean
    lines = [r.getMessage() for r in caplog.records if r.name == "grove_gitops.cache"]
    assert len(lines) == 1 and str(entry) in lines[0] and "rendering it again" in lines[0]
    assert decode(entry.name, entry.read_bytes()).files  # rewritten whole
    assert _render(source, store)[1].hits == 6


def test_an_unwritable_cache_is_one_log_line_and_the_render_goes_on(
    source: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "c"
    blocker.write_text("a file where the cache directory should be")
    with caplog.at_level(logging.WARNING, logger="grove_gitops.cache"):
        files, _ = _render(source, blocker)
    assert files == _render(source, None)[0]
    assert len([r for r in caplog.records if "cannot write" in r.getMessage()]) == 1


def test_the_size_is_bounded_least_recently_used_first(tmp_path: Path) -> None:
    store = ShardStore(tmp_path / "c", max_bytes=10**9)
    keys = [f"{i:02x}" * 32 for i in range(6)]
    for i, key in enumerate(keys):
        store.save(key, _shard(i))
        os.utime(store._path(key), (1000.0 + i, 1000.0 + i))
    size = Path(store._path(keys[0])).stat().st_size
    store.max_bytes = 3 * size
    assert store.evict() == 3
    assert [store.load(k) is not None for k in keys] == [False, False, False, True, True, True]


def test_cache_dir_inside_the_source_or_the_output_is_refused(source: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    for cache_dir in (source / "cache", tmp_path / "out" / "cache"):
        result = runner.invoke(
            main, ["render", str(source), "--out", str(tmp_path / "out"), "--cache-dir", str(cache_dir)]
        )
        assert result.exit_code == 2 and "--cache-dir" in result.output and "Traceback" not in result.output
    assert not (source / "cache").exists()


WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from tests.test_cache_store import _shard
    from grove_gitops.cachestore import ShardStore
    store = ShardStore(Path(sys.argv[1]))
    keys = [f"{i:02x}" * 32 for i in range(int(sys.argv[2]))]
    print("ready", flush=True)
    rounds = int(sys.argv[3])
    r = 0
    while rounds == 0 or r < rounds:
        for i, key in enumerate(keys):
            store.save(key, _shard(i))
        r += 1
    """
)

READER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from tests.test_cache_store import _shard
    from grove_gitops.cachestore import ShardStore
    store = ShardStore(Path(sys.argv[1]))
    keys = [f"{i:02x}" * 32 for i in range(int(sys.argv[2]))]
    seen = 0
    deadline = time.monotonic() + float(sys.argv[3])
    while time.monotonic() < deadline:
        for i, key in enumerate(keys):
            got = store.load(key)
            if got is not None:
                assert got == _shard(i), key
                seen += 1
    print(seen, store.corrupt, flush=True)
    """
)


def _python(script: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", script, *args], cwd=PROJECT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


@pytest.mark.timeout(120)
def test_processes_sharing_a_cache_never_read_a_half_written_entry(tmp_path: Path) -> None:
    """Two writers rewrite the same entries while a reader checks every entry it reads."""
    store = str(tmp_path / "c")
    writers = [_python(WRITER, store, "8", "40") for _ in range(2)]
    for w in writers:
        assert w.stdout is not None and w.stdout.readline().strip() == "ready"
    reader = _python(READER, store, "8", "4")
    out, err = reader.communicate(timeout=90)
    assert reader.returncode == 0, err
    seen, corrupt = map(int, out.split())
    assert seen > 0 and corrupt == 0
    for w in writers:
        w.communicate(timeout=90)
        assert w.returncode == 0


@pytest.mark.timeout(120)
def test_a_kill_9_during_cache_writes_leaves_a_usable_cache(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store_dir = tmp_path / "c"
    for delay in (0.3, 0.55, 0.8):
        writer = _python(WRITER, str(store_dir), "16", "0")
        assert writer.stdout is not None and writer.stdout.readline().strip() == "ready"
        time.sleep(delay)
        writer.send_signal(signal.SIGKILL)
        writer.communicate(timeout=30)
        assert writer.returncode == -signal.SIGKILL
    store = ShardStore(store_dir)
    for i in range(16):
        got = store.load(f"{i:02x}" * 32)
        assert got is None or got == _shard(i)
    assert store.corrupt == 0
    # Leftover temporary files are never read, and an eviction pass removes them once stale.
    monkeypatch.setattr(cachestore, "_STALE_TMP_S", 0.0)
    store.evict()
    assert not [p for p in (store_dir / "shards").rglob(".tmp-*")]
    # A render through the killed writer's cache gives the bytes of a render without one.
    runner = CliRunner()
    for name, extra in (("with", ["--cache-dir", str(store_dir)]), ("without", [])):
        result = runner.invoke(main, ["render", str(source), "-q", "--no-fsync", "--out", str(tmp_path / name), *extra])
        assert result.exit_code == 0, result.output
    assert _files(tmp_path / "with") == _files(tmp_path / "without")


@pytest.mark.timeout(180)
def test_a_render_killed_while_filling_the_cache_then_rendering_again(source: Path, tmp_path: Path) -> None:
    """The real CLI, SIGKILLed mid-render, then run again on the same cache directory."""
    cmd = [
        sys.executable,
        "-m",
        "grove_gitops.cli",
        "render",
        str(source),
        "--no-fsync",
        "-q",
        "--cache-dir",
        str(tmp_path / "c"),
    ]
    proc = subprocess.Popen([*cmd, "--out", str(tmp_path / "killed")], cwd=PROJECT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not list((tmp_path / "c").rglob("*")):
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    done = subprocess.run(
        [*cmd, "--out", str(tmp_path / "again")], cwd=PROJECT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "unusable entry" not in done.stderr
    assert _files(tmp_path / "again") == _render(source, None)[0]


def test_a_warm_cache_parses_no_unchanged_source_file(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from grove_gitops.load import files as files_module

    clean, _ = _render(source, tmp_path / "c")
    parsed: list[str] = []
    real = files_module.load_documents
    monkeypatch.setattr(
        files_module, "load_documents", lambda path, display: (parsed.append(display), real(path, display))[1]
    )
    files, _ = _render(source, tmp_path / "c")
    assert parsed == [] and files == clean
    entry = sorted(p for p in (tmp_path / "c" / "parsed").rglob("*") if p.is_file())[0]
    entry.write_bytes(entry.read_bytes().replace(b'"docs":', b'"doks":'))
    with caplog.at_level(logging.WARNING, logger="grove_gitops.cache"):
        files, _ = _render(source, tmp_path / "c")
    assert len(parsed) == 1 and files == clean
    assert any("unusable entry" in r.getMessage() for r in caplog.records)


def test_entries_of_another_format_are_quiet_misses_and_a_meta_read_never_reads_the_files(
    source: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After an upgrade every entry is stale: an ordinary miss, not a warning per entry. A
    shard's meta is checksummed on its own: damaged files behind a sound meta are found when
    the files are read, and that PodCliqueSet is rendered again (a miss after all)."""
    store = tmp_path / "c"
    clean, _ = _render(source, store)
    entry = _entries(store)[0]
    shard = decode(entry.name, entry.read_bytes())
    meta = ShardStore(store).load_meta(entry.name)
    assert meta is not None and meta.key == shard.key and meta.kind_counts == shard.kind_counts
    assert not hasattr(meta, "files")
    entry.write_bytes(entry.read_bytes()[:-3] + b"xyz")  # the files damaged, the meta intact
    assert ShardStore(store).load_meta(entry.name) == meta
    with caplog.at_level(logging.WARNING, logger="grove_gitops.cache"):
        files, cache = _render(source, store)
    assert files == clean and (cache.hits, cache.misses) == (5, 1)
    assert [r for r in caplog.records if "checksum mismatch" in r.getMessage()]
    caplog.clear()
    monkeypatch.setattr(cachestore, "FORMAT", 99)
    with caplog.at_level(logging.WARNING, logger="grove_gitops.cache"):
        files, cache = _render(source, store)
    assert files == clean and (cache.hits, cache.misses) == (0, 6)
    assert [r for r in caplog.records if r.name == "grove_gitops.cache"] == []


def test_an_entry_lost_between_planning_and_building_is_rendered_again(source: Path, tmp_path: Path) -> None:
    """Another process may evict an entry after this one planned with it (planning reads
    metas only): the PodCliqueSet is parsed, validated and rendered again, not a crash."""
    store = tmp_path / "c"
    clean, _ = _render(source, store)
    cache = RenderCache(store=ShardStore(store))
    cache.start()
    plan = plan_source(source, cache)
    assert all(item.pcs is None for item in plan.items)
    for entry in _entries(store)[:2]:
        entry.unlink()
    tree = build_tree_from_plan(plan, cache)
    cache.finish()
    assert tree.files == clean
    assert (cache.hits, cache.misses) == (4, 2)
    assert len(_entries(store)) == 6  # written again


def test_a_damaged_shard_entry_never_raises_and_never_returns_other_data(tmp_path: Path) -> None:
    """Whatever bytes a torn write or a bad disk leaves (hypothesis: cuts, flips, inserted
    bytes, anywhere), reading the meta or the whole entry is a miss or the very shard that
    was written: never an exception, never other data."""
    from hypothesis import given
    from hypothesis import strategies as st

    store = ShardStore(tmp_path / "c")
    key = "ab" * 32
    shard = _shard(1)
    store.save(key, shard)
    path = Path(store._path(key))
    good = path.read_bytes()
    meta = store.load_meta(key)
    assert meta is not None and store.load(key) == shard

    @given(st.lists(st.tuples(st.integers(0, len(good)), st.integers(0, 2), st.binary(max_size=3)), min_size=1, max_size=4))
    def check(edits: list[tuple[int, int, bytes]]) -> None:
        data = bytearray(good)
        for at, cut, insert in edits:
            data[at : at + cut] = insert
        path.write_bytes(bytes(data))
        found_meta = store.load_meta(key)
        assert found_meta is None or found_meta == meta
        found = store.load(key)
        assert found is None or found == shard

    check()
