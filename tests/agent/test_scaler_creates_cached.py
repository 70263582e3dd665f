"""The autoscaling loop puts the pods and PodGangs it creates into the watch cache at once.

Its next pass reads pods and PodGangs from that cache; before the watch had brought the ones
it had just created, it created them again, a 409 AlreadyExists each: 21-63 of the 192 pod
creates of a 2 -> 50 scale-out in ``bench.autoscale_bench`` once the agent's passes and writes
got faster (issue 35). The day-2 world's status-writes test counts the creates end to end.
"""

from __future__ import annotations

from typing import Any

from grove_gitops.agent.cache import WatchCache
from grove_gitops.agent.kube import Kube
from grove_gitops.agent.scaling.scaler import Scaler, _Memory
from grove_gitops.metrics import Registry


class _Server:
    """Answers a create as the API server does: the object with a uid and a resourceVersion."""

    def __init__(self) -> None:
        self.created: list[str] = []

    def create(self, body: dict[str, Any]) -> dict[str, Any]:
        self.created.append(body["metadata"]["name"])
        meta = {**body["metadata"], "uid": f"uid-{len(self.created)}", "resourceVersion": str(len(self.created))}
        return {k: v for k, v in body.items() if k not in ("apiVersion", "kind")} | {"metadata": meta}


def _obj(api_version: str, kind: str, name: str) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind,
            "metadata": {"name": name, "namespace": "ns", "labels": {"app.kubernetes.io/part-of": "w"}}}


def test_created_pods_and_podgangs_are_in_the_cache_before_any_watch_event() -> None:
    server = _Server()
    cache = WatchCache(Kube.__new__(Kube), Registry(), None, watch_timeout=1, watch_read_timeout=1.0,
                       backoff=lambda n: 0.0)
    woken: list[Any] = []
    cache.listeners.append(woken.append)
    scaler = Scaler(server, cache, None, Registry())  # type: ignore[arg-type]
    owner = {"apiVersion": "gitops.grove.io/v1alpha1", "kind": "PodCliqueScalingGroup", "name": "w-0-g", "uid": "o"}
    memory = _Memory()
    scaler._create(_obj("v1", "Pod", "w-0-g-1-a-0"), owner, memory)
    scaler._create(_obj("scheduler.grove.io/v1alpha1", "PodGang", "w-0-g-1"), owner, memory)
    pod = cache.pods[("ns", "w-0-g-1-a-0")]
    assert pod["kind"] == "Pod" and pod["apiVersion"] == "v1" and pod["metadata"]["uid"] == "uid-1"
    assert cache.podgangs[("ns", "w-0-g-1")]["kind"] == "PodGang"
    assert cache.workload(("ns", "w")) != ({}, {})  # indexed under its workload, as a watch event is
    assert memory.others == {}  # pods and PodGangs live in the cache, not in the loop's memory
    assert ("ns", "w") in woken
    # The watch's own ADDED of the same object later changes nothing.
    cache.apply("pods", "ADDED", pod)
    assert cache.pods[("ns", "w-0-g-1-a-0")] is pod
