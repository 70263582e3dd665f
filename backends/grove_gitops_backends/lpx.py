"""``lpx-scheduler``: Grove's LPX backend (``operator/internal/scheduler/lpx/backend.go``).

Pods only get ``schedulerName: lpx-scheduler``; there are no gang objects, and topology
constraints are refused: LPX expresses placement through its own workload contract.
"""

from __future__ import annotations

from typing import ClassVar

from grove_gitops.api.podcliqueset import PodCliqueSet
from grove_gitops.backendapi import BackendFinding, SchedulerBackend
from grove_gitops.validation.topology import has_constraints

TOPOLOGY_MESSAGE = (
    "lpx-scheduler does not support Grove topology constraints; placement topology must be expressed through "
    "the LPX workload contract"
)


class LpxBackend(SchedulerBackend):
    name: ClassVar[str] = "lpx-scheduler"

    def validate(self, pcs: PodCliqueSet) -> list[BackendFinding]:
        if has_constraints(pcs):
            return [BackendFinding("spec", TOPOLOGY_MESSAGE)]
        return []
