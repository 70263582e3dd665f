"""How long a rollout takes: per step what it waits for and a bound from the pods' probes.

A step of the agent (:mod:`grove_gitops.agent.rollout`) deletes its old pods, waits until they
are gone, lifts the gates of their replacements and waits until those are Ready; the next
step starts after that. The plan cannot know image pulls, scheduling or init containers, but
the pod specs give a bound for the rest, per step:

* ``grace`` = the largest ``terminationGracePeriodSeconds`` of the step's old pods (30 when
  unset): the kubelet kills an old pod at the latest then;
* per container of a replacement pod, with Kubernetes' probe defaults (``initialDelaySeconds``
  0, ``periodSeconds`` 10, ``successThreshold`` 1, ``failureThreshold`` 3):

  - ``startup`` = ``startupProbe.initialDelaySeconds + periodSeconds × failureThreshold``:
    the longest a container may take to start before the kubelet restarts it (the budget
    Kubernetes documents for slow starters); 0 without a startup probe;
  - ``ready`` = ``readinessProbe.periodSeconds × successThreshold``, plus its
    ``initialDelaySeconds`` when there is no startup probe (readiness probing starts after
    the startup probe succeeds): the last probe that marks it Ready; 0 without one;
  - the container's budget is ``startup + ready``;

* ``probes`` = the largest budget of any container of the step's replacement pods (containers
  start in parallel; the pod is Ready when all are);
* the step's bound = ``grace + probes``; the total = the sum over steps.

A replacement pod none of whose containers has a startup or readiness probe has no bound
("no probe: unknown": it is Ready as soon as its containers run, after a pull the plan cannot
see), and neither has a total that includes its step. The bound is for a replacement that
starts healthy: one that fails its startup probe is restarted and the step waits longer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from grove_gitops.readmodel.order import Step

DEFAULT_GRACE = 30
PROBE_DEFAULTS = {"initialDelaySeconds": 0, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3}
#: Kubernetes' int32 fields; a larger number in a rendered tree is clamped (the sum stays bounded).
MAX_FIELD = 2**31 - 1


@dataclass(frozen=True)
class StepTime:
    """What one step waits for and its bound in seconds (``probes`` None: no probe, unknown)."""

    old_pods: int
    new_pods: int
    grace: int
    probes: int | None

    @property
    def bound(self) -> int | None:
        return None if self.probes is None else self.grace + self.probes

    @property
    def waits_for(self) -> str:
        old = f"{self.old_pods} old pod{'' if self.old_pods == 1 else 's'}"
        new = f"{self.new_pods} replacement{'' if self.new_pods == 1 else 's'}"
        return f"{old} gone (grace {self.grace} s), then {new} Ready"

    def text(self) -> str:
        """``waits for 2 old pods gone (grace 30 s), then 2 replacements Ready; bound 30 s + 130 s probes = 160 s``."""
        if self.probes is None:
            return f"waits for {self.waits_for}; no probe: unknown"
        return f"waits for {self.waits_for}; bound {self.grace} s + {self.probes} s probes = {duration(self.bound)}"


@dataclass(frozen=True)
class TotalTime:
    """The steps' bounds added up: the steps with a bound, and how many have none."""

    known_seconds: int
    known_steps: int
    unknown_steps: int

    @property
    def bound(self) -> int | None:
        return None if self.unknown_steps else self.known_seconds

    def text(self) -> str:
        if not self.unknown_steps:
            return f"at most {duration(self.known_seconds)} by the probes ({self.known_steps} steps; pulls and scheduling not counted)"
        if not self.known_steps:
            return f"unknown: no probe in any of the {self.unknown_steps} steps"
        return (
            f"unknown: {self.unknown_steps} steps have no probe; the {self.known_steps} with probes take at most "
            f"{duration(self.known_seconds)}"
        )


def duration(seconds: int | None) -> str:
    """``640 s (10m40s)``; ``unknown`` for None."""
    if seconds is None:
        return "unknown"
    if seconds < 60:
        return f"{seconds} s"
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    short = (f"{h}h" if h else "") + (f"{m}m" if m or h else "") + f"{s}s"
    return f"{seconds} s ({short})"


def _int(value: Any, default: int) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return min(value, MAX_FIELD)
    return default


def _probe(container: Mapping[str, Any], name: str) -> dict[str, int] | None:
    probe = container.get(name)
    if not isinstance(probe, dict):
        return None
    return {k: _int(probe.get(k), d) for k, d in PROBE_DEFAULTS.items()}


def container_budget(container: Mapping[str, Any]) -> int | None:
    """``startup + ready`` of one container (module doc), None without either probe."""
    startup, ready = _probe(container, "startupProbe"), _probe(container, "readinessProbe")
    if startup is None and ready is None:
        return None
    total = 0
    if startup is not None:
        total += startup["initialDelaySeconds"] + startup["periodSeconds"] * startup["failureThreshold"]
    if ready is not None:
        total += ready["periodSeconds"] * ready["successThreshold"]
        if startup is None:
            total += ready["initialDelaySeconds"]
    return total


def _spec(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = pod.get("spec")
    return spec if isinstance(spec, dict) else {}


def pod_budget(pod: Mapping[str, Any]) -> int | None:
    """The largest budget of the pod's containers, None when none has a probe."""
    containers = _spec(pod).get("containers")
    budgets = [
        b for c in (containers if isinstance(containers, list) else []) if isinstance(c, dict)
        if (b := container_budget(c)) is not None
    ]
    return max(budgets) if budgets else None


def grace_of(pod: Mapping[str, Any]) -> int:
    return _int(_spec(pod).get("terminationGracePeriodSeconds"), DEFAULT_GRACE)


def step_times(
    steps: Iterable[Step], old: Mapping[str, Mapping[str, Any]], new: Mapping[str, Mapping[str, Any]]
) -> tuple[StepTime, ...]:
    """Per step (in order) its :class:`StepTime`; ``old`` / ``new`` are the pods by hostname
    on BASE / HEAD. A step is unknown when any of its replacements has no probe."""
    out = []
    for step in steps:
        olds = [old[h] for h in step.hostnames if h in old]
        news = [new[h] for h in step.hostnames if h in new]
        budgets = [pod_budget(p) for p in news]
        probes = None if not budgets or any(b is None for b in budgets) else max(b for b in budgets if b is not None)
        grace = max((grace_of(p) for p in olds), default=0)
        out.append(StepTime(len(olds), len(news), grace, probes))
    return tuple(out)


def total_time(times: Iterable[StepTime]) -> TotalTime:
    known = [t.bound for t in times]
    return TotalTime(
        sum(b for b in known if b is not None), sum(b is not None for b in known), sum(b is None for b in known)
    )
