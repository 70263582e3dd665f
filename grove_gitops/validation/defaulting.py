"""Grove's defaulting, in Grove's order: CRD structural defaults, then the mutating webhook.

Order matters (``spec/grove-desired-state.md`` §2.1): the webhook defaults
``minAvailable`` to ``replicas`` *as written*, before it turns ``replicas: 0`` into 1, so an
explicit (or absent) ``replicas: 0`` yields ``minAvailable: 0`` and is then rejected — the
same outcome as in a cluster.
"""

from __future__ import annotations

from grove_gitops.api.podcliqueset import (
    ANY_ORDER,
    HeadlessServiceConfig,
    PodCliqueSet,
)

DEFAULT_TERMINATION_DELAY = "4h"


def apply_defaults(pcs: PodCliqueSet, default_namespace: str) -> None:
    """Default ``pcs`` in place."""
    tmpl = pcs.spec.template
    # (a) CRD structural defaults
    if tmpl.cliqueStartupType is None:
        tmpl.cliqueStartupType = ANY_ORDER
    if pcs.spec.updateStrategy is not None and pcs.spec.updateStrategy.type is None:
        pcs.spec.updateStrategy.type = "RollingRecreate"
    if tmpl.headlessServiceConfig is not None and tmpl.headlessServiceConfig.publishNotReadyAddresses is None:
        tmpl.headlessServiceConfig.publishNotReadyAddresses = True
    for group in pcs.scaling_groups:
        if group.replicas is None:
            group.replicas = 1
        if group.minAvailable is None:
            group.minAvailable = 1
    # (b) the defaulting webhook (dflt.go)
    if not pcs.metadata.namespace:
        pcs.metadata.namespace = default_namespace
    for clique in tmpl.cliques:
        spec = clique.spec
        pod = spec.podSpec
        if not pod.get("restartPolicy"):
            pod["restartPolicy"] = "Always"
        if pod.get("terminationGracePeriodSeconds") is None:
            pod["terminationGracePeriodSeconds"] = 30
        written = spec.replicas
        if spec.replicas == 0:
            spec.replicas = 1
        if spec.minAvailable is None:
            spec.minAvailable = written
        if spec.autoScalingConfig is not None and spec.autoScalingConfig.minReplicas is None:
            spec.autoScalingConfig.minReplicas = written
    for group in pcs.scaling_groups:
        if group.scaleConfig is not None and group.scaleConfig.minReplicas is None:
            group.scaleConfig.minReplicas = group.replicas
    if tmpl.terminationDelay is None:
        tmpl.terminationDelay = DEFAULT_TERMINATION_DELAY
    if tmpl.headlessServiceConfig is None:
        tmpl.headlessServiceConfig = HeadlessServiceConfig(publishNotReadyAddresses=True)
