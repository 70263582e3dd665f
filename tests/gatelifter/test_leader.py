"""Two gate-lifter processes against one fake API server: one leads, killing it hands over."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

from grove_gitops.agent.kube import Kube
from tests.fakeserver import FakeApiServer
from tests.gatelifter.support import apply, gated, rendered_objects
from tests.support import PROJECT, pcs_yaml, write_source


def kubeconfig(server: FakeApiServer, path: Path) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "fake", "cluster": {"server": server.url}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "u"}}],
                "current-context": "fake",
            }
        )
    )
    return path


def start(config: Path, identity: str) -> subprocess.Popen[str]:
    args = [
        sys.executable, "-m", "grove_gitops.cli", "gate-lifter", "--kubeconfig", str(config),
        "--identity", identity, "--lease-namespace", "default", "--metrics-address", "",
        "--lease-duration", "2", "--renew-deadline", "1.5", "--retry-period", "0.25",
    ]
    env = {k: v for k, v in os.environ.items() if k != "POD_NAME"}
    return subprocess.Popen(args, cwd=PROJECT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def holder(server: FakeApiServer) -> str | None:
    lease = server.get_object("leases.coordination.k8s.io", "default", "grove-gitops-gate-lifter")
    return None if lease is None else (lease.get("spec") or {}).get("holderIdentity")


def messages(stderr: str) -> list[str]:
    out = []
    for line in stderr.splitlines():
        try:
            out.append(json.loads(line)["msg"])
        except (ValueError, KeyError):
            continue
    return out


def test_one_leader_patches_and_killing_it_hands_over(tmp_path: Path) -> None:
    first = rendered_objects(write_source(tmp_path / "a", {"a.yaml": pcs_yaml("alpha").replace("namespace: ml", "namespace: default")}))
    second = rendered_objects(write_source(tmp_path / "b", {"b.yaml": pcs_yaml("beta").replace("namespace: ml", "namespace: default")}))
    with FakeApiServer() as server:
        kube = Kube(server.api_client())
        config = kubeconfig(server, tmp_path / "kubeconfig")
        procs = {name: start(config, name) for name in ("lifter-a", "lifter-b")}
        try:
            assert server.wait_for(lambda: holder(server) in procs, timeout=20)
            leader = holder(server)
            assert leader is not None
            follower = next(n for n in procs if n != leader)
            apply(kube, first)
            assert server.wait_for(lambda: gated(server) == [], timeout=20)
            time.sleep(1.0)
            assert holder(server) == leader  # renewals keep it
            os.kill(procs[leader].pid, signal.SIGKILL)
            _, leader_err = procs[leader].communicate(timeout=10)
            apply(kube, second)
            assert server.wait_for(lambda: holder(server) == follower, timeout=20)
            assert server.wait_for(lambda: gated(server) == [], timeout=20)
        finally:
            for proc in procs.values():
                if proc.poll() is None:
                    proc.send_signal(signal.SIGTERM)
            outputs = {name: proc.communicate(timeout=20)[1] for name, proc in procs.items() if proc.returncode is None}
        leader_msgs = messages(leader_err)
        follower_msgs = messages(outputs[follower])
        assert any("became leader" in m for m in leader_msgs)
        assert any(m.startswith("released gang default/alpha-0") for m in leader_msgs)
        assert not any("released gang default/beta-0" in m for m in leader_msgs)
        assert any("became leader" in m for m in follower_msgs)
        assert any(m.startswith("released gang default/beta-0") for m in follower_msgs)
        assert not any("released gang default/alpha-0" in m for m in follower_msgs)
        patched = {r.name for r in server.requests if r.verb == "patch" and r.resource == "pods" and r.status < 300}
        assert patched == {o["metadata"]["name"] for o in first + second if o["kind"] == "Pod"}
