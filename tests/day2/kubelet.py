"""A kubelet (and scheduler) simulator for day-2 scenario tests.

It watches pods over HTTP and plays the node side of a pod's life:

- a pod without scheduling gates and without ``nodeName`` is bound (``pods/binding``, which
  also sets ``PodScheduled=True``), then after ``ready_delay`` it becomes Running and Ready
  with started, ready container statuses;
- graceful termination: the fake API server deletes a pod at once, where a real one keeps a
  bound pod (``deletionTimestamp`` set) until its kubelet has stopped it. So at bind time the
  simulator adds a finalizer of its own; when the pod is deleted it turns not Ready at once
  and the finalizer is removed ``termination_delay`` later, so the pod is "terminating" for
  that long, as on a real node. ``termination_delay=None`` adds no finalizer (deletes are
  immediate);
- test hooks: :meth:`fail` (evicted: phase Failed), :meth:`crash` (not Ready, a container
  restarted with a non-zero exit code), :meth:`set_ready`; :attr:`injected` holds the uid of
  every pod a hook changed (a failure the test caused, not the agent);
- :meth:`withhold`: the pods a predicate selects are neither bound nor started until the
  returned :class:`Withheld` is released (a node that never comes, an image pull that hangs).
  Such a pod stays Pending and unscheduled whether or not its gate was removed.

On a real control plane (``KubeletConfig(binds=False)``, tests/controlplane/day2world.py) the
kube-scheduler binds and the server keeps a deleted bound pod until its kubelet deletes it with
grace period 0, which this one does ``termination_delay`` later; the hooks work the same.

Timers are keyed by pod uid, so a pod re-created under the same name starts afresh.
"""

from __future__ import annotations

import datetime as dt
import functools
import heapq
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import kubernetes.client
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from tests.day2.rest import MERGE_PATCH, Raw, Rest, key_of, list_watch

log = logging.getLogger("tests.day2.kubelet")
FINALIZER = "day2.test/kubelet-termination"
Key = tuple[str, str]


def now_rfc3339() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(eq=False)
class Withheld:
    """Pods ``match`` selects are not bound or started until :meth:`release` (see
    :meth:`Kubelet.withhold`); ``seen`` holds the uid of every pod it kept back."""

    match: Callable[[Raw], bool]
    what: str = ""
    released: bool = False
    seen: set[str] = field(default_factory=set)
    _kubelet: Kubelet | None = None

    def release(self) -> None:
        self.released = True
        if self._kubelet is not None:
            self._kubelet.touch_all()


@dataclass
class KubeletConfig:
    namespace: str | None = None
    node_name: str = "sim-node-0"
    ready_delay: float = 0.05
    termination_delay: float | None = 0.1
    finalizer: str = FINALIZER
    #: ``False`` on a real control plane (tests/controlplane): its kube-scheduler binds the
    #: released pods, and the server itself keeps a bound pod terminating until its kubelet
    #: deletes it with grace period 0, which this one does ``termination_delay`` later (no
    #: finalizer needed).
    binds: bool = True


def _conditions(pod: Raw, **updates: str) -> list[Raw]:
    """The pod's conditions with ``type=status`` pairs upserted (transition time on change)."""
    current = {str(c.get("type")): dict(c) for c in (pod.get("status") or {}).get("conditions") or []}
    for kind, status in updates.items():
        old = current.get(kind)
        if old is None or old.get("status") != status:
            current[kind] = {"type": kind, "status": status, "lastTransitionTime": now_rfc3339()}
    order = ["PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"]
    return sorted(current.values(), key=lambda c: order.index(c["type"]) if c["type"] in order else len(order))


