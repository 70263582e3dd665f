"""The render cache never follows a symbolic link below its root (issue 21, item 5).

A kind folder (``shards/``), a shard folder (``shards/ab/``), an entry or a temporary file
that is a link is foreign: eviction never deletes through it, a write never goes through it,
a read never follows it. The folder a link points to stays byte for byte as it was, and the
render is the render without a cache. The root itself may be a link (the user chose it).
"""

from __future__ import annotations

import builtins
import logging
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from bench.generate import generate
from grove_gitops import cachestore
from grove_gitops.cachestore import ShardStore
from grove_gitops.cli import main
from tests.test_cache_store import _files, _render, _shard


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return generate(tmp_path_factory.mktemp("cachelinks") / "src", 6)


@pytest.fixture(scope="module")
def clean(source: Path) -> dict[str, bytes]:
    """The render without any cache."""
    return _render(source, None)[0]


def _victim(root: Path, subdirs: list[str]) -> Path:
    """A folder the cache must never touch: 5 files of 300 KB in each of ``subdirs`` (more
    than the 1 MiB bound, so eviction would delete some of them if it saw them) and some
    stale-looking temporary files."""
    for sub in subdirs:
        (root / sub).mkdir(parents=True, exist_ok=True)
        for i in range(5):
            (root / sub / (f"{i:02x}" * 32)).write_bytes(bytes([i]) * 300_000)
        (root / sub / ".tmp-old").write_bytes(b"not the cache's")
        os.utime(root / sub / ".tmp-old", (1000.0, 1000.0))
    return root


