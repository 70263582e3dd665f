"""A Grove operator installed beside grove-gitops ignores what we render (docs/migration.md).

The predicates below are Grove's, as ../shared/spec writes them down; each is checked against
every object rendered from examples/ (KAI) and examples-fleet/ (KAI and Volcano), and each is
shown to match what Grove's own operator creates (so a passing check is not vacuous):

* PodGang controller (spec/grove-backends.md §1.5, ``podgang/register.go``): Create and Delete
  events only for PodGangs labelled ``app.kubernetes.io/managed-by=grove-operator``; Update only
  when old and new are both so labelled (and the generation changed).
* PodCliqueSet controller's PodGang clean-up (spec/grove-desired-state.md, PodGangs): deletes
  every PodGang of the namespace labelled ``managed-by: grove-operator, part-of: P,
  component: podgang`` that it did not compute (no ownership check).
* The operator's label-filtered cache (spec/grove-autoscaling.md §2.2, ``mgr.go``): HPAs are
  cached only when labelled ``managed-by: grove-operator``.
* Grove's headless Service per PCS replica (spec/grove-desired-state.md §7.1) selects pods
  labelled ``managed-by: grove-operator, part-of: P, grove.io/podcliqueset-replica-index: i``.
* Pod ownership: Grove's PodClique counts and gates only pods whose owner is its PodClique
  (ownerReferences); rendered objects have no ownerReferences at all.
* Kinds: Grove's controllers reconcile grove.io PodCliqueSet / PodClique / PodCliqueScalingGroup;
  we render the gitops.grove.io kinds of those names instead. The one grove.io kind we render is
  ClusterTopologyBinding, which Grove's ClusterTopologyBinding controller does reconcile
  (spec/grove-backends.md §5.3; docs/migration.md says what that means).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from grove_gitops.sourcetree import render_source_tree

from .helpers import PROJECT

Obj = dict[str, Any]
MANAGED_BY = "app.kubernetes.io/managed-by"
PART_OF = "app.kubernetes.io/part-of"
GROVE_WORKLOAD_KINDS = {"PodCliqueSet", "PodClique", "PodCliqueScalingGroup"}


def _labels(obj: Obj) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("labels") or {})


def podgang_controller_watches(obj: Obj) -> bool:
    return obj["kind"] == "PodGang" and _labels(obj).get(MANAGED_BY) == "grove-operator"


def pcs_podgang_cleanup_selects(obj: Obj, pcs: str) -> bool:
    want = {MANAGED_BY: "grove-operator", PART_OF: pcs, "app.kubernetes.io/component": "podgang"}
    labels = _labels(obj)
    return obj["kind"] == "PodGang" and all(labels.get(k) == v for k, v in want.items())


def operator_cache_holds(obj: Obj) -> bool:
    return _labels(obj).get(MANAGED_BY) == "grove-operator"


def grove_service_selects(pod: Obj, pcs: str, replica: str) -> bool:
    selector = {MANAGED_BY: "grove-operator", PART_OF: pcs, "grove.io/podcliqueset-replica-index": replica}
    labels = _labels(pod)
    return pod["kind"] == "Pod" and all(labels.get(k) == v for k, v in selector.items())


def owned_by_grove(obj: Obj) -> bool:
    return any(
        str(ref.get("apiVersion", "")).split("/")[0].endswith("grove.io")
        for ref in (obj.get("metadata") or {}).get("ownerReferences") or []
    )


def reconciled_by_grove_workload_controllers(obj: Obj) -> bool:
    return obj["apiVersion"].startswith("grove.io/") and obj["kind"] in GROVE_WORKLOAD_KINDS


def _rendered(source: Path) -> list[Obj]:
    files = render_source_tree(source).tree.files
    return [
        yaml.safe_load(data)
        for path, data in sorted(files.items())
        if path.endswith(".yaml") and not path.endswith("kustomization.yaml") and "/_flux/" not in path
        and "/_argocd/" not in path
    ]


@pytest.fixture(scope="module")
def rendered() -> list[Obj]:
    objs = _rendered(PROJECT / "examples") + _rendered(PROJECT / "examples-fleet")
    kinds = {o["kind"] for o in objs}
    assert {"PodGang", "Pod", "HorizontalPodAutoscaler", "Service", "PodGroup"} <= kinds
    return objs


#: What Grove's operator itself creates (spec/grove-backends.md §11 worked example, §2.3; spec
#: grove-desired-state.md §7.1): every predicate above must match these.
GROVE_PODGANG: Obj = {
    "apiVersion": "scheduler.grove.io/v1alpha1",
    "kind": "PodGang",
    "metadata": {
        "name": "inf-0",
        "namespace": "ml",
        "labels": {MANAGED_BY: "grove-operator", PART_OF: "inf", "app.kubernetes.io/component": "podgang"},
        "ownerReferences": [{"apiVersion": "grove.io/v1alpha1", "kind": "PodCliqueSet", "name": "inf", "uid": "u"}],
    },
}
GROVE_POD: Obj = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "inf-0-router-abcde",
        "labels": {MANAGED_BY: "grove-operator", PART_OF: "inf", "grove.io/podcliqueset-replica-index": "0"},
        "ownerReferences": [{"apiVersion": "grove.io/v1alpha1", "kind": "PodClique", "name": "inf-0-router", "uid": "u"}],
    },
}


def test_the_predicates_match_grove_objects() -> None:
    assert podgang_controller_watches(GROVE_PODGANG)
    assert pcs_podgang_cleanup_selects(GROVE_PODGANG, "inf")
    assert operator_cache_holds(GROVE_PODGANG)
    assert grove_service_selects(GROVE_POD, "inf", "0")
    assert owned_by_grove(GROVE_POD) and owned_by_grove(GROVE_PODGANG)
    assert reconciled_by_grove_workload_controllers({"apiVersion": "grove.io/v1alpha1", "kind": "PodCliqueSet"})


def test_grove_operator_ignores_every_rendered_object(rendered: list[Obj]) -> None:
    for obj in rendered:
        where = (obj["kind"], obj["metadata"].get("namespace"), obj["metadata"]["name"])
        assert not podgang_controller_watches(obj), where
        assert not operator_cache_holds(obj), where
        assert not owned_by_grove(obj), where
        assert not reconciled_by_grove_workload_controllers(obj), where
        part_of = _labels(obj).get(PART_OF, "")
        assert not pcs_podgang_cleanup_selects(obj, part_of), where
        if obj["kind"] == "Pod":
            replica = _labels(obj).get("grove.io/podcliqueset-replica-index", "")
            assert not grove_service_selects(obj, part_of, replica), where


def test_what_grove_would_reconcile_is_only_the_topology(rendered: list[Obj]) -> None:
    """The grove.io kinds in the output: ClusterTopologyBinding only (docs/migration.md)."""
    grove = {(o["apiVersion"], o["kind"]) for o in rendered if o["apiVersion"].split("/")[0] == "grove.io"}
    assert grove == {("grove.io/v1alpha1", "ClusterTopologyBinding")}


def test_every_rendered_workload_object_is_ours() -> None:
    """Every object of a PodCliqueSet's shard carries managed-by=grove-gitops (the agent lists
    pods and PodGangs by it); only passed-through source objects (``_cluster/``, ``_resources/``)
    keep the labels the source gave them."""
    seen = 0
    for source in (PROJECT / "examples", PROJECT / "examples-fleet"):
        for path, data in render_source_tree(source).tree.files.items():
            parts = path.split("/")
            if not path.endswith(".yaml") or parts[-1] == "kustomization.yaml":
                continue
            if any(p in ("_cluster", "_resources", "_flux", "_argocd") for p in parts):
                continue
            obj = yaml.safe_load(data)
            assert _labels(obj).get(MANAGED_BY) == "grove-gitops", path
            seen += 1
    assert seen > 20


def test_the_agent_ignores_grove_operator_objects() -> None:
    """The other direction: the agent lists and watches pods and PodGangs by
    managed-by=grove-gitops only, which nothing of Grove's operator carries."""
    from grove_gitops.agent.cache import SELECTOR

    key, _, value = SELECTOR.partition("=")
    assert (key, value) == (MANAGED_BY, "grove-gitops")
    for obj in (GROVE_PODGANG, GROVE_POD):
        assert _labels(obj).get(key) != value


