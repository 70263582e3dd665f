"""The fake API server with a running Grove workload on it (tests/migrate/workload.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from grove_gitops.agent.kube import Kube
from tests.fakeserver import FakeApiServer
from tests.gatelifter.support import path_of
from tests.migrate.workload import NS, GroveState, Obj, render, source


def kubeconfig(server: FakeApiServer, path: Path) -> Path:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "fake",
        "clusters": [{"name": "fake", "cluster": {"server": server.url}}],
        "users": [{"name": "admin", "user": {"token": "fake"}}],
        "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "admin"}}],
    }))
    return path


def running(server: FakeApiServer, tmp: Path) -> tuple[Path, list[Obj], GroveState]:
    """Grove's workload as its operator left it: every pod scheduled, Running and Ready."""
    root = source(tmp / "src")
    objs = render(root)
    kube = Kube(server.api_client())
    kube.raw("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})

    def create(obj: Obj) -> Obj:
        return kube.raw("POST", path_of(kube, obj), obj)

    def status(obj: Obj, value: dict[str, Any]) -> Obj:
        return kube.raw("PATCH", path_of(kube, obj, with_name=True) + "/status", {"status": value},
                        "application/merge-patch+json")

    state = GroveState(objs, create, status)
    pcs_doc = next(d for d in yaml.safe_load_all((root / "workloads" / "mig.yaml").read_text()) if d)
    state.build(pcs_doc)
    for pod in state.pods.values():
        name = pod["metadata"]["name"]
        server.schedule_pod(NS, name)
        server.store.update("pods", NS, name, lambda p: p.setdefault("status", {}).update({"phase": "Running"}))
        server.set_pod_condition(NS, name, "Ready", "True")
    return root, objs, state


def run_cli(*args: str) -> Any:
    from click.testing import CliRunner

    from grove_gitops.cli import main

    return CliRunner().invoke(main, ["migrate", *args], catch_exceptions=False)


def migrate_args(command: str, root: Path, config: Path, *extra: str) -> list[str]:
    from tests.migrate.workload import PCS

    return [command, str(root), "-n", NS, "--podcliqueset", PCS, "--kubeconfig", str(config), *extra]


def sync(server: FakeApiServer, objs: list[Obj]) -> None:
    """The GitOps tool's apply of the render: created, or merged into the object of that name."""
    from kubernetes.client.exceptions import ApiException

    kube = Kube(server.api_client())
    for obj in objs:
        if obj["kind"] == "Namespace":
            continue
        try:
            kube.raw("POST", path_of(kube, obj), obj)
        except ApiException as exc:
            assert exc.status == 409, exc.body
            kube.raw("PATCH", path_of(kube, obj, with_name=True), obj, "application/merge-patch+json")


def writes(server: FakeApiServer) -> list[str]:
    """Every write request the server has seen (method and path)."""
    return [f"{r.verb} {r.path}" for r in server.requests if r.verb in ("create", "update", "patch", "delete", "deletecollection")]
