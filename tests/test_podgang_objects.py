"""The PodGangs a render writes are the PodGang model's objects (issue 35.4).

``expand.podgangs.build_podgang`` builds the object itself rather than a model per pod
reference; for PodCliqueSets hypothesis draws (tests/test_gitsplit_memo.py: every backend,
topology constraints at every level, scaling groups, autoscaling) each PodGang must be what
:class:`~grove_gitops.api.podgang.PodGang` validates and dumps back, key order included.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings

from grove_gitops.api.podgang import PodGang
from grove_gitops.expand.gitsplit import bumped_counts
from grove_gitops.expand.workload import expand_pcs
from tests.test_gitsplit_memo import _plan, workloads


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads())
def test_every_rendered_podgang_is_the_models_dump(workload: tuple[str, list[dict[str, Any]]]) -> None:
    _backend, docs = workload
    pcs, ctx = _plan(docs)
    for counts in (None, bumped_counts(pcs)):
        gangs = [o for o in expand_pcs(pcs, ctx, counts).objects if o["kind"] == "PodGang"]
        assert gangs
        for gang in gangs:
            assert json.dumps(PodGang.model_validate(gang).to_object()) == json.dumps(gang)


def test_a_translated_constraint_is_in_the_podgang() -> None:
    """The drawn shapes include topology: one fixed case checks it reaches the object."""
    docs = [
        {
            "apiVersion": "grove.io/v1alpha1",
            "kind": "PodCliqueSet",
            "metadata": {"name": "tas", "namespace": "llm"},
            "spec": {
                "replicas": 1,
                "template": {
                    "priorityClassName": "inference-high",
                    "topologyConstraint": {"topologyName": "fabric", "pack": {"required": "zone"}},
                    "cliques": [
                        {"name": "w", "topologyConstraint": {"pack": {"preferred": "host"}},
                         "spec": {"roleName": "w", "replicas": 2,
                                  "podSpec": {"containers": [{"name": "c", "image": "x"}]}}},
                    ],
                },
            },
        },
        {"apiVersion": "operator.config.grove.io/v1alpha1", "kind": "OperatorConfiguration",
         "topologyAwareScheduling": {"enabled": True}},
        {"apiVersion": "grove.io/v1alpha1", "kind": "ClusterTopologyBinding", "metadata": {"name": "fabric"},
         "spec": {"levels": [{"domain": "zone", "key": "topology.kubernetes.io/zone"},
                             {"domain": "host", "key": "kubernetes.io/hostname"}]}},
    ]
    pcs, ctx = _plan(docs)
    (gang,) = [o for o in expand_pcs(pcs, ctx).objects if o["kind"] == "PodGang"]
    assert gang["spec"]["topologyConstraint"] == {"packConstraint": {"required": "topology.kubernetes.io/zone"}}
    host = {"packConstraint": {"preferred": "kubernetes.io/hostname"}}
    assert gang["spec"]["podgroups"][0]["topologyConstraint"] == host
    assert gang["metadata"]["annotations"]["grove.io/topology-name"] == "fabric"
    assert json.dumps(PodGang.model_validate(gang).to_object()) == json.dumps(gang)
