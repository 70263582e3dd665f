"""The agent's whole loop (decisions, executor, release) migrates a handed-over Grove workload
on the fake API server, with the simulated kubelet of the day-2 scenarios: every slot ends held by
its Ready rendered pod, at most one unit down at any sample, and a restarted agent resumes.
(The same scenario on the real control plane, with kill -9: tests/controlplane/test_migrate.py.)"""

from __future__ import annotations

import json
from pathlib import Path

from grove_gitops.agent.kube import Kube
from tests.day2.harness import start_agent
from tests.day2.kubelet import Kubelet, KubeletConfig
from tests.fakeserver import FakeApiServer
from tests.migrate.fake import kubeconfig, migrate_args, run_cli, running, sync
from tests.migrate.observe import Observer, ready, unit
from tests.migrate.workload import NS

PODS = f"/api/v1/namespaces/{NS}/pods"


def test_the_agent_replaces_every_handed_over_pod_one_unit_at_a_time(tmp_path: Path) -> None:
    _migrate(tmp_path, restart=True)


def test_a_replica_is_not_released_while_a_delete_of_its_step_is_on_its_way(tmp_path: Path) -> None:
    """A step's DELETEs of one scaling-group replica go out in parallel; when one is slow (here
    2 s before the server carries it out) the others' pods are gone and their slots free first.
    Releasing a replacement then ran it beside an old pod of its replica that was not even
    terminating: the partial gang the real control plane showed (its nodes finish a deletion at
    once). The replacements wait for the slow DELETE."""
    _migrate(tmp_path, restart=False, slow_delete=("engine", 0))


def _migrate(tmp_path: Path, restart: bool, slow_delete: tuple[str, int] | None = None) -> None:
    with FakeApiServer(event_window=200_000) as server:
        root, objs, state = running(server, tmp_path)
        if slow_delete is not None:
            group, index = slow_delete
            victim = next(p["metadata"]["name"] for p in state.pods.values()
                          if str(p["metadata"]["labels"].get("grove.io/podcliquescalinggroup", "")).endswith(f"-{group}")
                          and p["metadata"]["labels"].get("grove.io/podcliquescalinggroup-replica-index") == str(index)
                          and "leader" not in p["metadata"]["name"])
            server.faults.delay(2.0, "delete", "pods", namespace=NS, name=victim, times=1)
        grove = {p["metadata"]["name"] for p in state.pods.values()}
        rendered = sorted(o["metadata"]["name"] for o in objs if o["kind"] == "Pod")
        kube = Kube(server.api_client())
        kubelet = Kubelet(server.api_client(), KubeletConfig(namespace=NS)).start()
        observer = Observer(kube, PODS, {o["spec"]["hostname"]: unit(o) for o in objs if o["kind"] == "Pod"}, every=0.01)
        agent = start_agent(server, NS)
        try:
            plan = json.loads(run_cli(*migrate_args("plan", root, kubeconfig(server, tmp_path / "kubeconfig"),
                                                    "--output", "json")).stdout)
            step_of = {r["pod"]: i for i, s in enumerate(plan["migration"]["steps"]) for r in s["replaces"]}
            result = run_cli(*migrate_args("apply", root, kubeconfig(server, tmp_path / "kubeconfig"), "--grove-operator-stopped"))
            assert result.exit_code == 0, result.output
            sync(server, objs)

            def replaced() -> int:
                return sum(1 for p in kube.raw("GET", PODS)["items"] if p["metadata"]["name"] in rendered and ready(p))

            assert server.wait_for(lambda: replaced() >= 1, timeout=30), kube.raw("GET", PODS)["items"]
            if restart:
                agent.stop()  # an agent restart mid-migration: the next one resumes from the cluster
                agent = start_agent(server, NS)

            def done() -> bool:
                pods = kube.raw("GET", PODS)["items"]
                return sorted(p["metadata"]["name"] for p in pods) == rendered and all(ready(p) for p in pods)

            assert server.wait_for(done, timeout=60), [p["metadata"]["name"] for p in kube.raw("GET", PODS)["items"]]
        finally:
            agent.stop()
            observer.close()
            kubelet.stop()
        assert observer.samples > 10
        assert not observer.violations, observer.violations[:5]
        assert observer.most_down == 1
        steps = [step_of[name] for name in observer.order()]
        assert steps == sorted(steps) and len(steps) == len(grove), "the pods went down in the plan's order"
        assert not grove & {p["metadata"]["name"] for p in kube.raw("GET", PODS)["items"]}
