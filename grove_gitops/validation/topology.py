"""Grove's PodCliqueSet topology rules, webhook part (A), plus the CRD's CEL rules.

``val/topologyconstraints.go`` and ``spec/grove-backends.md`` §5.6. The render has no old
object, so create semantics apply: the deprecated ``packDomain`` is refused, as it is for
every new workload in a cluster.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from grove_gitops.api.podcliqueset import PodCliqueSet, TopologyConstraint
from grove_gitops.api.topology import ClusterTopologyBinding
from grove_gitops.fields.fielderrors import FieldError, forbidden, invalid, required
from grove_gitops.fields.suggest import did_you_mean, known_listing

T = "spec.template"
DOMAIN_RE = re.compile(r"^[a-z][a-z0-9-]*$")


@dataclass(frozen=True)
class _Site:
    """One place a constraint can sit: the PCS, a scaling group, or a clique."""

    kind: str  # PodCliqueSet | PodCliqueScalingGroup | PodClique
    name: str
    path: str  # ends in ".topologyConstraint"
    tc: TopologyConstraint

    def label(self) -> str:
        return self.kind if self.kind == "PodCliqueSet" else f"{self.kind} '{self.name}'"


def _sites(pcs: PodCliqueSet) -> tuple[_Site | None, list[_Site | None], list[_Site | None]]:
    tmpl = pcs.spec.template
    top = (
        _Site("PodCliqueSet", pcs.name, f"{T}.topologyConstraint", tmpl.topologyConstraint)
        if tmpl.topologyConstraint
        else None
    )
    groups: list[_Site | None] = [
        _Site(
            "PodCliqueScalingGroup", g.name, f"{T}.podCliqueScalingGroups[{i}].topologyConstraint", g.topologyConstraint
        )
        if g.topologyConstraint
        else None
        for i, g in enumerate(pcs.scaling_groups)
    ]
    cliques: list[_Site | None] = [
        _Site("PodClique", c.name, f"{T}.cliques[{i}].topologyConstraint", c.topologyConstraint)
        if c.topologyConstraint
        else None
        for i, c in enumerate(pcs.cliques)
    ]
    return top, groups, cliques


def explicit_topology_name(pcs: PodCliqueSet) -> str:
    """First explicit ``topologyName``: PCS, then PCSGs, then cliques (``cutils``)."""
    top, groups, cliques = _sites(pcs)
    for site in [top, *groups, *cliques]:
        if site is not None and site.tc.topologyName:
            return site.tc.topologyName
    return ""


def has_constraints(pcs: PodCliqueSet) -> bool:
    top, groups, cliques = _sites(pcs)
    return any(s is not None for s in [top, *groups, *cliques])


def validate_cel(pcs: PodCliqueSet) -> list[FieldError]:
    """The CRD's CEL rules, which the API server checks before any webhook sees the object."""
    errs: list[FieldError] = []
    top, groups, cliques = _sites(pcs)
    for site in [top, *groups, *cliques]:
        if site is None:
            continue
        tc, path = site.tc, site.path
        if tc.pack is None and tc.packDomain is None:
            errs.append(invalid(path, "object", "topologyConstraint must specify pack or deprecated packDomain"))
        if tc.packDomain is not None and tc.pack is not None and tc.pack.required is not None:
            errs.append(invalid(path, "object", "must not set both pack.required and deprecated packDomain"))
        if tc.pack is not None and tc.pack.required is None and tc.pack.preferred is None:
            errs.append(invalid(f"{path}.pack", "object", "pack must specify at least one of required or preferred"))
        if tc.packDomain is not None:
            errs.append(
                forbidden(
                    f"{path}.packDomain",
                    "packDomain is deprecated and cannot be used on new workloads; use pack.required",
                )
            )
        for field, value in _domain_fields(tc):
            if not (1 <= len(value) <= 63) or not DOMAIN_RE.match(value):
                errs.append(invalid(f"{path}.{field}", value, "should match '^[a-z][a-z0-9-]*$' (1-63 characters)"))
    return errs


def _domain_fields(tc: TopologyConstraint) -> list[tuple[str, str]]:
    out = []
    if tc.packDomain is not None:
        out.append(("packDomain", tc.packDomain))
    if tc.pack is not None:
        if tc.pack.required is not None:
            out.append(("pack.required", tc.pack.required))
        if tc.pack.preferred is not None:
            out.append(("pack.preferred", tc.pack.preferred))
    return out


def binding_not_found(name: str, bindings: Mapping[str, ClusterTopologyBinding]) -> str:
    """Grove's "not found", then the bindings the source has and the one ``name`` misspells."""
    return f'ClusterTopologyBinding "{name}" not found' + known_listing(name, bindings, "ClusterTopologyBindings")


