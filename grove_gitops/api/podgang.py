"""``scheduler.grove.io/v1alpha1`` PodGang (``scheduler/api/core/v1alpha1/podgang.go``).

This is what every backend translates. PodGangs in a source tree are validated with these
models; the renderer builds its PodGangs as the objects these models dump with
``exclude_none`` (absent optional fields stay absent, as with Go's ``omitempty``), without a
model per pod reference (``expand.podgangs``; tests/test_podgang_objects.py holds the two
together).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from grove_gitops.api.base import Int32, ObjectMeta

API_VERSION = "scheduler.grove.io/v1alpha1"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NamespacedName(_Model):
    namespace: str
    name: str


class PackConstraint(_Model):
    """Node-label *keys* (``kubernetes.io/rack``), already translated from domains."""

    required: str | None = None
    preferred: str | None = None


class GangTopologyConstraint(_Model):
    packConstraint: PackConstraint | None = None


class PodGroup(_Model):
    name: str
    podReferences: list[NamespacedName] = Field(default_factory=list)
    minReplicas: Int32
    topologyConstraint: GangTopologyConstraint | None = None


class TopologyConstraintGroupConfig(_Model):
    name: str
    podGroupNames: list[str]
    topologyConstraint: GangTopologyConstraint | None = None


class PodGangSpec(_Model):
    podgroups: list[PodGroup]
    topologyConstraint: GangTopologyConstraint | None = None
    topologyConstraintGroupConfigs: list[TopologyConstraintGroupConfig] | None = None
    priorityClassName: str | None = None
    reuseReservationRef: NamespacedName | None = None


class PodGang(_Model):
    apiVersion: Literal["scheduler.grove.io/v1alpha1"] = "scheduler.grove.io/v1alpha1"
    kind: Literal["PodGang"] = "PodGang"
    metadata: ObjectMeta
    spec: PodGangSpec
    status: dict[str, Any] | None = None

    def to_object(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)
