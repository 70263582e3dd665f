"""The agent's watch cache: list+watch of managed pods and PodGangs, with indexes.

Level-triggered: every event marks the *workload* (namespace, PodCliqueSet) it touches as
dirty; the loop re-derives everything about a dirty workload from the cache. A watch that
ends with 410 re-lists; a broken stream backs off and re-lists. Every loop records its
progress for ``/healthz`` (:meth:`WatchCache.healthy`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError, ReadTimeoutError

from grove_gitops.agent.kube import PODGANG_GROUP, PODGANG_VERSION, Kube, Raw
from grove_gitops.agent.ratelog import agent_log, describe
from grove_gitops.metrics import Registry
from grove_gitops.readmodel import gangs as G

log = logging.getLogger("grove_gitops.agent")
MANAGED_BY, MANAGER = "app.kubernetes.io/managed-by", "grove-gitops"
PART_OF = "app.kubernetes.io/part-of"
SELECTOR = f"{MANAGED_BY}={MANAGER}"
Key = tuple[str, str]  # (namespace, name)
MAX_GONE = 100_000  # uids of deleted objects remembered (see WatchCache._gone)
WorkloadKey = tuple[str, str]  # (namespace, PodCliqueSet)


def key_of(obj: Raw) -> Key:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace", "")), str(meta.get("name", ""))


def workload_of(obj: Raw) -> WorkloadKey:
    """The workload an object belongs to: its part-of label (a pod without one is its own)."""
    meta = obj.get("metadata") or {}
    part_of = (meta.get("labels") or {}).get(PART_OF)
    return str(meta.get("namespace", "")), str(part_of) if isinstance(part_of, str) else ""


def _rv(obj: Raw) -> int:
    value: Any = (obj.get("metadata") or {}).get("resourceVersion", "0")
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


class WatchCache:
    """Pods and PodGangs as the API server last said, indexed by workload."""

    def __init__(self, kube: Kube, registry: Registry, namespace: str | None, *, watch_timeout: int,
                 watch_read_timeout: float, backoff: Callable[[int], float]) -> None:
        self.kube = kube
        self.registry = registry
        self.namespace = namespace
        self.watch_timeout = watch_timeout
        self.watch_read_timeout = watch_read_timeout
        self._backoff = backoff
        self.lock = threading.Lock()
        self.wake = threading.Condition(self.lock)
        self.pods: dict[Key, Raw] = {}
        self.podgangs: dict[Key, Raw] = {}
        self.by_workload: dict[WorkloadKey, tuple[set[Key], set[Key]]] = {}  # -> (pods, podgangs)
        self.dirty: set[WorkloadKey] = set()
        #: Called (outside the lock) with the workload of every changed object: the
        #: autoscaling loop wakes on the pods and PodGangs it created.
        self.listeners: list[Callable[[WorkloadKey], None]] = []
        # Every pod any PodGang lists, counted: such a pod is never retired or scaled in, even
        # when the listing PodGang belongs to another workload (a bad reference).
        self.ref_count: dict[Key, int] = {}
        self._refs: dict[Key, list[Key]] = {}
        # uids of objects the cache saw go (DELETED, or our DELETE's answer): no later write's
        # answer or late event may bring them back. A uid is never reused, so anything still
        # carrying one is older than its deletion. Without this, a DELETE's answer (the pod
        # terminating) applied after the watch had already said DELETED left a terminating
        # pod in the cache for good, and a rollout waited for it to go (issue 37: a rollout
        # wedged until the agent was restarted). Bounded: the oldest are forgotten first.
        self._gone: dict[str, None] = {}
        self.synced = {"pods": threading.Event(), "podgangs": threading.Event()}
        now = time.monotonic()
        self.progress: dict[str, float] = {"pods": now, "podgangs": now, "worker": now}

    def ready(self) -> bool:
        return all(e.is_set() for e in self.synced.values())

    def mark(self, loop: str) -> None:
        self.progress[loop] = time.monotonic()

    # -- updates (caller holds no lock) ------------------------------------------------
    def _track_refs(self, key: Key, obj: Raw | None) -> None:
        for ref in self._refs.pop(key, []):
            n = self.ref_count.get(ref, 0) - 1
            if n > 0:
                self.ref_count[ref] = n
            else:
                self.ref_count.pop(ref, None)
        if obj is None:
            return
        try:
            refs = [(ns, name) for _, ns, name in G.referenced_pods(obj)]
        except G.MalformedPodGang:  # refused by a bounded check (gangs.check_size): O(podgroups)
            refs = []
        self._refs[key] = refs
        for ref in refs:
            self.ref_count[ref] = self.ref_count.get(ref, 0) + 1
            pod = self.pods.get(ref)
            if pod is not None:  # a pod that does not exist yet marks its workload when it comes
                self.dirty.add(workload_of(pod))

    def _index(self, kind: str, key: Key, obj: Raw | None, old: Raw | None) -> None:
        slot = 0 if kind == "pods" else 1
        if kind == "podgangs":
            self._track_refs(key, obj)
        if old is not None:
            wl = workload_of(old)
            entry = self.by_workload.get(wl)
            if entry is not None:
                entry[slot].discard(key)
                if not entry[0] and not entry[1]:
                    del self.by_workload[wl]
            self.dirty.add(wl)
        if obj is not None:
            wl = workload_of(obj)
            self.by_workload.setdefault(wl, (set(), set()))[slot].add(key)
            self.dirty.add(wl)

    def _tell(self, objs: list[Raw]) -> None:
        if self.listeners:
            for wl in {workload_of(o) for o in objs}:
                for listener in self.listeners:
                    listener(wl)

    def apply(self, kind: str, event_type: str, obj: Raw) -> None:
        self._apply(kind, event_type, obj)
        self._tell([obj])

    def _apply(self, kind: str, event_type: str, obj: Raw) -> None:
        key = key_of(obj)
        uid = str((obj.get("metadata") or {}).get("uid") or "")
        with self.lock:
            store = self.pods if kind == "pods" else self.podgangs
            old = store.get(key)
            if event_type == "DELETED":
                self._bury(uid)
                if old is not None and uid and str((old.get("metadata") or {}).get("uid") or "") != uid:
                    return  # an older object of that name: the one cached now was created since
                store.pop(key, None)
                self._index(kind, key, None, old)
            else:
                if uid and uid in self._gone:
                    return  # that object is gone already: a late answer or event of it
                if old is not None and _rv(old) > _rv(obj):
                    return  # our own write's response was newer than this event
                store[key] = obj
                self._index(kind, key, obj, old)
            self.wake.notify_all()

    def _bury_uid(self, uid: str) -> None:
        with self.lock:
            self._bury(uid)

    def _bury(self, uid: str) -> None:
        """Remember that the object with ``uid`` is gone (caller holds the lock)."""
        if not uid:
            return
        self._gone[uid] = None
        while len(self._gone) > MAX_GONE:
            del self._gone[next(iter(self._gone))]

    def forget_pod(self, key: Key, uid: str) -> None:
        """The pod ``uid`` is gone (our DELETE removed it, or the server said 404): drop it now
        rather than wait for the watch. Only that pod: a pod re-created under the same name
        since (another uid) stays, and its events are still taken."""
        self._bury_uid(uid)
        with self.lock:
            old = self.pods.get(key)
            if old is None or str((old.get("metadata") or {}).get("uid") or "") != uid:
                return
            del self.pods[key]
            self._index("pods", key, None, old)
            self.wake.notify_all()
        if old is not None:
            self._tell([old])

    def replace(self, kind: str, items: list[Raw]) -> None:
        with self.lock:
            store = self.pods if kind == "pods" else self.podgangs
            for key, old in list(store.items()):
                self._index(kind, key, None, old)
            store.clear()
            for item in items:
                key = key_of(item)
                store[key] = item
                self._index(kind, key, item, None)
            self.wake.notify_all()
        self._tell(items)

    def cost(self, wl: WorkloadKey) -> int:
        """What deriving one workload costs, roughly: its objects plus the pod references its
        PodGangs hold (a malformed PodGang's count none: it is refused unread)."""
        with self.lock:
            pods, gangs = self.by_workload.get(wl, (set(), set()))
            return len(pods) + len(gangs) + sum(len(self._refs.get(g, ())) for g in gangs)

    def workload(self, wl: WorkloadKey) -> tuple[dict[Key, Raw], dict[Key, Raw]]:
        """Copies of one workload's pods and PodGangs (caller holds no lock)."""
        with self.lock:
            pods, gangs = self.by_workload.get(wl, (set(), set()))
            return {k: self.pods[k] for k in pods if k in self.pods}, {k: self.podgangs[k] for k in gangs if k in self.podgangs}

    def gang_keys(self, wl: WorkloadKey) -> list[Key]:
        """The keys of one workload's PodGangs, as :meth:`workload` would copy them: the pass
        driver needs only these, and copying every pod of the workload for them cost as much
        as a third of deriving it, on every pass (issue 35.2)."""
        with self.lock:
            return [k for k in self.by_workload.get(wl, (set(), set()))[1] if k in self.podgangs]

    def list_watch(self, kind: str, stop: threading.Event) -> None:
        """List, then watch from the list's resourceVersion; re-list on 410 or a broken stream."""
        failures = 0
        while not stop.is_set():
            try:
                listing = (
                    self.kube.list_pods(self.namespace, SELECTOR)
                    if kind == "pods"
                    else self.kube.list_podgangs(self.namespace, SELECTOR)
                )
                items = listing.get("items") or []
                for item in items:
                    item.setdefault("apiVersion", "v1" if kind == "pods" else f"{PODGANG_GROUP}/{PODGANG_VERSION}")
                self.replace(kind, items)
                self.synced[kind].set()
                self.mark(kind)
                rv = str((listing.get("metadata") or {}).get("resourceVersion", ""))
                failures = 0
                while not stop.is_set():
                    connected = threading.Event()

                    def on_connect(kind: str = kind, connected: threading.Event = connected) -> None:
                        connected.set()
                        self.mark(kind)

                    watch = self.kube.watch_pods if kind == "pods" else self.kube.watch_podgangs
                    stream = watch(self.namespace, SELECTOR, rv, self.watch_timeout, self.watch_read_timeout, on_connect)
                    try:
                        for event in stream:
                            obj = event["object"]
                            rv = str((obj.get("metadata") or {}).get("resourceVersion", rv))
                            self.apply(kind, event["type"], obj)
                            self.mark(kind)
                            if stop.is_set():
                                break
                    except ReadTimeoutError:
                        if not connected.is_set():
                            raise  # the server never answered: a hanging API server, back off
                        self.mark(kind)  # a quiet stream: resume from the last resourceVersion
            except ApiException as exc:
                failures += 1
                self.registry.inc("grove_gitops_lifter_api_errors_total", "API errors", code=str(exc.status or 0))
                if exc.status == 410:
                    log.info("%s watch expired (410); re-listing", kind)
                    continue
                agent_log.warning("%s list/watch failed (%s); backing off", kind, describe(exc))
                stop.wait(self._backoff(failures))
            except (HTTPError, OSError, ValueError) as exc:
                failures += 1
                self.registry.inc("grove_gitops_lifter_api_errors_total", "API errors", code="connection")
                agent_log.warning("%s watch broke (%s); re-listing", kind, describe(exc))
                stop.wait(self._backoff(failures))
            except Exception:  # never let the thread die: a dead watcher would stall every release
                failures += 1
                log.exception("%s list/watch failed unexpectedly; re-listing", kind)
                stop.wait(self._backoff(failures))


def gang_key(pod: Raw) -> Key | None:
    labels = (pod.get("metadata") or {}).get("labels") or {}
    name = labels.get(G.PODGANG_LABEL)
    return (str((pod.get("metadata") or {}).get("namespace", "")), name) if isinstance(name, str) else None
