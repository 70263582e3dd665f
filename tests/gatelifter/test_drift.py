"""Topology drift: a binding pointing KAI at an external Topology is compared with it."""

from __future__ import annotations

from grove_gitops.agent.drift import DRIFT_REASON, DriftChecker
from grove_gitops.agent.kube import Kube
from grove_gitops.metrics import Registry
from tests.fakeserver import FakeApiServer

CTB = {
    "apiVersion": "grove.io/v1alpha1",
    "kind": "ClusterTopologyBinding",
    "metadata": {"name": "fabric"},
    "spec": {
        "levels": [{"domain": "rack", "key": "example.com/rack"}, {"domain": "host", "key": "kubernetes.io/hostname"}],
        "schedulerTopologyBindings": [{"schedulerName": "kai-scheduler", "topologyReference": "site-topology"}],
    },
}


def topology(levels: list[str]) -> dict:
    return {
        "apiVersion": "kai.scheduler/v1alpha1",
        "kind": "Topology",
        "metadata": {"name": "site-topology"},
        "spec": {"levels": [{"nodeLabel": key} for key in levels]},
    }


def events(server: FakeApiServer) -> list[dict]:
    return [e for e in server.store.list_objects("events.events.k8s.io", "default") if e.get("reason") == DRIFT_REASON]


def test_drift_is_reported_with_groves_messages() -> None:
    with FakeApiServer() as server:
        kube = Kube(server.api_client())
        registry = Registry()
        kube.raw("POST", "/apis/grove.io/v1alpha1/clustertopologybindings", CTB)
        checker = DriftChecker(kube, registry)
        assert checker.check() == {("fabric", "kai-scheduler"): 'KAI Topology "site-topology" not found'}
        assert registry.get("grove_gitops_topology_drift", binding="fabric", scheduler="kai-scheduler") == 1.0
        kube.raw("POST", "/apis/kai.scheduler/v1alpha1/topologies", topology(["example.com/rack", "kubernetes.io/hostname"]))
        assert checker.check() == {("fabric", "kai-scheduler"): None}
        assert registry.get("grove_gitops_topology_drift", binding="fabric", scheduler="kai-scheduler") == 0.0
        server.delete_object("topologies.kai.scheduler", None, "site-topology")
        kube.raw("POST", "/apis/kai.scheduler/v1alpha1/topologies", topology(["example.com/zone", "kubernetes.io/hostname"]))
        assert checker.check() == {
            ("fabric", "kai-scheduler"): "KAI Topology levels differ from ClusterTopologyBinding levels"
        }
        notes = sorted(e["note"] for e in events(server))  # Event names carry a random suffix
        prefix = "One or more scheduler backend topologies have drifted: kai-scheduler: "
        assert notes == sorted(
            [
                prefix + 'KAI Topology "site-topology" not found',
                prefix + "KAI Topology levels differ from ClusterTopologyBinding levels",
            ]
        )
        assert all(e["regarding"]["kind"] == "ClusterTopologyBinding" for e in events(server))
        checker.check()
        assert len(events(server)) == 2  # the same drift is not reported again
