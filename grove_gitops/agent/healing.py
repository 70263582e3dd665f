"""Placeholder until the healing module lands (same branch of work, issue 13)."""

from __future__ import annotations

from grove_gitops.agent.actions import Action, Memory
from grove_gitops.agent.snapshot import Workload


def failed_pods(wl: Workload) -> list[Action]:
    return []


def breached_replicas(wl: Workload, memory: Memory, now: float) -> set[int]:
    return set()


def gang_termination(wl: Workload, memory: Memory, now: float, rolling: set[int]) -> list[Action]:
    return []
