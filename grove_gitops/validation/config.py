"""OperatorConfiguration and ClusterTopologyBinding rules (``config/validation``, CTB webhook)."""

from __future__ import annotations

from collections.abc import Collection, Mapping

from grove_gitops.api.operatorconfig import DEFAULT_SCHEDULER, OperatorConfiguration
from grove_gitops.api.topology import ClusterTopologyBinding
from grove_gitops.backendapi import SchedulerBackend
from grove_gitops.fields.fielderrors import FieldError, duplicate, invalid, not_supported, required
from grove_gitops.fields.k8snames import dns1123_subdomain_problems, qualified_name_problems
from grove_gitops.validation.opcfgkeys import profile_config_errors, unknown_field_errors
from grove_gitops.validation.opcfgruntime import operator_runtime_errors
from grove_gitops.validation.topology import DOMAIN_RE

MAX_LEVELS = 16
LOG_LEVELS = ["debug", "info", "error"]
LOG_FORMATS = ["json", "text"]


def validate_operator_config(
    cfg: OperatorConfiguration, supported: Mapping[str, type[SchedulerBackend]]
) -> list[FieldError]:
    """Grove's ``ValidateOperatorConfiguration`` (after defaults), in Grove's order.

    ``supported`` is the set of installed backends: Grove's fixed enum, widened by whatever
    backend modules are registered. Fields Grove does not know come first: Grove drops them
    silently, so a typo there is the likeliest reason for everything else.
    """
    errs: list[FieldError] = unknown_field_errors(cfg) + profile_config_errors(cfg, supported)
    # Grove checks a value only when it is not blank (strings.TrimSpace)
    if cfg.logLevel.strip() and cfg.logLevel not in LOG_LEVELS:
        errs.append(not_supported("logLevel", cfg.logLevel, LOG_LEVELS))
    if cfg.logFormat.strip() and cfg.logFormat not in LOG_FORMATS:
        errs.append(not_supported("logFormat", cfg.logFormat, LOG_FORMATS))
    sched = cfg.scheduler
    if not sched.profiles:
        errs.append(required("scheduler.profiles", "at least one scheduler profile is required"))
    seen: set[str] = set()
    for i, profile in enumerate(sched.profiles):
        path = f"scheduler.profiles[{i}].name"
        if not profile.name.strip():
            errs.append(required(path, "scheduler profile name is required"))
        elif profile.name not in supported:
            errs.append(not_supported(path, profile.name, sorted(supported)))
        elif profile.name in seen:
            errs.append(duplicate(path, profile.name))
        seen.add(profile.name)
    if DEFAULT_SCHEDULER not in seen:
        errs.append(required("scheduler.profiles", f'the "{DEFAULT_SCHEDULER}" scheduler profile is required'))
    if not sched.defaultProfileName.strip():
        errs.append(required("scheduler.defaultProfileName", "default scheduler profile name is required"))
    elif sched.defaultProfileName not in seen:
        errs.append(
            invalid(
                "scheduler.defaultProfileName",
                sched.defaultProfileName,
                "default profile must be one of the configured profiles",
            )
        )
    return errs + operator_runtime_errors(cfg)


def validate_binding(
    ctb: ClusterTopologyBinding, enabled: Collection[str], topology_aware: Collection[str]
) -> list[FieldError]:
    """CRD schema rules plus the CTB validating webhook (``spec/grove-backends.md`` §5.1-5.2)."""
    errs: list[FieldError] = []
    if not ctb.name:
        errs.append(required("metadata.name"))
    else:
        errs += [invalid("metadata.name", ctb.name, p) for p in dns1123_subdomain_problems(ctb.name)]
    if ctb.metadata.namespace:
        errs.append(invalid("metadata.namespace", ctb.metadata.namespace, "ClusterTopologyBinding is cluster-scoped"))
    if not ctb.spec.levels:
        errs.append(required("spec.levels", "must have at least 1 items"))
    if len(ctb.spec.levels) > MAX_LEVELS:
        # Grove's CRD sets no maxItems, but KAI's Topology CRD refuses more than 16 levels and
        # every other scheduler's topology is shallower still (spec/grove-backends.md §11.15).
        errs.append(
            FieldError("spec.levels", "Too many", f"must have at most {MAX_LEVELS} items", len(ctb.spec.levels))
        )
    domains: set[str] = set()
    keys: set[str] = set()
    for i, level in enumerate(ctb.spec.levels):
        path = f"spec.levels[{i}]"
        if not (1 <= len(level.domain) <= 63) or not DOMAIN_RE.match(level.domain):
            errs.append(invalid(f"{path}.domain", level.domain, "should match '^[a-z][a-z0-9-]*$' (1-63 characters)"))
        if not (1 <= len(level.key) <= 63) or qualified_name_problems(level.key):
            errs.append(invalid(f"{path}.key", level.key, "must be a node label key of at most 63 characters"))
        if level.domain in domains:
            errs.append(duplicate(f"{path}.domain", level.domain))
        if level.key in keys:
            errs.append(duplicate(f"{path}.key", level.key))
        domains.add(level.domain)
        keys.add(level.key)
    names: set[str] = set()
    for i, ref in enumerate(ctb.spec.schedulerTopologyBindings or []):
        path = f"spec.schedulerTopologyBindings[{i}].schedulerName"
        if ref.schedulerName in names:
            errs.append(duplicate(path, ref.schedulerName))
        names.add(ref.schedulerName)
        if ref.schedulerName not in enabled:
            errs.append(invalid(path, ref.schedulerName, "scheduler backend is not enabled in Grove"))
        elif ref.schedulerName not in topology_aware:
            errs.append(
                invalid(path, ref.schedulerName, "scheduler backend does not implement topology-aware scheduling")
            )
    return errs
