"""The GitOps applier simulator follows Argo CD's and Flux's rules (no agent, no kubelet)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.day2.applier import Applier, Mode, read_tree
from tests.day2.harness import EXAMPLES, render, start_server
from tests.day2.rest import Raw, Rest

NS = "inference"
SERVICE = ("v1", "Service", NS, "llama-disagg-0")
GANG = ("scheduler.grove.io/v1alpha1", "PodGang", NS, "llama-disagg-0")


@contextlib.contextmanager
def applied(tmp_path: Path, mode: Mode) -> Iterator[tuple[Applier, Rest, Path]]:
    out = tmp_path / "out"
    render(EXAMPLES, out)
    server = start_server()
    try:
        applier = Applier(server.api_client(), out, mode=mode)
        first = applier.sync()
        assert len(first.created) == len(read_tree(out))
        yield applier, Rest(server.api_client()), out
        assert server.internal_errors == []
    finally:
        server.stop()


def _file(out: Path, pattern: str) -> Path:
    (path,) = out.rglob(pattern)
    return path


def _pods(rest: Rest) -> dict[str, Raw]:
    return {p["metadata"]["name"]: p for p in rest.request("GET", f"/api/v1/namespaces/{NS}/pods")["items"]}


def _set_annotations(path: Path, **annotations: str | None) -> None:
    obj = yaml.safe_load(path.read_text())
    current = obj["metadata"].setdefault("annotations", {})
    for key, value in annotations.items():
        if value is None:
            current.pop(key, None)
        else:
            current[key] = value
    path.write_text(yaml.safe_dump(obj))


def test_applies_in_wave_order_and_a_second_sync_writes_nothing(tmp_path: Path) -> None:
    with applied(tmp_path, "argocd") as (applier, _rest, out):
        kinds = [r[1] for r in applier.sync().created]
        assert kinds == []  # everything exists
        before = applier.rest.writes
        result = applier.sync()
        assert (result.created, result.updated, result.pruned) == ([], [], [])
        assert applier.rest.writes == before
        order = [obj["kind"] for obj in read_tree(out)]
        assert order.index("Namespace") < order.index("ServiceAccount") < order.index("PodGang") < order.index("Pod")


@pytest.mark.parametrize("mode", ["argocd", "flux"])
def test_pods_left_out_of_git_survive_other_objects_are_pruned(tmp_path: Path, mode: Mode) -> None:
    with applied(tmp_path, mode) as (applier, rest, out):
        pod_file = _file(out, "*-pod--llama-disagg-0-router-0-*.yaml")
        pod_name = yaml.safe_load(pod_file.read_text())["metadata"]["name"]
        pod_file.unlink()
        _file(out, "*-service--llama-disagg-0.yaml").unlink()
        result = applier.sync()
        assert result.pruned == [SERVICE]
        assert [r[3] for r in result.kept] == [pod_name]
        assert rest.get("v1", "Service", NS, "llama-disagg-0") is None
        assert pod_name in _pods(rest)
        # Argo CD keeps tracking the pod as extraneous; Flux forgets it. Neither deletes it later.
        assert bool(applier.extraneous) == (mode == "argocd")
        applier.sync()
        assert pod_name in _pods(rest)


@pytest.mark.parametrize(
    ("mode", "other_tools_annotation"),
    [("argocd", {"kustomize.toolkit.fluxcd.io/prune": "disabled"}),
     ("flux", {"argocd.argoproj.io/sync-options": "Prune=false"})],
)
def test_each_tool_honours_only_its_own_prune_annotation(
    tmp_path: Path, mode: Mode, other_tools_annotation: dict[str, str]
) -> None:
    out = tmp_path / "out"
    render(EXAMPLES, out)
    pod_file = _file(out, "*-pod--llama-disagg-0-router-0-*.yaml")
    cleared: dict[str, str | None] = {"argocd.argoproj.io/sync-options": None, "kustomize.toolkit.fluxcd.io/prune": None}
    _set_annotations(pod_file, **{**cleared, **other_tools_annotation})
    pod_name = yaml.safe_load(pod_file.read_text())["metadata"]["name"]
    server = start_server()
    try:
        applier = Applier(server.api_client(), out, mode=mode)
        applier.sync()
        pod_file.unlink()
        result = applier.sync()
        assert [r[3] for r in result.pruned] == [pod_name]
        assert pod_name not in _pods(Rest(server.api_client()))
    finally:
        server.stop()


def test_the_live_annotation_decides_not_the_file(tmp_path: Path) -> None:
    """An object removed from Git is no longer in any file: the tool reads the live copy."""
    with applied(tmp_path, "argocd") as (applier, rest, out):
        path = _file(out, "*-service--llama-disagg-0.yaml")
        _set_annotations(path, **{"argocd.argoproj.io/sync-options": "Prune=false,ServerSideApply=true"})
        assert applier.sync().updated == [SERVICE]
        path.unlink()
        assert applier.sync().kept == [SERVICE]
        assert rest.get("v1", "Service", NS, "llama-disagg-0") is not None


def test_a_deleted_pod_is_recreated_and_a_live_pod_never_modified(tmp_path: Path) -> None:
    with applied(tmp_path, "flux") as (applier, rest, out):
        pod_file = _file(out, "*-pod--llama-disagg-0-router-0-*.yaml")
        name = yaml.safe_load(pod_file.read_text())["metadata"]["name"]
        old_uid = _pods(rest)[name]["metadata"]["uid"]
        rest.request("DELETE", f"/api/v1/namespaces/{NS}/pods/{name}")
        assert [r[3] for r in applier.sync().created] == [name]  # selfHeal / the reconcile interval
        live = _pods(rest)[name]
        assert live["metadata"]["uid"] != old_uid
        assert live["spec"]["schedulingGates"]  # re-created gated, as in Git
        _set_annotations(pod_file, team="changed-in-git")
        before = applier.rest.writes
        result = applier.sync()
        assert (result.created, result.updated) == ([], [])
        assert applier.rest.writes == before
        assert "team" not in _pods(rest)[name]["metadata"].get("annotations", {})


def test_a_changed_podgang_gets_git_spec_and_keeps_its_status(tmp_path: Path) -> None:
    with applied(tmp_path, "argocd") as (applier, rest, out):
        path = _file(out, "*-podgang.scheduler.grove.io--llama-disagg-0.yaml")
        status = {"phase": "Running", "conditions": [{"type": "Initialized", "status": "True",
                  "reason": "Ready", "message": "x", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
        rest.request("PATCH", rest.path(GANG[0], GANG[1], NS, GANG[3]) + "/status", {"status": status},
                     "application/merge-patch+json")
        gang = yaml.safe_load(path.read_text())
        gang["spec"]["podgroups"] = gang["spec"]["podgroups"][:-1]
        path.write_text(yaml.safe_dump(gang))
        assert applier.sync().updated == [GANG]
        live = rest.get(*GANG)
        assert live is not None
        assert live["spec"]["podgroups"] == gang["spec"]["podgroups"]
        assert live["status"] == status



def test_an_update_that_conflicts_with_another_writer_still_lands_in_its_wave(tmp_path: Path) -> None:
    """Argo CD and Flux apply server-side, with no resourceVersion precondition: the agent
    writing the PodGang's status between the applier's list and its update must not leave the
    PodGang behind while the pod wave goes on (on the real control plane that let a rollout
    start from a half-applied revision). The first update is answered 409, as the server
    answers a stale resourceVersion."""
    out = tmp_path / "out"
    render(EXAMPLES, out)
    server = start_server()
    try:
        applier = Applier(server.api_client(), out)
        applier.sync()
        path = _file(out, "*-podgang.scheduler.grove.io--llama-disagg-0.yaml")
        gang = yaml.safe_load(path.read_text())
        gang["spec"]["podgroups"] = gang["spec"]["podgroups"][:-1]
        path.write_text(yaml.safe_dump(gang))
        server.faults.add("update", "podgangs", namespace=NS, name=GANG[3], status=409, message="the object has been modified")
        assert applier.sync().updated == [GANG]
        live = Rest(server.api_client()).get(*GANG)
        assert live is not None and live["spec"]["podgroups"] == gang["spec"]["podgroups"]
        assert server.faults.pending == []  # the conflict was met, not dodged
    finally:
        server.stop()

def _rv(rest: Rest, kind: str, name: str) -> int:
    api_version = "v1" if kind == "Pod" else "scheduler.grove.io/v1alpha1"
    live = rest.get(api_version, kind, NS, name)
    assert live is not None
    return int(live["metadata"]["resourceVersion"])


def _bump_router_and_gang(out: Path) -> tuple[str, str]:
    """A rollout step in Git: router-0 gets a new pod name, its PodGang lists it."""
    pod_file = _file(out, "*-pod--llama-disagg-0-router-0-*.yaml")
    pod = yaml.safe_load(pod_file.read_text())
    old_name = pod["metadata"]["name"]
    new_name = "llama-disagg-0-router-0-newpod00"
    pod["metadata"]["name"] = new_name
    pod_file.unlink()
    (pod_file.parent / f"30-pod--{new_name}.yaml").write_text(yaml.safe_dump(pod))
    gang_file = _file(out, "*-podgang.scheduler.grove.io--llama-disagg-0.yaml")
    gang_file.write_text(gang_file.read_text().replace(old_name, new_name))
    return old_name, new_name


@pytest.mark.parametrize("pods_first", [False, True], ids=["waves", "pods-first"])
def test_waves_apply_in_order_with_a_delay_only_between_waves_that_write(tmp_path: Path, pods_first: bool) -> None:
    with applied(tmp_path, "argocd") as (applier, rest, out):
        applier.wave_delay, applier.pods_first = 0.5, pods_first
        _, new_name = _bump_router_and_gang(out)
        began = time.monotonic()
        result = applier.sync()
        took = time.monotonic() - began
        assert GANG in result.updated and ("v1", "Pod", NS, new_name) in result.created
        pod_rv, gang_rv = _rv(rest, "Pod", new_name), _rv(rest, "PodGang", GANG[3])
        assert (pod_rv < gang_rv) == pods_first  # Argo CD: the PodGang (wave 0) first
        assert took >= 0.5  # the wave delay passed between the two writing waves
        applier.wave_delay = 30.0
        began = time.monotonic()
        assert applier.sync().created == []
        assert time.monotonic() - began < 30.0  # nothing to write: no wave waits


def test_a_hold_stalls_matching_writes_until_released_or_its_time_is_up(tmp_path: Path) -> None:
    with applied(tmp_path, "argocd") as (applier, rest, out):
        _, new_name = _bump_router_and_gang(out)
        pod_ref = ("v1", "Pod", NS, new_name)
        forever = applier.hold(lambda o: o["metadata"]["name"] == new_name)
        briefly = applier.hold(lambda o: o["kind"] == "PodGang", seconds=0.3)
        result = applier.sync()
        assert set(result.held) == {pod_ref, GANG}
        assert new_name not in _pods(rest)
        time.sleep(0.35)
        result = applier.sync()
        assert (result.held, result.updated) == ([pod_ref], [GANG])  # the PodGang's stall is over
        assert briefly.held == {GANG} and set(briefly.applied) == {GANG}
        forever.release()
        assert applier.sync().created == [pod_ref]
        assert new_name in _pods(rest) and forever.applied.keys() == {pod_ref}