def validate_topology(
    pcs: PodCliqueSet,
    tas_enabled: bool,
    bindings: Mapping[str, ClusterTopologyBinding],
) -> tuple[list[FieldError], list[str]]:
    """Webhook rules (A): returns (errors, warnings)."""
    top, groups, cliques = _sites(pcs)
    present = [s for s in [top, *groups, *cliques] if s is not None]
    if not present:
        return [], []
    if not tas_enabled:
        msg = "topology constraints are not allowed when Topology Aware Scheduling is disabled"
        return [invalid(s.path, s.tc.referenced_domains(), msg) for s in present], []

    errs: list[FieldError] = []
    mismatch = (
        "all topologyConstraint.topologyName values within a PodCliqueSet must match in the current implementation"
    )
    cannot_inherit = "topologyName is required when topologyConstraint is set and cannot be inherited"
    resolved: dict[str, str] = {}  # site path -> effective name

    def resolve(site: _Site, inherited: str) -> None:
        explicit = site.tc.topologyName or ""
        if explicit:
            if inherited and explicit != inherited:
                errs.append(invalid(f"{site.path}.topologyName", explicit, mismatch))
                return
            resolved[site.path] = explicit
        elif inherited:
            resolved[site.path] = inherited
        else:
            errs.append(required(f"{site.path}.topologyName", cannot_inherit))

    pcs_name = ""
    if top is not None:
        resolve(top, "")
        pcs_name = resolved.get(top.path, "")
    group_of: dict[str, int] = {}
    for gi, group in enumerate(pcs.scaling_groups):
        for cname in group.cliqueNames:
            group_of.setdefault(cname, gi)
        site = groups[gi]
        if site is not None:
            resolve(site, pcs_name)
    for ci, clique in enumerate(pcs.cliques):
        site = cliques[ci]
        if site is None:
            continue
        inherited = pcs_name
        gi_opt = group_of.get(clique.name)
        if gi_opt is not None:
            gsite = groups[gi_opt]
            if gsite is not None and gsite.path in resolved:
                inherited = resolved[gsite.path]
        resolve(site, inherited)
    if len(set(resolved.values())) > 1:
        for site in present:
            if site.tc.topologyName:
                errs.append(invalid(f"{site.path}.topologyName", site.tc.topologyName, mismatch))
    if errs:
        return errs, []

    name = next(iter(resolved.values()))
    binding = bindings.get(name)
    if binding is None:
        return [invalid(f"{T}.topologyConstraint.topologyName", name, binding_not_found(name, bindings))], []
    domains = binding.domains()
    listing = "[" + " ".join(domains) + "]"
    for site in present:
        for field, value in _domain_fields(site.tc):
            if value and value not in domains:
                errs.append(
                    invalid(
                        f"{site.path}.{field}",
                        value,
                        f"topology domain '{value}' does not exist in cluster topology {listing}"
                        + did_you_mean(value, domains),
                    )
                )
    if errs:
        return errs, []

    def idx(d: str) -> int | None:
        return domains.index(d) if d in domains else None

    def compare(parent: _Site, child: _Site) -> None:
        for getter, suffix in (
            (TopologyConstraint.required_domain, ""),
            (TopologyConstraint.preferred_domain, ".pack.preferred"),
        ):
            pd, cd = getter(parent.tc), getter(child.tc)
            pi, ci = (idx(pd) if pd else None), (idx(cd) if cd else None)
            if pi is not None and ci is not None and pi > ci:
                errs.append(
                    invalid(
                        parent.path + suffix,
                        pd,
                        f"{parent.label()} topology constraint domain '{pd}' is narrower than "
                        f"{child.kind} '{child.name}' topology constraint domain '{cd}'",
                    )
                )

    if top is not None:
        for child in [*cliques, *groups]:
            if child is not None:
                compare(top, child)
    by_name = {c.name: cliques[i] for i, c in enumerate(pcs.cliques)}
    for gi, group in enumerate(pcs.scaling_groups):
        gsite = groups[gi]
        if gsite is None:
            continue
        for cname in group.cliqueNames:
            csite = by_name.get(cname)
            if csite is not None:
                compare(gsite, csite)

    warnings: list[str] = []
    for site in present:
        req, pref = site.tc.required_domain(), site.tc.preferred_domain()
        ri, pi = (idx(req) if req else None), (idx(pref) if pref else None)
        if ri is not None and pi is not None and pi < ri:
            warnings.append(f"{site.path}.pack.preferred is coarser than {site.path}.pack.required and is redundant")
    return errs, warnings
