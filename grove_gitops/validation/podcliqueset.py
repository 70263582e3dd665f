"""Grove's PodCliqueSet validating webhook, part (B): object and spec rules.

Rules, paths and messages follow ``operator/internal/webhook/admission/pcs/validation``
(``spec/grove-desired-state.md`` §2.3). Every rule appends to one list so that a user sees
all problems of a file at once, as with ``kubectl apply`` against the real webhook.
"""

from __future__ import annotations

from grove_gitops.api.podcliqueset import (
    EXPLICIT,
    PCSGResourceSharingSpec,
    PCSResourceSharingSpec,
    PodCliqueSet,
    PodCliqueTemplateSpec,
    ResourceSharingSpec,
)
from grove_gitops.fields.fielderrors import (
    FieldError,
    duplicate,
    invalid,
    not_found,
    not_supported,
    required,
)
from grove_gitops.fields.k8snames import (
    dns1123_label_problems,
    dns1123_subdomain_problems,
    env_var_name_problems,
    is_dns1123_subdomain,
    parse_go_duration,
    validate_annotations,
    validate_labels,
)

T = "spec.template"
MAX_COMBINED_NAME = 45
SCOPES = ["AllReplicas", "PerReplica"]


def _c(i: int) -> str:
    return f"{T}.cliques[{i}]"


def _g(i: int) -> str:
    return f"{T}.podCliqueScalingGroups[{i}]"


def validate_spec(pcs: PodCliqueSet) -> list[FieldError]:
    """Rules (B) of the webhook, create semantics, in Grove's order."""
    errs: list[FieldError] = []
    errs += _metadata(pcs)
    if pcs.spec.replicas < 0:
        errs.append(invalid("spec.replicas", pcs.spec.replicas, "must be greater than or equal to 0"))
    errs += _termination_delay(pcs)
    errs += _resource_claim_templates(pcs)
    internal = {t.name for t in pcs.spec.template.resourceClaimTemplates or []}
    errs += _pcs_sharing(pcs, internal)
    errs += _cliques(pcs, internal)
    errs += _clique_dependencies(pcs)
    errs += _scaling_groups(pcs, internal)
    return errs


def _metadata(pcs: PodCliqueSet) -> list[FieldError]:
    errs: list[FieldError] = []
    name = pcs.metadata.name
    if not name:
        errs.append(required("metadata.name", "name or generateName is required"))
    else:
        errs += [invalid("metadata.name", name, p) for p in dns1123_subdomain_problems(name)]
    ns = pcs.metadata.namespace or ""
    if not ns:
        errs.append(required("metadata.namespace"))
    else:
        errs += [invalid("metadata.namespace", ns, p) for p in dns1123_label_problems(ns)]
    errs += validate_labels(pcs.metadata.labels, "metadata.labels")
    errs += validate_annotations(pcs.metadata.annotations, "metadata.annotations")
    return errs


def _termination_delay(pcs: PodCliqueSet) -> list[FieldError]:
    delay = pcs.spec.template.terminationDelay
    if delay is None:
        return [required(f"{T}.terminationDelay", "terminationDelay is required")]
    seconds = parse_go_duration(delay)
    if seconds is None:
        return [invalid(f"{T}.terminationDelay", delay, "must be a duration such as 30s, 1m or 4h")]
    if seconds <= 0:
        return [invalid(f"{T}.terminationDelay", delay, "terminationDelay must be greater than 0")]
    return []


def _resource_claim_templates(pcs: PodCliqueSet) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    dups: list[str] = []
    for i, tmpl in enumerate(pcs.spec.template.resourceClaimTemplates or []):
        path = f"{T}.resourceClaimTemplates[{i}]"
        if not tmpl.name:
            errs.append(required(f"{path}.name", "template name is required"))
        elif tmpl.name in seen:
            dups.append(tmpl.name)
        seen.add(tmpl.name)
        spec = tmpl.templateSpec.get("spec") if isinstance(tmpl.templateSpec, dict) else None
        devices = spec.get("devices") if isinstance(spec, dict) else None
        requests = devices.get("requests") if isinstance(devices, dict) else None
        if not requests:
            errs.append(
                required(f"{path}.templateSpec.spec.devices.requests", "at least one device request is required")
            )
    errs += [duplicate(f"{T}.resourceClaimTemplates.name", d) for d in dups]
    return errs


