"""``/healthz`` stays green while the agent's loops start (CI failure of stop 43).

The day-2 loop and the autoscaling loop each published their thread list before starting
the threads in it, so a probe that came in between saw a thread that was not yet alive and
answered 503: ``tests/gatelifter/test_service.py`` read ``unhealthy`` right after leadership
was won on a loaded CI machine. The window is made deterministic here: ``healthy()`` is
sampled at the moment each of the agent's threads is started.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from tests.agent.scaling_env import scaling_env, wait_until
from tests.agent.test_scaling_limits import NS

#: The agent's own threads (the day-2 loop's watchers and its scaler, the scaler's watchers).
_AGENT_THREADS = ("watch-", "scaler")


def test_health_is_sampled_green_at_every_thread_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    samples: list[tuple[str, bool]] = []
    real_start = threading.Thread.start
    with scaling_env(tmp_path / "live", NS) as env:
        agent = env.agent

        def start(thread: threading.Thread, *args: Any, **kwargs: Any) -> None:
            if thread.name.startswith(_AGENT_THREADS):
                samples.append((thread.name, agent.healthy()))
            real_start(thread, *args, **kwargs)

        monkeypatch.setattr(threading.Thread, "start", start)
        env.start_agent()
        scaler = agent.scaler
        assert scaler is not None
        assert wait_until(lambda: agent.cache.ready() and len(scaler.threads) == 3, timeout=20)
        monkeypatch.undo()
        names = [name for name, _ in samples]
        # Every thread of both loops was started (and sampled): two watchers, the scaler,
        # and the scaler's three list+watch threads.
        assert {"watch-pods", "watch-podgangs", "scaler"} <= set(names)
        assert sum(name.startswith("scaler-") and not name.startswith("scaler-write") for name in names) == 3
        assert [name for name, ok in samples if not ok] == []
        assert agent.healthy()
