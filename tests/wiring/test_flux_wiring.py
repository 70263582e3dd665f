"""``overlays/flux``: Kustomizations that prune, never force, never wait, check the gang objects'
health with expressions that cannot deadlock, ignore KAI's runtime fields, and build."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.schemas import CRDRegistry

from .helpers import FLUX, GANG_KINDS, GITOPS_KINDS, PROJECT, kubectl, load_docs, load_one, rendered_objects

KUSTOMIZATIONS = ["kustomization-prereqs.yaml", "kustomization-shard.yaml"]
KAI_RUNTIME_PATHS = [
    "/spec/markUnschedulable",
    "/spec/schedulingBackoff",
    "/spec/queue",
    "/metadata/labels/kai.scheduler~1node-pool",
    "/metadata/labels/kai.scheduler~1queue",
]


def flux_kustomization(name: str) -> dict[str, Any]:
    doc = load_one(FLUX / name)
    assert (doc["apiVersion"], doc["kind"]) == ("kustomize.toolkit.fluxcd.io/v1", "Kustomization")
    return doc


def group_of(api_version: str) -> str:
    return api_version.rpartition("/")[0]


@pytest.mark.parametrize("name", KUSTOMIZATIONS)
def test_prune_true_force_false_never_wait(name: str) -> None:
    spec = flux_kustomization(name)["spec"]
    assert spec["prune"] is True
    assert spec["force"] is False
    assert spec.get("wait", False) is False
    assert spec["sourceRef"] == {"kind": "GitRepository", "name": "grove-rendered"}


def test_no_wait_or_force_anywhere_in_the_overlay() -> None:
    for path in sorted(FLUX.glob("*.yaml")):
        for doc in load_docs(path):
            text = yaml.safe_dump(doc)
            assert not re.search(r"^\s*wait: true$", text, re.MULTILINE), path.name
            assert not re.search(r"^\s*force: true$", text, re.MULTILINE), path.name
            assert "kustomize.toolkit.fluxcd.io/force" not in text, path.name


def crds_documents() -> tuple[dict[str, Any], dict[str, Any]]:
    docs = load_docs(FLUX / "kustomization-crds.yaml")
    source = next(d for d in docs if d["kind"] == "GitRepository")
    kustomization = next(d for d in docs if d["kind"] == "Kustomization")
    return source, kustomization


def test_shard_depends_on_prereqs_which_depend_on_the_crds() -> None:
    prereqs = flux_kustomization("kustomization-prereqs.yaml")
    shard = flux_kustomization("kustomization-shard.yaml")
    _, crds = crds_documents()
    assert prereqs["spec"]["path"] == "./_cluster"
    assert shard["spec"]["dependsOn"] == [{"name": prereqs["metadata"]["name"]}]
    assert prereqs["spec"]["dependsOn"] == [{"name": crds["metadata"]["name"]}]
    assert "dependsOn" not in crds["spec"]


def test_crds_kustomization_waits_for_the_crds_and_never_prunes() -> None:
    """CRDs before workloads: Ready once the three gitops.grove.io CRDs are Established; never
    pruned (that would delete every workload's record and, by ownerReference, the agent's pods)."""
    source, crds = crds_documents()
    spec = crds["spec"]
    assert spec["prune"] is False and spec["force"] is False and spec.get("wait", False) is False
    assert spec["sourceRef"] == {"kind": "GitRepository", "name": source["metadata"]["name"]}
    assert spec["path"] == "./overlays/crds"
    assert (PROJECT / spec["path"] / "kustomization.yaml").is_file()
    names = {d["metadata"]["name"] for d in yaml.safe_load_all(
        "\n---\n".join(p.read_text() for p in sorted((PROJECT / "overlays" / "crds").glob("gitops.grove.io_*.yaml")))
    ) if d}
    assert {(c["apiVersion"], c["kind"], c["name"]) for c in spec["healthChecks"]} == {
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition", n) for n in names
    }
    assert "!/overlays/crds/" in source["spec"]["ignore"]


GITOPS_GROUP = "gitops.grove.io"


def test_health_check_expressions_cover_every_gang_kind_and_cannot_deadlock() -> None:
    """Gang kinds: Current once the object exists; never a reference to `status`, which may not
    exist (yet)."""
    by_file = {name: flux_kustomization(name)["spec"]["healthCheckExprs"] for name in KUSTOMIZATIONS}
    shard = {(group_of(e["apiVersion"]), e["kind"]) for e in by_file["kustomization-shard.yaml"]}
    prereqs = {(group_of(e["apiVersion"]), e["kind"]) for e in by_file["kustomization-prereqs.yaml"]}
    assert shard == {(g, k) for g, k, namespaced in GANG_KINDS + GITOPS_KINDS if namespaced}
    assert prereqs == {(g, k) for g, k, namespaced in GANG_KINDS if not namespaced}
    for exprs in by_file.values():
        # Flux rejects two entries for one GroupKind.
        assert len({(group_of(e["apiVersion"]), e["kind"]) for e in exprs}) == len(exprs)
        for entry in exprs:
            if group_of(entry["apiVersion"]) == GITOPS_GROUP:
                continue
            assert set(entry) <= {"apiVersion", "kind", "current", "inProgress", "failed"}
            assert entry["current"] == "true"
            assert entry["inProgress"] == "has(metadata.deletionTimestamp)"
            assert "failed" not in entry
            for expression in (entry["current"], entry["inProgress"]):
                assert not re.search(r"\bstatus\b", expression)


def test_health_checks_name_rendered_gang_objects(rendered_examples: Path) -> None:
    """The example shard's health checks point at objects the renderer writes for that shard."""
    objects = rendered_objects(rendered_examples)
    for name in KUSTOMIZATIONS:
        spec = flux_kustomization(name)["spec"]
        shard_dir = spec["path"].removeprefix("./")
        in_shard = {
            (group_of(o["apiVersion"]), o["kind"], o["metadata"]["name"], o["metadata"].get("namespace"))
            for rel, o in objects.items()
            if rel.rpartition("/")[0] == shard_dir
        }
        gang_kinds = {(g, k) for g, k, _ in GANG_KINDS}
        assert spec["healthChecks"]
        for check in spec["healthChecks"]:
            key = (group_of(check["apiVersion"]), check["kind"])
            assert key in gang_kinds, f"{name}: health checks are for gang/topology objects, not {key}"
            assert (*key, check["name"], check.get("namespace")) in in_shard, f"{name}: {check} is not rendered"
        kinds = {check["kind"] for check in spec["healthChecks"]}
        assert "Pod" not in kinds, "gated Pods stay InProgress until the lifter acts"


