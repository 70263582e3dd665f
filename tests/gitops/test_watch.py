"""``grove-gitops watch``: re-render on change; an invalid edit keeps the previous output."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from grove_gitops.gitops.watch import watch
from tests.support import pcs_yaml, plain, write_source


def _wait(predicate, timeout: float = 20.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def test_watch_rerenders_and_keeps_output_on_invalid_edit(tmp_path: Path) -> None:
    src = write_source(tmp_path / "src", {"a.yaml": pcs_yaml("alpha")})
    out = tmp_path / "out"
    lines: list[str] = []
    stop = threading.Event()
    thread = threading.Thread(target=watch, args=(src, out, lines.append), kwargs={"debounce_ms": 50, "stop": stop})
    thread.start()
    try:
        assert _wait(lambda: (out / "ml" / "alpha").is_dir())
        time.sleep(0.3)  # let watchfiles arm itself
        (src / "b.yaml").write_text(pcs_yaml("beta"))
        assert _wait(lambda: (out / "ml" / "beta").is_dir())
        before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
        (src / "b.yaml").write_text("kind: [\n")
        assert _wait(lambda: any("kept the previous output" in line for line in lines))
        assert any("b.yaml: malformed YAML" in plain(line) for line in lines)
        assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
        (src / "b.yaml").write_text(pcs_yaml("gamma"))
        assert _wait(lambda: (out / "ml" / "gamma").is_dir())
        assert not (out / "ml" / "beta").exists()
    finally:
        stop.set()
        thread.join(timeout=10)
    assert not thread.is_alive()
