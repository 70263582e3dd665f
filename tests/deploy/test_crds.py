"""``overlays/crds``: grove-gitops' own CRDs (gitops.grove.io) are what the contract of issue 23
says, are accepted by kube-apiserver (Kubernetes' CRD schema plus the structural rules), their
scale subresources and printer columns point at real fields, their CEL rules refuse exactly the
scale writes docs/autoscaling.md says they refuse, and the agent's install carries them."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.schemas import CRDRegistry, builtin_errors

from .crdcheck import TransitionRule, resolve_path, structural_errors
from .helpers import CRDS, GATE_LIFTER, KUBE_VERSIONS, NAMESPACED, PROJECT, build, load_yaml

GROUP = "gitops.grove.io"
TARGET_KINDS = ("PodCliqueScalingGroup", "PodClique")
GROVE_CRDS = PROJECT.parent / "shared" / "crds" / "grove"

#: kind -> (plural, shortName)
NAMES = {
    "PodCliqueSet": ("podcliquesets", "gpcs"),
    "PodCliqueScalingGroup": ("podcliquescalinggroups", "gpcsg"),
    "PodClique": ("podcliques", "gpclq"),
}
RULES = [
    (
        "(oldSelf.hasValue() && self.replicas == oldSelf.value().replicas) || self.replicas >= self.minAvailable",
        "replicas must be greater than or equal to minAvailable",
    ),
    (
        "(oldSelf.hasValue() && self.replicas == oldSelf.value().replicas) || self.replicas >= self.minReplicas",
        "replicas must be greater than or equal to minReplicas (the floor rendered in Git); "
        "lower minReplicas in Git to scale further in",
    ),
    (
        "(oldSelf.hasValue() && self.replicas == oldSelf.value().replicas) || self.replicas <= self.maxReplicas",
        "replicas must be less than or equal to maxReplicas",
    ),
]
PCS_COLUMNS = [
    ("Replicas", "integer", ".spec.replicas"),
    ("Available", "integer", ".status.availableReplicas"),
    ("Updated", "integer", ".status.updatedReplicas"),
    ("Ready", "string", '.status.conditions[?(@.type=="Ready")].status'),
    ("Age", "date", ".metadata.creationTimestamp"),
]
TARGET_COLUMNS = [
    ("Desired", "integer", ".spec.replicas"),
    ("Current", "integer", ".status.replicas"),
    ("Ready", "integer", ".status.readyReplicas"),
    ("Updated", "integer", ".status.updatedReplicas"),
    ("Min", "integer", ".spec.minReplicas"),
    ("Max", "integer", ".spec.maxReplicas"),
    ("Age", "date", ".metadata.creationTimestamp"),
]


def _crds() -> dict[str, dict[str, Any]]:
    docs = [d for p in sorted(CRDS.glob("*.yaml")) if p.name != "kustomization.yaml" for d in load_yaml(p)]
    return {d["spec"]["names"]["kind"]: d for d in docs}


def _version(crd: dict[str, Any]) -> dict[str, Any]:
    (version,) = crd["spec"]["versions"]
    assert isinstance(version, dict)
    return version


def _schema(crd: dict[str, Any]) -> dict[str, Any]:
    schema: dict[str, Any] = _version(crd)["schema"]["openAPIV3Schema"]
    return schema


def _strip_descriptions(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _strip_descriptions(v) for k, v in node.items() if k != "description"}
    if isinstance(node, list):
        return [_strip_descriptions(v) for v in node]
    return node


@pytest.fixture(scope="module")
def registry() -> CRDRegistry:
    return CRDRegistry(_crds().values())


# -- names, versions, subresources ----------------------------------------------------------------
def test_three_namespaced_crds_in_our_group() -> None:
    crds = _crds()
    assert set(crds) == set(NAMES)
    for kind, crd in crds.items():
        plural, short = NAMES[kind]
        spec = crd["spec"]
        assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
        assert crd["metadata"]["name"] == f"{plural}.{GROUP}"
        assert spec["group"] == GROUP, "never grove.io: a Grove operator would reconcile those"
        assert spec["scope"] == "Namespaced"
        assert spec["names"] == {
            "kind": kind,
            "listKind": f"{kind}List",
            "plural": plural,
            "singular": kind.lower(),
            "shortNames": [short],
            "categories": ["grove-gitops"],
        }
        version = _version(crd)
        assert (version["name"], version["served"], version["storage"]) == ("v1alpha1", True, True)


def test_status_everywhere_scale_only_on_the_targets() -> None:
    for kind, crd in _crds().items():
        sub = _version(crd)["subresources"]
        assert sub["status"] == {}
        if kind in TARGET_KINDS:
            assert sub["scale"] == {
                "specReplicasPath": ".spec.replicas",
                "statusReplicasPath": ".status.replicas",
                "labelSelectorPath": ".status.selector",
            }
        else:
            assert "scale" not in sub, "PodCliqueSet replicas stay Git-owned in this release"


def test_scale_paths_exist_in_the_schema() -> None:
    """kube-apiserver reads these fields for GET /scale: replicas must be integers, the selector a
    string, spec under .spec and status under .status."""
    for kind in TARGET_KINDS:
        crd = _crds()[kind]
        schema, scale = _schema(crd), _version(crd)["subresources"]["scale"]
        assert scale["specReplicasPath"].startswith(".spec.")
        assert scale["statusReplicasPath"].startswith(".status.")
        for key, expected in (("specReplicasPath", "integer"), ("statusReplicasPath", "integer")):
            node = resolve_path(schema, scale[key])
            assert node is not None and node["type"] == expected and node["format"] == "int32", (kind, key)
        selector = resolve_path(schema, scale["labelSelectorPath"])
        assert selector is not None and selector["type"] == "string", kind


@pytest.mark.parametrize("kind", sorted(NAMES))
def test_printer_columns(kind: str) -> None:
    crd = _crds()[kind]
    columns = _version(crd)["additionalPrinterColumns"]
    expected = PCS_COLUMNS if kind == "PodCliqueSet" else TARGET_COLUMNS
    assert [(c["name"], c["type"], c["jsonPath"]) for c in columns] == expected
    schema = _schema(crd)
    for column in columns:
        node = resolve_path(schema, column["jsonPath"])
        assert node is not None, f"{kind}: column {column['name']} reads {column['jsonPath']}, not in the schema"
        want = {"integer": "integer", "string": "string", "date": "string"}[column["type"]]
        assert node["type"] == want, (kind, column)


def test_path_resolver_is_not_a_rubber_stamp() -> None:
    schema = _schema(_crds()["PodCliqueSet"])
    assert resolve_path(schema, ".spec.replica") is None
    assert resolve_path(schema, ".status.readyReplicas") is None
    assert resolve_path(schema, '.status.conditions[?(@.kind=="Ready")].status') is None
    assert resolve_path(schema, '.spec.replicas[?(@.type=="Ready")].status') is None


# -- schemas --------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", sorted(NAMES))
def test_schema_is_structural(kind: str) -> None:
    assert structural_errors(_schema(_crds()[kind])) == []


def test_structural_checker_catches_the_usual_mistakes() -> None:
    bad = {
        "type": "object",
        "properties": {
            "metadata": {"type": "object", "properties": {"labels": {"type": "object"}}},
            "spec": {
                "type": "object",
                "properties": {
                    "a": {"description": "no type"},
                    "b": {"type": "object"},
                    "c": {"type": "string", "anyOf": [{"type": "string"}]},
                    "d": {
                        "type": "array",
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["name"],
                        "items": {"type": "object", "properties": {"name": {"type": "string"}}},
                    },
                    "e": {"type": "object", "x-kubernetes-preserve-unknown-fields": False},
                },
            },
        },
    }
    errors = "\n".join(structural_errors(bad))
    for fragment in (
        ".metadata: only name and generateName",
        ".spec.a: type is required",
        ".spec.b: an object without properties",
        ".spec.c.anyOf[0]: type is not allowed",
        ".spec.d: map key name must be required",
        ".spec.e: x-kubernetes-preserve-unknown-fields must be true",
    ):
        assert fragment in errors, errors


@pytest.mark.parametrize("version", KUBE_VERSIONS)
def test_crds_are_valid_custom_resource_definitions(version: str) -> None:
    """Kubernetes' own OpenAPI schema of CustomResourceDefinition (kubernetes-validate)."""
    for crd in _crds().values():
        assert builtin_errors(crd, version) == []


