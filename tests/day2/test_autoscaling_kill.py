"""kill -9 of the agent in the middle of a scale-out (issue 23, "Tests and benchmark").

The agent runs as a real process (``python -m grove_gitops agent --kubeconfig ...`` against the
fake API server, leader election on), as it runs in a cluster. A ``/scale`` write takes the
prefill group from 1 to 4 replicas; the API server is slow to create the first pod of one new
gang, so the first agent is killed (SIGKILL: no cleanup, its Lease left held) once the other
two new gangs exist; its in-flight create still lands, so the third gang is left half there
(one of its four pods, no PodGang). A second
agent process takes the Lease over when it expires and must converge: every gang whole, no
pod released from an incomplete gang, no object created twice.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import yaml

from tests.day2 import scaling as S
from tests.day2.harness import Day2Env
from tests.support import PROJECT

NS = "inference"
#: Seconds the API server takes to serve the slow pod create (the agent is killed meanwhile).
SLOW_CREATE = 3.0


def write_kubeconfig(path: Path, server_url: str) -> Path:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "fake", "cluster": {"server": server_url}}],
        "users": [{"name": "agent", "user": {"token": "unused"}}],
        "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "agent"}}],
        "current-context": "fake",
    }
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


@contextlib.contextmanager
def agent_process(kubeconfig: Path, identity: str, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """``grove-gitops agent`` in its own process, with short Lease timings and fast resyncs;
    killed (if still running) on exit."""
    cmd = [
        sys.executable, "-m", "grove_gitops", "agent", "--kubeconfig", str(kubeconfig), "--namespace", NS,
        "--lease-namespace", NS, "--identity", identity, "--metrics-address", "", "--grace", "1",
        "--resync", "0.2", "--lease-duration", "2", "--renew-deadline", "1.5", "--retry-period", "0.2",
    ]
    with log.open("wb") as err:
        proc = subprocess.Popen(cmd, cwd=PROJECT, stdout=subprocess.DEVNULL, stderr=err)
        try:
            yield proc
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)


def _tail(log: Path) -> str:
    return "\n".join(log.read_text(encoding="utf-8", errors="replace").splitlines()[-20:])


def test_agent_killed_mid_scale_out_converges_after_restart(day2: Callable[..., Day2Env], tmp_path: Path) -> None:
    env = day2(agent=False, edit=S.prefill_floor(1))
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", env.server.url)
    env.set_counts(S.counts(1))
    first_log, second_log = tmp_path / "agent-a.log", tmp_path / "agent-b.log"
    with agent_process(kubeconfig, "agent-a", first_log) as first:
        try:
            env.wait_until(lambda: S.target(env) is not None, timeout=30, what="the agent's scale target")
            S.wait_matches(env, "the first deploy at the floor (1)")
        except AssertionError:
            raise AssertionError(f"agent a:\n{_tail(first_log)}") from None
        at_one = set(S.pod_names(env))
        four = env.objects_at(S.counts(4))
        new_pods = {str(o["metadata"]["name"]): o for o in four if o["kind"] == "Pod"
                    and str(o["metadata"]["name"]) not in at_one}
        new_gangs = {str(o["metadata"]["name"]) for o in four if o["kind"] == "PodGang"} - S.gangs(env, env.primary)
        assert len(new_pods) == 3 * S.PODS_PER_PREFILL and len(new_gangs) == 3
        gang_of = {n: str(o["metadata"]["labels"]["grove.io/podgang"]) for n, o in new_pods.items()}
        # The first pod create the server sees next (one new gang's first pod: the agent builds
        # the three gangs in parallel, each pods first) takes SLOW_CREATE; the others go through.
        env.server.faults.delay(SLOW_CREATE, verb="create", resource="pods", times=1)
        mark = env.observer.mark()
        S.scale(env, 4)
        env.wait_until(lambda: len(new_gangs & S.gangs(env, env.primary)) == 2, timeout=20,
                       what="two of the three new PodGangs created")
        first.send_signal(signal.SIGKILL)
        assert first.wait(timeout=10) == -signal.SIGKILL
    (last_gang,) = new_gangs - S.gangs(env, env.primary)
    last = {n for n, g in gang_of.items() if g == last_gang}
    # The dead agent's slow create still lands: the last gang is left half there.
    env.wait_until(lambda: bool(set(S.pod_names(env)) & last), timeout=10, what="the in-flight pod create landing")
    left = set(S.pod_names(env)) & last
    assert 0 < len(left) < len(last), f"not a half gang after the kill: {sorted(left)}"
    assert last_gang not in S.gangs(env, env.primary)

    with agent_process(kubeconfig, "agent-b", second_log):
        try:
            S.wait_matches(env, "count 4 after the restart: every gang whole and released", timeout=60)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\nagent b:\n{_tail(second_log)}") from None
        assert S.desired_count(env) == 4
        env.settle()
        # Nothing created twice: each new pod was added once and never deleted, and the
        # objects of the primary are exactly the render's at 4.
        moments = env.observer.since(mark)
        added = sorted(m.pod for m in moments if m.event == "ADDED")
        assert added == sorted(new_pods), added
        assert [m.pod for m in moments if m.event == "DELETED"] == []
        assert [e.event for e in env.observer.gang_history().of(NS, last_gang)][:1] == ["ADDED"]
        for api, kind in (("scheduler.grove.io/v1alpha1", "PodGang"), ("scheduling.run.ai/v2alpha2", "PodGroup")):
            listed = env.rest.request("GET", env.rest.path(api, kind, NS)).get("items") or []
            live = sorted(str(o["metadata"]["name"]) for o in listed
                          if (o["metadata"].get("labels") or {}).get("app.kubernetes.io/part-of") == env.primary)
            assert live == sorted(str(o["metadata"]["name"]) for o in four if o["kind"] == kind), (kind, live)
        env.assert_invariants()