def _container_statuses(pod: Raw, ready: bool, crashed: bool = False, exit_code: int = 1) -> list[Raw]:
    previous = {str(c.get("name")): c for c in (pod.get("status") or {}).get("containerStatuses") or []}
    statuses = []
    for container in (pod.get("spec") or {}).get("containers") or []:
        name = str(container["name"])
        old = previous.get(name, {})
        restarts = int(old.get("restartCount", 0))
        status: Raw = {
            "name": name,
            "image": container.get("image", ""),
            "imageID": f"sim://{container.get('image', '')}",
            "containerID": f"sim://{pod['metadata'].get('uid', '')}/{name}",
            "ready": ready,
            "started": ready,
            "restartCount": restarts + (1 if crashed else 0),
        }
        if crashed:
            status["state"] = {"waiting": {"reason": "CrashLoopBackOff"}}
            status["lastState"] = {
                "terminated": {"exitCode": exit_code, "reason": "Error", "finishedAt": now_rfc3339()}
            }
        else:
            status["state"] = {"running": {"startedAt": now_rfc3339()}}
            if old.get("lastState"):
                status["lastState"] = old["lastState"]
        statuses.append(status)
    return statuses


class Kubelet:
    """Binds released pods, runs them, and terminates deleted ones gracefully (see module doc)."""

    def __init__(self, api_client: kubernetes.client.ApiClient, config: KubeletConfig | None = None) -> None:
        self.config = config or KubeletConfig()
        self.rest = Rest(api_client)
        self.pods: dict[Key, Raw] = {}
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._dirty: set[Key] = set()
        self._timers: list[tuple[float, int, str, Key, str]] = []  # (due, seq, action, key, uid)
        self._seq = 0
        self._scheduled: set[tuple[str, str]] = set()  # (action, uid) with a pending timer
        self._held: set[str] = set()  # uids the tests keep from starting (failed / crashed)
        self.withheld: list[Withheld] = []
        self._stop = threading.Event()
        self._synced = threading.Event()
        self._threads: list[threading.Thread] = []
        self.errors: list[str] = []

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> Kubelet:
        ns = self.config.namespace
        path = f"/api/v1/namespaces/{ns}/pods" if ns else "/api/v1/pods"
        watcher = threading.Thread(
            target=list_watch,
            args=(self.rest, path, self._on_list, self._on_event, self._stop),
            name="sim-kubelet-watch",
            daemon=True,
        )
        worker = threading.Thread(target=self._work, name="sim-kubelet", daemon=True)
        self._threads = [watcher, worker]
        for thread in self._threads:
            thread.start()
        if not self._synced.wait(10):
            raise RuntimeError("kubelet simulator: the pod list never arrived")
        return self

    def stop(self) -> None:
        self._stop.set()
        with self._lock:
            self._wake.notify_all()
        for thread in self._threads:
            thread.join(timeout=10)

    def __enter__(self) -> Kubelet:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- watch -------------------------------------------------------------------------------
    def _on_list(self, items: list[Raw], rv: str) -> None:
        with self._lock:
            self.pods = {key_of(p): p for p in items}
            self._dirty.update(self.pods)
            self._wake.notify_all()
        self._synced.set()

    def _on_event(self, kind: str, pod: Raw) -> None:
        key = key_of(pod)
        with self._lock:
            if kind == "DELETED":
                self.pods.pop(key, None)
            else:
                self.pods[key] = pod
            self._dirty.add(key)
            self._wake.notify_all()

    # -- test hooks --------------------------------------------------------------------------
    def fail(self, namespace: str, name: str, reason: str = "Evicted") -> Raw:
        """The node evicts the pod: phase Failed, not Ready, containers terminated."""

        def change(pod: Raw) -> Raw:
            return {
                "phase": "Failed",
                "reason": reason,
                "message": f"The node was low on resource (simulated {reason.lower()}).",
                "conditions": _conditions(pod, Ready="False", ContainersReady="False"),
                "containerStatuses": [
                    {**s, "ready": False, "started": False, "state": {"terminated": {"exitCode": 137, "reason": reason}}}
                    for s in _container_statuses(pod, ready=False)
                ],
            }

        return self._hold_and_update(namespace, name, change)

    def crash(self, namespace: str, name: str, exit_code: int = 1) -> Raw:
        """A container exits with ``exit_code`` and is restarting: the pod is not Ready."""

        def change(pod: Raw) -> Raw:
            return {
                "phase": "Running",
                "conditions": _conditions(pod, Ready="False", ContainersReady="False"),
                "containerStatuses": _container_statuses(pod, ready=False, crashed=True, exit_code=exit_code),
            }

        return self._hold_and_update(namespace, name, change)

    def set_ready(self, namespace: str, name: str, ready: bool = True) -> Raw:
        """Running with every container ready (or, ``ready=False``, running but not ready)."""

        def change(pod: Raw) -> Raw:
            flag = "True" if ready else "False"
            return {
                "phase": "Running",
                "conditions": _conditions(pod, Initialized="True", Ready=flag, ContainersReady=flag),
                "containerStatuses": _container_statuses(pod, ready=ready),
            }

        return self._hold_and_update(namespace, name, change)

    @property
    def injected(self) -> set[str]:
        """The uids of the pods :meth:`fail`, :meth:`crash` or :meth:`set_ready` changed."""
        with self._lock:
            return set(self._held)

    def withhold(self, match: Callable[[Raw], bool], what: str = "") -> Withheld:
        """Keep the pods ``match`` selects from being bound or started until released."""
        held = Withheld(match, what, _kubelet=self)
        with self._lock:
            self.withheld.append(held)
        return held

    def touch_all(self) -> None:
        """Reconcile every pod again (a withheld pod released)."""
        with self._lock:
            self._dirty.update(self.pods)
            self._wake.notify_all()

    def _withholding(self, pod: Raw) -> bool:
        with self._lock:
            holds = [w for w in self.withheld if not w.released]
        kept = False
        for held in holds:
            if held.match(pod):
                held.seen.add(str(pod["metadata"]["uid"]))
                kept = True
        return kept

    def _hold_and_update(self, namespace: str, name: str, change: Callable[[Raw], Raw]) -> Raw:
        pod = self.rest.request("GET", f"/api/v1/namespaces/{namespace}/pods/{name}")
        with self._lock:
            self._held.add(str(pod["metadata"]["uid"]))
        return self._update_status(namespace, name, change)

    # -- the loop ----------------------------------------------------------------------------
    def _schedule(self, delay: float, action: str, key: Key, uid: str) -> None:
        """Queue ``action`` for pod ``uid`` (caller holds the lock); one pending timer per action."""
        if (action, uid) in self._scheduled:
            return
        self._scheduled.add((action, uid))
        self._seq += 1
        heapq.heappush(self._timers, (time.monotonic() + delay, self._seq, action, key, uid))
        self._wake.notify_all()

    def _work(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                timeout = 0.2
                if self._timers:
                    timeout = max(0.0, min(timeout, self._timers[0][0] - time.monotonic()))
                if not self._dirty and timeout > 0:
                    self._wake.wait(timeout)
                dirty, self._dirty = self._dirty, set()
                due: list[tuple[str, Key, str]] = []
                now = time.monotonic()
                while self._timers and self._timers[0][0] <= now:
                    _, _, action, key, uid = heapq.heappop(self._timers)
                    self._scheduled.discard((action, uid))
                    due.append((action, key, uid))
            for action, key, uid in due:
                self._guarded(functools.partial(self._timer, action, key, uid), key)
            for key in sorted(dirty):
                self._guarded(functools.partial(self._reconcile, key), key)

    def _guarded(self, step: Callable[[], None], key: Key) -> None:
        if self._stop.is_set():
            return
        try:
            step()
        except (ApiException, HTTPError, OSError) as exc:
            status = getattr(exc, "status", None)
            if status == 404:
                return  # the pod is gone; its DELETED event cleans up
            self.errors.append(f"{key}: {exc}")
            log.warning("kubelet simulator: %s: %s", key, exc)
            with self._lock:
                self._dirty.add(key)
            self._stop.wait(0.05)

    def _reconcile(self, key: Key) -> None:
        with self._lock:
            pod = self.pods.get(key)
        if pod is None:
            return
        meta, spec = pod["metadata"], pod.get("spec") or {}
        uid = str(meta["uid"])
        phase = (pod.get("status") or {}).get("phase")
        if meta.get("deletionTimestamp"):
            if not self.config.binds:
                if spec.get("nodeName"):  # an unbound pod the server deletes at once
                    self._terminate(key, pod, phase in ("Failed", "Succeeded"))
                return
            if self.config.finalizer in (meta.get("finalizers") or []):
                self._terminate(key, pod, phase in ("Failed", "Succeeded") or not spec.get("nodeName"))
            return
        if spec.get("schedulingGates") or self._withholding(pod):
            return
        if not spec.get("nodeName"):
            if self.config.binds:
                self._bind(key, pod)
            return
        if phase == "Pending":
            with self._lock:
                if uid not in self._held:
                    self._schedule(self.config.ready_delay, "start", key, uid)

    def _terminate(self, key: Key, pod: Raw, terminal: bool) -> None:
        """A deleted pod: not Ready at once, gone ``termination_delay`` later (at once when
        its containers had already stopped)."""
        if not terminal and _is_ready(pod):
            self._update_status(*key, lambda p: {"conditions": _conditions(p, Ready="False", ContainersReady="False")})
        with self._lock:
            self._schedule(0.0 if terminal else self.config.termination_delay or 0.0, "finish", key,
                           str(pod["metadata"]["uid"]))

    def _timer(self, action: str, key: Key, uid: str) -> None:
        with self._lock:
            pod = self.pods.get(key)
            held = uid in self._held
        if pod is None or pod["metadata"].get("uid") != uid:
            return
        if action == "start" and not held and not pod["metadata"].get("deletionTimestamp") and not self._withholding(pod):
            if (pod.get("status") or {}).get("phase") == "Pending":
                self._update_status(
                    *key,
                    lambda p: {
                        "phase": "Running",
                        "startTime": (p.get("status") or {}).get("startTime") or now_rfc3339(),
                        "conditions": _conditions(
                            p, PodReadyToStartContainers="True", Initialized="True", Ready="True", ContainersReady="True"
                        ),
                        "containerStatuses": _container_statuses(p, ready=True),
                    },
                )
        elif action == "finish" and not self.config.binds:
            body = {"gracePeriodSeconds": 0, "preconditions": {"uid": uid}}
            try:
                self.rest.request("DELETE", f"/api/v1/namespaces/{key[0]}/pods/{key[1]}", body)
            except ApiException as exc:
                if exc.status != 409:  # 409: another pod under the name now (its own timer runs)
                    raise
        elif action == "finish":
            finalizers = [f for f in pod["metadata"].get("finalizers") or [] if f != self.config.finalizer]
            self.rest.request(
                "PATCH",
                f"/api/v1/namespaces/{key[0]}/pods/{key[1]}",
                {"metadata": {"uid": uid, "finalizers": finalizers or None}},
                MERGE_PATCH,
            )

    def _bind(self, key: Key, pod: Raw) -> None:
        namespace, name = key
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": namespace, "uid": pod["metadata"]["uid"]},
            "target": {"apiVersion": "v1", "kind": "Node", "name": self.config.node_name},
        }
        try:
            self.rest.request("POST", f"/api/v1/namespaces/{namespace}/pods/{name}/binding", body)
        except ApiException as exc:
            if exc.status != 409:  # already bound: someone else (or an earlier pass) did it
                raise
        if self.config.termination_delay is not None:
            self.rest.request(
                "PATCH",
                f"/api/v1/namespaces/{namespace}/pods/{name}",
                {
                    "metadata": {
                        "uid": pod["metadata"]["uid"],
                        "finalizers": [*(pod["metadata"].get("finalizers") or []), self.config.finalizer],
                    }
                },
                MERGE_PATCH,
            )

    def _update_status(self, namespace: str, name: str, change: Callable[[Raw], Raw]) -> Raw:
        """Read the pod, merge ``change(pod)`` into its status, write with an RV precondition."""
        path = f"/api/v1/namespaces/{namespace}/pods/{name}"
        for _ in range(10):
            pod = self.rest.request("GET", path)
            status = change(pod)
            body: dict[str, Any] = {"metadata": {"resourceVersion": pod["metadata"]["resourceVersion"]}, "status": status}
            try:
                return self.rest.request("PATCH", f"{path}/status", body, MERGE_PATCH)
            except ApiException as exc:
                if exc.status != 409:
                    raise
        raise RuntimeError(f"kubelet simulator: too many conflicts updating {namespace}/{name}")


def _is_ready(pod: Raw) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (pod.get("status") or {}).get("conditions") or []
    )
