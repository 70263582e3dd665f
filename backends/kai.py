"""``kai-scheduler``: scheduler translator (being written; see issue 3)."""

from __future__ import annotations

from typing import ClassVar

from grove_gitops.backendapi import SchedulerBackend


class KaiBackend(SchedulerBackend):
    name: ClassVar[str] = "kai-scheduler"
