"""``operator.config.grove.io/v1alpha1`` OperatorConfiguration: the fields a render reads.

Grove decodes this file non-strictly (unknown keys are ignored, ``types.go``/``decode.go``),
so unlike the PodCliqueSet this model tolerates extra keys: the same file can be shared with
a real Grove installation's Helm values.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

DEFAULT_SCHEDULER = "default-scheduler"


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)


class SchedulerProfile(_Lenient):
    name: str = ""
    config: dict[str, Any] | None = None


class SchedulerConfiguration(_Lenient):
    defaultProfileName: str = ""
    profiles: list[SchedulerProfile] = Field(default_factory=list)


class TopologyAwareScheduling(_Lenient):
    enabled: bool = False


class NetworkConfig(_Lenient):
    autoMNNVLEnabled: bool = False


class OperatorConfiguration(_Lenient):
    apiVersion: Literal["operator.config.grove.io/v1alpha1"] = "operator.config.grove.io/v1alpha1"
    kind: Literal["OperatorConfiguration"] = "OperatorConfiguration"
    scheduler: SchedulerConfiguration = Field(default_factory=SchedulerConfiguration)
    topologyAwareScheduling: TopologyAwareScheduling = Field(default_factory=TopologyAwareScheduling)
    network: NetworkConfig = Field(default_factory=NetworkConfig)
    logLevel: str = ""
    logFormat: str = ""

    def apply_scheduler_defaults(self) -> None:
        """Grove's ``SetDefaults_SchedulerConfiguration`` (``defaults.go L77-101``)."""
        sched = self.scheduler
        if not sched.profiles:
            sched.profiles = [SchedulerProfile(name=DEFAULT_SCHEDULER)]
            sched.defaultProfileName = DEFAULT_SCHEDULER
            return
        if all(p.name != DEFAULT_SCHEDULER for p in sched.profiles):
            sched.profiles.append(SchedulerProfile(name=DEFAULT_SCHEDULER))
        if not sched.defaultProfileName:
            sched.defaultProfileName = DEFAULT_SCHEDULER

    def profile(self, name: str) -> SchedulerProfile | None:
        for p in self.scheduler.profiles:
            if p.name == name:
                return p
        return None