#: Grove's topology-aware backend whose topology the operator manages (spec grove-backends §5).
KAI = "kai-scheduler"
EXTERNAL_KAI = """  schedulerTopologyBindings:
    - schedulerName: kai-scheduler
      topologyReference: gpu-fabric-kai
---
apiVersion: kai.scheduler/v1alpha1
kind: Topology
metadata:
  name: gpu-fabric-kai
spec:
  levels:
    - nodeLabel: topology.kubernetes.io/zone
    - nodeLabel: network.example.com/block
    - nodeLabel: network.example.com/rack
    - nodeLabel: kubernetes.io/hostname
"""


def grove_topology_sync_errors(objs: list[Obj]) -> list[str]:
    """Grove's ``SyncTopology`` for KAI (spec grove-backends §5: ``kai/topology.go``), run for
    every ClusterTopologyBinding that does not name KAI under ``schedulerTopologyBindings``, at
    operator start-up (the first error exits with code 3) and on every reconcile: a Topology
    named after the binding that the binding does not control is an error."""
    errors = []
    topologies = {o["metadata"]["name"]: o for o in objs if o["kind"] == "Topology" and o["apiVersion"].startswith("kai.scheduler/")}
    for ctb in (o for o in objs if o["kind"] == "ClusterTopologyBinding"):
        name = ctb["metadata"]["name"]
        named = {b.get("schedulerName") for b in ctb.get("spec", {}).get("schedulerTopologyBindings") or []}
        topo = topologies.get(name)
        if KAI in named or topo is None:
            continue
        owners = (topo.get("metadata") or {}).get("ownerReferences") or []
        if not any(r.get("kind") == "ClusterTopologyBinding" and r.get("name") == name and r.get("controller") for r in owners):
            errors.append(
                f"KAI Topology {name} is not owned by ClusterTopologyBinding {name}. It is required that KAI Topology "
                "by this name is created by Grove operator and has ClusterTopologyBinding set as its owner"
            )
    return errors


def test_an_auto_managed_kai_topology_stops_a_grove_operator_beside_us() -> None:
    """docs/migration.md: the rendered auto-managed KAI Topology has no ownerReference (no UIDs at
    render time), so a Grove operator with KAI enabled refuses it: at start-up it exits."""
    objs = _rendered(PROJECT / "examples")
    assert grove_topology_sync_errors(objs)


def test_an_external_kai_topology_coexists(tmp_path: Path) -> None:
    """The documented fix: name KAI's Topology under schedulerTopologyBindings (passed through
    from the source); grove-gitops then renders no auto-managed Topology and Grove only checks
    the external one for drift."""
    import shutil

    src = tmp_path / "src"
    shutil.copytree(PROJECT / "examples", src)
    binding = src / "topology" / "gpu-fabric.yaml"
    binding.write_text(binding.read_text() + EXTERNAL_KAI)
    objs = _rendered(src)
    assert grove_topology_sync_errors(objs) == []
    names = {o["metadata"]["name"] for o in objs if o["kind"] == "Topology"}
    assert names == {"gpu-fabric-kai"}
