"""Everything an expansion reads besides the PodCliqueSet itself."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from grove_gitops.api.renderconfig import RenderConfig
from grove_gitops.api.topology import ClusterTopologyBinding
from grove_gitops.backendapi import SchedulerBackend


@dataclass(frozen=True)
class ExpandContext:
    render: RenderConfig
    backend: SchedulerBackend
    tas_enabled: bool = False
    bindings: Mapping[str, ClusterTopologyBinding] = field(default_factory=dict)
    #: ResourceClaimTemplate specs from the source tree, keyed by (namespace, name), for
    #: ``resourceSharing`` entries that reference an external template.
    claim_templates: Mapping[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    #: ``network.autoMNNVLEnabled``: render ComputeDomains for enrolled GPU cliques.
    mnnvl_enabled: bool = False