def _sharing_common(
    entries: list[ResourceSharingSpec] | list[PCSGResourceSharingSpec] | list[PCSResourceSharingSpec],
    path: str,
    internal: set[str],
) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, ref in enumerate(entries):
        p = f"{path}[{i}]"
        if not ref.name:
            errs.append(required(f"{p}.name", "reference name is required"))
        elif ref.name in seen:
            errs.append(duplicate(f"{p}.name", ref.name))
        seen.add(ref.name)
        if ref.namespace and ref.name in internal:
            errs.append(
                invalid(
                    f"{p}.namespace",
                    ref.namespace,
                    "namespace must be empty when name matches an internal resourceClaimTemplate",
                )
            )
        if ref.scope not in SCOPES:
            errs.append(not_supported(f"{p}.scope", ref.scope, SCOPES))
    return errs


def _pcs_sharing(pcs: PodCliqueSet, internal: set[str]) -> list[FieldError]:
    entries = pcs.spec.template.resourceSharing or []
    path = f"{T}.resourceSharing"
    errs = _sharing_common(entries, path, internal)
    cliques = {c.name for c in pcs.cliques}
    groups = {g.name for g in pcs.scaling_groups}
    for i, ref in enumerate(entries):
        if ref.filter is None:
            continue
        f = ref.filter
        if not f.childCliqueNames and not f.childScalingGroupNames:
            errs.append(
                required(
                    f"{path}[{i}].filter",
                    "filter must specify at least one childCliqueNames or childScalingGroupNames entry",
                )
            )
        for j, n in enumerate(f.childCliqueNames or []):
            if n not in cliques:
                errs.append(not_found(f"{path}[{i}].filter.childCliqueNames[{j}]", n))
        for j, n in enumerate(f.childScalingGroupNames or []):
            if n not in groups:
                errs.append(not_found(f"{path}[{i}].filter.childScalingGroupNames[{j}]", n))
    return errs


def _standalone_names(pcs: PodCliqueSet) -> set[str]:
    in_group = {c for g in pcs.scaling_groups for c in g.cliqueNames}
    return {c.name for c in pcs.cliques if c.name not in in_group}


def _cliques(pcs: PodCliqueSet, internal: set[str]) -> list[FieldError]:
    errs: list[FieldError] = []
    cliques = pcs.cliques
    if not cliques:
        return [required(f"{T}.cliques", "at least one PodClique must be defined")]
    standalone = _standalone_names(pcs)
    explicit = pcs.spec.template.cliqueStartupType == EXPLICIT
    for i, clique in enumerate(cliques):
        errs += _clique(pcs, i, clique, clique.name in standalone, explicit, internal)
    names = [c.name for c in cliques]
    errs += [duplicate(f"{T}.cliques.name", n) for n in _dups(names)]
    roles = [c.spec.roleName for c in cliques]
    errs += [duplicate(f"{T}.cliques.roleName", r) for r in _dups(roles)]
    return errs


def _dups(values: list[str]) -> list[str]:
    """Values that occur more than once, each once, in order of their second occurrence
    (linear: a list of 100,000 repeated names must not take quadratic time)."""
    seen: set[str] = set()
    out: dict[str, None] = {}
    for v in values:
        if v in seen:
            out.setdefault(v, None)
        seen.add(v)
    return list(out)