def test_target_spec_and_status() -> None:
    for kind in TARGET_KINDS:
        schema = _schema(_crds()[kind])
        spec = schema["properties"]["spec"]
        fields = ["replicas", "minAvailable", "minReplicas", "maxReplicas"]
        assert sorted(spec["required"]) == sorted(fields)
        for name in fields:
            assert spec["properties"][name] == {**spec["properties"][name], "type": "integer", "format": "int32", "minimum": 0}
        assert set(spec["properties"]) == set(fields)
        status = schema["properties"]["status"]["properties"]
        assert set(status) == {
            "replicas",
            "readyReplicas",
            "updatedReplicas",
            "availableReplicas",
            "selector",
            "observedGeneration",
            "conditions",
        }
        assert status["observedGeneration"]["format"] == "int64"


def test_podcliqueset_spec_and_status() -> None:
    schema = _schema(_crds()["PodCliqueSet"])
    spec = schema["properties"]["spec"]
    assert set(spec["properties"]) == {"replicas", "rendererVersion", "scaleTargets", "source"}
    item = spec["properties"]["scaleTargets"]["items"]
    fields = {
        "kind",
        "name",
        "podCliqueSetReplica",
        "templateName",
        "minAvailable",
        "minReplicas",
        "maxReplicas",
        "initialReplicas",
        "selector",
    }
    assert set(item["properties"]) == fields == set(item["required"])
    assert item["properties"]["kind"]["enum"] == list(TARGET_KINDS)
    source = spec["properties"]["source"]
    assert source["items"] == {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    status = schema["properties"]["status"]["properties"]
    assert set(status) == {"observedGeneration", "replicas", "availableReplicas", "updatedReplicas", "conditions"}


def test_conditions_follow_metav1_condition() -> None:
    """The items are metav1.Condition's generated schema (as in Grove's CRDs), keyed by type."""
    grove = yaml.safe_load((GROVE_CRDS / "grove.io_podcliquescalinggroups.yaml").read_text())
    grove_items = grove["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"][
        "conditions"
    ]["items"]
    for kind, crd in _crds().items():
        conditions = _schema(crd)["properties"]["status"]["properties"]["conditions"]
        assert _strip_descriptions(conditions["items"]) == _strip_descriptions(grove_items), kind
        assert conditions["x-kubernetes-list-type"] == "map"
        assert conditions["x-kubernetes-list-map-keys"] == ["type"]


# -- objects the contract describes validate ------------------------------------------------------
def pcs_object() -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1alpha1",
        "kind": "PodCliqueSet",
        "metadata": {
            "name": "llama",
            "namespace": "inference",
            "labels": {
                "app.kubernetes.io/managed-by": "grove-gitops",
                "app.kubernetes.io/part-of": "llama",
                "app.kubernetes.io/component": "podcliqueset",
            },
        },
        "spec": {
            "replicas": 1,
            "rendererVersion": "0.1.0",
            "scaleTargets": [
                {
                    "kind": "PodCliqueScalingGroup",
                    "name": "llama-0-prefill",
                    "podCliqueSetReplica": 0,
                    "templateName": "prefill",
                    "minAvailable": 1,
                    "minReplicas": 1,
                    "maxReplicas": 4,
                    "initialReplicas": 2,
                    "selector": "app.kubernetes.io/managed-by=grove-gitops,app.kubernetes.io/part-of=llama,"
                    "grove.io/podcliquescalinggroup=llama-0-prefill",
                }
            ],
            "source": [{"apiVersion": "grove.io/v1alpha1", "kind": "PodCliqueSet", "anything": {"kept": [1, 2]}}],
        },
        "status": {
            "observedGeneration": 3,
            "replicas": 1,
            "availableReplicas": 1,
            "updatedReplicas": 1,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "AllReplicasAvailable",
                    "message": "",
                    "lastTransitionTime": "2026-08-30T10:00:00Z",
                    "observedGeneration": 3,
                }
            ],
        },
    }


