"""Gate-lifter under network faults (issue 9 §4): refused connections, resets mid-watch, a hanging server.

Every loop either retries with backoff or reports itself unhealthy; none dies silently while
/healthz keeps saying ok.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from grove_gitops.agent.kube import Kube
from grove_gitops.agent.loop import Agent, AgentConfig
from grove_gitops.metrics import Registry
from tests.fakeserver import FakeApiServer
from tests.gatelifter.support import apply, gated
from tests.gatelifter.test_lifter import kai_objects, pods_of_gang
from tests.support import PROJECT

#: A request this module hangs on purpose is abandoned by its timed-out client; the socket it
#: held is freed only when collected. Collect here, so such a socket is not reported as a
#: leak (a ResourceWarning turned error) by whichever later test the collector runs in.
pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")


@pytest.fixture(autouse=True)
def _collect_abandoned_sockets() -> Iterator[None]:
    yield
    gc.collect()


def start(kube: Kube, **config: float) -> tuple[Agent, threading.Event, threading.Thread]:
    lifter = Agent(kube, AgentConfig(backoff_base=0.01, backoff_max=0.2, **config), Registry())  # type: ignore[arg-type]
    stop = threading.Event()
    thread = threading.Thread(target=lifter.run, args=(stop,), daemon=True)
    thread.start()
    return lifter, stop, thread


def test_connection_refused_makes_the_lifter_unhealthy(tmp_path: Path) -> None:
    server = FakeApiServer().start()
    # An idle watcher marks progress once per read timeout, so that timeout must be well under
    # ``stale_after``; healthy is then waited for, not sampled once (on a loaded machine the
    # first list can be older than ``stale_after`` by the time every kind is listed).
    lifter, stop, thread = start(Kube(server.api_client()), stale_after=1.5, watch_read_timeout=0.3)
    try:
        assert server.wait_for(lifter.ready, timeout=5)
        assert server.wait_for(lifter.healthy, timeout=10)
        server.stop()  # the port now refuses connections
        deadline = time.monotonic() + 10
        while lifter.healthy() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not lifter.healthy()
        assert thread.is_alive()  # still retrying with backoff, not dead
        assert (lifter.registry.get("grove_gitops_lifter_api_errors_total", code="connection") or 0) > 0
    finally:
        stop.set()
        thread.join(10)
        server.stop()
    assert not thread.is_alive()


def test_connection_reset_mid_watch_keeps_releasing_and_healthy(tmp_path: Path) -> None:
    objs = kai_objects(tmp_path)
    base = pods_of_gang(objs, "inf-0")
    with FakeApiServer() as server:
        kube = Kube(server.api_client())
        lifter, stop, thread = start(kube, stale_after=3.0)
        try:
            assert server.wait_for(lifter.ready, timeout=5)
            for obj in objs:
                apply(kube, [obj])
                server.drop_watches()  # cut every stream abruptly, again and again
            assert server.wait_for(lambda: not set(base) & set(gated(server)), timeout=10)
            assert lifter.healthy()
        finally:
            stop.set()
            thread.join(10)
        assert not thread.is_alive()


def test_hanging_api_server_times_out_and_is_retried(tmp_path: Path) -> None:
    objs = kai_objects(tmp_path)
    base = pods_of_gang(objs, "inf-0")
    with FakeApiServer() as server:
        apply(Kube(server.api_client()), objs)
        hang = server.faults.delay(60, verb="list", resource="pods", times=1)  # the first list never answers
        _lifter, stop, thread = start(Kube(server.api_client(), request_timeout=0.5))
        try:
            assert server.wait_for(lambda: not set(base) & set(gated(server)), timeout=5)
        finally:
            stop.set()
            thread.join(10)
            server.faults.remove(hang)
        assert not thread.is_alive()


def test_hanging_watches_make_the_lifter_unhealthy(tmp_path: Path) -> None:
    with FakeApiServer() as server:
        lifter, stop, thread = start(Kube(server.api_client(), request_timeout=0.5), stale_after=1.5, watch_read_timeout=0.3)
        try:
            assert server.wait_for(lifter.ready, timeout=5)
            server.faults.delay(60)  # every request now hangs
            server.drop_watches()
            deadline = time.monotonic() + 10
            while lifter.healthy() and time.monotonic() < deadline:
                time.sleep(0.1)
            assert not lifter.healthy()
        finally:
            server.faults.clear()
            stop.set()
            thread.join(10)
        assert not thread.is_alive()


def test_no_kubeconfig_is_one_line_and_exit_1(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT")}
    env["HOME"] = str(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-m", "grove_gitops.cli", "agent", "--metrics-address", ""],
        cwd=PROJECT, env=env, capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    assert "no Kubernetes configuration" in lines[0] and "KUBERNETES_SERVICE_HOST" in lines[0]
    assert str(tmp_path / ".kube" / "config") in lines[0]
    # The deprecated alias behaves the same, after one deprecation line.
    alias = subprocess.run(
        [sys.executable, "-m", "grove_gitops.cli", "gate-lifter", "--metrics-address", ""],
        cwd=PROJECT, env=env, capture_output=True, text=True, timeout=60,
    )
    assert alias.returncode == 1
    assert alias.stderr.strip().splitlines() == [
        "warning: `grove-gitops gate-lifter` is deprecated; use `grove-gitops agent`", lines[0]
    ]