def _snapshot(root: Path) -> dict[str, tuple[bytes, float]]:
    return {
        p.relative_to(root).as_posix(): (p.read_bytes(), p.stat().st_mtime)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _cli_render(source: Path, out: Path, cache_dir: Path) -> None:
    result = CliRunner().invoke(
        main,
        ["render", str(source), "-q", "--no-fsync", "--out", str(out), "--cache-dir", str(cache_dir), "--cache-max-mb", "1"],
    )
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("link", ["shards", "parsed", "shards/*", "parsed/*"])
def test_a_symlinked_cache_folder_is_never_followed(
    source: Path, clean: dict[str, bytes], tmp_path: Path, link: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The issue's case: ``shards`` a link to a folder of 5 files; eviction deleted 3 of them
    and new entries were written into it. Also ``parsed/`` and a shard folder the render uses."""
    if link.endswith("/*"):
        _render(source, tmp_path / "scratch")  # which shard folders a render uses
        kind = link.split("/")[0]
        link = f"{kind}/{sorted(p.name for p in (tmp_path / 'scratch' / kind).iterdir())[0]}"
        subdirs = ["."]
    else:
        subdirs = ["ab", "cd", *(f"{i:02x}" for i in range(0, 256, 37))]
    victim = _victim(tmp_path / "victim", subdirs)
    before = _snapshot(victim)
    cache_dir = tmp_path / "c"
    (cache_dir / link).parent.mkdir(parents=True, exist_ok=True)
    (cache_dir / link).symlink_to(victim, target_is_directory=True)
    for run in ("cold", "warm"):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="grove_gitops.cache"):
            _cli_render(source, tmp_path / run, cache_dir)
        assert _files(tmp_path / run) == clean
        assert _snapshot(victim) == before  # nothing deleted, written, touched or added
        warned = [r.getMessage() for r in caplog.records if r.name == "grove_gitops.cache"]
        # One line naming the link, not one per entry.
        assert len(warned) == 1 and f"{cache_dir / link}: " in warned[0] and "not followed" in warned[0]
    assert (cache_dir / link).is_symlink()


def test_a_symlinked_entry_is_a_miss_then_replaced_never_written_through(
    source: Path, clean: dict[str, bytes], tmp_path: Path
) -> None:
    """Even a link to a valid entry of the right key is not read; the render writes the entry
    by replacing the link itself; eviction never deletes the link's target."""
    store_dir = tmp_path / "c"
    _render(source, store_dir)
    entries = sorted(p for p in (store_dir / "shards").rglob("*") if p.is_file())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    moved = elsewhere / entries[0].name
    shutil.move(entries[0], moved)
    entries[0].symlink_to(moved)
    assert ShardStore(store_dir).load(entries[0].name) is None
    assert ShardStore(store_dir).load_meta(entries[0].name) is None
    before = _snapshot(elsewhere)
    files, cache = _render(source, store_dir)
    assert files == clean and (cache.hits, cache.misses) == (5, 1)
    assert not entries[0].is_symlink() and entries[0].is_file()  # the link replaced by a real entry
    assert _snapshot(elsewhere) == before
    # Links as entries are left alone by eviction, and so are their targets.
    link = entries[1].parent / ("ee" * 32)
    link.symlink_to(moved)
    store = ShardStore(store_dir, max_bytes=0)
    store.evict()
    assert link.is_symlink() and _snapshot(elsewhere) == before


def test_symlinked_temporary_files_are_neither_written_nor_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A link planted at the temporary name a writer picks: the writer takes another name;
    stale links named like temporary files are left to whoever made them."""
    store = ShardStore(tmp_path / "c")
    key = "ab" * 32
    store.save(key, _shard(0))
    folder = Path(store._path(key)).parent
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    planted = folder / ".tmp-0000000000000000"
    planted.symlink_to(victim)
    names = iter(["0000000000000000", "1111111111111111"])
    monkeypatch.setattr(cachestore.secrets, "token_hex", lambda n: next(names))
    store.save(key, _shard(1))
    assert store.load(key) == _shard(1)
    assert victim.read_bytes() == b"precious" and planted.is_symlink()
    monkeypatch.setattr(cachestore, "_STALE_TMP_S", 0.0)
    os.utime(planted, (1000.0, 1000.0), follow_symlinks=False)
    store.evict()
    assert planted.is_symlink() and victim.read_bytes() == b"precious"


def test_a_kind_folder_swapped_for_a_link_during_eviction_deletes_nothing_outside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between eviction's scan and its deletions, ``shards`` is renamed away and replaced by a
    link to a folder holding files of the very same names: they must survive."""
    store_dir = tmp_path / "c"
    store = ShardStore(store_dir, max_bytes=10**9)
    keys = [f"{i:02x}" * 32 for i in range(6)]
    for i, key in enumerate(keys):
        store.save(key, _shard(i))
        os.utime(store._path(key), (1000.0 + i, 1000.0 + i))
    size = Path(store._path(keys[0])).stat().st_size
    victim = tmp_path / "victim"
    shutil.copytree(store_dir / "shards", victim)
    before = _snapshot(victim)

    def swap_then_sort(items: Any, **kwargs: Any) -> list[Any]:
        if not (store_dir / "shards").is_symlink():
            (store_dir / "shards").rename(store_dir / "shards.old")
            (store_dir / "shards").symlink_to(victim, target_is_directory=True)
        result: list[Any] = builtins.sorted(items, **kwargs)
        return result

    monkeypatch.setattr(cachestore, "sorted", swap_then_sort, raising=False)
    store.max_bytes = 3 * size
    store.evict()
    assert _snapshot(victim) == before
    remaining = sorted(p.name for p in (store_dir / "shards.old").rglob("*") if p.is_file())
    assert remaining == keys[3:]  # the real folder was evicted, least recently used first


@pytest.mark.timeout(60)
@pytest.mark.parametrize("make", [os.mkfifo, lambda p: os.mkdir(p)], ids=["fifo", "directory"])
def test_an_entry_that_is_not_a_regular_file_is_a_miss_without_hanging(
    tmp_path: Path, make: Callable[[Path], None]
) -> None:
    """A FIFO where an entry belongs once blocked the read forever."""
    store = ShardStore(tmp_path / "c")
    key = "cd" * 32
    store.save("cd" + "00" * 31, _shard(0))  # creates the shard folder
    make(Path(store._path(key)))
    assert store.load(key) is None and store.load_meta(key) is None
    store.max_bytes = 0
    store.evict()
    assert Path(store._path(key)).exists()


def test_the_cache_root_itself_may_be_a_link(source: Path, clean: dict[str, bytes], tmp_path: Path) -> None:
    """``--cache-dir`` is the user's choice: a link they made there is followed (only there)."""
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    _render(source, tmp_path / "link")
    files, cache = _render(source, tmp_path / "link")
    assert files == clean and (cache.hits, cache.misses) == (6, 0)
    assert any((real / "shards").rglob("*"))
