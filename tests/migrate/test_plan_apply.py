"""``migrate plan|apply`` against the fake API server holding a workload as Grove's operator
leaves it (tests/migrate/workload.py): the plan, every refusal (exit 1, not one write request),
the hand-over, and that an interrupted hand-over is finished by running it again."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from grove_gitops.agent.kube import Kube
from grove_gitops.readmodel import adoption
from tests.fakeserver import FakeApiServer
from tests.migrate.fake import kubeconfig, migrate_args, run_cli, running, writes
from tests.migrate.workload import NS, PCS, GroveState, render, source
from tests.support import PROJECT

MERGE = "application/merge-patch+json"
SCHEMA = json.loads((PROJECT / "docs" / "schemas" / "migrate-output.schema.json").read_text())


@pytest.fixture
def world(tmp_path: Path) -> Iterator[tuple[FakeApiServer, Path, Path, GroveState]]:
    with FakeApiServer() as server:
        root, _, state = running(server, tmp_path)
        yield server, root, kubeconfig(server, tmp_path / "kubeconfig"), state


def _pod(server: FakeApiServer, host: str, state: GroveState) -> dict[str, Any]:
    found = server.get_object("pods", NS, state.pods[host]["metadata"]["name"])
    assert found is not None
    return found


def test_plan_prints_the_agents_steps_and_the_capacity_left(world: tuple[FakeApiServer, Path, Path, GroveState]) -> None:
    server, root, config, _ = world
    server.clear_requests()
    result = run_cli(*migrate_args("plan", root, config, "--output", "json"))
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["ok"] is True and list(doc)[:3] == ["ok", "schemaVersion", "problems"]
    jsonschema.validate(doc, SCHEMA)
    steps = doc["migration"]["steps"]
    assert [s["unit"] for s in steps] == [
        "podclique mig-0-router", "podclique mig-0-router",
        "scaling group mig-0-engine replica 0", "scaling group mig-0-engine replica 1",
    ]
    assert steps[2]["capacity"] == [
        {"role": "engine/leader", "replicaLeft": 1, "replicaTotal": 2, "left": 1, "total": 2},
        {"role": "engine/worker", "replicaLeft": 2, "replicaTotal": 4, "left": 2, "total": 4},
    ]
    assert all(s["state"] == "grove" and s["ready"] for s in doc["migration"]["slots"])
    markdown = run_cli(*migrate_args("plan", root, config, "--output", "markdown")).stdout
    assert "| 3 | 0 | scaling group mig-0-engine replica 0 |" in markdown
    assert not writes(server)


def _router_replicas(n: int) -> Callable[[str], str]:
    return lambda text: text.replace("replicas: 2\n          minAvailable: 1", f"replicas: {n}\n          minAvailable: 1", 1)


def _not_ready(server: FakeApiServer, state: GroveState) -> None:
    server.set_pod_condition(NS, state.pods["mig-0-router-1"]["metadata"]["name"], "Ready", "False")


def _mid_rollout(server: FakeApiServer, state: GroveState) -> None:
    Kube(server.api_client()).raw("PATCH", f"/apis/grove.io/v1alpha1/namespaces/{NS}/podcliquesets/{PCS}/status",
                                  {"status": {"updateProgress": {"updateStartedAt": "2026-01-01T00:00:00Z"}}}, MERGE)


def _second_pod_in_a_slot(server: FakeApiServer, state: GroveState) -> None:
    pod = _pod(server, "mig-0-router-0", state)
    pod["metadata"] = {k: v for k, v in pod["metadata"].items() if k in ("labels", "ownerReferences", "namespace")}
    pod["metadata"]["name"] = "mig-0-router-zzzzz"
    Kube(server.api_client()).raw("POST", f"/api/v1/namespaces/{NS}/pods", pod)


def _stray(server: FakeApiServer, state: GroveState) -> None:
    pod = _pod(server, "mig-0-router-0", state)
    pod["metadata"] = {"name": "lookalike", "namespace": NS, "labels": {adoption.PART_OF: PCS, adoption.MANAGED_BY: "someone"}}
    Kube(server.api_client()).raw("POST", f"/api/v1/namespaces/{NS}/pods", pod)


def _two_replicas(text: str) -> str:
    return text.replace("spec:\n  replicas: 1", "spec:\n  replicas: 2", 1)


CASES: list[tuple[str, Callable[[str], str] | None, Callable[[FakeApiServer, GroveState], None] | None, str]] = [
    ("other shape", _router_replicas(3), None, "replicas of PodClique mig-0-router differ: live 2, render 3"),
    ("other replicas", _two_replicas, None, "replicas differ: the live PodCliqueSet has 1, the render 2"),
    ("a pod not Ready", None, _not_ready, "pods not Ready"),
    ("mid-rollout", None, _mid_rollout, "mid-rollout"),
    ("two pods in a slot", None, _second_pod_in_a_slot, "slot migrate-demo/mig-0-router-0 is held by 2 pods"),
    ("a stray pod", None, _stray, "neither Grove's, handed over, nor rendered: lookalike"),
]


@pytest.mark.parametrize(("edit", "change", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_workload_that_does_not_match_is_refused_and_nothing_is_written(
    world: tuple[FakeApiServer, Path, Path, GroveState], tmp_path: Path,
    edit: Callable[[str], str] | None, change: Callable[[FakeApiServer, GroveState], None] | None, expected: str,
) -> None:
    server, root, config, state = world
    if edit is not None:
        root = source(tmp_path / "edited", edit)
    if change is not None:
        change(server, state)
    server.clear_requests()
    for command in ("plan", "apply"):
        result = run_cli(*migrate_args(command, root, config, "--grove-operator-stopped")[: None if command == "apply" else -1])
        assert result.exit_code == 1, result.output
        assert "REFUSED (nothing changed)" in result.stdout and expected in result.stdout, result.stdout
    assert not writes(server)
    assert server.get_object("podcliquesets.grove.io", NS, PCS) is not None


def test_a_podcliqueset_the_render_lacks_is_refused(world: tuple[FakeApiServer, Path, Path, GroveState]) -> None:
    server, root, config, _ = world
    server.clear_requests()
    result = run_cli("apply", str(root), "-n", NS, "--podcliqueset", "other", "--kubeconfig", str(config),
                     "--grove-operator-stopped", "--output", "json")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc["ok"] is False and "is not in the render" in doc["problems"][0]["message"]
    jsonschema.validate(doc, SCHEMA)
    assert not writes(server)


def test_apply_needs_the_operator_stopped(world: tuple[FakeApiServer, Path, Path, GroveState]) -> None:
    server, root, config, _ = world
    server.clear_requests()
    result = run_cli(*migrate_args("apply", root, config))
    assert result.exit_code == 1 and "--grove-operator-stopped" in result.stderr
    assert not writes(server)


def test_apply_hands_every_pod_over_and_orphans_grove_s_objects(world: tuple[FakeApiServer, Path, Path, GroveState]) -> None:
    server, root, config, state = world
    result = run_cli(*migrate_args("apply", root, config, "--grove-operator-stopped"))
    assert result.exit_code == 0, result.output
    for host, before in state.pods.items():
        pod = _pod(server, host, state)
        assert pod["metadata"]["uid"] == before["metadata"]["uid"], "the running pod itself, not a copy"
        assert pod["metadata"]["labels"][adoption.MANAGED_BY] == adoption.GITOPS
        assert not pod["metadata"].get("ownerReferences")
        found = adoption.claim(pod)
        assert found is not None and found.hostname == host
    for plural in ("podcliques", "podcliquescalinggroups", "podcliquesets"):
        assert not server.store.list_objects(f"{plural}.grove.io", NS), plural
    service = server.get_object("services", NS, "mig-0")
    assert service is not None and adoption.MANAGED_BY not in service["spec"]["selector"]
    gang = server.get_object("podgangs.scheduler.grove.io", NS, "mig-0")
    assert gang is not None and gang["metadata"]["labels"][adoption.MANAGED_BY] == adoption.GITOPS
    assert not gang["metadata"].get("ownerReferences")
    assert gang["status"]["conditions"][0]["type"] == "Initialized"
    # Run again: nothing left to write.
    server.clear_requests()
    again = run_cli(*migrate_args("apply", root, config, "--grove-operator-stopped"))
    assert again.exit_code == 0 and "handed over with 0 writes" in again.stderr, again.output
    assert not writes(server)


def test_an_interrupted_hand_over_is_finished_by_running_it_again(world: tuple[FakeApiServer, Path, Path, GroveState]) -> None:
    """What a kill -9 of `migrate apply` after its first pod leaves: one pod handed over, the rest
    and every grove.io object as they were."""
    server, root, config, state = world
    first = _pod(server, "mig-0-router-0", state)
    Kube(server.api_client()).raw("PATCH", f"/api/v1/namespaces/{NS}/pods/{first['metadata']['name']}", {"metadata": {
        "labels": {adoption.MANAGED_BY: adoption.GITOPS}, "annotations": {adoption.ADOPT: adoption.marker(first)},
        "ownerReferences": None}}, MERGE)
    plan = run_cli(*migrate_args("plan", root, config, "--output", "json"))
    assert plan.exit_code == 0, plan.output
    states = {s["hostname"]: s["state"] for s in json.loads(plan.stdout)["migration"]["slots"]}
    assert states["mig-0-router-0"] == "adopted" and list(states.values()).count("grove") == 7
    result = run_cli(*migrate_args("apply", root, config, "--grove-operator-stopped"))
    assert result.exit_code == 0, result.output
    assert all(adoption.claim(_pod(server, h, state)) is not None for h in state.pods)
    assert not server.store.list_objects("podcliquesets.grove.io", NS)


def test_the_cli_starts_without_the_kubernetes_client() -> None:
    """``migrate`` loads only when it runs: ``diff`` in a CI job does not pay for the client."""
    import subprocess
    import sys

    code = "import sys, grove_gitops.cli.main; print('kubernetes' in sys.modules, 'grove_gitops.cli.migrate' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=PROJECT)
    assert out.stdout.split() == ["False", "False"]


def test_a_render_applied_before_the_hand_over_is_refused(world: tuple[FakeApiServer, Path, Path, GroveState], tmp_path: Path) -> None:
    """Applied early, the render's gated pods sit beside Grove's pods, which the agent does not
    see: handing over now would let it release them beside Grove's. Refused, nothing written."""
    server, root, config, _ = world
    objs = render(root)
    kube = Kube(server.api_client())
    for pod in (o for o in objs if o["kind"] == "Pod" and o["spec"]["hostname"] == "mig-0-router-0"):
        kube.raw("POST", f"/api/v1/namespaces/{NS}/pods", pod)
    server.clear_requests()
    result = run_cli(*migrate_args("apply", root, config, "--grove-operator-stopped"))
    assert result.exit_code == 1
    assert "the render was applied before `migrate apply`" in result.stdout, result.stdout
    assert not writes(server)
