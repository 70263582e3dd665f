"""Watch semantics through ``kubernetes.watch.Watch``: resume, expiry (410), selectors, timeouts, drops."""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

import kubernetes.client
import kubernetes.watch
import pytest
from kubernetes.client import ApiException

from tests.fakeapi.fakeapi_helpers import pod_manifest, podgang_manifest
from tests.fakeserver import FakeApiServer


def _collect(stream: Any, count: int) -> list[tuple[str, str]]:
    events = []
    for event in stream:
        meta = event["raw_object"]["metadata"]
        events.append((event["type"], meta["name"]))
        if len(events) == count:
            break
    return events


def test_watch_replays_from_resource_version(core: kubernetes.client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", pod_manifest("before"))
    since = core.list_namespaced_pod("default").metadata.resource_version
    core.create_namespaced_pod("default", pod_manifest("p1"))
    core.patch_namespaced_pod("p1", "default", {"metadata": {"labels": {"step": "2"}}})
    core.delete_namespaced_pod("p1", "default")
    watch = kubernetes.watch.Watch()
    stream = watch.stream(core.list_namespaced_pod, "default", resource_version=since, timeout_seconds=5)
    assert _collect(stream, 3) == [("ADDED", "p1"), ("MODIFIED", "p1"), ("DELETED", "p1")]
    watch.stop()


def test_watch_without_version_lists_first_then_streams_live(core: kubernetes.client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", pod_manifest("existing"))
    events: list[tuple[str, str, Any]] = []
    watch = kubernetes.watch.Watch()

    def run() -> None:
        for event in watch.stream(core.list_namespaced_pod, "default", timeout_seconds=10):
            events.append((event["type"], event["object"].metadata.name, event["object"]))
            if event["type"] == "DELETED":
                watch.stop()

    thread = threading.Thread(target=run)
    thread.start()
    deadline = time.monotonic() + 5
    while not events and time.monotonic() < deadline:
        time.sleep(0.01)
    core.create_namespaced_pod("default", pod_manifest("live"))
    core.delete_namespaced_pod("live", "default")
    thread.join(5)
    assert not thread.is_alive()
    assert [(t, n) for t, n, _ in events] == [("ADDED", "existing"), ("ADDED", "live"), ("DELETED", "live")]
    assert isinstance(events[0][2], kubernetes.client.V1Pod)  # typed objects, as for a real server


def test_watch_from_compacted_version_raises_410(
    server: FakeApiServer, core: kubernetes.client.CoreV1Api
) -> None:
    old = core.create_namespaced_pod("default", pod_manifest("p1")).metadata.resource_version
    core.patch_namespaced_pod("p1", "default", {"metadata": {"labels": {"x": "1"}}})
    core.patch_namespaced_pod("p1", "default", {"metadata": {"labels": {"x": "2"}}})
    server.compact()
    for kwargs in ({"timeout_seconds": 5}, {}):  # with and without the client's one automatic retry
        with pytest.raises(ApiException) as info:
            list(
                kubernetes.watch.Watch().stream(
                    core.list_namespaced_pod, "default", resource_version=old, **kwargs
                )
            )
        assert info.value.status == 410
        assert "too old resource version" in info.value.reason
    current = core.list_namespaced_pod("default").metadata.resource_version
    watch = kubernetes.watch.Watch()
    core.delete_namespaced_pod("p1", "default")
    assert _collect(
        watch.stream(core.list_namespaced_pod, "default", resource_version=current, timeout_seconds=5), 1
    ) == [("DELETED", "p1")]
    watch.stop()


def test_event_window_is_configurable() -> None:
    with FakeApiServer(event_window=2) as server:
        core = kubernetes.client.CoreV1Api(server.api_client())
        first = core.create_namespaced_pod("default", pod_manifest("p0")).metadata.resource_version
        for i in range(1, 4):
            core.create_namespaced_pod("default", pod_manifest(f"p{i}"))
        with pytest.raises(ApiException) as info:
            list(
                kubernetes.watch.Watch().stream(
                    core.list_namespaced_pod, "default", resource_version=first, timeout_seconds=5
                )
            )
        assert info.value.status == 410


def test_timeout_seconds_ends_the_stream(core: kubernetes.client.CoreV1Api) -> None:
    started = time.monotonic()
    events = list(kubernetes.watch.Watch().stream(core.list_namespaced_pod, "default", timeout_seconds=1))
    assert events == []
    assert 0.9 <= time.monotonic() - started < 3


def test_label_selector_transitions_become_added_and_deleted(core: kubernetes.client.CoreV1Api) -> None:
    since = core.create_namespaced_pod(
        "default", pod_manifest("p1", labels={"app": "x"})
    ).metadata.resource_version
    core.patch_namespaced_pod("p1", "default", {"metadata": {"labels": {"app": "y"}}})
    core.patch_namespaced_pod("p1", "default", {"metadata": {"labels": {"app": "x"}}})
    core.patch_namespaced_pod("p1", "default", {"metadata": {"labels": {"extra": "1"}}})
    watch = kubernetes.watch.Watch()
    stream = watch.stream(
        core.list_namespaced_pod, "default", label_selector="app=x", resource_version=since, timeout_seconds=5
    )
    assert _collect(stream, 3) == [("DELETED", "p1"), ("ADDED", "p1"), ("MODIFIED", "p1")]
    watch.stop()


def test_drop_watches_cuts_an_open_watch(server: FakeApiServer, core: kubernetes.client.CoreV1Api) -> None:
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            for _ in kubernetes.watch.Watch().stream(core.list_namespaced_pod, "default", timeout_seconds=30):
                pass
            outcome.append(None)
        except Exception as error:
            outcome.append(error)

    thread = threading.Thread(target=run)
    thread.start()
    assert server.wait_for(lambda: server.open_watches == 1, timeout=5)
    started = time.monotonic()
    server.drop_watches()
    thread.join(5)
    assert not thread.is_alive() and time.monotonic() - started < 2
    assert isinstance(outcome[0], Exception)  # a cut connection, not a clean end: clients must re-watch
    assert server.wait_for(lambda: server.open_watches == 0, timeout=2)
    # New watches work after the drop.
    assert list(kubernetes.watch.Watch().stream(core.list_namespaced_pod, "default", timeout_seconds=1)) == []


def test_custom_object_watch(custom: kubernetes.client.CustomObjectsApi) -> None:
    args = ("scheduler.grove.io", "v1alpha1", "default", "podgangs")
    since = custom.list_namespaced_custom_object(*args)["metadata"]["resourceVersion"]
    custom.create_namespaced_custom_object(*args, podgang_manifest("pg"))
    custom.patch_namespaced_custom_object_status(*args, "pg", {"status": {"phase": "Running"}})
    watch = kubernetes.watch.Watch()
    stream = watch.stream(
        custom.list_namespaced_custom_object, *args, resource_version=since, timeout_seconds=5
    )
    events = []
    for event in stream:
        events.append((event["type"], event["object"].get("status")))
        if len(events) == 2:
            break
    watch.stop()
    assert events == [("ADDED", None), ("MODIFIED", {"phase": "Running"})]


def test_stop_ends_watches_and_threads_quickly() -> None:
    server = FakeApiServer().start()
    core = kubernetes.client.CoreV1Api(server.api_client())
    done = threading.Event()

    def run() -> None:
        with contextlib.suppress(Exception):
            list(kubernetes.watch.Watch().stream(core.list_namespaced_pod, "default", timeout_seconds=30))
        done.set()

    threading.Thread(target=run, daemon=True).start()
    assert server.wait_for(lambda: server.open_watches == 1, timeout=5)
    started = time.monotonic()
    server.stop()
    assert done.wait(2) and time.monotonic() - started < 1.5
