"""Every example, fleet example and Grove sample rendered by grove-gitops, and every overlay,
applied server-side to the real kube-apiserver (issue 32.5): first a server-side dry-run of
everything, then as Argo CD does (wave by wave, field manager argocd-controller), then as Flux
does (one apply, field manager kustomize-controller). Both must be accepted whole.

Each rendered tree goes to a namespace of its own (test_cluster has examples/ in ``inference``;
the fleet's prod-kai renders the same names with other images, and a Pod's spec is immutable).
The namespaces are deleted again at the end so that later modules' agents find nothing of them.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from kubernetes.client.exceptions import ApiException

from grove_gitops.agent.kube import Kube
from grove_gitops.cli import main
from tests.controlplane.conftest import COMPONENTS
from tests.controlplane.plane import (
    ARGOCD_MANAGER,
    FLUX_MANAGER,
    Obj,
    Plane,
    apply_all,
    crd_established,
    kustomize,
    load_docs,
    server_side_apply,
    wait_until,
)
from tests.support import PROJECT, SAMPLES

WAVE = "argocd.argoproj.io/sync-wave"
OVERLAYS = PROJECT / "overlays"
#: Objects applied by this module, by source (reported in BENCHMARKS.md / the test output).
APPLIED: Counter[str] = Counter()


def render_tree(source: Path, out: Path) -> None:
    result = CliRunner().invoke(main, ["render", str(source), "--out", str(out)])
    assert result.exit_code == 0, result.output


def tree_objects(root: Path) -> list[Obj]:
    files = sorted(p for p in root.rglob("*.yaml") if p.name != "kustomization.yaml")
    return [d for f in files for d in load_docs(f)]


def moved(objs: list[Obj], namespace: str, into: str) -> list[Obj]:
    """Every string equal to ``namespace`` (metadata, subjects, references, the Namespace object)
    becomes ``into``: the tree as if rendered for that namespace."""
    text = json.dumps(objs).replace(json.dumps(namespace), json.dumps(into))
    out: list[Obj] = json.loads(text)
    return out


def apply_as_gitops(kube: Kube, objs: list[Obj], label: str) -> None:
    """Namespaces first (Argo CD and Flux create them before the rest), then a server-side
    dry-run of every object, then Argo CD's waves, then Flux's one apply."""
    namespaces = [o for o in objs if o["kind"] == "Namespace"]
    apply_all(kube, namespaces)
    for obj in objs:
        try:
            server_side_apply(kube, obj, ARGOCD_MANAGER, dry_run=True)
        except ApiException as exc:
            raise AssertionError(f"dry-run {obj['kind']} {obj['metadata'].get('namespace')}/{obj['metadata']['name']}: {exc.body}") from exc
    waves = sorted({int((o["metadata"].get("annotations") or {}).get(WAVE, "0")) for o in objs})
    for wave in waves:
        apply_all(kube, [o for o in objs if int((o["metadata"].get("annotations") or {}).get(WAVE, "0")) == wave], ARGOCD_MANAGER)
    apply_all(kube, objs, FLUX_MANAGER)
    APPLIED[label] += len(objs)


@pytest.fixture(scope="module")
def kube(installed: Plane) -> Iterator[Kube]:
    """The admin client; this module's namespaces are deleted (and gone) afterwards."""
    client = installed.kube()
    created: list[str] = []
    # Where a fleet's wiring lives (its Argo CD Applications, its Flux Kustomizations).
    for ns in ("argocd", "flux-system"):
        server_side_apply(client, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    yield client
    for ns in (n["metadata"]["name"] for n in client.raw("GET", "/api/v1/namespaces")["items"]):
        if ns.startswith("cp-ex-"):
            created.append(ns)
            client.raw("DELETE", f"/api/v1/namespaces/{ns}")

    def gone() -> bool:
        names = {n["metadata"]["name"] for n in client.raw("GET", "/api/v1/namespaces")["items"]}
        return not names & set(created)

    wait_until("this module's namespaces to go", gone, timeout=120)
    print(f"\nobjects applied server-side (dry-run, Argo CD waves, Flux): {dict(APPLIED)}, total {sum(APPLIED.values())}")


def test_the_examples_apply_in_a_namespace_of_their_own(kube: Kube, tmp_path: Path) -> None:
    render_tree(PROJECT / "examples", tmp_path / "out")
    objs = moved(tree_objects(tmp_path / "out"), "inference", "cp-ex-examples")
    assert sum(o["kind"] == "Pod" for o in objs) == 12
    apply_as_gitops(kube, objs, "examples")
    pods = kube.raw("GET", "/api/v1/namespaces/cp-ex-examples/pods")["items"]
    assert len(pods) == 12 and all(p["spec"].get("schedulingGates") for p in pods)
    managers = {m["manager"] for p in pods for m in p["metadata"]["managedFields"]}
    assert {ARGOCD_MANAGER, FLUX_MANAGER} <= managers


@pytest.mark.parametrize("cluster", ["prod-kai", "staging-volcano"])
def test_each_fleet_cluster_applies(kube: Kube, tmp_path: Path, cluster: str) -> None:
    render_tree(PROJECT / "examples-fleet", tmp_path / "out")
    objs = moved(tree_objects(tmp_path / "out" / cluster), "inference", f"cp-ex-{cluster}")
    kinds = Counter(o["kind"] for o in objs)
    assert kinds["PodCliqueSet"] >= 1 and kinds["Pod"] >= 2, kinds
    apply_as_gitops(kube, objs, f"examples-fleet/{cluster}")
    pods = kube.raw("GET", f"/api/v1/namespaces/cp-ex-{cluster}/pods")["items"]
    assert len(pods) == kinds["Pod"]


def test_every_grove_sample_applies(kube: Kube, tmp_path: Path) -> None:
    source = tmp_path / "samples"
    shutil.copytree(SAMPLES, source)
    render_tree(source, tmp_path / "out")
    objs = moved(tree_objects(tmp_path / "out"), "default", "cp-ex-samples")
    objs = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "cp-ex-samples"}}, *objs]
    kinds = Counter(o["kind"] for o in objs)
    assert kinds["PodCliqueSet"] == 11 and kinds["Pod"] > 100, kinds
    apply_as_gitops(kube, objs, "samples")
    pods = kube.raw("GET", "/api/v1/namespaces/cp-ex-samples/pods")["items"]
    assert len(pods) == kinds["Pod"]