def test_shard_ignores_kai_runtime_fields_only_on_kai_podgroups() -> None:
    spec = flux_kustomization("kustomization-shard.yaml")["spec"]
    (rule,) = spec["ignore"]
    assert rule["paths"] == KAI_RUNTIME_PATHS
    assert re.fullmatch(rule["target"]["group"], "scheduling.run.ai")
    assert not re.fullmatch(rule["target"]["group"], "schedulingxrunxai"), "dots must be escaped"
    assert rule["target"]["kind"] == "PodGroup"
    assert "/spec/schedulingGates" not in rule["paths"], "Pods are protected by ssa: IfNotPresent"


def test_rendered_pods_carry_if_not_present(rendered_examples: Path) -> None:
    """The other half of the Flux contract: every rendered Pod is applied only if absent."""
    pods = [o for o in rendered_objects(rendered_examples).values() if o["kind"] == "Pod"]
    assert pods
    for pod in pods:
        assert pod["metadata"]["annotations"]["kustomize.toolkit.fluxcd.io/ssa"] == "IfNotPresent"
        assert "kustomize.toolkit.fluxcd.io/force" not in pod["metadata"]["annotations"]


def test_git_repository() -> None:
    repo = load_one(FLUX / "gitrepository.yaml")
    assert (repo["apiVersion"], repo["kind"]) == ("source.toolkit.fluxcd.io/v1", "GitRepository")
    assert repo["metadata"]["name"] == "grove-rendered"
    assert repo["spec"]["ref"]["branch"]


