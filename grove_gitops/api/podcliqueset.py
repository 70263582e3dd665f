"""``grove.io/v1alpha1`` PodCliqueSet (``operator/api/core/v1alpha1/podcliqueset.go``).

Defaults that the CRD or Grove's defaulting webhook apply are *not* baked into these
models: ``validation.defaulting`` applies them in Grove's order, because some defaults
depend on what the user wrote (``minAvailable`` defaults to ``replicas`` *as written*).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from grove_gitops.api.base import Int32, JSONDict, ObjectMeta, StrictModel

CliqueStartupType = Literal["CliqueStartupTypeAnyOrder", "CliqueStartupTypeInOrder", "CliqueStartupTypeExplicit"]
ANY_ORDER: CliqueStartupType = "CliqueStartupTypeAnyOrder"
IN_ORDER: CliqueStartupType = "CliqueStartupTypeInOrder"
EXPLICIT: CliqueStartupType = "CliqueStartupTypeExplicit"


class TopologyPackConstraint(StrictModel):
    required: str | None = None
    preferred: str | None = None


class TopologyConstraint(StrictModel):
    """Domain names (``rack``) that a ClusterTopologyBinding maps to node-label keys."""

    topologyName: str | None = None
    pack: TopologyPackConstraint | None = None
    packDomain: str | None = None

    def required_domain(self) -> str:
        """``pack.required`` if non-empty, else the deprecated ``packDomain``."""
        if self.pack is not None and self.pack.required:
            return self.pack.required
        return self.packDomain or ""

    def preferred_domain(self) -> str:
        return (self.pack.preferred or "") if self.pack is not None else ""

    def referenced_domains(self) -> list[str]:
        req, pref = self.required_domain(), self.preferred_domain()
        out = [req] if req else []
        if pref and pref != req:
            out.append(pref)
        return out


class AutoScalingConfig(StrictModel):
    minReplicas: Int32 | None = None
    maxReplicas: Int32 = 0  # CRD-required; the webhook's re-serialisation makes absent == 0
    metrics: list[JSONDict] | None = None


class SharingFilter(StrictModel):
    childCliqueNames: list[str] | None = None
    childScalingGroupNames: list[str] | None = None


class CliqueSharingFilter(StrictModel):
    childCliqueNames: list[str] | None = None


class ResourceSharingSpec(StrictModel):
    """Clique-level sharing reference (no filter)."""

    name: str = ""
    namespace: str | None = None
    scope: str = ""


class PCSGResourceSharingSpec(ResourceSharingSpec):
    filter: CliqueSharingFilter | None = None


class PCSResourceSharingSpec(ResourceSharingSpec):
    filter: SharingFilter | None = None


class ResourceClaimTemplateConfig(StrictModel):
    name: str = ""
    templateSpec: JSONDict


class PodCliqueSpec(StrictModel):
    roleName: str = ""
    podSpec: JSONDict
    replicas: Int32 = 0
    minAvailable: Int32 | None = None
    startsAfter: list[str] | None = None
    autoScalingConfig: AutoScalingConfig | None = None


class PodCliqueTemplateSpec(StrictModel):
    name: str = ""
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    topologyConstraint: TopologyConstraint | None = None
    resourceSharing: list[ResourceSharingSpec] | None = None
    spec: PodCliqueSpec


class PodCliqueScalingGroupConfig(StrictModel):
    name: str = ""
    cliqueNames: list[str]
    annotations: dict[str, str] | None = None
    replicas: Int32 | None = None
    minAvailable: Int32 | None = None
    scaleConfig: AutoScalingConfig | None = None
    resourceSharing: list[PCSGResourceSharingSpec] | None = None
    topologyConstraint: TopologyConstraint | None = None


class HeadlessServiceConfig(StrictModel):
    publishNotReadyAddresses: bool | None = None


class PodCliqueSetTemplateSpec(StrictModel):
    cliques: list[PodCliqueTemplateSpec]
    cliqueStartupType: CliqueStartupType | None = None
    priorityClassName: str | None = None
    headlessServiceConfig: HeadlessServiceConfig | None = None
    topologyConstraint: TopologyConstraint | None = None
    terminationDelay: str | None = None
    resourceClaimTemplates: list[ResourceClaimTemplateConfig] | None = None
    resourceSharing: list[PCSResourceSharingSpec] | None = None
    podCliqueScalingGroups: list[PodCliqueScalingGroupConfig] | None = None


class UpdateStrategy(StrictModel):
    type: Literal["RollingRecreate", "OnDelete"] | None = None


class PodCliqueSetSpec(StrictModel):
    replicas: Int32 = 0
    updateStrategy: UpdateStrategy | None = None
    template: PodCliqueSetTemplateSpec


class PodCliqueSet(StrictModel):
    apiVersion: Literal["grove.io/v1alpha1"]
    kind: Literal["PodCliqueSet"]
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: PodCliqueSetSpec
    status: JSONDict | None = None

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def namespace(self) -> str:
        return self.metadata.namespace or ""

    @property
    def cliques(self) -> list[PodCliqueTemplateSpec]:
        return self.spec.template.cliques

    @property
    def scaling_groups(self) -> list[PodCliqueScalingGroupConfig]:
        return self.spec.template.podCliqueScalingGroups or []
