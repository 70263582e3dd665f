"""A fake API server with Grove's, the schedulers' and our own CRDs, Git applied, an agent running.

The autoscaling tests' world: :class:`ScalingEnv` renders a source tree, applies Git's
objects (the controller's output, with the GitOps annotations of the output stage) over real
HTTP with the official client, runs the whole agent (day-2 loop and autoscaling loop) in a
thread, and reads back every object of the namespace for comparison.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from kubernetes.client.exceptions import ApiException

from grove_gitops.agent.kube import Kube
from grove_gitops.agent.loop import Agent, AgentConfig
from grove_gitops.expand.scaling import API_VERSION, PCSG_KIND
from grove_gitops.output.gitopsmeta import annotate, wave_of
from grove_gitops.render import CLUSTER_SHARD, RenderedObject, plan_source
from tests.fakeserver import FakeApiServer

#: Fields the API server owns, and what the agent changes on every released pod.
SERVER_FIELDS = ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "ownerReferences")


def start_server(tmp: Path) -> FakeApiServer:
    """The default fake server: Grove's, the schedulers' and our CRDs (overlays/crds), and HPAs.
    (``tmp`` is unused: kept so every world of a test is started the same way.)"""
    return FakeApiServer().start()


def decorated(objects: list[RenderedObject], flavour: str) -> list[dict[str, Any]]:
    """The objects as the output stage writes them to Git (sync waves, prune options)."""
    out = []
    for item in objects:
        obj = {**item.obj, "metadata": dict(item.obj.get("metadata") or {})}
        annotate(obj, wave_of(obj, item.shard == CLUSTER_SHARD), flavour)
        out.append(obj)
    return out


def render_at(source: Path, counts: dict[tuple[int, str], int] | None = None) -> list[dict[str, Any]]:
    """Git's objects (``counts`` None) or every object at ``counts``, of every PodCliqueSet."""
    plan = plan_source(source)
    objects: list[RenderedObject] = list(plan.extra)
    for item in plan.items:
        rendered, _ = plan.expand(item, counts)
        objects += rendered
    return decorated(objects, plan.config.gitops)


def normalised(obj: dict[str, Any]) -> str:
    """Canonical JSON without the fields the server or the day-2 loop own."""
    obj = json.loads(json.dumps(obj))
    meta = obj.get("metadata") or {}
    for key in SERVER_FIELDS:
        meta.pop(key, None)
    obj.pop("status", None)
    if obj.get("kind") == "Pod":
        obj.get("spec", {}).pop("schedulingGates", None)
    return json.dumps(obj, sort_keys=True)


class ScalingEnv:
    def __init__(self, tmp: Path, namespace: str, **agent: Any) -> None:
        self.server = start_server(tmp)
        self.kube = Kube(self.server.api_client())
        self.namespace = namespace
        self.kube.raw("POST", "/api/v1/namespaces",
                      {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        settings: dict[str, Any] = {"recheck": 0.05, "resync": 0.2, "grace": 1.0, "watch_read_timeout": 0.5}
        settings.update(agent)
        self.agent = Agent(self.kube, AgentConfig(**settings))
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def apply(self, objects: list[dict[str, Any]]) -> None:
        """Create or replace every namespaced object (a plain applier: no pruning)."""
        for obj in objects:
            meta = obj["metadata"]
            if not meta.get("namespace"):
                continue
            try:
                self.kube.create(obj)
            except ApiException as exc:
                if exc.status != 409:
                    raise

    def start_agent(self) -> None:
        self._thread = threading.Thread(target=self.agent.run, args=(self._stop,), daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self.server.stop()

    def scale(self, name: str, replicas: int, kind: str = PCSG_KIND) -> dict[str, Any]:
        return self.kube.patch_object(API_VERSION, kind, self.namespace, name, {"spec": {"replicas": replicas}},
                                      subresource="scale")

    def target(self, name: str, kind: str = PCSG_KIND) -> dict[str, Any] | None:
        with contextlib.suppress(ApiException):
            return self.kube.raw("GET", f"/apis/{API_VERSION}/namespaces/{self.namespace}/{kind.lower()}s/{name}")
        return None

    def objects(self, kinds: set[tuple[str, str]]) -> dict[tuple[str, str], dict[str, Any]]:
        """Every object of these (apiVersion, kind) in the namespace, by (kind, name)."""
        out = {}
        for api_version, kind in sorted(kinds):
            listed = self.kube.list_objects(api_version, kind, self.namespace, "")
            for item in listed.get("items") or []:
                if (item.get("metadata") or {}).get("deletionTimestamp"):
                    continue
                item["apiVersion"], item["kind"] = api_version, kind
                out[(kind, item["metadata"]["name"])] = item
        return out


def wait_until(predicate: Callable[[], bool], timeout: float = 30.0, interval: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


@contextlib.contextmanager
def scaling_env(tmp: Path, namespace: str, **agent: Any) -> Iterator[ScalingEnv]:
    env = ScalingEnv(tmp, namespace, **agent)
    try:
        yield env
    finally:
        env.close()
