"""``FakeApiServer``: a strict, in-process Kubernetes API server for tests of controllers.

No kube-apiserver can be installed on the project's machines (see
``shared/spec/test-apiserver.md``), so controller tests run against this: real HTTP to the
unmodified official ``kubernetes`` client, with the semantics a controller's correctness rests
on — resourceVersion conflicts, the scheduling-gate rules, schema validation against the real
CRDs and Kubernetes' own schemas, status subresources, and watches that resume, expire (410)
and break. It starts in milliseconds on 127.0.0.1 with an OS-assigned port.

Usage::

    with FakeApiServer() as server:
        core = kubernetes.client.CoreV1Api(server.api_client())
        core.create_namespaced_pod("default", pod)
        server.faults.add(verb="patch", resource="pods", status=409, times=1)
        ...
        assert server.requests_count(verb="patch", resource="pods") == 2
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from os import PathLike
from pathlib import Path
from typing import Any

import kubernetes.client

from tests.fakeserver.app import ApiApp
from tests.fakeserver.crds import load_crd_documents, resource_types_from_crd
from tests.fakeserver.faults import FaultInjector, RequestLog, RequestRecord
from tests.fakeserver.handlers import ApiHandlers
from tests.fakeserver.http_server import HttpServer
from tests.fakeserver.pods import set_condition
from tests.fakeserver.resources import ResourceRegistry, ResourceType, builtin_types
from tests.fakeserver.schema import CrdSchemaValidator
from tests.fakeserver.store import Store
from tests.fakeserver.validation import KubernetesSchemaValidator, Validator

JsonObj = dict[str, Any]
DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


def _project_root() -> Path | None:
    for parent in Path(__file__).resolve().parents:
        if (parent / "pyproject.toml").is_file():
            return parent
    return None


def project_crd_dir() -> Path | None:
    """``<project root>/overlays/crds`` (the project's own CRDs), if present: served by default
    beside the shared ones; a bare kind name shared with Grove ("PodClique") then needs its group
    ("podcliques.gitops.grove.io")."""
    root = _project_root()
    candidate = root / "overlays" / "crds" if root else None
    return candidate if candidate and candidate.is_dir() else None


def default_crd_dir() -> Path | None:
    """``<project root>/../shared/crds`` (the project root holds pyproject.toml), if present."""
    root = _project_root()
    candidate = root.parent / "shared" / "crds" if root else None
    return candidate if candidate and candidate.is_dir() else None


class _Default:
    """Marker for "use the project's shared CRDs" (``None`` means no CRDs at all)."""


DEFAULT = _Default()


class FakeApiServer:
    """An HTTP fake of kube-apiserver, usable as a context manager or via start()/stop().

    Parameters:
        crd_dir: directory of CRD YAML to serve (default: the project's ``../shared/crds``;
            ``None`` for none).
        cr_validator: ``obj -> list[str]`` for custom resources (default: the CRD's
            ``openAPIV3Schema`` via jsonschema, unknown fields rejected).
        builtin_validator: ``obj -> list[str]`` for built-in kinds (default:
            ``kubernetes_validate`` strict schemas for ``kubernetes_version``).
        extra_crds: more CRD YAML files or directories served besides ``crd_dir`` (e.g.
            :func:`project_crd_dir`); a later definition of the same group/version/plural wins.
        kubernetes_version: Kubernetes release the built-in schemas, ``/version`` and the
            CEL error format follow.
        event_window: how many watch events are retained before older ones count as compacted.
        max_watch_seconds: cap on any one watch (the client's ``timeout_seconds`` is honoured
            below it), so no stream outlives a test.
        namespaces: namespaces that exist at start (creating into a missing one is a 404).
    """

    def __init__(
        self,
        crd_dir: str | PathLike[str] | _Default | None = DEFAULT,
        cr_validator: Validator | None = None,
        builtin_validator: Validator | None = None,
        *,
        extra_crds: Sequence[str | PathLike[str]] = (),
        kubernetes_version: str = "1.35.0",
        event_window: int = 1000,
        max_watch_seconds: float = 60.0,
        namespaces: tuple[str, ...] = DEFAULT_NAMESPACES,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.kubernetes_version = kubernetes_version
        self.registry = ResourceRegistry()
        for rt in builtin_types():
            self.registry.register(rt)
        resolved = (
            default_crd_dir() if isinstance(crd_dir, _Default) else (Path(crd_dir) if crd_dir else None)
        )
        self.crd_dir = resolved
        self.extra_crds = tuple(Path(p) for p in extra_crds)
        if isinstance(crd_dir, _Default):
            # A cluster running the agent has its CRDs (overlays/crds) and serves the
            # autoscaling/v2 HorizontalPodAutoscalers the render writes (docs/autoscaling.md).
            ours = project_crd_dir()
            self.extra_crds += (ours,) if ours is not None and ours not in self.extra_crds else ()
            self.registry.register(
                ResourceType("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler",
                             namespaced=True, has_status=True, builtin=True)
            )
        for source in [*([resolved] if resolved is not None else []), *self.extra_crds]:
            if not source.exists():
                raise FileNotFoundError(f"CRD file or directory {source} does not exist")
            for crd in load_crd_documents(source):
                for rt in resource_types_from_crd(crd):
                    self.registry.register(rt)
        self.store = Store(self.registry, event_window=event_window)
        self.faults = FaultInjector()
        self._log = RequestLog()
        self.handlers = ApiHandlers(
            self.registry,
            self.store,
            builtin_validator=builtin_validator or KubernetesSchemaValidator(kubernetes_version),
            cr_validator=cr_validator or CrdSchemaValidator(self.registry),
            max_watch_seconds=max_watch_seconds,
            kubernetes_version=kubernetes_version,
        )
        self._stopping = threading.Event()
        self._address = (host, port)
        self.app = ApiApp(
            self.registry,
            self.handlers,
            self.faults,
            self._log,
            kubernetes_version=kubernetes_version,
            server_address=lambda: self.address,
            stopping=self._stopping,
        )
        for namespace in namespaces:
            self.store.put(
                {
                    "apiVersion": "v1",
                    "kind": "Namespace",
                    "metadata": {"name": namespace, "labels": {"kubernetes.io/metadata.name": namespace}},
                    "spec": {"finalizers": ["kubernetes"]},
                    "status": {"phase": "Active"},
                }
            )
        self._httpd: HttpServer | None = None
        self._thread: threading.Thread | None = None
        self._clients: list[kubernetes.client.ApiClient] = []
        self._clients_lock = threading.Lock()

    # ----------------------------------------------------------------------------- lifecycle
    def start(self) -> FakeApiServer:
        """Bind and serve in a background thread (idempotent)."""
        if self._httpd is not None:
            return self
        self._httpd = HttpServer(self._address, self.app)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.02},
            name="fakeapi-accept",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """End watches cleanly, close every connection, join every thread, close api clients."""
        httpd = self._httpd
        if httpd is None:
            return
        self._stopping.set()
        self.store.close()
        httpd.shutdown()
        deadline = time.monotonic() + timeout
        if self._thread is not None:
            self._thread.join(timeout)
        # Give watch handlers a moment to write their terminating chunk before sockets are cut.
        while httpd.open_watches and time.monotonic() < deadline:
            time.sleep(0.01)
        httpd.close_connections(max(0.0, deadline - time.monotonic()))
        httpd.server_close()
        self._httpd = None
        with self._clients_lock:
            clients, self._clients = self._clients, []
        for client in clients:
            client.close()  # type: ignore[no-untyped-call]

    def __enter__(self) -> FakeApiServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def address(self) -> str:
        if self._httpd is None:
            raise RuntimeError("FakeApiServer is not running")
        host, port = self._httpd.server_address[:2]
        return f"{host!s}:{port}"

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://{self.address}"

    def configuration(self) -> kubernetes.client.Configuration:
        """A client ``Configuration`` for this server (plain HTTP, no auth)."""
        config = kubernetes.client.Configuration()
        config.host = self.url
        config.verify_ssl = False
        return config

    def restrict(self, token: str, rights: Iterable[tuple[str, str, str]]) -> None:
        """Requests bearing ``token`` are a restricted caller's, holding only ``rights`` —
        (verb, API group, resource) such as ``("update", "grove.io", "podcliquesets/finalizers")``
        — as far as ownerReferences admission asks (see ``owners``); everyone else is an admin."""
        self.handlers.restricted[token] = frozenset(rights)

    def api_client(self, token: str | None = None) -> kubernetes.client.ApiClient:
        """A new ``ApiClient`` bound to this server (sending ``token`` if given); closed by :meth:`stop`."""
        config = self.configuration()
        if token is not None:
            config.api_key = {"BearerToken": f"Bearer {token}"}
        client = kubernetes.client.ApiClient(config)
        with self._clients_lock:
            self._clients.append(client)
        return client

    # ----------------------------------------------------------------------------- types
    def register_resource(
        self,
        group: str,
        version: str,
        plural: str,
        kind: str,
        namespaced: bool = True,
        has_status: bool = False,
        *,
        schema: JsonObj | None = None,
        short_names: tuple[str, ...] = (),
        builtin: bool | None = None,
    ) -> ResourceType:
        """Serve an extra type, e.g. ``scheduling.k8s.io/v1alpha1`` Workload.

        Without ``schema`` it counts as a built-in (validated by the built-in validator, which
        knows the Kubernetes kinds of ``kubernetes_version``); with ``schema`` (an
        ``openAPIV3Schema``) it is a custom resource.
        """
        rt = ResourceType(
            group,
            version,
            plural,
            kind,
            namespaced=namespaced,
            has_status=has_status,
            short_names=short_names,
            builtin=schema is None if builtin is None else builtin,
            returns_deleted_object=schema is not None,
            schema=schema,
        )
        self.registry.register(rt)
        return rt

    # ----------------------------------------------------------------------------- observation
    @property
    def requests(self) -> list[RequestRecord]:
        """Snapshot of every request so far: (verb, path, resource, namespace, name, status)."""
        return self._log.snapshot()

    def requests_count(
        self,
        verb: str | None = None,
        resource: str | None = None,
        namespace: str | None = None,
        name: str | None = None,
        status: int | None = None,
    ) -> int:
        """Count logged requests matching all given filters (``resource`` like ``pods/status``)."""
        return self._log.count(verb, resource, namespace, name, status)

    def clear_requests(self) -> None:
        self._log.clear()

    @property
    def internal_errors(self) -> list[str]:
        """Tracebacks of bugs inside the fake (each also answered as a 500); should stay empty."""
        return list(self.app.internal_errors)

    @property
    def open_watches(self) -> int:
        """How many watch streams are being served right now (lets a test wait for a watcher)."""
        return self._httpd.open_watches if self._httpd is not None else 0

    @property
    def resource_version(self) -> str:
        """The current global resourceVersion."""
        return str(self.store.resource_version)

    # ----------------------------------------------------------------------------- control
    def drop_watches(self) -> None:
        """Cut every open watch connection abruptly (as an apiserver restart would)."""
        self.store.interrupt_watches()

    def compact(self, resource_version: int | str | None = None) -> int:
        """Compact the event log up to ``resource_version`` (default: now); older watches get 410."""
        return self.store.compact(None if resource_version is None else int(resource_version))

    def set_event_window(self, size: int) -> None:
        self.store.set_event_window(size)

    def wait_for(self, predicate: Callable[[], bool], timeout: float = 5.0, interval: float = 0.01) -> bool:
        """Poll ``predicate`` until true or ``timeout``; returns its last value (test helper)."""
        deadline = time.monotonic() + timeout
        while True:
            if predicate():
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(interval)

    # ----------------------------------------------------------------------------- direct state
    def get_object(self, resource: str, namespace: str | None, name: str) -> JsonObj | None:
        """Read the stored object bypassing HTTP (``resource``: ``pods``, ``podgangs.scheduler.grove.io``)."""
        return self.store.get(resource, namespace, name)

    def put_object(self, obj: JsonObj) -> JsonObj:
        """Store ``obj`` bypassing HTTP, validation and admission (emits a watch event)."""
        return self.store.put(obj)

    def delete_object(self, resource: str, namespace: str | None, name: str) -> JsonObj | None:
        """Remove an object immediately, ignoring finalizers (emits DELETED)."""
        return self.store.delete(resource, namespace, name)

    def set_pod_condition(
        self,
        namespace: str,
        name: str,
        type: str,
        status: str,
        reason: str | None = None,
        message: str | None = None,
    ) -> JsonObj:
        """Upsert a pod condition, as the scheduler or kubelet would (emits MODIFIED)."""
        return self.store.update(
            "pods", namespace, name, lambda pod: set_condition(pod, type, status, reason, message)
        )

    def schedule_pod(self, namespace: str, name: str, node_name: str = "fake-node") -> JsonObj:
        """Bind a pod the way kube-scheduler does: nodeName + ``PodScheduled=True``.

        Refuses gated pods, since no scheduler would bind one.
        """

        def bind(pod: JsonObj) -> None:
            if (pod.get("spec") or {}).get("schedulingGates"):
                raise ValueError(f"pod {namespace}/{name} is still gated: {pod['spec']['schedulingGates']}")
            pod.setdefault("spec", {})["nodeName"] = node_name
            set_condition(pod, "PodScheduled", "True")

        return self.store.update("pods", namespace, name, bind)
