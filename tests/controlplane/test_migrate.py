"""Migration as a rolling update, end to end on the real control plane (issue 33.3).

Grove's operator is not built in this project (another issue), so the live state is made here
exactly as its operator would have left it (tests/migrate/workload.py: the grove.io
PodCliqueSet, PodCliqueScalingGroup and PodCliques with Grove's finalizers and ownerReferences,
pods ``<podclique>-<random>`` owned by their PodClique, Initialized PodGangs, the headless Service
and RBAC, Grove's labels), with the admin credentials; the real kube-scheduler binds its pods and
the node simulator runs them. No operator runs, as `migrate apply --grove-operator-stopped` asks.

Then, as a user would: the refusals change nothing on the server; `migrate apply` (killed -9
after its first pod and run again) hands the pods over; the render is applied server-side as
Argo CD does; the agent, as its own process under its ServiceAccount token, replaces the pods
and is killed -9 mid-migration and restarted. An observer lists the pods every 50 ms: never more
than one unit (a standalone pod, or a scaling-group replica) without a Ready pod, and no
scaling-group replica mixing a released rendered pod with a live Grove pod (no partial gang).
"""

from __future__ import annotations

import copy
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from grove_gitops.agent.kube import Kube
from grove_gitops.cli import main
from tests.controlplane.nodesim import HANDED_OFF
from tests.controlplane.plane import Plane, agent_process, apply_all, stop_process, wait_until
from tests.day2.kubelet import Kubelet, KubeletConfig
from tests.gatelifter.support import path_of
from tests.migrate.observe import Observer, ready, unit
from tests.migrate.workload import NS, PCS, GroveState, Obj, render, source
from tests.support import PROJECT

PODS = f"/api/v1/namespaces/{NS}/pods"
LEASE = ("--lease-namespace", "grove-gitops", "--lease-duration", "4", "--renew-deadline", "3", "--retry-period", "0.5",
         "--grace", "2", "--resync", "0.5")


