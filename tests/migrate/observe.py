"""An observer of a migration: samples the pods and checks the availability bound on each sample.

A *unit* is what one rollout step takes down: a pod of a standalone PodClique (its slot), or a
whole scaling-group replica. Every sample must have at most one unit with a slot that no Ready,
non-terminating pod holds, and no scaling-group replica with a released rendered pod beside a
live Grove pod (the replica is replaced whole: no partial gang).
"""

from __future__ import annotations

import threading
from typing import Any

from grove_gitops.agent.kube import Kube

Obj = dict[str, Any]


def ready(pod: Obj) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return not pod["metadata"].get("deletionTimestamp") and any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def unit(pod: Obj) -> str:
    labels = pod["metadata"]["labels"]
    group = labels.get("grove.io/podcliquescalinggroup")
    if group:
        return f"{group} replica {labels['grove.io/podcliquescalinggroup-replica-index']}"
    return str(pod["spec"]["hostname"])


def _grove(pod: Obj) -> bool:
    """Still one of the pods Grove made (handed over or not): no rendered-by proof."""
    return "gitops.grove.io/rendered-by" not in (pod["metadata"].get("annotations") or {})


class Observer:
    """Lists the namespace's pods every 50 ms and checks each sample."""

    def __init__(self, kube: Kube, path: str, slots: dict[str, str], every: float = 0.05) -> None:
        self.kube = kube
        self.path = path
        self.every = every
        self.slots = slots  # hostname -> unit
        self.samples = 0
        self.violations: list[str] = []
        self.most_down = 0
        self.grove_seen: set[str] = set()
        self.first_down: dict[str, int] = {}  # Grove pod -> the first sample it was not Ready (or gone) in
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        while not self.stop.wait(self.every):
            try:
                self.check(self.kube.raw("GET", self.path)["items"])
            except Exception as exc:  # a broken observer must fail the test, not stop sampling quietly
                self.violations.append(f"sample {self.samples}: the observer failed: {exc!r}")

    def check(self, pods: list[Obj]) -> None:
        self.samples += 1
        names = {p["metadata"]["name"] for p in pods}
        for p in pods:
            if _grove(p):
                self.grove_seen.add(p["metadata"]["name"])
                if not ready(p):
                    self.first_down.setdefault(p["metadata"]["name"], self.samples)
        for gone in self.grove_seen - names:
            self.first_down.setdefault(gone, self.samples)
        up = {p["spec"].get("hostname") for p in pods if ready(p)}
        down = {u for host, u in self.slots.items() if host not in up}
        self.most_down = max(self.most_down, len(down))
        if len(down) > 1:
            self.violations.append(f"sample {self.samples}: {len(down)} units down: {sorted(down)}")
        for group in {self.slots[h] for h in self.slots if " replica " in self.slots[h]}:
            members = [p for p in pods if unit(p) == group]
            released = [p["metadata"]["name"] for p in members if not _grove(p) and not p["spec"].get("schedulingGates")]
            running_grove = [p["metadata"]["name"] for p in members if _grove(p) and not p["metadata"].get("deletionTimestamp")]
            if released and running_grove:
                self.violations.append(f"sample {self.samples}: partial gang in {group}: released {released} beside "
                                       f"Grove's {running_grove}")

    def order(self) -> list[str]:
        """Grove pods in the order they went down."""
        return sorted(self.first_down, key=lambda name: (self.first_down[name], name))

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=10)