def _wrapper(tmp: Path, resources: list[Path], components: list[Path], namespace: str | None = None) -> list[Obj]:
    (tmp / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        + (f"namespace: {namespace}\n" if namespace else "")
        + "resources:\n" + "".join(f"  - {os.path.relpath(r, tmp)}\n" for r in resources)
        + ("components:\n" + "".join(f"  - {os.path.relpath(c, tmp)}\n" for c in components) if components else "")
    )
    return kustomize(tmp)


#: Flux's GitRepository kind has no CRD in ../shared/crds: a stand-in (any spec) serves it here so
#: the flux overlay's objects are applied all the same (its Kustomizations are judged by Flux's CRD).
GITREPOSITORY_CRD: Obj = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "gitrepositories.source.toolkit.fluxcd.io"},
    "spec": {"group": "source.toolkit.fluxcd.io", "scope": "Namespaced",
             "names": {"kind": "GitRepository", "plural": "gitrepositories", "singular": "gitrepository", "listKind": "GitRepositoryList"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]},
}


def test_every_overlay_and_component_applies(kube: Kube, tmp_path: Path) -> None:
    """Every kustomization under overlays/ on its own (the tools' wiring, the controller, the CRDs,
    the scalers' RBAC, the gate-lifter's policies), and every gate-lifter component (each backend,
    claims) on the cluster-wide overlay and on the namespaced one."""
    apply_all(kube, [GITREPOSITORY_CRD])
    wait_until("the GitRepository stand-in", functools.partial(crd_established, kube, GITREPOSITORY_CRD["metadata"]["name"]))
    for ns in ("grove-gitops", "inference", "cp-ex-overlays"):
        server_side_apply(kube, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    gate_lifter = OVERLAYS / "gate-lifter"
    standalone = sorted(p.parent for p in OVERLAYS.rglob("kustomization.yaml")
                        if "kind: Component" not in p.read_text() and p.parent not in (gate_lifter / "namespaced",))
    components = sorted(p.parent for p in OVERLAYS.rglob("kustomization.yaml") if "kind: Component" in p.read_text())
    assert {gate_lifter / "backends" / "kai-scheduler", gate_lifter / "claims"} <= set(components), components
    assert OVERLAYS / "argocd" in standalone and OVERLAYS / "flux" in standalone
    count = 0
    for directory in standalone:
        objs = kustomize(directory)
        assert objs, directory
        apply_all(kube, objs)
        count += len(objs)
    for i, component in enumerate(components):
        wide = tmp_path / f"wide-{i}"
        wide.mkdir()
        objs = _wrapper(wide, [gate_lifter], [component])
        apply_all(kube, objs)
        narrow = tmp_path / f"narrow-{i}"
        narrow.mkdir()
        namespaced = _wrapper(narrow, [gate_lifter / "namespaced"], [component], namespace="cp-ex-overlays")
        apply_all(kube, namespaced)
        count += len(objs) + len(namespaced)
    APPLIED["overlays"] += count
    # Back to the session's install (the cluster-wide overlay with the tier's components): the
    # components applied above replaced its rules, which later modules' agents need.
    restore = tmp_path / "restore"
    restore.mkdir()
    apply_all(kube, _wrapper(restore, [gate_lifter], [gate_lifter / c for c in COMPONENTS]))
    # The cluster-wide agent's binding still points at its own ServiceAccount (issue 32.7).
    binding = kube.raw("GET", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/grove-gitops-gate-lifter")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "grove-gitops-gate-lifter", "namespace": "grove-gitops"}]
