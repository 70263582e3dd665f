"""``default-scheduler``: Grove's ``kube`` backend (``operator/internal/scheduler/kube``).

Pods only get ``schedulerName: default-scheduler``; there are no gang objects. Grove
accepts topology constraints for this backend and silently ignores them (its
``ValidatePodCliqueSet`` returns nil, ``spec/grove-backends.md`` §11 item 4); we accept them
too, because the PodGang still carries them, but warn that nothing enforces them.
"""

from __future__ import annotations

from typing import ClassVar

from grove_gitops.api.podcliqueset import PodCliqueSet
from grove_gitops.backendapi import BackendFinding, SchedulerBackend
from grove_gitops.validation.topology import has_constraints


class DefaultSchedulerBackend(SchedulerBackend):
    name: ClassVar[str] = "default-scheduler"

    def validate(self, pcs: PodCliqueSet) -> list[BackendFinding]:
        if self.context.tas_enabled and has_constraints(pcs):
            return [
                BackendFinding(
                    "spec.template",
                    "topology constraints are recorded in the PodGang but the default-scheduler does not enforce them",
                    warning=True,
                )
            ]
        return []
