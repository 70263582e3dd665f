"""``grove.io/v1alpha1`` ClusterTopologyBinding (cluster-scoped; ``clustertopologybinding.go``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from grove_gitops.api.base import JSONDict, ObjectMeta, StrictModel


class TopologyLevel(StrictModel):
    domain: str
    key: str


class SchedulerTopologyBinding(StrictModel):
    """Points one scheduler at an externally managed topology object instead of an
    auto-managed one (JSON name ``schedulerTopologyBindings``, not GREP-244's
    ``schedulerTopologyReferences``)."""

    schedulerName: str
    topologyReference: str


class ClusterTopologyBindingSpec(StrictModel):
    levels: list[TopologyLevel]
    schedulerTopologyBindings: list[SchedulerTopologyBinding] | None = None


class ClusterTopologyBinding(StrictModel):
    apiVersion: Literal["grove.io/v1alpha1"]
    kind: Literal["ClusterTopologyBinding"]
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ClusterTopologyBindingSpec
    status: JSONDict | None = None

    @property
    def name(self) -> str:
        return self.metadata.name

    def key_for(self, domain: str) -> str | None:
        """Node-label key of ``domain``, or None when the binding has no such level."""
        for level in self.spec.levels:
            if level.domain == domain:
                return level.key
        return None

    def domains(self) -> list[str]:
        return [level.domain for level in self.spec.levels]

    def external_reference(self, scheduler: str) -> str | None:
        for b in self.spec.schedulerTopologyBindings or []:
            if b.schedulerName == scheduler:
                return b.topologyReference
        return None
