"""Waits that last: which rollout or gang waits, why, and since when (issue 37, "Waits are visible").

The decision modules say each pass why a rollout takes no step (:attr:`.rollout.Progress.blocked`,
a rule and a message naming the pod) and why a gang is not released
(:attr:`.release.GangRelease.waiting_for`). Nobody saw it: a rollout wedged for 21 minutes
with no log line, metric or condition saying why. Here a wait that lasts longer than the
threshold (``--blocked-after``, 60 s by default) becomes visible, per workload:

- the condition ``RolloutBlocked=True`` with the rule as reason and the message (which pod,
  which rule) on the PodGang (the replica's base PodGang for a rollout, the gang itself for a
  release), set back to ``False`` when it moves again; the loop mirrors a rollout's onto the
  ``gitops.grove.io`` PodCliqueSet's status;
- the gauge ``grove_gitops_rollout_blocked_seconds{namespace, podcliqueset, reason}``: how
  long the wait has lasted (a series per reason under way; it goes when the wait ends);
- one log line per change of reason (and one when it ends).

A wait is counted from the first pass that found it until a pass finds none (a step taken, a
gang released); a change of reason in between does not restart the clock. Everything here is
only reporting: no decision reads it, so a restarted agent that starts the clocks afresh
decides exactly as this one would.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from grove_gitops.agent.actions import SetCondition
from grove_gitops.metrics import Registry

log = logging.getLogger("grove_gitops.agent")

ROLLOUT_BLOCKED = "RolloutBlocked"
METRIC = "grove_gitops_rollout_blocked_seconds"
METRIC_HELP = "Seconds a rollout or a gang of a workload has waited, by the rule it waits for (past the threshold)"
DEFAULT_THRESHOLD = 60.0
GANG_INCOMPLETE = "GangIncomplete"  # a gang waits for its pods or objects before release
MAX_MESSAGE = 1024

Key = tuple[str, str]
WorkloadKey = tuple[str, str]
Subject = tuple[str, str, str]  # ("rollout" | "gang", namespace, PodCliqueSet or PodGang name)


@dataclass(frozen=True)
class Wait:
    rule: str  # CamelCase: the condition's reason and the metric's label
    message: str  # which pod, which rule


@dataclass
class _Open:
    since: float
    wait: Wait
    gang: Key  # where the condition goes
    workload: WorkloadKey
    reported: Wait | None = None  # what the condition and the log say (None: not past the threshold)
    written: SetCondition | None = None  # the condition that says it


def iso(epoch: float) -> str:
    return dt.datetime.fromtimestamp(epoch, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Waits:
    """The waits under way, per subject; :meth:`observe` once per pass per subject."""

    def __init__(self, registry: Registry, threshold: float = DEFAULT_THRESHOLD) -> None:
        self.registry = registry
        self.threshold = threshold
        self._open: dict[Subject, _Open] = {}

    def blocked(self, subject: Subject) -> SetCondition | None:
        """The ``RolloutBlocked=True`` condition reported for ``subject`` (past the threshold), if any."""
        found = self._open.get(subject)
        return found.written if found is not None and found.reported is not None else None

    def observe(self, subject: Subject, workload: WorkloadKey, gang: Key | None, wait: Wait | None,
                now: float) -> list[SetCondition]:
        """Record what this pass found for ``subject``; returns the condition writes due."""
        found = self._open.get(subject)
        if wait is None or gang is None:
            return self._end(subject, found, now) if found is not None else []
        out: list[SetCondition] = []
        if found is not None and found.gang != gang:
            out += self._end(subject, found, now)  # another replica's rollout now: a new wait
            found = None
        if found is None:
            found = self._open[subject] = _Open(now, wait, gang, workload)
        found.wait = wait
        waited = now - found.since
        if waited < self.threshold:
            return out
        if found.reported is not None and found.reported.rule != wait.rule:
            self._drop_metric(found)
        self.registry.set(METRIC, METRIC_HELP, waited, namespace=workload[0], podcliqueset=workload[1],
                          reason=wait.rule)
        if found.reported == wait:
            return out
        found.reported = wait
        what = f"rollout of {workload[0]}/{workload[1]}" if subject[0] == "rollout" else f"PodGang {gang[0]}/{gang[1]}"
        log.warning("%s blocked for %.0fs (%s): %s", what, waited, wait.rule, wait.message)
        message = f"{wait.message} (waiting since {iso(found.since)})"[:MAX_MESSAGE]
        found.written = SetCondition(gang, ROLLOUT_BLOCKED, "True", wait.rule, message, since=found.since)
        out.append(found.written)
        return out

    def _end(self, subject: Subject, found: _Open, now: float) -> list[SetCondition]:
        del self._open[subject]
        if found.reported is None:
            return []
        self._drop_metric(found)
        what = f"rollout of {found.workload[0]}/{found.workload[1]}" if subject[0] == "rollout" \
            else f"PodGang {found.gang[0]}/{found.gang[1]}"
        log.info("%s moves again after %.0fs (was: %s)", what, now - found.since, found.reported.rule)
        return [SetCondition(found.gang, ROLLOUT_BLOCKED, "False", "Progressing",
                             f"moving again since {iso(now)} after waiting {now - found.since:.0f}s "
                             f"({found.reported.rule})")]

    def stale(self, subject: Subject, gang: Key, raw: Mapping[str, Any] | None, gang_rule: bool,
              now: float) -> list[SetCondition]:
        """``RolloutBlocked=True`` left on a PodGang by an earlier agent (or process) for a wait
        that is over: set back to False. ``gang_rule``: the release wait's condition
        (:data:`GANG_INCOMPLETE`), else a rollout's."""
        if subject in self._open or raw is None:
            return []
        status = raw.get("status")
        conditions = status.get("conditions") if isinstance(status, Mapping) else None
        for c in conditions if isinstance(conditions, list) else []:
            if (isinstance(c, dict) and c.get("type") == ROLLOUT_BLOCKED and c.get("status") == "True"
                    and (c.get("reason") == GANG_INCOMPLETE) == gang_rule):
                return [SetCondition(gang, ROLLOUT_BLOCKED, "False", "Progressing", f"not waiting as of {iso(now)}")]
        return []

    def _drop_metric(self, found: _Open) -> None:
        if found.reported is not None:
            self.registry.remove(METRIC, namespace=found.workload[0], podcliqueset=found.workload[1],
                                 reason=found.reported.rule)

    def retain(self, subjects: set[Subject]) -> None:
        """Forget the waits of subjects gone from the cluster (their metric series too)."""
        for subject in [s for s in self._open if s not in subjects]:
            self._drop_metric(self._open.pop(subject))
