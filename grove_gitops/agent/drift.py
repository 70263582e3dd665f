"""Topology drift: a binding that points a scheduler at an externally managed topology object.

Grove's ClusterTopologyBinding controller compares the external object with the binding
(``CheckTopologyDrift``) and records ``SchedulerTopologyDrift``; without the operator the
gate-lifter does it, asking the backend (no scheduler-specific code here) and reporting
drift as a metric, a log line and a Warning Event on the binding, with Grove's messages.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from kubernetes.client.exceptions import ApiException
from pydantic import ValidationError
from urllib3.exceptions import HTTPError

from grove_gitops.agent.kube import Kube
from grove_gitops.agent.ratelog import agent_log, describe
from grove_gitops.api.renderconfig import RenderConfig
from grove_gitops.api.topology import ClusterTopologyBinding
from grove_gitops.backendapi import BackendContext, SchedulerBackend, available_backends
from grove_gitops.metrics import Registry

log = logging.getLogger("grove_gitops.agent.drift")
DRIFT_REASON = "TopologyDriftDetected"
DRIFT_SUMMARY = "One or more scheduler backend topologies have drifted"
EVENT_NAMESPACE = "default"  # where Events about cluster-scoped objects go


class DriftChecker:
    def __init__(self, kube: Kube, registry: Registry) -> None:
        self.kube = kube
        self.registry = registry
        self._backends: dict[str, SchedulerBackend] = {
            name: cls(BackendContext(render=RenderConfig())) for name, cls in available_backends().items()
        }
        self._last_check = 0.0
        self._reported: dict[tuple[str, str], str | None] = {}

    def maybe_check(self, interval: float) -> None:
        if time.monotonic() - self._last_check >= interval:
            self._last_check = time.monotonic()
            try:
                self.check()
            except (ApiException, HTTPError, OSError) as exc:
                self.registry.inc("grove_gitops_lifter_api_errors_total", "API errors", code="drift")
                agent_log.warning("topology drift check failed: %s", describe(exc))

    def check(self) -> dict[tuple[str, str], str | None]:
        """``{(binding, scheduler): message or None}`` for every external topology reference."""
        listing = self.kube.raw("GET", "/apis/grove.io/v1alpha1/clustertopologybindings")
        results: dict[tuple[str, str], str | None] = {}
        for raw in listing.get("items") or []:
            try:
                binding = ClusterTopologyBinding.model_validate(_strip(raw))
            except ValidationError:
                continue
            for ref in binding.spec.schedulerTopologyBindings or []:
                backend = self._backends.get(ref.schedulerName)
                target = backend.external_topology(binding) if backend is not None else None
                if backend is None or target is None:
                    continue
                api_version, kind, name = target
                live = self.kube.get_cluster_object(api_version, kind, name)
                message = backend.topology_drift(binding, live)
                key = (binding.name, ref.schedulerName)
                results[key] = message
                self.registry.set(
                    "grove_gitops_topology_drift",
                    "1 when a scheduler's external topology differs from its ClusterTopologyBinding",
                    1.0 if message else 0.0,
                    binding=binding.name,
                    scheduler=ref.schedulerName,
                )
                if message and self._reported.get(key) != message:
                    log.warning(
                        "topology drift: ClusterTopologyBinding %s, %s: %s", binding.name, ref.schedulerName, message
                    )
                    # Items of a list carry no apiVersion/kind of their own: the Event's
                    # ``regarding`` must name them.
                    about = {"apiVersion": "grove.io/v1alpha1", "kind": "ClusterTopologyBinding", **raw}
                    self.kube.emit_event(
                        EVENT_NAMESPACE, about, DRIFT_REASON, f"{DRIFT_SUMMARY}: {ref.schedulerName}: {message}"
                    )
                self._reported[key] = message
        return results


def _strip(raw: dict[str, Any]) -> dict[str, Any]:
    """Server-populated metadata is irrelevant to the comparison and the model tolerates it;
    ``status`` is dropped."""
    return {k: v for k, v in raw.items() if k in ("apiVersion", "kind", "metadata", "spec")}
