"""LeaderElector against the fake API server: acquire, renew, lose on failed renewals, release."""

from __future__ import annotations

import threading
import time

import kubernetes.client

from grove_gitops.agent.leader import LeaderElector
from tests.fakeserver import FakeApiServer


def elector(server: FakeApiServer, identity: str) -> LeaderElector:
    api = kubernetes.client.CoordinationV1Api(server.api_client())
    return LeaderElector(api, "default", "lifter", identity, lease_duration=1.5, renew_deadline=1.0, retry_period=0.2)


def test_leadership_is_lost_when_renewals_fail_and_handed_over_on_release() -> None:
    with FakeApiServer() as server:
        a, b = elector(server, "a"), elector(server, "b")
        stop_a, stop_b = threading.Event(), threading.Event()
        ta = threading.Thread(target=a.run, args=(stop_a,), daemon=True)
        ta.start()
        assert a.acquired.wait(5) and a.is_leader
        tb = threading.Thread(target=b.run, args=(stop_b,), daemon=True)
        tb.start()
        time.sleep(0.6)
        assert not b.acquired.is_set()  # a renews; b only campaigns
        server.faults.add(verb="update", resource="leases", status=500, times=100)
        assert a.lost.wait(3)  # renewals failing past the deadline: a stops leading at once
        assert not a.is_leader
        server.faults.clear()
        assert b.acquired.wait(5) and b.is_leader  # the Lease expired; b takes over
        stop_b.set()
        tb.join(5)
        lease = server.get_object("leases.coordination.k8s.io", "default", "lifter")
        assert lease is not None and not (lease.get("spec") or {}).get("holderIdentity")  # released on shutdown
        stop_a.set()
        ta.join(5)
        assert not ta.is_alive() and not tb.is_alive()


def test_leader_drops_leadership_when_the_api_server_is_unreachable() -> None:
    """Connection refused (not an ApiException) used to kill the renew thread while is_leader stayed set."""
    server = FakeApiServer().start()
    a = elector(server, "a")
    stop = threading.Event()
    thread = threading.Thread(target=a.run, args=(stop,), daemon=True)
    thread.start()
    try:
        assert a.acquired.wait(5)
        server.stop()  # the port now refuses connections
        assert a.lost.wait(5) and not a.is_leader
        assert not a.healthy(stale_after=0.5)
    finally:
        stop.set()
        thread.join(5)
        server.stop()
    assert not thread.is_alive()


def test_leader_drops_leadership_when_the_api_server_hangs() -> None:
    """A renewal that never answers is a failed renewal: request timeouts are set."""
    with FakeApiServer() as server:
        a = elector(server, "a")
        stop = threading.Event()
        thread = threading.Thread(target=a.run, args=(stop,), daemon=True)
        thread.start()
        assert a.acquired.wait(5)
        server.faults.delay(30, resource="leases")
        started = time.monotonic()
        assert server.wait_for(lambda: not a.is_leader, timeout=3)  # stops acting as leader at the deadline
        assert a.lost.wait(12)  # and the renew loop, not stuck in a request, drops leadership
        assert time.monotonic() - started < 15  # the server would hang for 30 s
        server.faults.clear()
        stop.set()
        thread.join(5)
        assert not thread.is_alive()