def target_object(kind: str = "PodCliqueScalingGroup") -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1alpha1",
        "kind": kind,
        "metadata": {"name": "llama-0-prefill", "namespace": "inference"},
        "spec": {"replicas": 2, "minAvailable": 1, "minReplicas": 1, "maxReplicas": 4},
        "status": {
            "replicas": 2,
            "readyReplicas": 2,
            "updatedReplicas": 2,
            "availableReplicas": 2,
            "selector": "app.kubernetes.io/managed-by=grove-gitops",
            "observedGeneration": 1,
            "conditions": [
                {
                    "type": "ScaleBlocked",
                    "status": "False",
                    "reason": "QuotaAvailable",
                    "message": "",
                    "lastTransitionTime": "2026-08-30T10:00:00Z",
                }
            ],
        },
    }


def test_contract_objects_validate(registry: CRDRegistry) -> None:
    assert registry.validate(pcs_object()) == []
    for kind in TARGET_KINDS:
        assert registry.validate(target_object(kind)) == []


@pytest.mark.parametrize(
    ("mutate", "fragment"),
    [
        (lambda o: o["spec"].update(replicas=-1), "spec.replicas"),
        (lambda o: o["spec"].update(replicas=2**31), "spec.replicas"),
        (lambda o: o["spec"].pop("minReplicas"), "minReplicas"),
        (lambda o: o["spec"].update(replica=3), "replica"),
        (lambda o: o["status"]["conditions"][0].update(status="Yes"), "status"),
        (lambda o: o["status"]["conditions"][0].pop("reason"), "reason"),
    ],
)
def test_bad_targets_are_refused(registry: CRDRegistry, mutate: Any, fragment: str) -> None:
    obj = target_object()
    mutate(obj)
    errors = registry.validate(obj)
    assert errors and any(fragment in e for e in errors), errors