def test_kubectl_kustomize_builds_the_overlay() -> None:
    proc = subprocess.run(
        [kubectl(), "kustomize", str(FLUX)], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    docs = [d for d in yaml.safe_load_all(proc.stdout) if d is not None]
    assert sorted((d["kind"], d["metadata"]["name"]) for d in docs) == [
        ("GitRepository", "grove-gitops"),
        ("GitRepository", "grove-rendered"),
        ("Kustomization", "grove-gitops-crds"),
        ("Kustomization", "grove-wiring"),
    ]
    assert all(d["metadata"]["namespace"] == "flux-system" for d in docs)
    # Issue 34 §13: the overlay is not hard-wired to the example workload; the shards come from the
    # generated `_flux/` folder (one Kustomization per shard, health checks of its own gangs).
    assert "llama-disagg" not in proc.stdout and "gpu-fabric" not in proc.stdout
    wiring = next(d for d in docs if d["metadata"]["name"] == "grove-wiring")
    assert wiring["spec"]["path"] == "./_flux"
    assert wiring["spec"]["sourceRef"] == {"kind": "GitRepository", "name": "grove-rendered"}
    assert wiring["spec"]["prune"] is True and wiring["spec"]["force"] is False


def test_every_overlay_file_is_used() -> None:
    """Every file is built, except the two hand-written examples for a render without `wiring:`,
    which say so and which the README of the overlay explains."""
    kustomization = load_one(FLUX / "kustomization.yaml")
    examples = set(KUSTOMIZATIONS)
    assert set(kustomization["resources"]) == {p.name for p in FLUX.glob("*.yaml")} - {"kustomization.yaml"} - examples
    readme = (FLUX / "README.md").read_text(encoding="utf-8")
    for name in examples:
        assert (FLUX / name).read_text(encoding="utf-8").startswith("# HAND-WRITTEN EXAMPLE, not in kustomization.yaml"), name
        assert f"`{name}` | hand-written example, **not** in the build" in readme, name


def _gitops_exprs() -> dict[str, dict[str, str]]:
    exprs = flux_kustomization("kustomization-shard.yaml")["spec"]["healthCheckExprs"]
    return {e["kind"]: e for e in exprs if group_of(e["apiVersion"]) == GITOPS_GROUP}


def test_gitops_kinds_report_the_workload() -> None:
    """grove-gitops' own kinds: InProgress until the agent observed the generation (or while being
    deleted, or scaling in), Failed on ScaleBlocked, Current once the counts meet spec.replicas:
    groups by available replicas, cliques by ready ones, the PodCliqueSet by available ones."""
    exprs = _gitops_exprs()
    assert set(exprs) == {k for _, k, _ in GITOPS_KINDS}
    for kind, entry in exprs.items():
        assert entry["apiVersion"] == f"{GITOPS_GROUP}/v1alpha1"
        assert set(entry) == {"apiVersion", "kind", "inProgress", "failed", "current"}
        clauses = [c.strip() for c in entry["inProgress"].split("||")]
        assert clauses[:3] == [
            "has(metadata.deletionTimestamp)",
            "!has(status.observedGeneration)",
            "status.observedGeneration < metadata.generation",
        ], kind
        assert "c.type == 'ScaleBlocked' && c.status == 'True'" in entry["failed"]
        count = {"PodCliqueSet": "availableReplicas", "PodCliqueScalingGroup": "availableReplicas"}.get(kind, "readyReplicas")
        assert [c.strip() for c in entry["current"].split("&&")] == [
            f"status.?{count}.orValue(0) >= spec.replicas",
            "status.?updatedReplicas.orValue(0) >= spec.replicas",
        ], kind
        if kind != "PodCliqueSet":
            assert clauses[3:] == ["status.?replicas.orValue(0) > spec.replicas"], kind
        # Optional fields of status are read with `.?`, never directly (a missing field is an
        # evaluation error that leaves the check waiting until the timeout).
        for expression in (entry["failed"], entry["current"]):
            assert "status.?" in expression
            assert not re.search(r"status\.(?!\?)", expression), expression


def test_flux_kustomizations_validate_against_the_flux_crd() -> None:
    """kustomize.toolkit.fluxcd.io/v1 Kustomization's CRD (shared/crds/gitops): field names, the
    required `current`, types."""
    registry = CRDRegistry.from_dir(PROJECT.parent / "shared" / "crds" / "gitops")
    docs = [flux_kustomization(name) for name in KUSTOMIZATIONS] + [crds_documents()[1]]
    for doc in docs:
        doc["metadata"].setdefault("namespace", "flux-system")
        assert registry.validate(doc) == [], doc["metadata"]["name"]
    broken = flux_kustomization("kustomization-shard.yaml")
    broken["metadata"]["namespace"] = "flux-system"
    del broken["spec"]["healthCheckExprs"][-1]["current"]
    assert registry.validate(broken), "the CRD requires `current`"
