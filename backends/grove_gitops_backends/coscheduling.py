"""``scheduler-plugins-scheduler``: the Coscheduling plugin of kubernetes-sigs/scheduler-plugins.

Grove has no backend for it (``spec/backend-crs.md`` §2.4); this one follows §7 of that spec.

Per PodGang it renders one ``scheduling.x-k8s.io/v1alpha1`` PodGroup named after the PodGang, with
``spec.minMember`` = Σ podgroup ``minReplicas`` (at least 1, the CRD's minimum) and
``spec.scheduleTimeoutSeconds`` from the profile config (default 60, the plugin's own Permit wait,
``apis/config/v1/defaults.go:33``). Pods get ``schedulerName`` (the Helm chart's
``scheduler-plugins-scheduler`` unless the profile config's ``schedulerName`` says otherwise: the
second scheduler's name is an installation choice) and the label
``scheduling.x-k8s.io/pod-group: <PodGang name>``.

What it cannot express, and how that is handled:

* **Per-clique minimums.** A Coscheduling PodGroup is one flat gang (no subgroups, §8.1), so only
  the total is enforced: a PodGang with several podgroups (a leader clique and a worker clique, or
  several scaling-group replicas) could start with the total reached by the wrong mix of pods once
  some clique has ``replicas > minAvailable``. That is a warning, given only in that case (with
  ``minAvailable == replicas`` everywhere the total already demands every pod), not an error: the gang
  is still all-or-nothing at its total.
* **Topology.** Coscheduling has no topology objects or fields, so every topology constraint is an
  error (recording it in the PodGang and silently not enforcing it, as Grove's ``default-scheduler``
  does, would hide a broken placement promise).

Gating: unlike Koordinator, Coscheduling does *not* count gated pods toward ``minMember`` (§7.4,
PR #952): PreFilter rejects a pod while any sibling in its PodGroup is still gated. That is safe
here because the gate-lifter removes the gates of every pod of a PodGang together, once this
PodGroup exists; a pod released a moment before its siblings is simply rejected and retried with
backoff, and since gates only ever disappear the gang cannot deadlock. Scaled PodGangs are separate
PodGroups, so their later release never holds up the base gang.

Profile config keys (optional): ``schedulerName``, ``scheduleTimeoutSeconds`` (≥ 1). Unknown keys
are errors. The interface has no hook for validating a profile's config, so problems are reported
with every PodCliqueSet that selects this backend.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from grove_gitops.api.podcliqueset import PodCliqueSet
from grove_gitops.backendapi import BackendContext, BackendFinding, K8sObject, PodPlacement, SchedulerBackend

SCHEDULER = "scheduler-plugins-scheduler"
API_VERSION = "scheduling.x-k8s.io/v1alpha1"
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
PODGANG_LABEL = "grove.io/podgang"
DEFAULT_SCHEDULE_TIMEOUT_SECONDS = 60
INT32_MAX = 2**31 - 1
CONFIG_KEYS = ("schedulerName", "scheduleTimeoutSeconds")
CONFIG_PATH = f"scheduler.profiles[{SCHEDULER}].config"
T = "spec.template"
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")

TOPOLOGY_MESSAGE = (
    "scheduler-plugins-scheduler does not support Grove topology constraints: the Coscheduling PodGroup "
    "(scheduling.x-k8s.io/v1alpha1) has no topology fields; remove the constraint or use a topology-aware "
    "scheduler"
)


@dataclass(frozen=True)
class CoschedulingConfig:
    scheduler_name: str = SCHEDULER
    schedule_timeout_seconds: int = DEFAULT_SCHEDULE_TIMEOUT_SECONDS


def parse_config(raw: Mapping[str, Any]) -> tuple[CoschedulingConfig, list[tuple[str, str]]]:
    """Parse the profile config; returns the config (defaults where invalid) and
    ``(key, message)`` problems."""
    problems: list[tuple[str, str]] = []
    for key in raw:
        if key not in CONFIG_KEYS:
            problems.append((str(key), "unknown key; supported keys: " + ", ".join(CONFIG_KEYS)))
    name = raw.get("schedulerName", SCHEDULER)
    if not isinstance(name, str) or len(name) > 253 or not _SUBDOMAIN.match(name):
        problems.append(("schedulerName", f"must be a lowercase RFC 1123 subdomain (got {json.dumps(name)})"))
        name = SCHEDULER
    timeout = raw.get("scheduleTimeoutSeconds", DEFAULT_SCHEDULE_TIMEOUT_SECONDS)
    if isinstance(timeout, bool) or not isinstance(timeout, int) or not 1 <= timeout <= INT32_MAX:
        problems.append(("scheduleTimeoutSeconds", f"must be an integer between 1 and {INT32_MAX}"))
        timeout = DEFAULT_SCHEDULE_TIMEOUT_SECONDS
    return CoschedulingConfig(name, timeout), problems


def loose_gangs(pcs: PodCliqueSet) -> list[str]:
    """The PodGangs (described) where a flat total is weaker than the per-clique minimums.

    A PodGang with several podgroups loses nothing when every member clique has
    ``minAvailable == replicas``: the total then requires every pod. It matters once some member
    has ``minAvailable < replicas``. Mirrors the PodGang layout (``spec/grove-backends.md`` §2.3)
    without rendering it, so :meth:`CoschedulingBackend.validate` can warn up front.
    """
    by_name = {c.name: c for c in pcs.cliques}

    def slack(names: list[str]) -> bool:
        return any(
            (c := by_name.get(n)) is not None and (c.spec.minAvailable or c.spec.replicas) < c.spec.replicas
            for n in names
        )

    in_group = {name for g in pcs.scaling_groups for name in g.cliqueNames}
    base_members = [c.name for c in pcs.cliques if c.name not in in_group]
    base_groups = len(base_members)
    out: list[str] = []
    scaled: list[str] = []
    for group in pcs.scaling_groups:
        min_available = group.minAvailable if group.minAvailable is not None else 1
        replicas = group.replicas if group.replicas is not None else 1
        base_groups += min_available * len(group.cliqueNames)
        if min_available:
            base_members += group.cliqueNames
        if replicas > min_available and len(group.cliqueNames) > 1 and slack(group.cliqueNames):
            scaled.append(f"the scaled PodGangs of scaling group '{group.name}'")
    if base_groups > 1 and slack(base_members):
        out.append("the base PodGang")
    return out + scaled


class CoschedulingBackend(SchedulerBackend):
    name: ClassVar[str] = SCHEDULER
    warning_codes: ClassVar[Mapping[str, str]] = {
        "min-member-summed": r"scheduler-plugins Coscheduling has one flat PodGroup per PodGang",
    }
    pod_scheduler_name: ClassVar[str] = SCHEDULER

    def __init__(self, context: BackendContext) -> None:
        super().__init__(context)
        self.config, self.config_problems = parse_config(context.profile_config)

    def validate(self, pcs: PodCliqueSet) -> list[BackendFinding]:
        findings = [
            BackendFinding(f"{CONFIG_PATH}.{key}", f"OperatorConfiguration: {msg}") for key, msg in self.config_problems
        ]
        tmpl = pcs.spec.template
        if tmpl.topologyConstraint is not None:
            findings.append(BackendFinding(f"{T}.topologyConstraint", TOPOLOGY_MESSAGE))
        for i, group in enumerate(pcs.scaling_groups):
            if group.topologyConstraint is not None:
                findings.append(BackendFinding(f"{T}.podCliqueScalingGroups[{i}].topologyConstraint", TOPOLOGY_MESSAGE))
        for i, clique in enumerate(pcs.cliques):
            if clique.topologyConstraint is not None:
                findings.append(BackendFinding(f"{T}.cliques[{i}].topologyConstraint", TOPOLOGY_MESSAGE))
        multi = loose_gangs(pcs)
        if multi:
            findings.append(
                BackendFinding(
                    T,
                    "scheduler-plugins Coscheduling has one flat PodGroup per PodGang: only the total minMember "
                    f"(the sum of minAvailable) is enforced for {' and '.join(multi)}, not each clique's own "
                    "minAvailable",
                    warning=True,
                )
            )
        return findings

    def prepare_pod(self, pod: K8sObject, placement: PodPlacement) -> None:
        pod["spec"]["schedulerName"] = self.config.scheduler_name
        pod["metadata"].setdefault("labels", {})[POD_GROUP_LABEL] = placement.podgang

    def gang_objects(self, podgang: K8sObject, pcs: PodCliqueSet) -> list[K8sObject]:
        meta = podgang["metadata"]
        total = sum(int(pg["minReplicas"]) for pg in podgang["spec"]["podgroups"])
        return [
            {
                "apiVersion": API_VERSION,
                "kind": "PodGroup",
                "metadata": {
                    "name": meta["name"],
                    "namespace": meta["namespace"],
                    "labels": {**(meta.get("labels") or {}), PODGANG_LABEL: meta["name"]},
                },
                "spec": {
                    "minMember": max(1, total),
                    "scheduleTimeoutSeconds": self.config.schedule_timeout_seconds,
                },
            }
        ]
