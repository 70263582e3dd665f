"""``render`` and ``validate`` run with the collector tuned for a batch (issue 35.4): at Python's
default the cyclic collector took 0.16-0.23 s of a mid-size render's 2.2 s of CPU."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from grove_gitops.cli import check as check_module
from grove_gitops.cli import main
from grove_gitops.procs import BATCH_GC_YOUNG, batch_gc
from tests.support import PROJECT


def test_batch_gc_raises_the_young_threshold_and_restores_it() -> None:
    before = gc.get_threshold()
    with batch_gc():
        assert gc.get_threshold() == (BATCH_GC_YOUNG, *before[1:])
    assert gc.get_threshold() == before
    with pytest.raises(RuntimeError), batch_gc():
        raise RuntimeError("a failed render")
    assert gc.get_threshold() == before
    gc.set_threshold(50_000, *before[1:])  # a process that asked for more keeps it
    try:
        with batch_gc():
            assert gc.get_threshold()[0] == 50_000
    finally:
        gc.set_threshold(*before)


@pytest.mark.parametrize("command", ["render", "validate"])
def test_render_and_validate_run_under_it(command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []
    real = check_module.render_source_tree

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(gc.get_threshold()[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(check_module, "render_source_tree", spy)
    before = gc.get_threshold()
    args = [command, str(PROJECT / "examples"), "-q", *(["--out", str(tmp_path / "out")] if command == "render" else [])]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert seen == [BATCH_GC_YOUNG]
    assert gc.get_threshold() == before
