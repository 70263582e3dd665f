"""Day 2, render side (issue 13; docs/day2.md): what Git carries for the in-cluster agent.

- Every rendered (managed) Pod is protected from the GitOps tool's prune, per flavour: Argo CD
  ``Prune=false`` + ``IgnoreExtraneous``, Flux ``prune: disabled``; the agent retires old pods.
- Every PodGang carries ``gitops.grove.io/day2``: the PodCliqueSet facts the agent needs.
- The shipped Argo CD / Flux wiring re-creates a pod the agent deleted (``selfHeal``, interval),
  and the annotations do not change what Argo CD's health checks report.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from grove_gitops.fields.k8snames import parse_go_duration
from grove_gitops.output.layout import build_tree
from grove_gitops.render import render_source
from tests.schemas import CRDRegistry, validate_any
from tests.support import PROJECT, pcs_yaml, write_source
from tests.wiring.helpers import ARGOCD, FLUX, health_script, load_docs, load_one, run_health

DAY2 = "gitops.grove.io/day2"
SYNC_OPTIONS = "argocd.argoproj.io/sync-options"
COMPARE_OPTIONS = "argocd.argoproj.io/compare-options"
FLUX_PRUNE = "kustomize.toolkit.fluxcd.io/prune"
PRUNE_KEYS = (SYNC_OPTIONS, COMPARE_OPTIONS, FLUX_PRUNE)


def _tree_objects(tmp_path: Path, files: dict[str, str]) -> dict[str, dict[str, Any]]:
    """``{output path: object}`` of the rendered tree (annotations are added at output time)."""
    tree = build_tree(render_source(write_source(tmp_path / "src", files)))
    return {
        rel: yaml.safe_load(data)
        for rel, data in tree.files.items()
        if rel.endswith(".yaml") and not rel.endswith("kustomization.yaml")
    }


def _of_kind(objects: dict[str, dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objects.values() if o.get("kind") == kind]


def _config(flavour: str) -> str:
    return f"apiVersion: gitops.grove.io/v1alpha1\nkind: RenderConfiguration\ngitops: {flavour}\n"


def argocd_has_option(obj: dict[str, Any], key: str, option: str) -> bool:
    """gitops-engine's ``HasAnnotationOption``: split on ``,``, trim, exact (case-sensitive) match."""
    value = (obj["metadata"].get("annotations") or {}).get(key, "")
    return option in [item.strip() for item in value.split(",") if item.strip()]


def flux_prune_disabled(obj: dict[str, Any]) -> bool:
    """fluxcd/pkg ``ssa/utils.AnyInMetadata`` with kustomize-controller's prune exclusion."""
    value = (obj["metadata"].get("annotations") or {}).get(FLUX_PRUNE, "")
    return value != "" and value.lower() == "disabled"


# --- prune protection of Pods ------------------------------------------------------------


@pytest.mark.parametrize(
    ("flavour", "argocd", "flux"), [("argocd", True, False), ("flux", False, True), ("both", True, True)]
)
def test_every_rendered_pod_is_protected_from_prune_per_flavour(
    tmp_path: Path, flavour: str, argocd: bool, flux: bool
) -> None:
    objects = _tree_objects(tmp_path, {"a.yaml": pcs_yaml("alpha"), "r.yaml": _config(flavour)})
    pods = _of_kind(objects, "Pod")
    assert len(pods) == 3
    for pod in pods:
        annotations = pod["metadata"]["annotations"]
        assert argocd_has_option(pod, SYNC_OPTIONS, "Prune=false") is argocd
        assert argocd_has_option(pod, COMPARE_OPTIONS, "IgnoreExtraneous") is argocd
        assert flux_prune_disabled(pod) is flux
        if argocd:
            assert annotations[SYNC_OPTIONS] == "Prune=false"
            assert annotations[COMPARE_OPTIONS] == "IgnoreExtraneous"
        else:
            assert SYNC_OPTIONS not in annotations and COMPARE_OPTIONS not in annotations
        if flux:
            assert annotations[FLUX_PRUNE] == "disabled"  # lower case: older Flux compares exactly
        else:
            assert FLUX_PRUNE not in annotations
    # Only Pods: gangs, Services and RBAC keep normal pruning (removing a PodCliqueSet removes them).
    for rel, obj in objects.items():
        if obj["kind"] != "Pod":
            assert not set(PRUNE_KEYS) & set(obj["metadata"].get("annotations") or {}), rel


