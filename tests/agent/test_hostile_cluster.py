"""Hostile cluster values never become a deletion of something that is not ours."""

from __future__ import annotations

import pytest
from kubernetes.client.exceptions import ApiException

from grove_gitops.agent.actions import DeletePod
from grove_gitops.agent.kube import Kube
from grove_gitops.agent.loop import Agent, AgentConfig
from grove_gitops.metrics import Registry
from grove_gitops.readmodel import gangs as G
from grove_gitops.readmodel.snapshot import parse_day2
from tests.fakeserver import FakeApiServer


def _pod(name: str, managed: bool) -> dict[str, object]:
    labels = {"app.kubernetes.io/managed-by": "grove-gitops" if managed else "someone-else"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": labels},
        "spec": {"containers": [{"name": "c", "image": "busybox"}], "hostname": "x-0"},
    }


def test_delete_spares_a_same_name_pod_that_is_not_the_one_decided_about_or_not_ours() -> None:
    with FakeApiServer() as server:
        kube = Kube(server.api_client())
        agent = Agent(kube, AgentConfig(), Registry())
        try:
            ours = server.put_object(_pod("p-0", managed=True))
            theirs = server.put_object(_pod("q-0", managed=False))
            agent.cache.replace("pods", [ours, theirs])
            # A stale decision (another uid under the same name): refused before any request.
            assert not agent.executor.delete(DeletePod("default", "p-0", "not-the-uid", "PodRetired", "test"))
            # A pod without our managed-by label: refused even with its real uid.
            assert not agent.executor.delete(DeletePod("default", "q-0", theirs["metadata"]["uid"], "PodRetired", "t"))
            assert server.get_object("pods", "default", "p-0") is not None
            assert server.get_object("pods", "default", "q-0") is not None
            # Re-created under the same name after the cache saw it: the uid precondition makes
            # the API server refuse (409), and the new pod survives.
            server.delete_object("pods", "default", "p-0")
            server.put_object(_pod("p-0", managed=True))
            assert not agent.executor.delete(DeletePod("default", "p-0", ours["metadata"]["uid"], "PodRetired", "t"))
            assert server.get_object("pods", "default", "p-0") is not None
        finally:
            agent._pool.shutdown()


@pytest.mark.parametrize(
    "annotation",
    [
        '{"podCliqueSet": ["a"], "replicaIndex": 0}',
        '{"podCliqueSet": "a", "replicaIndex": "../0"}',
        '{"podCliqueSet": "a", "replicaIndex": 0, "updateStrategy": "/abs"}',
        '{"podCliqueSet": "a", "replicaIndex": 0, "terminationDelaySeconds": -1}',
        '{"podCliqueSet": "a", "replicaIndex": 0, "cliques": [{"name": "a\\u0000b", "minAvailable": "x"}]}',
        "[1, 2]",
        "not json",
    ],
)
def test_hostile_day2_annotation_is_a_malformed_podgang(annotation: str) -> None:
    gang = {"metadata": {"name": "g", "namespace": "default", "annotations": {"gitops.grove.io/day2": annotation}}}
    with pytest.raises(G.MalformedPodGang):
        parse_day2(gang)


class _Response:
    """A watch response whose body is the given lines (what urllib3 hands the client)."""

    status = 200

    def __init__(self, lines: list[str]) -> None:
        self._body = "".join(line + "\n" for line in lines).encode()

    def stream(self, amt: object = None, decode_content: bool = False) -> list[bytes]:
        return [self._body]

    def close(self) -> None:
        pass

    def release_conn(self) -> None:
        pass


@pytest.mark.parametrize(
    "line",
    [
        "[1, 2]",  # a list where an event belongs
        '{"type": "MODIFIED", "object": "a string"}',  # a string where an object belongs
        '{"type": "MODIFIED", "object": ["../etc", "/abs"]}',
        '{"type": "ERROR", "object": {"code": 410, "message": "too old"}}',
    ],
)
def test_a_hostile_watch_line_ends_the_stream_as_an_api_error(line: str) -> None:
    """The agent's watch parses each line itself: anything but an event with an object is an
    error (the cache re-lists), never an object in the cache."""
    good = '{"type": "ADDED", "object": {"metadata": {"name": "p\\u0000-0", "namespace": "default"}}}'
    kube = Kube.__new__(Kube)
    stream = kube._stream(lambda *a, **kw: _Response([good, line]), (), "", "1", 5, 1.0)
    first = next(stream)
    assert first["object"]["metadata"]["name"] == "p\x00-0"  # a value, carried as data only
    with pytest.raises(ApiException):
        next(stream)