def test_bad_podcliquesets_are_refused(registry: CRDRegistry) -> None:
    obj = pcs_object()
    obj["spec"]["scaleTargets"][0]["kind"] = "PodCliqueSet"
    assert registry.validate(obj)
    obj = pcs_object()
    del obj["spec"]["scaleTargets"][0]["selector"]
    assert registry.validate(obj)
    obj = pcs_object()
    del obj["spec"]["rendererVersion"]
    assert registry.validate(obj)


# -- CEL transition rules -------------------------------------------------------------------------
def _rules(kind: str) -> list[tuple[TransitionRule, str]]:
    spec = _schema(_crds()[kind])["properties"]["spec"]
    return [
        (TransitionRule(r["rule"], optional_old_self=r.get("optionalOldSelf") is True), r["message"])
        for r in spec["x-kubernetes-validations"]
    ]


def _refusals(kind: str, new: dict[str, int], old: dict[str, int] | None) -> list[str]:
    return [message for rule, message in _rules(kind) if not rule.allows(new, old)]


@pytest.mark.parametrize("kind", TARGET_KINDS)
def test_cel_rules_are_the_contracts(kind: str) -> None:
    spec = _schema(_crds()[kind])["properties"]["spec"]
    assert [(r["rule"], r["message"]) for r in spec["x-kubernetes-validations"]] == RULES
    # optionalOldSelf: the rules judge creates too (issue 32.4), not only updates.
    assert all(r.get("optionalOldSelf") is True for r in spec["x-kubernetes-validations"])


BOUNDS = {"minAvailable": 2, "minReplicas": 3, "maxReplicas": 8}


@pytest.mark.parametrize("kind", TARGET_KINDS)
@pytest.mark.parametrize(
    ("old", "new", "refused"),
    [
        # A scaler's /scale write: only replicas change.
        (5, 8, []),
        (5, 3, []),
        (5, 9, ["replicas must be less than or equal to maxReplicas"]),
        (5, 2, [RULES[1][1]]),  # at minAvailable, below the floor
        (5, 1, [RULES[0][1], RULES[1][1]]),
        (5, 0, [RULES[0][1], RULES[1][1]]),
    ],
)
def test_scale_writes(kind: str, old: int, new: int, refused: list[str]) -> None:
    assert _refusals(kind, {**BOUNDS, "replicas": new}, {**BOUNDS, "replicas": old}) == refused