def test_user_options_on_the_clique_template_are_kept_and_prune_false_wins(tmp_path: Path) -> None:
    text = pcs_yaml("alpha")
    doc = yaml.safe_load(text)
    doc["spec"]["template"]["cliques"][0]["annotations"] = {
        SYNC_OPTIONS: " Validate=false , Prune=true",
        COMPARE_OPTIONS: "ServerSideDiff=false",
        FLUX_PRUNE: "enabled",
    }
    objects = _tree_objects(tmp_path, {"a.yaml": yaml.safe_dump(doc), "r.yaml": _config("both")})
    router = [p for p in _of_kind(objects, "Pod") if p["spec"]["hostname"].startswith("alpha-0-router")]
    assert len(router) == 1
    annotations = router[0]["metadata"]["annotations"]
    assert annotations[SYNC_OPTIONS] == "Validate=false,Prune=false"
    assert annotations[COMPARE_OPTIONS] == "ServerSideDiff=false,IgnoreExtraneous"
    assert annotations[FLUX_PRUNE] == "disabled"


def test_a_passed_through_pod_keeps_normal_pruning(tmp_path: Path) -> None:
    """The agent deletes only managed pods, so an unmanaged pod protected from prune would leak."""
    own = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "debug", "namespace": "ml"},
        "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]},
    }
    objects = _tree_objects(
        tmp_path, {"a.yaml": pcs_yaml("alpha"), "debug.yaml": yaml.safe_dump(own), "r.yaml": _config("both")}
    )
    debug = [o for o in _of_kind(objects, "Pod") if o["metadata"]["name"] == "debug"]
    assert len(debug) == 1
    assert not set(PRUNE_KEYS) & set(debug[0]["metadata"].get("annotations") or {})


# --- gitops.grove.io/day2 on PodGangs ---------------------------------------------------------

EXAMPLE_DAY2 = {
    "podCliqueSet": "llama-disagg",
    "replicaIndex": 0,
    "updateStrategy": "RollingRecreate",
    "terminationDelaySeconds": 1800,
    "cliques": [{"name": "llama-disagg-0-router", "minAvailable": 1, "replicas": 2}],
    "scalingGroups": [
        # autoscaled (scaleConfig): replicas is the floor, the live count is on the scale target
        {"name": "llama-disagg-0-prefill", "minAvailable": 1, "replicas": 2, "cliques": ["pleader", "pworker"],
         "scaleTarget": True},
        {"name": "llama-disagg-0-decode", "minAvailable": 1, "replicas": 1, "cliques": ["dleader", "dworker"]},
    ],
}


