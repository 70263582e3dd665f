"""The gate-lifter process: /healthz, /readyz and Prometheus /metrics while it releases gangs."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from grove_gitops.agent.kube import Kube
from tests.fakeserver import FakeApiServer
from tests.gatelifter.support import apply, gated, rendered_objects
from tests.gatelifter.test_leader import kubeconfig
from tests.support import PROJECT


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_health_readiness_and_metrics(tmp_path: Path) -> None:
    objs = rendered_objects(PROJECT / "examples")
    base_pods = [o["metadata"]["name"] for o in objs if o["kind"] == "Pod" and "prefill-1" not in o["metadata"]["name"]]
    port = _free_port()
    with FakeApiServer() as server:
        config = kubeconfig(server, tmp_path / "kubeconfig")
        env = {k: v for k, v in os.environ.items() if k != "POD_NAME"}
        proc = subprocess.Popen(
            [
                sys.executable, "-m", "grove_gitops.cli", "gate-lifter", "--kubeconfig", str(config),
                "--identity", "solo", "--lease-namespace", "default", "--metrics-address", f"127.0.0.1:{port}",
                "--lease-duration", "10", "--renew-deadline", "8", "--retry-period", "0.25",
            ],
            cwd=PROJECT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        try:
            base = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 60  # start-up on a loaded machine (2 cores, many processes)
            while time.monotonic() < deadline:
                try:
                    if _get(f"{base}/healthz")[0] == 200 and _get(f"{base}/readyz")[0] == 200:
                        break
                except OSError:
                    pass
                time.sleep(0.1)
            assert _get(f"{base}/healthz") == (200, "ok\n")
            assert _get(f"{base}/readyz") == (200, "ok\n")
            apply(Kube(server.api_client()), objs)
            assert server.wait_for(lambda: not set(base_pods) & set(gated(server)), timeout=20)
            time.sleep(0.5)
            status, metrics = _get(f"{base}/metrics")
            assert status == 200
            assert f"grove_gitops_lifter_gates_lifted_total {len(base_pods)}" in metrics
            assert "grove_gitops_lifter_release_seconds_count" in metrics
            assert "grove_gitops_lifter_gangs_waiting 1" in metrics  # the scaled gang waits for scheduling
            assert _get(f"{base}/nope")[0] == 404
        finally:
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=20)
        assert proc.returncode == 0, err
