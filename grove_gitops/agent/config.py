"""The agent's settings (one :class:`AgentConfig`, filled from the command line by
``service.run_agent``): how often it resyncs and rechecks, how many writes run at once, the
grace periods and thresholds its decisions use. Kept apart so every room of the agent reads
the same settings without importing the loop."""

from __future__ import annotations

from dataclasses import dataclass, field

from grove_gitops.agent import blocked, intent
from grove_gitops.agent.scaling.limits import ScalingLimits


@dataclass
class AgentConfig:
    namespace: str | None = None
    concurrency: int = 16
    recheck: float = 0.25  # gangs waiting for a backend object are asked again this often
    resync: float = 2.0  # every workload is re-derived this often (timers expire silently)
    grace: float = 60.0  # a released pod no PodGang wants is deleted after this long
    # a gated pod no PodGang lists, not known to be behind its PodGangs (intent.py)
    unordered_grace: float = intent.UNORDERED_GRACE
    day2: bool = True  # rolling updates, healing, scale-in (False: gate release only)
    watch_timeout: int = 60
    watch_read_timeout: float = 2.0
    max_retries: int = 5
    backoff_base: float = 0.05
    backoff_max: float = 2.0
    stale_after: float = 30.0  # /healthz fails when a loop has not made progress for this long
    batch_window: float = 0.02  # after an event, wait this long so one pass takes the whole burst
    # scale targets and the objects above the autoscaling floor (docs/autoscaling.md)
    autoscaling: bool = True
    # the autoscaling loop's own limits, never a record's (agent/scaling/limits.py)
    scaling_limits: ScalingLimits = field(default_factory=ScalingLimits)
    # a rollout or gang waiting longer than this says why (RolloutBlocked, a metric, a log line)
    blocked_after: float = blocked.DEFAULT_THRESHOLD
