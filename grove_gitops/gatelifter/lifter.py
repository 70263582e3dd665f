"""The lifter loop: list+watch pods and PodGangs, decide per gang, release whole gangs.

Level-triggered: every event only marks gangs *dirty*; a worker re-evaluates dirty gangs
from the cache (and gangs still waiting, every ``recheck`` seconds, because a missing
backend object appears without any event we watch; its existence is asked of the API server
at every decision, never cached). A pod is released only by the PodGang its
``grove.io/podgang`` label names, once that PodGang is complete. A release removes the gate
from every gated pod of the gang with one JSON patch per pod, guarded by ``test`` ops on the
pod's uid, the managed-by label and the gate's position, with bounded concurrency; the PATCH response updates the cache at once, so a pod is never patched
twice. Then the PodGang gets Grove's ``Initialized`` condition.

API failures: 409 and a failed ``test`` (422) re-read the pod and retry; 404 means the pod
is gone (GitOps will re-create it gated, and it is released again once the gang is
complete); 5xx and timeouts back off; a watch that ends with 410 re-lists. Losing
leadership stops everything at once (the ``active`` callback is checked before each patch).
A PodGang that cannot be read gets one Event and one warning and is retried with backoff; it
never blocks other gangs. Every loop records its progress for ``/healthz`` (:meth:`healthy`).
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError, ReadTimeoutError

from grove_gitops.gatelifter import gangs as G
from grove_gitops.gatelifter.kube import PODGANG_GROUP, PODGANG_VERSION, Kube, Raw
from grove_gitops.gitops.metrics import Registry

log = logging.getLogger("grove_gitops.gatelifter")
MANAGED_BY, MANAGER = "app.kubernetes.io/managed-by", "grove-gitops"
SELECTOR = f"{MANAGED_BY}={MANAGER}"
Key = tuple[str, str]  # (namespace, name)


def _key(obj: Raw) -> Key:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace", "")), str(meta.get("name", ""))


@dataclass
class LifterConfig:
    namespace: str | None = None
    concurrency: int = 16
    recheck: float = 0.25
    watch_timeout: int = 60
    watch_read_timeout: float = 2.0
    max_retries: int = 5
    backoff_base: float = 0.05
    backoff_max: float = 2.0
    stale_after: float = 30.0  # /healthz fails when a loop has not made progress for this long


class GateLifter:
    def __init__(
        self,
        kube: Kube,
        config: LifterConfig,
        registry: Registry | None = None,
        active: Callable[[], bool] = lambda: True,
    ) -> None:
        self.kube = kube
        self.config = config
        self.registry = registry or Registry()
        self.active = active
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self.pods: dict[Key, Raw] = {}
        self.podgangs: dict[Key, Raw] = {}
        self._dirty: set[Key] = set()
        self._waiting: dict[Key, float] = {}  # gang -> time it became complete-pending (for metrics)
        self._complete_since: dict[Key, float] = {}
        self._bad: dict[Key, tuple[int, float]] = {}  # malformed gang -> (failures, retry at)
        self._reported: dict[Key, str] = {}  # malformed gang -> the problem already reported
        self._scaled_by_base: dict[Key, set[Key]] = {}
        self._synced = {"pods": threading.Event(), "podgangs": threading.Event()}
        self._pool = ThreadPoolExecutor(max_workers=config.concurrency, thread_name_prefix="ungate")
        self.patches = 0
        now = time.monotonic()
        # Last progress of each loop: a list, a watch the server answered or an event (watchers),
        # one pass (worker). healthy() compares them with stale_after.
        self.progress: dict[str, float] = {"pods": now, "podgangs": now, "worker": now}
        self._threads: list[threading.Thread] = []

    # -- cache maintenance -------------------------------------------------------------
    def ready(self) -> bool:
        return all(e.is_set() for e in self._synced.values())

    def _progress(self, loop: str) -> None:
        self.progress[loop] = time.monotonic()

    def healthy(self) -> bool:
        """Every loop thread is alive and has made progress within ``stale_after`` seconds.

        With an unreachable or hanging API server the watchers stop making progress, so the
        liveness probe fails and Kubernetes restarts the process instead of leaving it idle.
        """
        now = time.monotonic()
        alive = all(t.is_alive() for t in self._threads)
        return alive and all(now - t < self.config.stale_after for t in self.progress.values())

    def _gang_of_pod(self, pod: Raw) -> list[Key]:
        labels = (pod.get("metadata") or {}).get("labels") or {}
        ns = str((pod.get("metadata") or {}).get("namespace", ""))
        out = []
        if labels.get(G.PODGANG_LABEL):
            out.append((ns, labels[G.PODGANG_LABEL]))
        return out

    def _index_scaled(self, pod: Raw) -> None:
        """Remember which scaled gangs wait on which base gang (a pod event on the base gang
        re-evaluates them without scanning every pod)."""
        meta = pod.get("metadata") or {}
        labels = meta.get("labels") or {}
        base, gang = labels.get(G.BASE_PODGANG_LABEL), labels.get(G.PODGANG_LABEL)
        if base and gang:
            ns = str(meta.get("namespace", ""))
            self._scaled_by_base.setdefault((ns, base), set()).add((ns, gang))

    def _apply(self, kind: str, event_type: str, obj: Raw) -> None:
        key = _key(obj)
        with self._lock:
            store = self.pods if kind == "pods" else self.podgangs
            if event_type == "DELETED":
                store.pop(key, None)
            else:
                old = store.get(key)
                if old is not None and _rv(old) > _rv(obj):
                    return  # our own PATCH response was newer than this event
                store[key] = obj
            if kind == "pods":
                self._index_scaled(obj)
                for gang in self._gang_of_pod(obj):
                    self._dirty.add(gang)
                    self._dirty.update(self._scaled_by_base.get(gang, ()))
            else:
                self._dirty.add(key)
                self._bad.pop(key, None)  # a changed PodGang is read again at once
                if event_type == "DELETED":
                    self._reported.pop(key, None)
            self._wake.notify_all()

    def _replace(self, kind: str, items: list[Raw]) -> None:
        with self._lock:
            store = self.pods if kind == "pods" else self.podgangs
            store.clear()
            for item in items:
                store[_key(item)] = item
                if kind == "pods":
                    self._index_scaled(item)
            self._dirty.update(self.podgangs)
            self._wake.notify_all()

    def _list_watch(self, kind: str, stop: threading.Event) -> None:
        """List, then watch from the list's resourceVersion; re-list on 410 or a broken stream."""
        cfg = self.config
        failures = 0
        while not stop.is_set():
            try:
                listing = (
                    self.kube.list_pods(cfg.namespace, SELECTOR)
                    if kind == "pods"
                    else self.kube.list_podgangs(cfg.namespace, SELECTOR)
                )
                items = listing.get("items") or []
                for item in items:
                    item.setdefault("apiVersion", "v1" if kind == "pods" else f"{PODGANG_GROUP}/{PODGANG_VERSION}")
                self._replace(kind, items)
                self._synced[kind].set()
                self._progress(kind)
                rv = str((listing.get("metadata") or {}).get("resourceVersion", ""))
                failures = 0
                while not stop.is_set():
                    connected = threading.Event()

                    def on_connect(kind: str = kind, connected: threading.Event = connected) -> None:
                        connected.set()
                        self._progress(kind)

                    watch = self.kube.watch_pods if kind == "pods" else self.kube.watch_podgangs
                    stream = watch(cfg.namespace, SELECTOR, rv, cfg.watch_timeout, cfg.watch_read_timeout, on_connect)
                    try:
                        for event in stream:
                            obj = event["object"]
                            rv = str((obj.get("metadata") or {}).get("resourceVersion", rv))
                            self._apply(kind, event["type"], obj)
                            self._progress(kind)
                            if stop.is_set():
                                break
                    except ReadTimeoutError:
                        if not connected.is_set():
                            raise  # the server never answered: a hanging API server, back off
                        self._progress(kind)  # a quiet stream: resume from the last resourceVersion
            except ApiException as exc:
                failures += 1
                self.registry.inc("grove_gitops_lifter_api_errors_total", "API errors", code=str(exc.status or 0))
                if exc.status == 410:
                    log.info("%s watch expired (410); re-listing", kind)
                    continue
                log.warning("%s list/watch failed (%s); backing off", kind, exc.status)
                stop.wait(self._backoff(failures))
            except (HTTPError, OSError, ValueError) as exc:
                failures += 1
                self.registry.inc("grove_gitops_lifter_api_errors_total", "API errors", code="connection")
                log.warning("%s watch broke (%s); re-listing", kind, type(exc).__name__)
                stop.wait(self._backoff(failures))
            except Exception:  # never let the thread die: a dead watcher would stall every release
                failures += 1
                log.exception("%s list/watch failed unexpectedly; re-listing", kind)
                stop.wait(self._backoff(failures))

    def _backoff(self, attempt: int, slow: bool = False) -> float:
        """Exponential backoff; ``slow`` (a malformed object, fixed only by a person) starts
        at one second and tops out at five minutes."""
        if slow:
            return float(min(300.0, 2 ** max(0, attempt - 1)))
        return float(min(self.config.backoff_max, self.config.backoff_base * 2 ** max(0, attempt - 1)))

    # -- decisions ---------------------------------------------------------------------
    def _object_exists(self, ref: G.ObjectRef) -> bool:
        """Ask the API server every time: a backend object deleted since the last check must
        not be remembered as present (decide() asks only once everything else is in place)."""
        try:
            return self.kube.object_exists(ref)
        except ApiException as exc:
            self.registry.inc("grove_gitops_lifter_api_errors_total", "API errors", code=str(exc.status or 0))
            return False
        except (HTTPError, OSError):
            self.registry.inc("grove_gitops_lifter_api_errors_total", "API errors", code="connection")
            return False

    def evaluate(self, key: Key) -> G.Decision:
        with self._lock:
            podgang = self.podgangs.get(key)
            pods = dict(self.pods)
            gangs_by_name = {name: gang for (gns, name), gang in self.podgangs.items() if gns == key[0]}
        return G.decide(podgang, pods, self._object_exists, gangs_by_name)

    def _report_bad(self, key: Key, problem: str) -> None:
        """One warning and one Event per distinct problem of a gang; then retry with backoff."""
        failures = self._bad.get(key, (0, 0.0))[0] + 1
        self._bad[key] = (failures, time.monotonic() + self._backoff(failures, slow=True))
        self.registry.inc("grove_gitops_lifter_malformed_podgangs_total", "PodGangs that could not be read")
        if self._reported.get(key) == problem:
            return
        self._reported[key] = problem
        log.warning("PodGang %s/%s cannot be evaluated: %s", key[0], key[1], problem)
        with self._lock:
            gang = self.podgangs.get(key)
        if gang is not None:
            self.kube.emit_event(key[0], gang, "MalformedPodGang", f"gate-lifter cannot evaluate this PodGang: {problem}")

    def sync_gang(self, key: Key) -> bool:
        """Evaluate one gang and release it if complete; True when nothing is left to wait for."""
        return self.sync_gangs([key])[key]

    def sync_gangs(self, keys: list[Key]) -> dict[Key, bool]:
        """Evaluate gangs and release every complete one.

        The pods of all complete gangs go to the worker pool together, so many small gangs
        completing at once (a sync of a large app) are released in parallel, not one gang
        after the other; each gang is still released only as a whole.
        """
        done: dict[Key, bool] = {}
        releasing: dict[Key, tuple[float, list[Future[bool]]]] = {}
        now = time.monotonic()
        for key in keys:
            bad = self._bad.get(key)
            if bad is not None and now < bad[1]:
                self._waiting.setdefault(key, now)  # re-checked once its backoff has passed
                done[key] = False
                continue
            try:
                decision = self.evaluate(key)
            except G.MalformedPodGang as exc:
                self._report_bad(key, str(exc))
                self._waiting.setdefault(key, now)
                done[key] = False
                continue
            except Exception as exc:  # one gang's surprise must never block the others
                log.exception("evaluating PodGang %s/%s failed", key[0], key[1])
                self._report_bad(key, f"{type(exc).__name__}: {exc}")
                self._waiting.setdefault(key, now)
                done[key] = False
                continue
            self._bad.pop(key, None)
            self._reported.pop(key, None)
            if not decision.complete:
                if key in self.podgangs:
                    self._waiting.setdefault(key, time.monotonic())
                done[key] = False
                continue
            self._waiting.pop(key, None)
            complete_at = self._complete_since.setdefault(key, time.monotonic())
            if not self.active():
                done[key] = False
                continue
            futures = [
                self._pool.submit(self._ungate, key[0], name, decision.uids.get(name, ""))
                for name in decision.to_ungate
            ]
            releasing[key] = (complete_at, futures)
        for key, (complete_at, futures) in releasing.items():
            results = [f.result() for f in futures]
            lifted = sum(1 for r in results if r)
            if lifted:
                self.registry.inc("grove_gitops_lifter_gates_lifted_total", "Scheduling gates removed", float(lifted))
                self.registry.observe(
                    "grove_gitops_lifter_release", "Time from gang complete to release", time.monotonic() - complete_at
                )
                log.info("released gang %s/%s (%d pods)", key[0], key[1], lifted)
            if not all(results):
                done[key] = False
                continue
            self._complete_since.pop(key, None)
            self._mark_initialized(key)
            done[key] = True
        return done

    def _ungate(self, namespace: str, name: str, uid: str) -> bool:
        """Remove our gate from the pod the decision saw; True when it no longer carries it.

        The JSON patch is guarded by ``test`` ops on ``metadata.uid``, on the managed-by label
        and on the gate's position, so a pod re-created under the same name (by anyone) before
        the watch caught up is never ungated by a decision made about its predecessor.
        """
        with self._lock:
            pod = self.pods.get((namespace, name))
        for attempt in range(1, self.config.max_retries + 1):
            if pod is None or not uid or (pod.get("metadata") or {}).get("uid") != uid:
                return False  # gone or replaced: the loop decides about the new pod afresh
            if ((pod.get("metadata") or {}).get("labels") or {}).get(MANAGED_BY) != MANAGER:
                return False
            index = G.gate_index(pod)
            if index is None:
                return True
            if not self.active():
                return False
            ops = [
                {"op": "test", "path": "/metadata/uid", "value": uid},
                {"op": "test", "path": "/metadata/labels/" + MANAGED_BY.replace("~", "~0").replace("/", "~1"), "value": MANAGER},
                {"op": "test", "path": f"/spec/schedulingGates/{index}/name", "value": G.GATE},
                {"op": "remove", "path": f"/spec/schedulingGates/{index}"},
            ]
            try:
                self.patches += 1
                updated = self.kube.patch_pod_json(namespace, name, ops)
                self._apply("pods", "MODIFIED", updated)
                return True
            except ApiException as exc:
                self.registry.inc("grove_gitops_lifter_api_errors_total", "API errors", code=str(exc.status or 0))
                if exc.status == 404:
                    with self._lock:
                        self.pods.pop((namespace, name), None)
                    return False
                if exc.status not in (409, 422) and not (exc.status or 0) >= 500:
                    log.warning("ungating %s/%s failed: %s", namespace, name, exc.status)
                    return False
                if (exc.status or 0) >= 500:
                    time.sleep(self._backoff(attempt))
            except (HTTPError, OSError):
                time.sleep(self._backoff(attempt))
            try:
                pod = self.kube.read_pod(namespace, name)
                self._apply("pods", "MODIFIED", pod)
            except ApiException as exc:
                if exc.status == 404:
                    return False
                time.sleep(self._backoff(attempt))
            except (HTTPError, OSError):
                time.sleep(self._backoff(attempt))
        return False

    def _mark_initialized(self, key: Key) -> None:
        with self._lock:
            gang = self.podgangs.get(key)
        if gang is None:
            return
        for cond in (gang.get("status") or {}).get("conditions") or []:
            if cond.get("type") == "Initialized" and cond.get("status") == "True":
                return
        status = {
            "phase": "Pending",
            "conditions": [
                {
                    "type": "Initialized",
                    "status": "True",
                    "reason": "PodGangPodsCreated",
                    "message": "PodGang is fully initialized",
                    "lastTransitionTime": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                }
            ],
        }
        try:
            self.kube.patch_podgang_status(key[0], key[1], status)
            with self._lock:
                if key in self.podgangs:
                    self.podgangs[key] = {**self.podgangs[key], "status": status}
        except ApiException as exc:
            self.registry.inc("grove_gitops_lifter_api_errors_total", "API errors", code=str(exc.status or 0))
            with self._lock:
                self._dirty.add(key)

    # -- the loop ----------------------------------------------------------------------
    def run(self, stop: threading.Event) -> None:
        watchers = [
            threading.Thread(target=self._list_watch, args=(kind, stop), name=f"watch-{kind}", daemon=True)
            for kind in ("pods", "podgangs")
        ]
        self._threads = [*watchers, threading.current_thread()]
        for t in watchers:
            t.start()
        try:
            while not stop.is_set():
                self._progress("worker")
                if not self.active():
                    stop.wait(0.1)
                    continue
                with self._lock:
                    if not self._dirty:
                        self._wake.wait(self.config.recheck)
                    batch = set(self._dirty) | set(self._waiting)
                    self._dirty.clear()
                if stop.is_set() or not self.active():
                    continue
                try:
                    self.sync_gangs(sorted(batch))
                except Exception:
                    log.exception("syncing %d gangs failed", len(batch))
                    with self._lock:
                        self._dirty.update(batch)
                self.registry.set(
                    "grove_gitops_lifter_gangs_waiting", "Gangs not yet complete", float(len(self._waiting))
                )
        finally:
            stop.set()
            with self._lock:
                self._wake.notify_all()
            for t in watchers:
                t.join(timeout=5)
            self._pool.shutdown(wait=True, cancel_futures=True)


def _rv(obj: Raw) -> int:
    value: Any = (obj.get("metadata") or {}).get("resourceVersion", "0")
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0
