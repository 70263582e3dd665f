"""Leader election on a ``coordination.k8s.io/v1`` Lease, so two lifter replicas are safe.

Written against the API directly (GET, then create or PUT with the read resourceVersion) so
that losing a race is an ordinary 409 and losing leadership is noticed by the renew loop:
when a renewal has not succeeded within ``renew_deadline``, :attr:`is_leader` turns false
and the ``lost`` event fires at once, before another replica can acquire the Lease (which
needs the full ``lease_duration`` to pass).
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from collections.abc import Callable

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from grove_gitops.agent.ratelog import agent_log, describe

log = logging.getLogger("grove_gitops.agent.leader")


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class LeaderElector:
    def __init__(
        self,
        api: client.CoordinationV1Api,
        namespace: str,
        name: str,
        identity: str,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        clock: Callable[[], dt.datetime] = _now,
    ) -> None:
        if not (lease_duration > renew_deadline > retry_period > 0):
            raise ValueError("need lease_duration > renew_deadline > retry_period > 0")
        self.api = api
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.clock = clock
        self.acquired = threading.Event()
        self.lost = threading.Event()
        self._leader = False
        self._last_renew = 0.0
        self.last_contact = time.monotonic()  # last API answer of any kind (health)
        # A hanging API server is a failed renewal: each request times out (after a full lease
        # duration, lenient so a slow but working server under load does not cost leadership;
        # is_leader turns false at renew_deadline on its own, so no stale patch is sent meanwhile).
        self.timeout = (min(5.0, lease_duration), lease_duration)

    @property
    def is_leader(self) -> bool:
        return self._leader and time.monotonic() - self._last_renew < self.renew_deadline

    def _lease_body(self, previous: client.V1Lease | None) -> client.V1Lease:
        now = self.clock()
        spec = previous.spec if previous is not None and previous.spec is not None else client.V1LeaseSpec()
        transitions = spec.lease_transitions or 0
        if spec.holder_identity != self.identity:
            transitions += 1 if previous is not None else 0
            spec.acquire_time = now
        spec.holder_identity = self.identity
        spec.lease_duration_seconds = max(1, round(self.lease_duration))
        spec.renew_time = now
        spec.lease_transitions = transitions
        meta = (
            previous.metadata if previous is not None else client.V1ObjectMeta(name=self.name, namespace=self.namespace)
        )
        return client.V1Lease(metadata=meta, spec=spec)

    def healthy(self, stale_after: float) -> bool:
        """The campaign/renew loop has heard from the API server within ``stale_after`` seconds."""
        return time.monotonic() - self.last_contact < stale_after

    def try_acquire_or_renew(self) -> bool:
        """One attempt; True when we hold the Lease afterwards.

        Any failure (an API error, a refused or reset connection, a timeout, a bad answer)
        is a failed attempt, never an exception: the renew loop must survive it, and a leader
        whose renewals keep failing must drop leadership.
        """
        try:
            return self._attempt()
        except (HTTPError, OSError, ValueError, TypeError) as exc:
            agent_log.warning("lease attempt failed: %s", describe(exc))
            return False

    def _attempt(self) -> bool:
        try:
            lease = self.api.read_namespaced_lease(self.name, self.namespace, _request_timeout=self.timeout)
            self.last_contact = time.monotonic()
        except ApiException as exc:
            self.last_contact = time.monotonic()
            if exc.status != 404:
                agent_log.warning("reading lease failed: %s", describe(exc))
                return False
            try:
                self.api.create_namespaced_lease(
                    self.namespace, self._lease_body(None), _request_timeout=self.timeout
                )
                return True
            except ApiException as create_exc:
                agent_log.info("lost the race to create the lease (%s)", describe(create_exc))
                return False
        spec = lease.spec
        holder = spec.holder_identity if spec is not None else None
        if holder and holder != self.identity and spec is not None:
            renewed = spec.renew_time or spec.acquire_time
            duration = spec.lease_duration_seconds or self.lease_duration
            if renewed is not None and self.clock() < renewed + dt.timedelta(seconds=duration):
                return False  # held by someone else and not expired
        try:
            self.api.replace_namespaced_lease(
                self.name, self.namespace, self._lease_body(lease), _request_timeout=self.timeout
            )
            return True
        except ApiException as exc:
            agent_log.info("lease update conflict (%s)", describe(exc))
            return False

    def run(self, stop: threading.Event) -> None:
        """Campaign until leading, then renew; returns when ``stop`` is set or leadership is lost."""
        while not stop.is_set():
            if self.try_acquire_or_renew():
                self._leader = True
                self._last_renew = time.monotonic()
                self.acquired.set()
                log.info("%s became leader of %s/%s", self.identity, self.namespace, self.name)
                break
            stop.wait(self.retry_period)
        while not stop.is_set() and self._leader:
            stop.wait(self.retry_period)
            if stop.is_set():
                break
            if self.try_acquire_or_renew():
                self._last_renew = time.monotonic()
            elif time.monotonic() - self._last_renew >= self.renew_deadline:
                self._leader = False
                log.warning("%s lost leadership of %s/%s", self.identity, self.namespace, self.name)
                self.lost.set()
        if stop.is_set() and self._leader:
            self._release()

    def _release(self) -> None:
        """Hand over quickly on a clean shutdown: expire our own Lease."""
        try:
            lease = self.api.read_namespaced_lease(self.name, self.namespace, _request_timeout=self.timeout)
            if lease.spec is not None and lease.spec.holder_identity == self.identity:
                lease.spec.holder_identity = None
                lease.spec.renew_time = None
                lease.spec.acquire_time = None
                self.api.replace_namespaced_lease(self.name, self.namespace, lease, _request_timeout=self.timeout)
        except (ApiException, HTTPError, OSError, ValueError):
            pass  # best effort: the Lease expires on its own
        self._leader = False