@pytest.mark.parametrize("kind", TARGET_KINDS)
def test_the_agent_copying_new_bounds_from_git_is_never_refused(kind: str) -> None:
    """Git raised the floor above the live count, or lowered maxReplicas below it: the agent's
    update keeps replicas, so the transition rules let it through (the next scale write must
    then respect the new bounds)."""
    old = {**BOUNDS, "replicas": 4}
    assert _refusals(kind, {"replicas": 4, "minAvailable": 5, "minReplicas": 6, "maxReplicas": 3}, old) == []


@pytest.mark.parametrize("kind", TARGET_KINDS)
@pytest.mark.parametrize(
    ("replicas", "refused"),
    [(3, []), (8, []), (9, [RULES[2][1]]), (2, [RULES[1][1]]), (0, [RULES[0][1], RULES[1][1]])],
)
def test_creation_is_checked_against_the_objects_own_bounds(kind: str, replicas: int, refused: list[str]) -> None:
    """optionalOldSelf: the rules run on CREATE too (issue 32.4: a target created with replicas
    above maxReplicas was accepted); the agent creates at initialReplicas, inside the bounds."""
    assert _refusals(kind, {**BOUNDS, "replicas": replicas}, None) == refused


@pytest.mark.parametrize("kind", TARGET_KINDS)
def test_a_write_moving_replicas_and_bounds_is_judged_on_the_result(kind: str) -> None:
    old = {**BOUNDS, "replicas": 5}
    assert _refusals(kind, {**BOUNDS, "replicas": 50, "maxReplicas": 100}, old) == []
    assert _refusals(kind, {**BOUNDS, "replicas": 50, "maxReplicas": 40}, old) == [RULES[2][1]]
    assert _refusals(kind, {"replicas": 4, "minAvailable": 2, "minReplicas": 6, "maxReplicas": 9}, old) == [RULES[1][1]]


def test_rule_evaluator_rejects_other_grammar() -> None:
    with pytest.raises(ValueError):
        TransitionRule("self.replicas >= self.minAvailable && self.replicas <= 3")
    with pytest.raises(ValueError):
        TransitionRule("size(self.items) > 0")


# -- installation ---------------------------------------------------------------------------------
def test_kustomization_builds_exactly_the_crds() -> None:
    objs = build(CRDS)
    assert sorted((o["kind"], o["metadata"]["name"]) for o in objs) == sorted(
        ("CustomResourceDefinition", f"{plural}.{GROUP}") for plural, _ in NAMES.values()
    )
    assert set(yaml.safe_load((CRDS / "kustomization.yaml").read_text())["resources"]) == {
        p.name for p in CRDS.glob("*.yaml") if p.name != "kustomization.yaml"
    }


@pytest.mark.parametrize("overlay", [GATE_LIFTER, NAMESPACED], ids=["cluster", "namespaced"])
def test_the_agent_install_carries_the_crds(overlay: Path) -> None:
    built = {o["metadata"]["name"]: o for o in build(overlay) if o["kind"] == "CustomResourceDefinition"}
    assert built == {o["metadata"]["name"]: o for o in build(CRDS)}


def test_crds_are_never_pruned_by_a_gitops_tool() -> None:
    """Deleting a CRD deletes every object of its kind and, through ownerReferences, every pod the
    agent created: a GitOps tool that manages the agent's install must never prune them."""
    for crd in _crds().values():
        annotations = crd["metadata"]["annotations"]
        assert annotations["kustomize.toolkit.fluxcd.io/prune"] == "disabled"
        assert "Prune=false" in annotations["argocd.argoproj.io/sync-options"].split(",")


def test_crd_files_are_stable_yaml() -> None:
    """One document per file, and YAML 1.1 booleans quoted ('True' stays a string)."""
    for path in sorted(CRDS.glob("gitops.grove.io_*.yaml")):
        docs = load_yaml(path)
        assert len(docs) == 1, path.name
        cond = copy.deepcopy(docs[0])
        enum = _schema(cond)["properties"]["status"]["properties"]["conditions"]["items"]["properties"]["status"]["enum"]
        assert enum == ["True", "False", "Unknown"], path.name
