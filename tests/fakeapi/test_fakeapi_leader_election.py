"""The official ``kubernetes.leaderelection`` with ``LeaseLock`` against the fake: one leader, failover.

The stock elector's timings cannot go below 1 s (its Config calls ``sys.exit`` otherwise) and
``run()`` never returns while leading, so each candidate runs in a thread whose lock raises once
the test stops it — that is how a "crashed" leader is simulated without touching the library.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

import kubernetes.client
from kubernetes.leaderelection import electionconfig, leaderelection
from kubernetes.leaderelection.resourcelock.leaselock import LeaseLock

from tests.fakeserver import FakeApiServer


class _Stopped(Exception):
    """Raised inside the elector's thread to end it (a process that died)."""


class _StoppableLeaseLock(LeaseLock):  # type: ignore[misc]
    def __init__(self, api: kubernetes.client.CoordinationV1Api, identity: str) -> None:
        super().__init__("gate-lifter", "kube-system", identity)
        self.api_instance = api
        self.stopped = threading.Event()

    def get(self, name: str, namespace: str) -> Any:
        if self.stopped.is_set():
            raise _Stopped()
        return super().get(name, namespace)

    def create(self, name: str, namespace: str, election_record: Any) -> Any:
        if self.stopped.is_set():
            raise _Stopped()
        return super().create(name, namespace, election_record)

    def update(self, name: str, namespace: str, updated_record: Any) -> Any:
        if self.stopped.is_set():
            raise _Stopped()
        return super().update(name, namespace, updated_record)


class _Candidate:
    def __init__(self, server: FakeApiServer, identity: str) -> None:
        self.identity = identity
        self.lock = _StoppableLeaseLock(kubernetes.client.CoordinationV1Api(server.api_client()), identity)
        self.leading = threading.Event()
        config = electionconfig.Config(
            self.lock,
            lease_duration=2,
            renew_deadline=1.5,
            retry_period=1,
            onstarted_leading=self.leading.set,
            onstopped_leading=lambda: None,
        )
        self.thread = threading.Thread(
            target=self._run,
            args=(leaderelection.LeaderElection(config),),
            name=f"candidate-{identity}",
            daemon=True,
        )

    def _run(self, election: Any) -> None:
        with contextlib.suppress(_Stopped):
            election.run()

    def stop(self) -> None:
        self.lock.stopped.set()
        self.thread.join(5)
        assert not self.thread.is_alive()


def test_two_candidates_one_leader_then_failover(
    server: FakeApiServer, coordination: kubernetes.client.CoordinationV1Api
) -> None:
    a, b = _Candidate(server, "a"), _Candidate(server, "b")
    a.thread.start()
    b.thread.start()
    try:
        assert server.wait_for(lambda: a.leading.is_set() or b.leading.is_set(), timeout=5)
        time.sleep(1.5)  # several renew/retry rounds: the follower must not also take the lease
        assert a.leading.is_set() != b.leading.is_set()
        leader, follower = (a, b) if a.leading.is_set() else (b, a)
        lease = coordination.read_namespaced_lease("gate-lifter", "kube-system")
        assert lease.spec.holder_identity == leader.identity
        assert server.requests_count(verb="update", resource="leases", status=200) >= 1  # renewals are PUTs

        started = time.monotonic()
        leader.stop()
        assert server.wait_for(follower.leading.is_set, timeout=6)
        assert time.monotonic() - started < 6
        lease = coordination.read_namespaced_lease("gate-lifter", "kube-system")
        assert lease.spec.holder_identity == follower.identity
    finally:
        a.lock.stopped.set()
        b.lock.stopped.set()
        a.thread.join(5)
        b.thread.join(5)
