"""List+watch of the ``gitops.grove.io`` objects: workloads (Git) and scale targets (ours).

A small level-triggered cache like :class:`~grove_gitops.agent.cache.WatchCache`, for the
three kinds of our group; every event calls ``on_change`` with the workload it touches.

A record is written by whoever may write the kind, so nothing in one may stop the others
being read (issue 31: a record nested 3,000 deep raised ``RecursionError`` in the list's
decoder, killed this thread, and no workload was scaled again). Each loop survives any
exception (it backs off and lists again), a list is decoded with a nesting bound
(:mod:`.bounded`), and an item that could be read only in part is kept marked unreadable
(:data:`~.workload.UNREADABLE`): the scaler reports it on that workload (``Ready=False`` and
an Event) and acts on every other.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError, ReadTimeoutError

from grove_gitops.agent.kube import Kube, Raw
from grove_gitops.agent.ratelog import agent_log, describe
from grove_gitops.agent.scaling.bounded import MAX_DEPTH, loads_bounded
from grove_gitops.agent.scaling.workload import UNREADABLE
from grove_gitops.expand.scaling import API_VERSION, PCLQ_KIND, PCS_KIND, PCSG_KIND

log = logging.getLogger("grove_gitops.agent")
KINDS = (PCS_KIND, PCSG_KIND, PCLQ_KIND)
SELECTOR = "app.kubernetes.io/managed-by=grove-gitops"
PART_OF = "app.kubernetes.io/part-of"
Key = tuple[str, str]


def workload_key(kind: str, obj: Raw) -> Key:
    meta = obj.get("metadata") or {}
    ns = str(meta.get("namespace", ""))
    if kind == PCS_KIND:
        return ns, str(meta.get("name", ""))
    return ns, str((meta.get("labels") or {}).get(PART_OF, ""))


class GitopsCache:
    def __init__(self, kube: Kube, namespace: str | None, on_change: Callable[[Key], None], *,
                 watch_timeout: int = 300, watch_read_timeout: float = 30.0,
                 backoff: Callable[[int], float] = lambda n: min(30.0, 0.5 * 2**n)) -> None:
        self.kube = kube
        self.namespace = namespace
        self.on_change = on_change
        self.watch_timeout = watch_timeout
        self.watch_read_timeout = watch_read_timeout
        self._backoff = backoff
        self.lock = threading.Lock()
        self.objects: dict[str, dict[Key, Raw]] = {k: {} for k in KINDS}
        self.synced = {k: threading.Event() for k in KINDS}
        #: Kinds the API server does not serve (our CRDs not installed): reported, retried.
        self.missing: set[str] = set()

    def ready(self) -> bool:
        return all(e.is_set() for e in self.synced.values())

    def get(self, kind: str, key: Key) -> Raw | None:
        with self.lock:
            return self.objects[kind].get(key)

    def items(self, kind: str) -> list[tuple[Key, Raw]]:
        with self.lock:
            return list(self.objects[kind].items())

    def put(self, kind: str, obj: Raw) -> None:
        """Record our own write's answer at once (the watch confirms it later)."""
        self._apply(kind, "MODIFIED", obj)

    def _apply(self, kind: str, event: str, obj: Raw) -> None:
        meta = obj.get("metadata") or {}
        key = (str(meta.get("namespace", "")), str(meta.get("name", "")))
        with self.lock:
            old = self.objects[kind].get(key)
            if event == "DELETED":
                self.objects[kind].pop(key, None)
            else:
                rv_old = int((old or {}).get("metadata", {}).get("resourceVersion", 0) or 0) if old else -1
                try:
                    rv_new = int(meta.get("resourceVersion", 0) or 0)
                except (TypeError, ValueError):
                    rv_new = 0
                if rv_new < rv_old:
                    return
                self.objects[kind][key] = obj
        self.on_change(workload_key(kind, obj))

    def _replace(self, kind: str, items: list[Any]) -> None:
        fresh = {}
        for obj in items:
            if isinstance(obj, dict):
                meta = obj.get("metadata") or {}
                fresh[(str(meta.get("namespace", "")), str(meta.get("name", "")))] = obj
        with self.lock:
            gone = [o for k, o in self.objects[kind].items() if k not in fresh]
            self.objects[kind] = fresh
        for obj in [*fresh.values(), *gone]:
            self.on_change(workload_key(kind, obj))

    def _list(self, kind: str) -> Raw:
        """The list of one kind, decoded with the nesting bound: an item cut by it is marked
        unreadable (what :meth:`Kube.list_objects` asks, read as bytes)."""
        from urllib.parse import quote

        plural = self.kube.plural(API_VERSION, kind)
        if plural is None:
            raise ApiException(status=404, reason=f"{kind}.{API_VERSION} is not served by the API server")
        base = f"/apis/{API_VERSION}/" + (f"namespaces/{self.namespace}/" if self.namespace else "")
        payload = self._fetch(f"{base}{plural}?labelSelector={quote(SELECTOR)}")
        decoded = loads_bounded(payload, MAX_DEPTH)
        listed = decoded.value if isinstance(decoded.value, dict) else {}
        items = listed.get("items")
        for n, item in enumerate(items if isinstance(items, list) else []):
            if isinstance(item, dict) and n in decoded.cut_items:
                item[UNREADABLE] = (f"nested deeper than {MAX_DEPTH} levels (spec.source holds what a render "
                                    "writes, at most 100 levels deep); the agent does not act on it")
        return listed

    def _fetch(self, path: str) -> bytes:
        """GET ``path`` as bytes; errors raise ApiException (as :meth:`Kube.raw`)."""
        api = self.kube.api_client
        m, url, headers, _, _ = api.param_serialize("GET", path, header_params={"Accept": "application/json"},
                                                    auth_settings=["BearerToken"])
        response = api.call_api(m, url, header_params=headers, _request_timeout=self.kube.timeout)
        response.read()  # type: ignore[no-untyped-call]
        payload: bytes = response.data or b"{}"
        if response.status >= 400:
            raise ApiException(status=response.status, reason=str(response.reason),
                               body=payload.decode(errors="replace"))
        return payload

    def list_watch(self, kind: str, stop: threading.Event) -> None:
        failures = 0
        while not stop.is_set():
            try:
                listed = self._list(kind)
                items = listed.get("items") or []
                for item in items:
                    if isinstance(item, dict):
                        item.setdefault("apiVersion", API_VERSION)
                        item.setdefault("kind", kind)
                self._replace(kind, items)
                self.synced[kind].set()
                self.missing.discard(kind)
                rv = str((listed.get("metadata") or {}).get("resourceVersion", ""))
                failures = 0
                while not stop.is_set():
                    try:
                        for event in self.kube.watch_objects(API_VERSION, kind, self.namespace, SELECTOR, rv,
                                                             self.watch_timeout, self.watch_read_timeout):
                            obj = event["object"]
                            rv = str((obj.get("metadata") or {}).get("resourceVersion", rv))
                            self._apply(kind, str(event["type"]), obj)
                            if stop.is_set():
                                return
                    except ReadTimeoutError:
                        continue
            except ApiException as exc:
                if exc.status == 404:
                    self.missing.add(kind)
                    self.synced[kind].set()  # nothing of this kind can exist
                    log.warning("%s.%s is not served: install overlays/crds (docs/autoscaling.md)", kind, API_VERSION)
                elif exc.status != 410:
                    agent_log.warning("watch of %s failed: %s", kind, describe(exc))
                failures += 1
            except (HTTPError, OSError, ValueError) as exc:
                agent_log.warning("watch of %s broke: %s", kind, describe(exc))
                failures += 1
            except Exception:  # anything else (a RecursionError from a watch event): list again
                log.exception("watch of %s failed unexpectedly; listing again", kind)
                failures += 1
            stop.wait(self._backoff(failures))