def _migrate(kubeconfig: Path, root: Path, *extra: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GROVE_GITOPS_")}
    return subprocess.Popen(
        [sys.executable, "-m", "grove_gitops", "migrate", *extra, str(root), "-n", NS, "--podcliqueset", PCS,
         "--kubeconfig", str(kubeconfig)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=PROJECT,
    )


def _run(kubeconfig: Path, root: Path, *extra: str) -> tuple[int, str, str]:
    """The command in this process (the kill -9 case runs it as its own process: :func:`_migrate`)."""
    command, *rest = extra
    result = CliRunner().invoke(main, ["migrate", command, str(root), "-n", NS, "--podcliqueset", PCS,
                                       "--kubeconfig", str(kubeconfig), *rest], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def _versions(kube: Kube) -> dict[str, str]:
    """resourceVersion of every object of the workload: unchanged means nothing was written."""
    out: dict[str, str] = {}
    for path in (PODS, f"/apis/grove.io/v1alpha1/namespaces/{NS}/podcliques",
                 f"/apis/grove.io/v1alpha1/namespaces/{NS}/podcliquescalinggroups",
                 f"/apis/grove.io/v1alpha1/namespaces/{NS}/podcliquesets",
                 f"/apis/scheduler.grove.io/v1alpha1/namespaces/{NS}/podgangs",
                 f"/api/v1/namespaces/{NS}/services"):
        for obj in kube.raw("GET", path)["items"]:
            out[f"{path}/{obj['metadata']['name']}"] = obj["metadata"]["resourceVersion"]
    return out


@pytest.fixture(scope="module")
def grove_running(installed: Plane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("migrate")
    root = source(tmp / "src")
    objs = render(root)
    kube = installed.kube()
    # The day-2 kubelet, not KWOK, plays the nodes here: it can keep a rendered pod from starting,
    # which holds the migration mid-way for the kill -9 (KWOK starts pods too fast to catch it).
    apply_all(kube, [_handed_off(o) for o in objs if o["kind"] == "Namespace"])
    kubelet = Kubelet(installed.api_client(), KubeletConfig(namespace=NS, binds=False)).start()

    def create(obj: Obj) -> Obj:
        return kube.raw("POST", path_of(kube, obj), obj)

    def status(obj: Obj, value: dict[str, Any]) -> Obj:
        return kube.raw("PATCH", path_of(kube, obj, with_name=True) + "/status", {"status": value},
                        "application/merge-patch+json")

    state = GroveState(objs, create, status)
    state.build(next(d for d in yaml.safe_load_all((root / "workloads" / "mig.yaml").read_text()) if d))
    wait_until("every Grove pod Ready", lambda: sum(ready(p) for p in kube.raw("GET", PODS)["items"]) == len(state.pods),
               timeout=90)
    try:
        yield {"root": root, "objs": objs, "kube": kube, "state": state, "tmp": tmp, "kubelet": kubelet}
    finally:
        kubelet.stop()


def _handed_off(namespace: Obj) -> Obj:
    out = copy.deepcopy(namespace)
    out.setdefault("metadata", {}).setdefault("labels", {})[HANDED_OFF] = "external"
    return out


def test_refusals_change_nothing_on_the_server(installed: Plane, grove_running: dict[str, Any]) -> None:
    kube, tmp = grove_running["kube"], grove_running["tmp"]
    before = _versions(kube)
    # A render of another shape: three routers where Grove runs two.
    other = source(tmp / "other", lambda text: text.replace("replicas: 2\n          minAvailable: 1",
                                                            "replicas: 3\n          minAvailable: 1", 1))
    code, out, err = _run(installed.kubeconfig, other, "apply", "--grove-operator-stopped")
    assert code == 1, (out, err)
    assert "replicas of PodClique mig-0-router differ: live 2, render 3" in out
    assert _versions(kube) == before
    # Mid-rollout: Grove's status says an update is under way.
    pcs_status = f"/apis/grove.io/v1alpha1/namespaces/{NS}/podcliquesets/{PCS}/status"
    kube.raw("PATCH", pcs_status, {"status": {"updateProgress": {"updateStartedAt": "2026-01-01T00:00:00Z"}}},
             "application/merge-patch+json")
    try:
        before = _versions(kube)
        code, out, err = _run(installed.kubeconfig, grove_running["root"], "apply", "--grove-operator-stopped",
                              "--output", "json")
        assert code == 1, (out, err)
        assert "mid-rollout" in out and '"ok": false' in out
        assert _versions(kube) == before
    finally:
        kube.raw("PATCH", pcs_status, {"status": {"updateProgress": None}}, "application/merge-patch+json")
    # A matching workload, but the operator's stop is not confirmed.
    before = _versions(kube)
    code, out, err = _run(installed.kubeconfig, grove_running["root"], "apply")
    assert code == 1 and "--grove-operator-stopped" in err, (out, err)
    assert _versions(kube) == before


def test_a_running_grove_workload_moves_one_unit_at_a_time(
    installed: Plane, agent_kubeconfig: Path, grove_running: dict[str, Any]
) -> None:
    kube, tmp, root, objs = grove_running["kube"], grove_running["tmp"], grove_running["root"], grove_running["objs"]
    rendered_pods = {o["metadata"]["name"]: o for o in objs if o["kind"] == "Pod"}
    slots = {o["spec"]["hostname"]: unit(o) for o in rendered_pods.values()}
    grove_uids = {p["metadata"]["uid"] for p in kube.raw("GET", PODS)["items"]}

    code, plan_out, err = _run(installed.kubeconfig, root, "plan")
    assert code == 0, (plan_out, err)
    assert "8 slots, 4 steps" in plan_out and "router 1/2 in replica" in plan_out
    code, plan_json, err = _run(installed.kubeconfig, root, "plan", "--output", "json")
    assert code == 0, err
    step_of = {r["pod"]: i for i, s in enumerate(json.loads(plan_json)["migration"]["steps"]) for r in s["replaces"]}
    assert len(step_of) == len(rendered_pods)
    # The second step's rendered pod does not start until the agent has been killed and
    # restarted: the migration is held mid-way, whatever the machine's speed.
    second = {r["rendered"] for r in json.loads(plan_json)["migration"]["steps"][1]["replaces"]}
    assert second and second <= set(rendered_pods)
    held = grove_running["kubelet"].withhold(lambda pod: pod["metadata"]["name"] in second, "the second step's pods")

    observer = Observer(kube, PODS, slots)
    agents: list[subprocess.Popen[bytes]] = []
    started = time.monotonic()
    try:
        agents.append(agent_process(agent_kubeconfig, tmp / "agent-1.log", *LEASE))
        # migrate apply, killed -9 once it has handed over its first pod, then run again.
        first = _migrate(installed.kubeconfig, root, "apply", "--grove-operator-stopped")
        assert first.stderr is not None
        for line in first.stderr:
            if "handed over (slot" in line:
                first.send_signal(signal.SIGKILL)
                break
        first.communicate(timeout=60)  # reads and closes its pipes
        assert first.returncode == -signal.SIGKILL
        code, out, err = _run(installed.kubeconfig, root, "apply", "--grove-operator-stopped")
        assert code == 0, (out, err)
        assert not kube.raw("GET", f"/apis/grove.io/v1alpha1/namespaces/{NS}/podcliques")["items"]
        # The GitOps tool syncs the render (server-side apply, as Argo CD).
        apply_all(kube, [o for o in objs if o["kind"] != "Namespace"])

        def replaced() -> int:
            return sum(1 for p in kube.raw("GET", PODS)["items"] if p["metadata"]["name"] in rendered_pods and ready(p))

        try:
            wait_until("the first rendered pod Ready", lambda: replaced() >= 1, timeout=60)
        except AssertionError as exc:
            pods = [(p["metadata"]["name"], p["metadata"]["labels"].get("app.kubernetes.io/managed-by"),
                     bool(p["spec"].get("schedulingGates")), p["status"].get("phase")) for p in kube.raw("GET", PODS)["items"]]
            raise AssertionError(f"{exc}\n{pods}\n{(tmp / 'agent-1.log').read_text()[-5000:]}") from None
        assert replaced() < len(rendered_pods)
        agents[0].send_signal(signal.SIGKILL)  # kill -9 mid-migration
        agents[0].wait(timeout=30)
        agents.append(agent_process(agent_kubeconfig, tmp / "agent-2.log", *LEASE))
        held.release()

        def done() -> bool:
            pods = kube.raw("GET", PODS)["items"]
            return sorted(p["metadata"]["name"] for p in pods) == sorted(rendered_pods) and all(ready(p) for p in pods)

        wait_until("every slot held by its Ready rendered pod, no Grove pod left", done, timeout=120)
    finally:
        observer.close()
        for agent in agents:
            stop_process(agent)
    took = time.monotonic() - started
    logs = "".join((tmp / f"agent-{i}.log").read_text()[-2000:] for i in (1, 2))
    assert observer.samples > 20, observer.samples
    assert not observer.violations, observer.violations[:5]
    assert observer.most_down == 1, "a step took one unit down"
    steps = [step_of[name] for name in observer.order()]
    assert steps == sorted(steps) and len(steps) == len(rendered_pods), "Grove's pods went down in the plan's order"
    live = kube.raw("GET", PODS)["items"]
    assert not grove_uids & {p["metadata"]["uid"] for p in live}, logs
    assert not kube.raw("GET", f"/apis/grove.io/v1alpha1/namespaces/{NS}/podcliquesets")["items"]
    print(f"\nmigration of {len(rendered_pods)} pods in 4 steps: {took:.1f} s, {observer.samples} samples")