def _clique(
    pcs: PodCliqueSet,
    i: int,
    clique: PodCliqueTemplateSpec,
    standalone: bool,
    explicit: bool,
    internal: set[str],
) -> list[FieldError]:
    errs: list[FieldError] = []
    path = _c(i)
    if not clique.name:
        errs.append(required(f"{path}.name", "field cannot be empty"))
    elif not is_dns1123_subdomain(clique.name):
        errs.append(
            invalid(f"{path}.name", clique.name, "invalid PodCliqueTemplateSpec name, must be a valid DNS subdomain")
        )
    if standalone and len(pcs.name) + len(clique.name) > MAX_COMBINED_NAME:
        msg = (
            f"combined resource name length {len(pcs.name) + len(clique.name)} exceeds 45-character limit "
            f"required for pod naming. Consider shortening: PodCliqueSet '{pcs.name}' or PodClique '{clique.name}'"
        )
        errs.append(invalid(f"{path}.name", clique.name, msg))
        errs.append(invalid("metadata.name", pcs.name, msg))
    errs += validate_labels(clique.labels, f"{path}.labels")
    errs += validate_annotations(clique.annotations, f"{path}.annotations")
    spec = clique.spec
    sp = f"{path}.spec"
    if spec.replicas <= 0:
        errs.append(invalid(f"{sp}.replicas", spec.replicas, "must be greater than 0"))
    if spec.minAvailable is None:
        errs.append(required(f"{sp}.minAvailable", "field is required"))
    elif spec.minAvailable <= 0:
        errs.append(invalid(f"{sp}.minAvailable", spec.minAvailable, "must be greater than 0"))
    elif spec.minAvailable > spec.replicas:
        errs.append(invalid(f"{sp}.minAvailable", spec.minAvailable, "minAvailable must not be greater than replicas"))
    if explicit and spec.startsAfter:
        seen: set[str] = set()
        for dep in spec.startsAfter:
            if not dep:
                errs.append(required(f"{sp}.startsAfter", "clique dependency must not be empty"))
            elif dep == clique.name:
                errs.append(invalid(f"{sp}.startsAfter", dep, "clique dependency cannot refer to itself"))
            elif dep in seen:
                errs.append(duplicate(f"{sp}.startsAfter", dep))
            seen.add(dep)
    asc = spec.autoScalingConfig
    if asc is not None:
        ap = f"{sp}.autoScalingConfig"
        if asc.minReplicas is None:
            errs.append(required(f"{ap}.minReplicas", "field is required"))
        else:
            if spec.minAvailable is not None and asc.minReplicas < spec.minAvailable:
                errs.append(
                    invalid(
                        f"{ap}.minReplicas",
                        asc.minReplicas,
                        "must be greater than or equal to podCliqueSpec.minAvailable",
                    )
                )
            if asc.maxReplicas < asc.minReplicas:
                errs.append(
                    invalid(
                        f"{ap}.maxReplicas",
                        asc.maxReplicas,
                        "must be greater than or equal to podCliqueSpec.minReplicas",
                    )
                )
        if asc.maxReplicas < spec.replicas:
            errs.append(invalid(f"{ap}.maxReplicas", asc.maxReplicas, "must be greater than or equal to replicas"))
    errs += _pod_spec(spec.podSpec, f"{sp}.podSpec")
    errs += _sharing_common(clique.resourceSharing or [], f"{path}.resourceSharing", internal)
    return errs


