"""Topology translation: domain names in the PodCliqueSet → node-label keys in the PodGang.

``createTopologyPackConstraint`` (``spec/grove-desired-state.md`` §5.6): with TAS off every
constraint is dropped; the lookup uses the *first explicit* topologyName of the PCS; a
domain the binding lacks is dropped per field.
"""

from __future__ import annotations

from typing import Any

from grove_gitops.api.podcliqueset import PodCliqueSet, TopologyConstraint
from grove_gitops.api.topology import ClusterTopologyBinding
from grove_gitops.expand.context import ExpandContext
from grove_gitops.validation.topology import explicit_topology_name, has_constraints


class Translator:
    def __init__(self, pcs: PodCliqueSet, ctx: ExpandContext) -> None:
        self.enabled = ctx.tas_enabled
        self.topology_name = explicit_topology_name(pcs) if self.enabled and has_constraints(pcs) else ""
        self.binding: ClusterTopologyBinding | None = (
            ctx.bindings.get(self.topology_name) if self.topology_name else None
        )

    def translate(self, tc: TopologyConstraint | None) -> dict[str, Any] | None:
        """The PodGang's ``topologyConstraint`` object (``GangTopologyConstraint`` dumped with
        ``exclude_none``), or None when nothing of ``tc`` translates."""
        if not self.enabled or tc is None or self.binding is None:
            return None
        req_domain, pref_domain = tc.required_domain(), tc.preferred_domain()
        req = self.binding.key_for(req_domain) if req_domain else None
        pref = self.binding.key_for(pref_domain) if pref_domain else None
        if req is None and pref is None:
            return None
        pack = {"required": req} if req is not None else {}
        if pref is not None:
            pack["preferred"] = pref
        return {"packConstraint": pack}
