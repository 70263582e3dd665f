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


def _gang(name: str, rv: int, part_of: str) -> dict[str, Any]:
    return {"apiVersion": "scheduler.grove.io/v1alpha1", "kind": "PodGang",
            "metadata": {"name": name, "namespace": "ns", "uid": f"u-{name}", "resourceVersion": str(rv),
                         "labels": {"app.kubernetes.io/part-of": part_of}},
            "spec": {"podgroups": []}}


def test_gang_keys_are_the_keys_of_the_workloads_copy() -> None:
    """The pass driver reads only a workload's PodGang keys (issue 35.2): the same keys the full
    copy has, per workload, after adds, a move to another workload and a deletion."""
    cache = _cache()
    for n, (name, part_of) in enumerate([("w-0", "w"), ("w-1", "w"), ("v-0", "v")]):
        cache.apply("podgangs", "ADDED", _gang(name, 10 + n, part_of))
    cache.apply("pods", "ADDED", _pod("a", 5))
    for wl in [("ns", "w"), ("ns", "v"), ("ns", "x")]:
        assert sorted(cache.gang_keys(wl)) == sorted(cache.workload(wl)[1])
    assert sorted(cache.gang_keys(("ns", "w"))) == [("ns", "w-0"), ("ns", "w-1")]
    cache.apply("podgangs", "MODIFIED", _gang("w-1", 20, "v"))  # relabelled: now v's
    cache.apply("podgangs", "DELETED", _gang("w-0", 21, "w"))
    for wl in [("ns", "w"), ("ns", "v")]:
        assert sorted(cache.gang_keys(wl)) == sorted(cache.workload(wl)[1])
    assert cache.gang_keys(("ns", "w")) == []
    assert sorted(cache.gang_keys(("ns", "v"))) == [("ns", "v-0"), ("ns", "w-1")]