def _pod_spec(pod: dict[str, object], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if pod.get("topologySpreadConstraints"):
        errs.append(
            invalid(f"{path}.spec.topologySpreadConstraints", pod["topologySpreadConstraints"], "must not be set")
        )
    if pod.get("nodeName"):
        errs.append(invalid(f"{path}.spec.nodeName", pod["nodeName"], "must not be set"))
    containers = pod.get("containers")
    if not isinstance(containers, list) or not containers:
        # Not a Grove webhook rule, but the API server would refuse every rendered pod.
        errs.append(required(f"{path}.containers", "at least one container is required"))
    for key in ("containers", "initContainers"):
        items = pod.get(key)
        if items is None:
            continue
        if not isinstance(items, list):
            errs.append(invalid(f"{path}.{key}", items, "must be of type array"))
            continue
        for j, container in enumerate(items):
            cp = f"{path}.{key}[{j}]"
            if not isinstance(container, dict):
                errs.append(invalid(cp, container, "must be of type object"))
                continue
            if not isinstance(container.get("name"), str) or not container.get("name"):
                errs.append(required(f"{cp}.name"))
            env = container.get("env") or []
            if not isinstance(env, list):
                errs.append(invalid(f"{cp}.env", env, "must be of type array"))
                continue
            seen: set[str] = set()
            for k, var in enumerate(env):
                name = var.get("name") if isinstance(var, dict) else None
                if not isinstance(name, str):
                    errs.append(required(f"{cp}.env[{k}].name"))
                    continue
                errs += [invalid(f"{cp}.env[{k}].name", name, p) for p in env_var_name_problems(name)]
                if name in seen:
                    errs.append(duplicate(f"{cp}.env", name))
                seen.add(name)
    return errs


def _clique_dependencies(pcs: PodCliqueSet) -> list[FieldError]:
    """Explicit startup only: unknown dependencies and cycles (Tarjan SCC).

    Grove walks a Go map, so its order is random; we sort names for stable output.
    """
    if pcs.spec.template.cliqueStartupType != EXPLICIT:
        return []
    names = {c.name for c in pcs.cliques}
    graph = {c.name: [d for d in (c.spec.startsAfter or []) if d] for c in pcs.cliques}
    errs: list[FieldError] = []
    unknown = sorted({d for deps in graph.values() for d in deps if d not in names})
    if unknown:
        errs.append(
            invalid(
                f"{T}.cliques.startsAfter",
                ",".join(unknown),
                "unknown clique names found, all clique dependencies must be defined as cliques",
            )
        )
    cycles = [sorted(scc) for scc in _strongly_connected(graph) if len(scc) > 1]
    if cycles:
        errs.append(invalid(f"{T}.cliques", sorted(cycles), "clique must not have circular dependencies"))
    return errs


def starts_after_warnings(pcs: PodCliqueSet) -> list[str]:
    """``field: message`` warnings for ``startsAfter`` names that are not cliques.

    Grove rejects them only with ``cliqueStartupType: CliqueStartupTypeExplicit`` (see
    :func:`_clique_dependencies`); under the other startup types it ignores ``startsAfter``,
    so a typo there passes silently. It is a warning, not an error, to stay as permissive as
    Grove while still telling the user.
    """
    if pcs.spec.template.cliqueStartupType == EXPLICIT:
        return []
    names = {c.name for c in pcs.cliques}
    known = _some(sorted(names))
    out: list[str] = []
    for i, clique in enumerate(pcs.cliques):
        unknown = [d for d in clique.spec.startsAfter or [] if d and d not in names]
        if unknown:
            out.append(
                f"{_c(i)}.spec.startsAfter: names no clique of this PodCliqueSet: {_some(unknown)}"
                f" (known: {known}); ignored unless cliqueStartupType is {EXPLICIT}"
            )
    return out


def _some(names: list[str], limit: int = 20) -> str:
    """The first ``limit`` names, comma-separated: one warning per clique must not repeat
    every clique name (20,000 cliques would make 20,000 warnings of 20,000 names each)."""
    shown = ", ".join(names[:limit])
    return shown if len(names) <= limit else f"{shown} and {len(names) - limit} more"


def _strongly_connected(graph: dict[str, list[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative so a long dependency chain cannot exhaust the stack."""
    known = {node: [c for c in children if c in graph] for node, children in graph.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, int]] = [(root, 0)]
        while work:
            node, child_i = work.pop()
            if child_i == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            children = known.get(node, [])
            recurse = False
            for ci in range(child_i, len(children)):
                child = children[ci]
                if child not in index:
                    work.append((node, ci + 1))
                    work.append((child, 0))
                    recurse = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if recurse:
                continue
            if low[node] == index[node]:
                scc: list[str] = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    scc.append(top)
                    if top == node:
                        break
                out.append(scc)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return out


def _scaling_groups(pcs: PodCliqueSet, internal: set[str]) -> list[FieldError]:
    errs: list[FieldError] = []
    by_name = {c.name: c for c in pcs.cliques}
    for i, group in enumerate(pcs.scaling_groups):
        path = _g(i)
        if not is_dns1123_subdomain(group.name):
            errs.append(
                invalid(
                    f"{path}.name",
                    group.name,
                    "invalid PodCliqueScalingGroupConfig name, must be a valid DNS subdomain",
                )
            )
        unknown = [n for n in group.cliqueNames if n not in by_name]
        if unknown:
            errs.append(invalid(f"{path}.cliqueNames", ",".join(unknown), "unidentified PodClique names found"))
        for j, cname in enumerate(group.cliqueNames):
            total = len(pcs.name) + len(group.name) + len(cname)
            if total > MAX_COMBINED_NAME:
                msg = (
                    f"combined resource name length {total} exceeds 45-character limit required for pod naming. "
                    f"Consider shortening: PodCliqueSet '{pcs.name}', PodCliqueScalingGroup '{group.name}', "
                    f"or PodClique '{cname}'"
                )
                errs.append(invalid(f"{path}.cliqueNames[{j}].name", cname, msg))
                errs.append(invalid(f"{path}.name", group.name, msg))
                errs.append(invalid("metadata.name", pcs.name, msg))
        replicas = group.replicas if group.replicas is not None else 1
        min_available = group.minAvailable if group.minAvailable is not None else 1
        if replicas <= 0:
            errs.append(invalid(f"{path}.replicas", replicas, "must be greater than 0"))
        if min_available <= 0:
            errs.append(invalid(f"{path}.minAvailable", min_available, "must be greater than 0"))
        elif min_available > replicas:
            errs.append(
                invalid(f"{path}.minAvailable", min_available, "minAvailable must not be greater than replicas")
            )
        sc = group.scaleConfig
        if sc is not None and sc.minReplicas is not None and sc.minReplicas < min_available:
            errs.append(
                invalid(
                    f"{path}.scaleConfig.minReplicas",
                    sc.minReplicas,
                    "scaleConfig.minReplicas must be greater than or equal to minAvailable",
                )
            )
        # Grove validates no PCSG maxReplicas (spec/grove-autoscaling.md §6.2): an absent one
        # reaches the API server as 0 and the HPA is refused. Refused here instead, with the
        # clique rule's wording.
        if sc is not None and sc.minReplicas is not None and sc.maxReplicas < max(sc.minReplicas, 1):
            errs.append(
                invalid(
                    f"{path}.scaleConfig.maxReplicas",
                    sc.maxReplicas,
                    "must be greater than or equal to scaleConfig.minReplicas (grove-gitops; Grove accepts it and "
                    "the API server then refuses its HorizontalPodAutoscaler)",
                )
            )
        errs += validate_annotations(group.annotations, f"{path}.annotations")
        errs += _sharing_common(group.resourceSharing or [], f"{path}.resourceSharing", internal)
        for k, ref in enumerate(group.resourceSharing or []):
            if ref.filter is None:
                continue
            if not ref.filter.childCliqueNames:
                errs.append(
                    required(
                        f"{path}.resourceSharing[{k}].filter", "filter must specify at least one childCliqueNames entry"
                    )
                )
            for j, n in enumerate(ref.filter.childCliqueNames or []):
                if n not in group.cliqueNames:
                    errs.append(not_found(f"{path}.resourceSharing[{k}].filter.childCliqueNames[{j}]", n))
    groups = pcs.scaling_groups
    errs += [duplicate(f"{T}.podCliqueScalingGroups.name", n) for n in _dups([g.name for g in groups])]
    members = [c for g in groups for c in g.cliqueNames]
    errs += [duplicate(f"{T}.podCliqueScalingGroups.cliqueNames", n) for n in _dups(members)]
    for cname in dict.fromkeys(members):
        clique = by_name.get(cname)
        if clique is not None and clique.spec.autoScalingConfig is not None:
            errs.append(
                invalid(
                    f"{T}.podCliqueScalingGroups",
                    cname,
                    "AutoScalingConfig is not allowed to be defined for PodClique that is part of scaling group",
                )
            )
    return errs