def _day2(gang: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    raw = gang["metadata"]["annotations"][DAY2]
    assert isinstance(raw, str)
    return raw, json.loads(raw)


def test_example_podgangs_carry_the_day2_annotation() -> None:
    result = render_source(PROJECT / "examples")
    gangs = {o.obj["metadata"]["name"]: o.obj for o in result.objects if o.obj["kind"] == "PodGang"}
    assert set(gangs) == {"llama-disagg-0", "llama-disagg-0-prefill-0"}
    for gang in gangs.values():
        raw, value = _day2(gang)
        assert value == EXAMPLE_DAY2
        # Compact JSON, sorted keys: the contract's exact bytes.
        assert raw == json.dumps(EXAMPLE_DAY2, sort_keys=True, separators=(",", ":"))


def _scaling_pcs(**spec: Any) -> str:
    """Two PCS replicas; a standalone clique, two scaling groups (one with scaled gangs)."""

    def clique(name: str, replicas: int, min_available: int | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {
            "roleName": name,
            "replicas": replicas,
            "podSpec": {"containers": [{"name": "c", "image": "nginx:1.27"}]},
        }
        if min_available is not None:
            body["minAvailable"] = min_available
        return {"name": name, "spec": body}

    template: dict[str, Any] = {
        "cliques": [
            clique("router", 3, 2),
            clique("fe", 1),
            clique("pleader", 1),
            clique("pworker", 2, 1),
            clique("dleader", 1),
        ],
        "podCliqueScalingGroups": [
            {"name": "prefill", "cliqueNames": ["pleader", "pworker"], "replicas": 3, "minAvailable": 1},
            {"name": "decode", "cliqueNames": ["dleader"]},
        ],
    }
    template.update(spec.pop("template", {}))
    doc = {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueSet",
        "metadata": {"name": "svc", "namespace": "ml"},
        "spec": {"replicas": 2, "template": template, **spec},
    }
    return yaml.safe_dump(doc, sort_keys=False)


def test_day2_with_scaling_groups_ondelete_and_explicit_termination_delay(tmp_path: Path) -> None:
    text = _scaling_pcs(updateStrategy={"type": "OnDelete"}, template={"terminationDelay": "1h30m"})
    result = render_source(write_source(tmp_path / "src", {"svc.yaml": text}))
    gangs = {o.obj["metadata"]["name"]: o.obj for o in result.objects if o.obj["kind"] == "PodGang"}
    # Base gang per replica plus the two scaled prefill gangs (replicas 3, minAvailable 1).
    assert set(gangs) == {f"svc-{i}{s}" for i in (0, 1) for s in ("", "-prefill-0", "-prefill-1")}
    for name, gang in gangs.items():
        replica = int(name.split("-")[1])
        _, value = _day2(gang)
        assert value == {
            "podCliqueSet": "svc",
            "replicaIndex": replica,
            "updateStrategy": "OnDelete",
            "terminationDelaySeconds": 5400,
            "cliques": [
                {"name": f"svc-{replica}-router", "minAvailable": 2, "replicas": 3},
                # minAvailable defaults to replicas as written (Grove's webhook)
                {"name": f"svc-{replica}-fe", "minAvailable": 1, "replicas": 1},
            ],
            "scalingGroups": [
                {"name": f"svc-{replica}-prefill", "minAvailable": 1, "replicas": 3, "cliques": ["pleader", "pworker"]},
                # replicas and minAvailable default to 1 (CRD defaults)
                {"name": f"svc-{replica}-decode", "minAvailable": 1, "replicas": 1, "cliques": ["dleader"]},
            ],
        }
    # The same annotation, byte for byte, on every gang of one replica.
    for replica in (0, 1):
        values = {g["metadata"]["annotations"][DAY2] for n, g in gangs.items() if n.startswith(f"svc-{replica}")}
        assert len(values) == 1
    # The PodClique names the agent derives from it exist as pod labels.
    clique_labels = {
        o.obj["metadata"]["labels"]["grove.io/podclique"] for o in result.objects if o.obj["kind"] == "Pod"
    }
    assert {"svc-0-router", "svc-0-fe", "svc-0-prefill-2-pworker", "svc-1-decode-0-dleader"} <= clique_labels


@pytest.mark.parametrize(
    ("spec", "strategy", "seconds"),
    [
        ({}, "RollingRecreate", 14400),  # Grove's defaults: RollingRecreate, terminationDelay 4h
        ({"updateStrategy": {}}, "RollingRecreate", 14400),
        (
            {"updateStrategy": {"type": "RollingRecreate"}, "template": {"terminationDelay": "90s"}},
            "RollingRecreate",
            90,
        ),
        ({"template": {"terminationDelay": "1500ms"}}, "RollingRecreate", 2),  # rounded up, never earlier
        ({"template": {"terminationDelay": "2h0m0s"}}, "RollingRecreate", 7200),
    ],
)
def test_day2_defaults_and_duration_parsing(tmp_path: Path, spec: dict[str, Any], strategy: str, seconds: int) -> None:
    result = render_source(write_source(tmp_path / "src", {"svc.yaml": _scaling_pcs(**spec)}))
    gang = next(o.obj for o in result.objects if o.obj["kind"] == "PodGang")
    _, value = _day2(gang)
    assert value["updateStrategy"] == strategy
    assert value["terminationDelaySeconds"] == seconds


def test_day2_annotation_does_not_rename_pods(tmp_path: Path) -> None:
    """Pod names hash the pod spec only: a strategy or delay change must not roll any pod."""

    def pods(sub: str, **spec: Any) -> set[str]:
        result = render_source(write_source(tmp_path / sub, {"svc.yaml": _scaling_pcs(**spec)}))
        return {o.obj["metadata"]["name"] for o in result.objects if o.obj["kind"] == "Pod"}

    assert pods("a") == pods("b", updateStrategy={"type": "OnDelete"}, template={"terminationDelay": "5m"})


@pytest.mark.parametrize("version", ["1.35", "1.36", "1.37"])
def test_rendered_day2_objects_validate(tmp_path: Path, crds: CRDRegistry, version: str) -> None:
    text = _scaling_pcs(updateStrategy={"type": "OnDelete"}, template={"terminationDelay": "45m"})
    objects = _tree_objects(tmp_path, {"svc.yaml": text, "r.yaml": _config("both")})
    problems: list[str] = []
    for obj in objects.values():
        problems += validate_any(obj, crds, version)
    assert problems == []
    assert len(_of_kind(objects, "PodGang")) == 6


# --- the shipped Argo CD / Flux wiring re-creates what the agent deletes ----------------------


def _applications() -> list[tuple[str, dict[str, Any]]]:
    app = load_one(ARGOCD / "application.yaml")
    appset = load_one(ARGOCD / "applicationset.yaml")
    return [("application.yaml", app["spec"]), ("applicationset.yaml", appset["spec"]["template"]["spec"])]


@pytest.mark.parametrize(("name", "spec"), _applications())
def test_argocd_applications_self_heal(name: str, spec: dict[str, Any]) -> None:
    """The agent deletes Failed pods and whole gangs; selfHeal makes Argo CD re-create them from Git."""
    automated = spec["syncPolicy"]["automated"]
    assert automated["selfHeal"] is True, name
    assert automated.get("enabled", True) is True, name
    # ignoreDifferences on the gate only counts at sync time with RespectIgnoreDifferences.
    assert "RespectIgnoreDifferences=true" in spec["syncPolicy"]["syncOptions"], name


def _flux_kustomizations() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for path in sorted(FLUX.glob("kustomization-*.yaml")):
        for doc in load_docs(path):
            if doc.get("kind") == "Kustomization" and doc["apiVersion"].startswith("kustomize.toolkit.fluxcd.io/"):
                out.append((path.name, doc))
    return out


def test_flux_wiring_has_kustomizations() -> None:
    assert {name for name, _ in _flux_kustomizations()} == {
        "kustomization-crds.yaml", "kustomization-prereqs.yaml", "kustomization-shard.yaml", "kustomization-wiring.yaml"
    }


@pytest.mark.parametrize(("name", "doc"), _flux_kustomizations())
def test_flux_kustomizations_reconcile_periodically(name: str, doc: dict[str, Any]) -> None:
    """Flux re-creates a deleted pod only on its next reconcile: an interval is required."""
    spec = doc["spec"]
    annotations = doc["metadata"].get("annotations") or {}
    assert annotations.get("kustomize.toolkit.fluxcd.io/reconcile") != "disabled", name
    assert spec.get("suspend", False) is False, name
    seconds = parse_go_duration(str(spec["interval"]))
    assert seconds is not None and 0 < seconds <= 3600, (name, spec["interval"])


# --- Argo CD health is not changed by the day-2 metadata -------------------------------------


def test_no_pod_health_override_is_shipped() -> None:
    """Pod health stays Argo CD's built-in check, which reads status only, never annotations."""
    data = load_one(ARGOCD / "argocd-cm-health.yaml")["data"]
    assert not [key for key in data if key.endswith("_Pod") or key.endswith(".Pod")]
    assert not list((ARGOCD / "health").glob("*_Pod.lua"))


def test_podgang_health_ignores_day2_annotation_and_agent_conditions() -> None:
    script = health_script("scheduler.grove.io", "PodGang")
    meta = {"name": "llama-disagg-0", "namespace": "inference", "uid": "1f9c", "generation": 1}
    spec = {"podgroups": [{"name": "llama-disagg-0-router", "minReplicas": 1, "podReferences": []}]}
    base = {"apiVersion": "scheduler.grove.io/v1alpha1", "kind": "PodGang", "metadata": meta, "spec": spec}
    plain = run_health(script, base)
    annotated = run_health(
        script,
        {**base, "metadata": {**meta, "annotations": {DAY2: json.dumps(EXAMPLE_DAY2, separators=(",", ":"))}}},
    )
    assert plain == annotated == {"status": "Healthy", "message": "PodGang exists"}

    def cond(ctype: str, status: str, reason: str, message: str = "") -> dict[str, Any]:
        return {
            "type": ctype,
            "status": status,
            "reason": reason,
            "message": message,
            "lastTransitionTime": "2026-11-24T10:00:00Z",
        }

    rolling = {
        "phase": "Running",
        "conditions": [
            cond("Initialized", "True", "PodGangPodsCreated"),
            cond("RollingUpdate", "True", "RollingReplica", "rolling replica 0, step 3 of 7"),
            cond("MinAvailableBreached", "False", "SufficientAvailable"),
        ],
    }
    assert run_health(script, {**base, "status": rolling}) == {"status": "Healthy", "message": "PodGang phase Running"}
    terminated = {
        "phase": "Pending",
        "conditions": [
            cond("Initialized", "False", "GangTerminated", "gang terminated after terminationDelay"),
            cond("MinAvailableBreached", "True", "InsufficientAvailable"),
        ],
    }
    result = run_health(script, {**base, "status": terminated})
    assert result["status"] == "Healthy"  # Degraded only on a scheduler's failure signal


# --- the docs say what the render does ---------------------------------------------------------


def test_day2_doc_names_the_rendered_annotations_and_readme_links_it() -> None:
    from grove_gitops.expand import labels
    from grove_gitops.output import gitopsmeta

    doc = (PROJECT / "docs" / "day2.md").read_text()
    for text in (
        gitopsmeta.ARGOCD_SYNC_OPTIONS,
        gitopsmeta.ARGOCD_NO_PRUNE,
        gitopsmeta.ARGOCD_COMPARE_OPTIONS,
        gitopsmeta.ARGOCD_IGNORE_EXTRANEOUS,
        gitopsmeta.FLUX_PRUNE,
        gitopsmeta.FLUX_PRUNE_DISABLED,
        labels.DAY2,
        "selfHeal: true",
        "RespectIgnoreDifferences=true",
        "interval",
    ):
        assert text in doc, text
    # The example in the doc is the annotation the example renders (modulo line wrapping).
    assert "".join(doc.split("```json")[1].split("```")[0].split()) == json.dumps(
        EXAMPLE_DAY2, sort_keys=True, separators=(",", ":")
    )
    # README's Day 2 section moved to docs/agent.md (issue 34 §12); README links the agent's page.
    agent = (PROJECT / "docs" / "agent.md").read_text()
    assert "## Day 2" in agent and "(day2.md)" in agent
    assert "(docs/agent.md)" in (PROJECT / "README.md").read_text()


def test_memoised_option_merging_is_the_function_for_each_value() -> None:
    """``_with_option`` is memoised (issue 35.4): values that differ, one after another and
    again, each get their own result, the one the plain function gives."""
    from grove_gitops.output.gitopsmeta import _with_option

    plain = _with_option.__wrapped__
    values = [None, "", "Prune=true", "Prune=true, Validate=false", "Validate=false,Prune=false", "x,,y"]
    for value in [*values, *reversed(values)]:
        for option, drop in (("Prune=false", "Prune="), ("IgnoreExtraneous", None)):
            assert _with_option(value, option, drop) == plain(value, option, drop)
    assert _with_option("Prune=true, Validate=false", "Prune=false", "Prune=") == "Validate=false,Prune=false"
