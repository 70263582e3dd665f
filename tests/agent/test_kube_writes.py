"""The agent's writes go straight through the client's connection pool (issue 35.3).

The generated client asked the configuration for credentials on every request (its kubeconfig
and in-cluster hooks then reload them and set the host URL again) and checked every call with
pydantic: a third of the agent's CPU per gate patch. ``Kube``'s writes now take the server URL and
credential headers from the configuration at most every ``AUTH_REFRESH`` seconds, and send the
same request: same path, body, content type, User-Agent (the fake's field manager of a write)
and token; the server's refusals are ApiExceptions with its status and message as before.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from kubernetes.client import Configuration
from kubernetes.client.exceptions import ApiException

from grove_gitops.agent import kube as K
from tests.fakeapi.fakeapi_helpers import GATE, pod_manifest
from tests.fakeserver import FakeApiServer

LIFT = [
    {"op": "test", "path": "/spec/schedulingGates/0/name", "value": GATE},
    {"op": "remove", "path": "/spec/schedulingGates/0"},
]


def _kube(server: FakeApiServer) -> tuple[K.Kube, list[str]]:
    """A ``Kube`` whose configuration's credential hook counts its calls (as kubeconfig's does,
    the hook runs whenever the client asks for credentials)."""
    api = server.api_client(token="first")
    calls: list[str] = []

    def hook(config: Configuration) -> None:
        calls.append(config.api_key["BearerToken"])

    api.configuration.refresh_api_key_hook = hook
    return K.Kube(api), calls


def test_many_writes_ask_for_credentials_once_per_refresh_and_carry_them() -> None:
    with FakeApiServer(namespaces=("default",)) as server:
        kube, calls = _kube(server)
        for i in range(30):
            kube.raw("POST", "/api/v1/namespaces/default/pods", pod_manifest(f"p{i}"))
        started = time.monotonic()
        for i in range(30):
            pod = kube.patch_pod_json("default", f"p{i}", LIFT)
            assert not pod["spec"].get("schedulingGates")
        elapsed = time.monotonic() - started
        assert server.requests_count(verb="patch", resource="pods", status=200) == 30
        # At most once a second (30 writes took `elapsed`), not once per request.
        assert 1 <= len(calls) <= 2 + int(elapsed), (len(calls), elapsed)
        assert K.AUTH_REFRESH <= 1.0  # a rotated token is used within a second
        host, headers = kube._auth()
        assert host == server.url and headers["authorization"] == "Bearer first"
        assert headers["User-Agent"] == kube.api_client.default_headers["User-Agent"]


def test_a_rotated_token_is_sent_once_the_refresh_is_due(monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeApiServer(namespaces=("default",)) as server:
        kube, _ = _kube(server)
        kube.raw("POST", "/api/v1/namespaces/default/pods", pod_manifest("p"))
        kube.api_client.configuration.api_key = {"BearerToken": "Bearer rotated"}
        monkeypatch.setattr(K, "AUTH_REFRESH", 0.0)  # due at once (no waiting in a test)
        kube.patch_pod_json("default", "p", LIFT)
        assert kube._auth()[1]["authorization"] == "Bearer rotated"


def test_a_refused_write_raises_the_servers_status_and_message() -> None:
    with FakeApiServer(namespaces=("default",)) as server:
        kube, _ = _kube(server)
        kube.raw("POST", "/api/v1/namespaces/default/pods", pod_manifest("p"))
        server.faults.add(verb="patch", resource="pods", status=409, times=1)
        with pytest.raises(ApiException) as info:
            kube.patch_pod_json("default", "p", LIFT)
        status = json.loads(str(info.value.body))
        assert info.value.status == 409 and status["reason"] == "Conflict" and status["details"]["name"] == "p"
        with pytest.raises(ApiException) as missing:
            kube.patch_podgang_status("default", "none", {"phase": "Pending"})
        assert missing.value.status == 404
        body: Any = kube.patch_pod_json("default", "p", LIFT)  # the fault was once: now it goes through
        assert body["metadata"]["name"] == "p"


def test_a_body_given_as_text_is_sent_as_it_is() -> None:
    """Server-side apply's body is YAML or JSON text (tests/controlplane's Argo CD and Flux
    appliers send it so): sent as it is, never JSON-encoded as a string."""
    with FakeApiServer(namespaces=("default",)) as server:
        kube, _ = _kube(server)
        text = json.dumps(pod_manifest("applied"))
        done = kube.raw("PATCH", "/api/v1/namespaces/default/pods/applied?fieldManager=argocd-controller&force=true",
                        text, "application/apply-patch+yaml")
        assert done["metadata"]["name"] == "applied"
        again = kube.raw("PATCH", "/api/v1/namespaces/default/pods/applied?fieldManager=argocd-controller&force=true",
                         text.encode(), "application/apply-patch+yaml")
        assert again["metadata"]["uid"] == done["metadata"]["uid"]
