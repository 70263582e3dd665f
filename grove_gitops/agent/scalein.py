"""Placeholder until the scale-in module lands (same branch of work, issue 13)."""

from __future__ import annotations

from grove_gitops.agent.actions import Action, Memory
from grove_gitops.agent.snapshot import Snapshot, Workload


def unwanted_pods(snap: Snapshot, wl: Workload, memory: Memory, now: float, grace: float) -> list[Action]:
    return []
