"""Events named and namespaced as client-go names them, refusals logged once with the server's
message, and one TLS warning at start (issue 32, points 1, 5 and 6).

The fake API server refuses what a real kube-apiserver refused of the agent's Events (a
``generateName`` ending in ``.``, a ``regarding`` without the Event's namespace), so these
tests fail against the Event path the agent had before.
"""

from __future__ import annotations

import logging
import re
import warnings

import kubernetes
import pytest
import urllib3
from kubernetes.client.exceptions import ApiException

from grove_gitops.agent import ratelog
from grove_gitops.agent.kube import Kube, event_name
from grove_gitops.agent.service import insecure_once
from tests.fakeserver import FakeApiServer

NS = "serving"
GANG = {"apiVersion": "scheduler.grove.io/v1alpha1", "kind": "PodGang",
        "metadata": {"name": "llama-disagg-0", "namespace": NS, "uid": "u-1"}}
BINDING = {"apiVersion": "grove.io/v1alpha1", "kind": "ClusterTopologyBinding",
           "metadata": {"name": "gpu-fabric", "uid": "u-2"}}


def _events(server: FakeApiServer, namespace: str) -> list[dict[str, object]]:
    return list(server.store.list_objects("events.events.k8s.io", namespace))


def _namespace(server: FakeApiServer, name: str) -> None:
    server.put_object({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})


def test_an_event_is_named_and_namespaced_as_client_go_does() -> None:
    with FakeApiServer() as server:
        _namespace(server, NS)
        _namespace(server, "default")
        kube = Kube(server.api_client())
        assert kube.emit_event(NS, GANG, "RollingUpdateStarted", "rolling replica 0", "Normal")
        # A cluster-scoped object's Event goes to "default", whatever namespace the caller had.
        assert kube.emit_event("elsewhere", BINDING, "TopologyDrift", "drifted")
        (event,) = _events(server, NS)
        meta = event["metadata"]
        assert isinstance(meta, dict) and re.fullmatch(r"llama-disagg-0\.[0-9a-f]+", str(meta["name"]))
        assert event["regarding"] == {"apiVersion": "scheduler.grove.io/v1alpha1", "kind": "PodGang",
                                      "name": "llama-disagg-0", "uid": "u-1", "namespace": NS}
        (cluster,) = _events(server, "default")
        assert "namespace" not in cluster["regarding"]  # type: ignore[operator]


def test_event_names_are_unique_and_bounded() -> None:
    names = {event_name("a" * 300) for _ in range(200)}
    assert len(names) == 200
    assert all(len(n) <= 253 and re.fullmatch(r"a+\.[0-9a-f]+", n) for n in names)
    # A cut that would end the name part in "-" or "." is trimmed: the name stays a subdomain.
    assert re.fullmatch(r"a+\.[0-9a-f]+", event_name("a" * 235 + "-" * 30))
    assert re.fullmatch(r"grove-gitops\.[0-9a-f]+", event_name(""))


@pytest.mark.parametrize(
    ("metadata", "regarding_ns", "message"),
    [
        ({"generateName": "llama-disagg-0.", "namespace": NS}, NS, 'metadata.generateName: Invalid value: "llama-disagg-0."'),
        ({"name": "llama-disagg-0.1", "namespace": NS}, None, 'involvedObject.namespace: Invalid value: "": does not match event.namespace'),
        # (A regarding namespace that differs but is set is accepted by a real server for
        # new-style Events: tests/controlplane/test_contract.py.)
    ],
)
def test_the_fake_refuses_what_the_real_server_refuses(metadata: dict[str, str], regarding_ns: str | None,
                                                         message: str) -> None:
    regarding = {"apiVersion": "v1", "kind": "Pod", "name": "p"} | ({"namespace": regarding_ns} if regarding_ns else {})
    body = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": metadata, "regarding": regarding,
            "reportingController": "x.io/y", "reportingInstance": "i", "action": "Check", "reason": "R",
            "type": "Normal", "eventTime": "2026-01-01T00:00:00.000000Z"}
    with FakeApiServer() as server:
        _namespace(server, NS)
        with pytest.raises(ApiException) as refused:
            Kube(server.api_client()).raw("POST", f"/apis/events.k8s.io/v1/namespaces/{NS}/events", body)
        assert refused.value.status == 422
        assert message in ratelog.describe(refused.value)


def test_a_refused_event_is_logged_once_with_the_servers_message(caplog: pytest.LogCaptureFixture) -> None:
    with FakeApiServer() as server:
        _namespace(server, NS)
        kube = Kube(server.api_client())
        server.faults.add("create", "events", status=403, times=None,
                          message='events.events.k8s.io is forbidden: User "system:serviceaccount:x:agent" cannot create')
        with caplog.at_level(logging.WARNING, logger="grove_gitops.agent"):
            results = [kube.emit_event(NS, GANG, "GangTerminated", f"try {n}") for n in range(5)]
        assert results == [False] * 5  # never raised
        lines = [r.getMessage() for r in caplog.records if "not recorded" in r.getMessage()]
        assert len(lines) == 1, lines
        assert 'cannot create' in lines[0] and "403" in lines[0]


def test_describe_carries_the_status_message() -> None:
    exc = ApiException(status=422, reason="Unprocessable Entity")
    exc.body = '{"kind":"Status","message":"PodGang \\"g\\" is invalid: spec: Required value"}'
    assert ratelog.describe(exc) == 'Unprocessable Entity'.join(["422 ", ': PodGang "g" is invalid: spec: Required value'])
    assert ratelog.describe(ConnectionResetError("peer reset")) == "ConnectionResetError: peer reset"


def test_rate_limited_logs_one_line_per_message_per_interval(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    limited = ratelog.RateLimited(logging.getLogger("grove_gitops.agent.test"), interval=60.0, clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, logger="grove_gitops.agent.test"):
        assert limited.warning("failed: %s", "403 a")
        assert not limited.warning("failed: %s", "403 a")
        assert limited.warning("failed: %s", "422 b")  # another message: its own line
        now[0] = 61.0
        assert limited.warning("failed: %s", "403 a")
    lines = [r.getMessage() for r in caplog.records]
    assert lines == ["failed: 403 a", "failed: 422 b", "failed: 403 a (1 more like this in the last 60s)"]


def test_insecure_tls_is_said_once_then_silent(caplog: pytest.LogCaptureFixture) -> None:
    config = kubernetes.client.Configuration()
    config.verify_ssl = False
    log = logging.getLogger("grove_gitops.agent.test-tls")
    with warnings.catch_warnings(record=True) as shown, caplog.at_level(logging.WARNING, logger=log.name):
        warnings.simplefilter("always")
        assert insecure_once(kubernetes.client.ApiClient(config), log)
        for _ in range(3):
            warnings.warn("Unverified HTTPS request", urllib3.exceptions.InsecureRequestWarning, stacklevel=1)
    assert [w for w in shown if issubclass(w.category, urllib3.exceptions.InsecureRequestWarning)] == []
    assert len([r for r in caplog.records if "TLS verification" in r.getMessage()]) == 1
    verified = kubernetes.client.Configuration()
    assert not insecure_once(kubernetes.client.ApiClient(verified), log)
