"""Helpers for gate-lifter tests: apply rendered objects to the fake API server, run a lifter."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes.client
import yaml

from grove_gitops.agent.kube import Kube
from grove_gitops.agent.loop import Agent, AgentConfig
from grove_gitops.metrics import Registry
from grove_gitops.output.layout import build_tree
from grove_gitops.render import render_source
from tests.fakeserver import FakeApiServer

WAVE = "argocd.argoproj.io/sync-wave"


def rendered_objects(source: Path) -> list[dict[str, Any]]:
    """Objects as Argo CD would read them from the rendered files, in wave then file order."""
    tree = build_tree(render_source(source))
    objs = [
        yaml.safe_load(data)
        for rel, data in sorted(tree.files.items())
        if rel.endswith(".yaml") and not rel.endswith("kustomization.yaml")
    ]
    return sorted(objs, key=lambda o: int(o["metadata"].get("annotations", {}).get(WAVE, "0")))


def path_of(kube: Kube, obj: dict[str, Any], with_name: bool = False) -> str:
    api = obj["apiVersion"]
    plural = kube.plural(api, obj["kind"])
    assert plural, f"{api} {obj['kind']} not served"
    base = f"/apis/{api}" if "/" in api else f"/api/{api}"
    ns = obj["metadata"].get("namespace")
    path = f"{base}/namespaces/{ns}/{plural}" if ns else f"{base}/{plural}"
    return f"{path}/{obj['metadata']['name']}" if with_name else path


def apply(kube: Kube, objs: list[dict[str, Any]]) -> None:
    """POST every object (what a first Argo CD / Flux sync does)."""
    for obj in objs:
        kube.raw("POST", path_of(kube, obj), obj)


@contextlib.contextmanager
def running_lifter(server: FakeApiServer, **config: Any) -> Iterator[Agent]:
    kube = Kube(server.api_client())
    lifter = Agent(kube, AgentConfig(**config), Registry())
    stop = threading.Event()
    thread = threading.Thread(target=lifter.run, args=(stop,), daemon=True)
    thread.start()
    try:
        yield lifter
    finally:
        stop.set()
        thread.join(timeout=10)
        assert not thread.is_alive()


def gated(server: FakeApiServer, namespace: str | None = None) -> list[str]:
    """Names of pods that still carry any scheduling gate (read from the store, not HTTP)."""
    return sorted(
        pod["metadata"]["name"]
        for pod in server.store.list_objects("pods", namespace)
        if (pod.get("spec") or {}).get("schedulingGates")
    )


def api_client(server: FakeApiServer) -> kubernetes.client.ApiClient:
    return server.api_client()
