"""Fixtures for the fake apiserver's contract tests: one fresh server per test, typed API objects."""

from __future__ import annotations

from collections.abc import Iterator

import kubernetes.client
import pytest

from tests.fakeserver import FakeApiServer


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    with FakeApiServer() as fake:
        yield fake
        assert fake.internal_errors == [], "the fake itself crashed while serving a request"


@pytest.fixture
def api(server: FakeApiServer) -> kubernetes.client.ApiClient:
    return server.api_client()


@pytest.fixture
def core(api: kubernetes.client.ApiClient) -> kubernetes.client.CoreV1Api:
    return kubernetes.client.CoreV1Api(api)


@pytest.fixture
def custom(api: kubernetes.client.ApiClient) -> kubernetes.client.CustomObjectsApi:
    return kubernetes.client.CustomObjectsApi(api)


@pytest.fixture
def coordination(api: kubernetes.client.ApiClient) -> kubernetes.client.CoordinationV1Api:
    return kubernetes.client.CoordinationV1Api(api)
