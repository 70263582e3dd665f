"""End to end: render → apply in wave order → the lifter releases every gang."""

from __future__ import annotations

from grove_gitops.agent.kube import Kube
from tests.fakeserver import FakeApiServer
from tests.gatelifter.support import apply, gated, rendered_objects, running_lifter
from tests.support import PROJECT


def test_example_is_released() -> None:
    objs = rendered_objects(PROJECT / "examples")
    with FakeApiServer() as server:
        kube = Kube(server.api_client())
        apply(kube, objs)
        pods = [o for o in objs if o["kind"] == "Pod"]
        assert len(gated(server)) == len(pods) == 12
        with running_lifter(server) as lifter:
            # Base gang first; the scaled gang waits for the base gang's scheduled pods.
            assert server.wait_for(lambda: len(gated(server)) == 4, timeout=10), gated(server)
            assert all("prefill-1" in name for name in gated(server))
            for pod in server.store.list_objects("pods", "inference"):
                if not pod["spec"].get("schedulingGates"):
                    server.schedule_pod("inference", pod["metadata"]["name"])
            assert server.wait_for(lambda: gated(server) == [], timeout=10), gated(server)
        assert lifter.patches == 12
