"""Issue 37, point 2: a pod the watch reported deleted never comes back into the agent's cache.

The agent deletes a Failed pod; the kubelet finishes it at once, so the watch's DELETED
event can arrive before the DELETE's own answer (the pod, terminating), which the executor
then put into the cache: a ghost that filled the pod's slot for ever. The autoscaling loop
never re-created an agent-owned pod after that, and its PodGang ran one pod short until a
restart re-listed. A deletion is remembered by uid; a pod re-created under the same name
(a new uid) is of course taken.
"""

from __future__ import annotations

from typing import Any

from grove_gitops.agent.cache import WatchCache
from grove_gitops.agent.kube import Kube
from grove_gitops.metrics import Registry


def _pod(uid: str, rv: int, *, terminating: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "p-0", "namespace": "ns", "uid": uid, "resourceVersion": str(rv),
                            "labels": {"app.kubernetes.io/part-of": "w"}}
    if terminating:
        meta["deletionTimestamp"] = "2026-11-28T00:00:00Z"
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta}


def _cache() -> WatchCache:
    return WatchCache(Kube.__new__(Kube), Registry(), None, watch_timeout=1, watch_read_timeout=1.0,
                      backoff=lambda n: 0.0)


def test_an_answer_older_than_the_watchs_deletion_does_not_bring_the_pod_back() -> None:
    cache = _cache()
    cache.apply("pods", "ADDED", _pod("a", 5))
    cache.apply("pods", "DELETED", _pod("a", 7, terminating=True))  # the watch: gone
    cache.apply("pods", "MODIFIED", _pod("a", 6, terminating=True))  # then our DELETE's answer
    assert ("ns", "p-0") not in cache.pods
    assert cache.workload(("ns", "w")) == ({}, {})
    # The agent re-creates it under the same name: a new uid, taken at once.
    cache.apply("pods", "ADDED", _pod("b", 8))
    assert cache.pods[("ns", "p-0")]["metadata"]["uid"] == "b"
    # A late DELETED of the old uid never removes the new pod.
    cache.apply("pods", "DELETED", _pod("a", 7, terminating=True))
    assert cache.pods[("ns", "p-0")]["metadata"]["uid"] == "b"


def test_a_pod_our_delete_removed_is_not_brought_back_by_a_late_event() -> None:
    cache = _cache()
    cache.apply("pods", "ADDED", _pod("a", 5))
    cache.forget_pod(("ns", "p-0"), "a")
    cache.apply("pods", "MODIFIED", _pod("a", 6, terminating=True))
    assert ("ns", "p-0") not in cache.pods
