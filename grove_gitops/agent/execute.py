"""Carrying out the agent's actions against the API server, safely and once.

- A delete carries a uid precondition: a pod re-created under the same name since the
  decision (by GitOps, or anyone) fails with 409 instead of being deleted. It is sent only
  for a pod with our managed-by label and a verifying ``gitops.grove.io/rendered-by`` proof
  (:mod:`grove_gitops.expand.ownership`), checked again here whatever the decision said.
- An ungate is a JSON patch guarded by ``test`` ops on the uid, the managed-by label and
  the gate's position (unchanged from the gate-lifter).
- A condition is written only when its status, reason or message differ from what the
  PodGang already says, and ``lastTransitionTime`` only moves when the status changes
  (``meta.SetStatusCondition``), so a steady state costs no writes.
- Every write first asks ``active()``: a replica that lost its Lease stops at once.
- The cache is updated from each response, so the next pass never repeats a step.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable
from typing import Any

from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from grove_gitops.agent.actions import DeletePod, Event, SetCondition
from grove_gitops.agent.cache import MANAGED_BY, MANAGER, WatchCache
from grove_gitops.agent.ratelog import agent_log, describe
from grove_gitops.expand import ownership
from grove_gitops.metrics import Registry
from grove_gitops.readmodel import adoption
from grove_gitops.readmodel import gangs as G

log = logging.getLogger("grove_gitops.agent")
# Reasons whose deletes get an Event: rare, and worth a person's attention. Rolling-update
# steps are reported per replica instead (an Event per pod would double the writes per step).
EVENT_REASONS = {"FailedPodDeleted", "GangTerminated", "UnwantedPodDeleted"}
# Progress messages ("step k of n") change every step; rewriting them each time would add a
# write per replaced pod. A status change is always written at once; a new step count only
# when PROGRESS_EVERY seconds have passed *and* the count moved by a PROGRESS_WRITES-th of
# the steps since it was last written: at most PROGRESS_WRITES refreshes per replica rolled,
# however many pods it has and however slowly they become Ready.
PROGRESS_EVERY = 5.0
PROGRESS_WRITES = 4


def rfc3339(epoch: float | None = None) -> str:
    moment = dt.datetime.now(dt.UTC) if epoch is None else dt.datetime.fromtimestamp(epoch, dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


class Executor:
    def __init__(self, cache: WatchCache, registry: Registry, active: Callable[[], bool], *,
                 max_retries: int, backoff: Callable[[int], float]) -> None:
        self.cache = cache
        self.kube = cache.kube
        self.registry = registry
        self.active = active
        self.max_retries = max_retries
        self._backoff = backoff
        self.patches = 0
        self.deletes = 0
        self.status_writes = 0
        self.events = 0
        self._written: dict[tuple[str, str], tuple[float, int]] = {}  # PodGang -> (when, step) last written

    def _api_error(self, code: str) -> None:
        self.registry.inc("grove_gitops_lifter_api_errors_total", "API errors", code=code)

    # -- pods --------------------------------------------------------------------------
    def delete(self, action: DeletePod) -> bool:
        """Delete the pod the decision saw; True when it is gone or terminating."""
        key = (action.namespace, action.name)
        with self.cache.lock:
            pod = self.cache.pods.get(key)
        if pod is None or (pod.get("metadata") or {}).get("uid") != action.uid:
            return False
        if ((pod.get("metadata") or {}).get("labels") or {}).get(MANAGED_BY) != MANAGER:
            return False  # never a pod grove-gitops does not manage
        if not ownership.verify(pod) and adoption.claim(pod) is None:
            return False  # nor one no render made (the label alone can be copied), or no migration handed over
        for attempt in range(1, self.max_retries + 1):
            if not self.active():
                return False
            try:
                self.deletes += 1
                terminating = self.kube.delete_pod(action.namespace, action.name, action.uid)
            except ApiException as exc:
                self._api_error(str(exc.status or 0))
                if exc.status == 404:
                    self.cache.forget_pod(key, action.uid)
                    return True
                if exc.status == 409:
                    return False  # another pod now has the name: decide afresh
                if (exc.status or 0) >= 500 or exc.status == 429:
                    time.sleep(self._backoff(attempt))
                    continue
                agent_log.warning("deleting pod %s/%s failed: %s", action.namespace, action.name, describe(exc),
                                  key=f"delete:{describe(exc)}")
                return False
            except (HTTPError, OSError):
                self._api_error("connection")
                time.sleep(self._backoff(attempt))
                continue
            if terminating is None:
                self.cache.forget_pod(key, action.uid)
            else:
                self.cache.apply("pods", "MODIFIED", terminating)
            self.registry.inc("grove_gitops_agent_pods_deleted_total", "Pods the agent deleted", reason=action.reason)
            log.info("deleted pod %s/%s (%s): %s", action.namespace, action.name, action.reason, action.message)
            if action.reason in EVENT_REASONS and action.gang is not None:
                self.event(Event(action.gang, action.reason, f"pod {action.name}: {action.message}",
                                 "Warning" if action.reason != "UnwantedPodDeleted" else "Normal"))
            return True
        return False

    def ungate(self, namespace: str, name: str, uid: str) -> bool:
        """Remove our gate from the pod the decision saw; True when it no longer carries it."""
        with self.cache.lock:
            pod = self.cache.pods.get((namespace, name))
        for attempt in range(1, self.max_retries + 1):
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
                self.cache.apply("pods", "MODIFIED", updated)
                return True
            except ApiException as exc:
                self._api_error(str(exc.status or 0))
                if exc.status == 404:
                    self.cache.forget_pod((namespace, name), uid)
                    return False
                if exc.status not in (409, 422) and not (exc.status or 0) >= 500:
                    agent_log.warning("ungating %s/%s failed: %s", namespace, name, describe(exc),
                                      key=f"ungate:{describe(exc)}")
                    return False
                if (exc.status or 0) >= 500:
                    time.sleep(self._backoff(attempt))
            except (HTTPError, OSError):
                time.sleep(self._backoff(attempt))
            try:
                pod = self.kube.read_pod(namespace, name)
                self.cache.apply("pods", "MODIFIED", pod)
            except ApiException as exc:
                if exc.status == 404:
                    return False
                time.sleep(self._backoff(attempt))
            except (HTTPError, OSError):
                time.sleep(self._backoff(attempt))
        return False

    # -- PodGang status and Events -----------------------------------------------------
    def needed(self, action: SetCondition) -> bool:
        """Whether :meth:`set_condition` would write: the PodGang exists and says something
        else, and a mere step counter is due for a refresh."""
        with self.cache.lock:
            gang = self.cache.podgangs.get(action.gang)
        if gang is None:
            return False
        conditions = (gang.get("status") or {}).get("conditions") or []
        old = next((c for c in conditions if isinstance(c, dict) and c.get("type") == action.type), None)
        if old is not None and (old.get("status"), old.get("reason"), old.get("message")) == (
            action.status, action.reason, action.message
        ):
            return False
        changed = old is None or old.get("status") != action.status
        return changed or action.progress is None or self._progress_due(action.gang, action.progress)

    def changes_status(self, action: SetCondition) -> bool:
        """Whether the condition's status differs from what the cached PodGang says (a new
        condition counts as a change)."""
        with self.cache.lock:
            gang = self.cache.podgangs.get(action.gang)
        conditions = ((gang or {}).get("status") or {}).get("conditions") or []
        old = next((c for c in conditions if isinstance(c, dict) and c.get("type") == action.type), None)
        return old is None or old.get("status") != action.status

    def set_condition(self, action: SetCondition) -> bool:
        """Merge one condition into the PodGang's status; no write when nothing changes."""
        with self.cache.lock:
            gang = self.cache.podgangs.get(action.gang)
        if gang is None:
            return False
        if not self.needed(action):
            return True
        status = dict(gang.get("status") or {})
        conditions = [dict(c) for c in status.get("conditions") or [] if isinstance(c, dict)]
        old = next((c for c in conditions if c.get("type") == action.type), None)
        changed = old is None or old.get("status") != action.status
        self._written[action.gang] = (time.monotonic(), action.progress[0] if action.progress else 0)
        new: dict[str, Any] = {
            "type": action.type,
            "status": action.status,
            "reason": action.reason,
            "message": action.message[:32768],
            "lastTransitionTime": rfc3339(action.since) if changed else old.get("lastTransitionTime", rfc3339()) if old else rfc3339(),
        }
        conditions = [c for c in conditions if c.get("type") != action.type] + [new]
        status["conditions"] = sorted(conditions, key=lambda c: str(c.get("type")))
        status.setdefault("phase", "Pending")
        if not self.active():
            return False
        try:
            self.status_writes += 1
            self.kube.patch_podgang_status(action.gang[0], action.gang[1], status)
        except ApiException as exc:
            self._api_error(str(exc.status or 0))
            agent_log.warning("writing condition %s of PodGang %s/%s failed: %s", action.type, action.gang[0],
                              action.gang[1], describe(exc), key=f"condition:{describe(exc)}")
            with self.cache.lock:
                self.cache.dirty.add((action.gang[0], str(((gang.get("metadata") or {}).get("labels") or {}).get("app.kubernetes.io/part-of", ""))))
            return False
        except (HTTPError, OSError):
            self._api_error("connection")
            return False
        with self.cache.lock:
            current = self.cache.podgangs.get(action.gang)
            if current is not None:
                self.cache.podgangs[action.gang] = {**current, "status": status}
        return True

    def _progress_due(self, gang: tuple[str, str], progress: tuple[int, int]) -> bool:
        when, step = self._written.get(gang, (-1e9, -(10**9)))
        step_now, steps = progress
        return time.monotonic() - when >= PROGRESS_EVERY and step_now - step >= max(1, -(-steps // PROGRESS_WRITES))

    def event(self, action: Event) -> None:
        with self.cache.lock:
            gang = self.cache.podgangs.get(action.gang)
        if gang is None or not self.active():
            return
        self.events += 1
        self.kube.emit_event(action.gang[0], gang, action.reason, action.message, action.type)
