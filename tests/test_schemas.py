"""Tests for tests.schemas against the real upstream CRDs and kubernetes-validate schemas."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest

from tests import schemas
from tests.schemas import CRDRegistry, builtin_errors, validate_any

CRD_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "crds"
KUBE_VERSIONS = ("1.35", "1.36", "1.37")


@pytest.fixture(scope="module")
def crds() -> CRDRegistry:
    return CRDRegistry.from_dir(CRD_DIR)


def _one(errors: list[str]) -> str:
    assert len(errors) == 1, errors
    return errors[0]


# --------------------------------------------------------------------------------------------------
# Sample objects
# --------------------------------------------------------------------------------------------------


def podgang() -> dict[str, Any]:
    return {
        "apiVersion": "scheduler.grove.io/v1alpha1",
        "kind": "PodGang",
        "metadata": {"name": "inference-0", "namespace": "team-a", "labels": {"app.kubernetes.io/name": "x"}},
        "spec": {
            "podgroups": [
                {
                    "name": "inference-0-prefill",
                    "minReplicas": 2,
                    "podReferences": [
                        {"name": "inference-0-prefill-abc", "namespace": "team-a"},
                        {"name": "inference-0-prefill-def", "namespace": "team-a"},
                    ],
                }
            ],
            "priorityClassName": "high",
        },
    }


def kai_podgroup() -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.run.ai/v2alpha2",
        "kind": "PodGroup",
        "metadata": {"name": "pg-1", "namespace": "team-a"},
        "spec": {
            "minMember": 3,
            "queue": "default-queue",
            "subGroups": [{"name": "prefill", "minMember": 1}],
        },
    }


def volcano_podgroup() -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "pg-1", "namespace": "team-a"},
        "spec": {
            "minMember": 4,
            "queue": "default",
            "minResources": {"cpu": 4, "memory": "16Gi", "nvidia.com/gpu": "8"},
            "networkTopology": {"mode": "hard", "highestTierAllowed": 2},
        },
    }


def pod(**spec_extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "worker-0",
            "namespace": "team-a",
            "labels": {"grove.io/podgang": "inference-0"},
        },
        "spec": {
            "schedulingGates": [{"name": "grove.io/podgang-pending-creation"}],
            "containers": [
                {
                    "name": "main",
                    "image": "nginx:1.27",
                    "resources": {"limits": {"nvidia.com/gpu": 1, "memory": "1Gi"}},
                }
            ],
            **spec_extra,
        },
    }


# --------------------------------------------------------------------------------------------------
# CRD registry: loading and lookup
# --------------------------------------------------------------------------------------------------


def test_registry_loads_all_upstream_crds(crds: CRDRegistry) -> None:
    kinds = crds.kinds()
    assert ("scheduler.grove.io/v1alpha1", "PodGang") in kinds
    assert ("scheduling.run.ai/v2alpha2", "PodGroup") in kinds
    assert ("scheduling.volcano.sh/v1beta1", "PodGroup") in kinds
    assert ("scheduling.x-k8s.io/v1alpha1", "PodGroup") in kinds
    assert ("scheduling.sigs.k8s.io/v1alpha1", "PodGroup") in kinds
    assert ("grove.io/v1alpha1", "ClusterTopologyBinding") in kinds
    assert ("argoproj.io/v1alpha1", "Application") in kinds
    assert ("argoproj.io/v1alpha1", "ApplicationSet") in kinds
    assert ("kustomize.toolkit.fluxcd.io/v1", "Kustomization") in kinds
    assert len(kinds) == 19


def test_lookup_reports_scope_plural_and_status(crds: CRDRegistry) -> None:
    gang = crds.lookup("scheduler.grove.io/v1alpha1", "PodGang")
    assert gang is not None
    assert (gang.plural, gang.scope, gang.namespaced, gang.has_status_subresource) == (
        "podgangs",
        "Namespaced",
        True,
        True,
    )
    ctb = crds.lookup("grove.io/v1alpha1", "ClusterTopologyBinding")
    assert ctb is not None and ctb.scope == "Cluster" and not ctb.namespaced
    volcano = crds.lookup("scheduling.volcano.sh/v1beta1", "PodGroup")
    assert volcano is not None and not volcano.has_status_subresource
    assert crds.lookup("scheduling.run.ai/v2", "PodGroup") is None
    assert crds.lookup("v1", "Pod") is None


def test_every_converted_crd_schema_is_a_valid_json_schema(crds: CRDRegistry) -> None:
    for api_version, kind in crds.kinds():
        jsonschema.Draft202012Validator.check_schema(crds.json_schema(api_version, kind))


def test_duplicate_crd_is_rejected() -> None:
    crd = _widget_crd()
    with pytest.raises(ValueError, match="duplicate"):
        CRDRegistry([crd, crd])


def test_validators_are_cached(crds: CRDRegistry) -> None:
    assert crds.json_schema("scheduler.grove.io/v1alpha1", "PodGang") == crds.json_schema(
        "scheduler.grove.io/v1alpha1", "PodGang"
    )
    crd = crds.lookup("scheduler.grove.io/v1alpha1", "PodGang")
    assert crd is not None
    assert crds._validator(crd) is crds._validator(crd)


# --------------------------------------------------------------------------------------------------
# Grove PodGang
# --------------------------------------------------------------------------------------------------


def test_valid_podgang_passes(crds: CRDRegistry) -> None:
    assert crds.validate(podgang()) == []
    assert validate_any(podgang(), crds, "1.35") == []


def test_podgang_typo_field_is_named(crds: CRDRegistry) -> None:
    obj = podgang()
    obj["spec"]["podGroups"] = obj["spec"].pop("podgroups")
    errors = crds.validate(obj)
    assert "PodGang scheduler.grove.io/v1alpha1 team-a/inference-0: spec.podGroups: unknown field" in errors
    assert (
        "PodGang scheduler.grove.io/v1alpha1 team-a/inference-0: spec.podgroups: required field is missing"
        in (errors)
    )
    assert len(errors) == 2


def test_podgang_nested_errors_have_indexed_paths(crds: CRDRegistry) -> None:
    obj = podgang()
    group = obj["spec"]["podgroups"][0]
    group["minReplicas"] = "2"
    del group["podReferences"][1]["namespace"]
    group["podReferences"][0]["uid"] = "x"
    errors = crds.validate(obj)
    assert errors == [
        "PodGang scheduler.grove.io/v1alpha1 team-a/inference-0: "
        "spec.podgroups[0].minReplicas: '2' is not of type 'integer'",
        "PodGang scheduler.grove.io/v1alpha1 team-a/inference-0: "
        "spec.podgroups[0].podReferences[0].uid: unknown field",
        "PodGang scheduler.grove.io/v1alpha1 team-a/inference-0: "
        "spec.podgroups[0].podReferences[1].namespace: required field is missing",
    ]


def test_unknown_top_level_field_is_rejected(crds: CRDRegistry) -> None:
    obj = podgang()
    obj["sepc"] = {}
    assert _one(crds.validate(obj)).endswith(": sepc: unknown field")


def test_int32_format_is_range_checked(crds: CRDRegistry) -> None:
    obj = podgang()
    obj["spec"]["podgroups"][0]["minReplicas"] = 2**31
    assert "minReplicas: 2147483648 is not a 'int32'" in _one(crds.validate(obj))


# --------------------------------------------------------------------------------------------------
# Scheduler PodGroups
# --------------------------------------------------------------------------------------------------


def test_kai_podgroup_valid_and_min_member_as_string_fails(crds: CRDRegistry) -> None:
    assert crds.validate(kai_podgroup()) == []
    obj = kai_podgroup()
    obj["spec"]["minMember"] = "3"
    assert _one(crds.validate(obj)) == (
        "PodGroup scheduling.run.ai/v2alpha2 team-a/pg-1: spec.minMember: '3' is not of type 'integer'"
    )


def test_kai_podgroup_minimum_and_pattern(crds: CRDRegistry) -> None:
    obj = kai_podgroup()
    obj["spec"]["minMember"] = -1
    obj["spec"]["subGroups"][0]["name"] = "Prefill"
    assert crds.validate(obj) == [
        "PodGroup scheduling.run.ai/v2alpha2 team-a/pg-1: spec.minMember: -1 is less than the minimum of 0",
        "PodGroup scheduling.run.ai/v2alpha2 team-a/pg-1: spec.subGroups[0].name: "
        "'Prefill' does not match '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'",
    ]


def test_volcano_podgroup_valid(crds: CRDRegistry) -> None:
    assert crds.validate(volcano_podgroup()) == []


def test_volcano_podgroup_invalid(crds: CRDRegistry) -> None:
    obj = volcano_podgroup()
    obj["spec"]["queue"] = "Default_Queue"
    obj["spec"]["minResources"]["memory"] = "lots"  # int-or-string quantity with a pattern
    obj["spec"]["minResources"]["cpu"] = 4.5  # neither integer nor string
    obj["spec"]["networkTopology"]["mode"] = "strict"
    errors = crds.validate(obj)
    prefix = "PodGroup scheduling.volcano.sh/v1beta1 team-a/pg-1: "
    assert errors[0] == prefix + "spec.minResources.cpu: 4.5 is not of type 'integer', 'string'"
    assert errors[1].startswith(prefix + "spec.minResources.memory: 'lots' does not match")
    assert errors[2] == prefix + "spec.networkTopology.mode: 'strict' is not one of ['hard', 'soft']"
    assert errors[3].startswith(prefix + "spec.queue: 'Default_Queue' does not match")
    assert len(errors) == 4


def test_scheduler_plugins_podgroup(crds: CRDRegistry) -> None:
    obj = {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": "pg", "namespace": "ns"},
        "spec": {"minMember": 2, "scheduleTimeoutSeconds": 30},
    }
    assert crds.validate(obj) == []
    obj["spec"]["minMembers"] = 2
    assert _one(crds.validate(obj)).endswith("spec.minMembers: unknown field")


# --------------------------------------------------------------------------------------------------
# Metadata rules
# --------------------------------------------------------------------------------------------------


def test_cluster_scoped_resource_must_not_have_namespace(crds: CRDRegistry) -> None:
    obj = {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "ClusterTopologyBinding",
        "metadata": {"name": "gb200"},
        "spec": {"levels": [{"domain": "rack", "key": "topology.kubernetes.io/rack"}]},
    }
    assert crds.validate(obj) == []
    obj["metadata"]["namespace"] = "default"
    assert _one(crds.validate(obj)) == (
        "ClusterTopologyBinding grove.io/v1alpha1 default/gb200: "
        "metadata.namespace: must not be set on a cluster-scoped resource (got 'default')"
    )


def test_namespaced_resource_requires_namespace(crds: CRDRegistry) -> None:
    obj = podgang()
    del obj["metadata"]["namespace"]
    assert _one(crds.validate(obj)).endswith("metadata.namespace: required for a namespaced resource")


def test_label_value_of_64_chars_fails_63_passes(crds: CRDRegistry) -> None:
    obj = podgang()
    obj["metadata"]["labels"]["grove.io/role"] = "a" * 63
    assert crds.validate(obj) == []
    obj["metadata"]["labels"]["grove.io/role"] = "a" * 64
    error = _one(crds.validate(obj))
    assert "metadata.labels[grove.io/role]" in error and "no more than 63 characters" in error


@pytest.mark.parametrize(
    ("key", "value", "fragment"),
    [
        ("Grove.IO/role", "x", "prefix part must be a lowercase RFC 1123 subdomain"),
        ("grove.io/" + "r" * 64, "x", "name part must be no more than 63 characters"),
        ("grove.io/-role", "x", "name part must consist of alphanumeric"),
        ("/role", "x", "prefix part must be non-empty"),
        ("role", "-bad", "must be empty or consist of alphanumeric"),
        ("role", "has space", "must be empty or consist of alphanumeric"),
        ("role", 3, "label value must be a string"),
    ],
)
def test_bad_labels(crds: CRDRegistry, key: str, value: object, fragment: str) -> None:
    obj = podgang()
    obj["metadata"]["labels"] = {key: value}
    assert fragment in _one(crds.validate(obj))


def test_valid_label_edge_cases(crds: CRDRegistry) -> None:
    obj = podgang()
    obj["metadata"]["labels"] = {"empty": "", "a.b_c-d": "A.b_C-9", "x" * 63: "v", "a" * 253 + "/n": "v"}
    assert crds.validate(obj) == []


def test_name_rules(crds: CRDRegistry) -> None:
    obj = podgang()
    obj["metadata"]["name"] = "Inference_0"
    assert "metadata.name: must be a lowercase RFC 1123 subdomain" in _one(crds.validate(obj))
    obj["metadata"]["name"] = "a" * 254
    assert "metadata.name: must be no more than 253 characters" in _one(crds.validate(obj))
    del obj["metadata"]["name"]
    assert _one(crds.validate(obj)).endswith("metadata.name: required field is missing")


def test_annotations_and_unknown_metadata_fields(crds: CRDRegistry) -> None:
    obj = podgang()
    obj["metadata"]["annotations"] = {"grove.io/replicas": 3, "ok": "yes"}
    obj["metadata"]["label"] = {"typo": "x"}
    errors = crds.validate(obj)
    assert any(e.endswith("metadata.label: unknown field") for e in errors)
    assert any(
        "metadata.annotations[grove.io/replicas]: annotation value must be a string" in e for e in errors
    )
    assert len(errors) == 2


def test_owner_reference_without_uid_is_rejected(crds: CRDRegistry) -> None:
    obj = podgang()
    obj["metadata"]["ownerReferences"] = [
        {"apiVersion": "grove.io/v1alpha1", "kind": "PodCliqueSet", "name": "x"}
    ]
    assert _one(crds.validate(obj)).endswith("metadata.ownerReferences[0].uid: required field is missing")


# --------------------------------------------------------------------------------------------------
# CEL (x-kubernetes-validations) subset and embedded metadata pruning, on the real PodCliqueSet CRD
# --------------------------------------------------------------------------------------------------


def podcliqueset(**template_extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueSet",
        "metadata": {"name": "inference", "namespace": "team-a"},
        "spec": {
            "replicas": 1,
            "template": {
                "cliques": [
                    {
                        "name": "prefill",
                        "spec": {
                            "roleName": "prefill",
                            "replicas": 2,
                            "podSpec": {"containers": [{"name": "main", "image": "vllm:latest"}]},
                        },
                    }
                ],
                **template_extra,
            },
        },
    }


def test_podcliqueset_minimal_valid(crds: CRDRegistry) -> None:
    assert crds.validate(podcliqueset(topologyConstraint={"pack": {"required": "rack"}})) == []


def test_cel_has_or_rule(crds: CRDRegistry) -> None:
    errors = crds.validate(podcliqueset(topologyConstraint={"topologyName": "t"}))
    assert _one(errors) == (
        "PodCliqueSet grove.io/v1alpha1 team-a/inference: spec.template.topologyConstraint.pack: "
        "topologyConstraint must specify pack or deprecated packDomain"
    )
    errors = crds.validate(podcliqueset(topologyConstraint={"pack": {}}))
    assert _one(errors).endswith(
        "spec.template.topologyConstraint.pack: pack must specify at least one of required or preferred"
    )


def test_cel_not_and_rule(crds: CRDRegistry) -> None:
    obj = podcliqueset(topologyConstraint={"packDomain": "rack", "pack": {"required": "rack"}})
    assert _one(crds.validate(obj)).endswith(
        "spec.template.topologyConstraint.pack.required: "
        "must not set both pack.required and deprecated packDomain"
    )
    obj = podcliqueset(topologyConstraint={"packDomain": "rack", "pack": {"preferred": "rack"}})
    assert crds.validate(obj) == []


def test_cel_three_way_or_on_volcano_hypernode(crds: CRDRegistry) -> None:
    obj = {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": "rack-1"},
        "spec": {
            "tier": 1,
            "members": [
                {"type": "Node", "selector": {"exactMatch": {"name": "node-1"}}},
                {"type": "Node", "selector": {}},
            ],
        },
    }
    assert _one(crds.validate(obj)).endswith(
        "spec.members[1].selector: Either ExactMatch or RegexMatch or LabelMatch must be specified"
    )
    # The "at most one" rule uses ternaries: unsupported, so skipped rather than guessed.
    obj["spec"]["members"][1]["selector"] = {"exactMatch": {"name": "a"}, "regexMatch": {"pattern": "b"}}
    assert crds.validate(obj) == []


def test_cel_parser_accepts_only_the_has_subset() -> None:
    parse = schemas._parse_cel
    assert parse("has(self.a) || has(self.b)") is not None
    assert parse("!(has(self.packDomain) && has(self.pack) && has(self.pack.required))") is not None
    assert parse("oldSelf.hasValue() || !has(self.spec.x)") is None
    assert parse("size(self.filter(i, i.x == 'y')) == 0") is None
    assert parse("(has(self.a) ? 1 : 0) + (has(self.b) ? 1 : 0) <= 1") is None
    assert parse("has(self.a) ||") is None
    assert parse("has(other.a)") is None


def test_embedded_metadata_without_properties_is_pruned(crds: CRDRegistry) -> None:
    # controller-gen emits ``metadata: {type: object}`` for embedded ObjectMeta unless
    # generateEmbeddedObjectMeta is set, so the API server drops labels put there.
    claim = {
        "name": "gpus",
        "templateSpec": {
            "metadata": {"labels": {"a": "b"}},
            "spec": {
                "devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}
            },
        },
    }
    error = _one(crds.validate(podcliqueset(resourceClaimTemplates=[claim])))
    assert "spec.template.resourceClaimTemplates[0].templateSpec.metadata.labels: unknown field" in error
    assert "would prune" in error
    del claim["templateSpec"]["metadata"]
    assert crds.validate(podcliqueset(resourceClaimTemplates=[claim])) == []


# --------------------------------------------------------------------------------------------------
# Schema conversion features, on a synthetic CRD
# --------------------------------------------------------------------------------------------------


def _widget_crd() -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.test"},
        "spec": {
            "group": "example.test",
            "names": {"kind": "Widget", "plural": "widgets"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": _widget_schema()},
                },
                {"name": "v0", "served": False, "storage": False, "schema": {"openAPIV3Schema": {}}},
            ],
        },
    }


def _widget_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": {
                "type": "object",
                "properties": {
                    "size": {
                        "x-kubernetes-int-or-string": True,
                        "anyOf": [{"type": "integer"}, {"type": "string"}],
                    },
                    "note": {"type": "string", "nullable": True},
                    "color": {"type": "string", "enum": ["red", "blue"], "nullable": True},
                    "count": {"type": "integer", "format": "int32", "minimum": 0, "exclusiveMinimum": True},
                    "when": {"type": "string", "format": "date-time"},
                    "blob": {"type": "string", "format": "byte"},
                    "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                    "partial": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                        "properties": {"known": {"type": "integer"}},
                    },
                    "env": {"type": "object", "additionalProperties": {"type": "string"}},
                    "ports": {
                        "type": "array",
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["port", "protocol"],
                        "items": {
                            "type": "object",
                            "required": ["port"],
                            "properties": {
                                "port": {"type": "integer"},
                                "protocol": {"type": "string", "default": "TCP"},
                            },
                        },
                    },
                    "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                },
                "x-kubernetes-validations": [
                    {"rule": "has(self.size) || has(self.count)", "message": "size or count is required"},
                    {"rule": "self.count < 100", "message": "unsupported rule, must be skipped"},
                ],
            },
        },
    }


@pytest.fixture(scope="module")
def widgets() -> CRDRegistry:
    return CRDRegistry([_widget_crd()])


def _widget(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "example.test/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "ns"},
        "spec": spec,
    }


def test_synthetic_valid(widgets: CRDRegistry) -> None:
    obj = _widget(
        size="10Gi",
        note=None,
        color=None,
        count=200,
        when="2026-01-02T03:04:05Z",
        blob="not checked: unknown formats are ignored",
        free={"anything": {"goes": [1, None]}},
        partial={"known": 1, "extra": "kept"},
        env={"A": "1"},
        ports=[{"port": 80}, {"port": 80, "protocol": "UDP"}],
        tags=["a", "b"],
    )
    assert widgets.validate(obj) == []
    assert widgets.validate(_widget(size=3)) == []
    assert widgets.kinds() == [("example.test/v1", "Widget")]  # unserved v0 is not registered
    assert widgets.groups() == frozenset({"example.test"})


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"size": 1.5}, "spec.size: 1.5 is not of type 'integer', 'string'"),
        ({"size": 1, "note": 5}, "spec.note: 5 is not of type 'string', 'null'"),
        ({"size": 1, "color": "green"}, "spec.color: 'green' is not one of ['red', 'blue', None]"),
        ({"count": 0}, "spec.count: 0 is less than or equal to the minimum of 0"),
        ({"size": 1, "when": "yesterday"}, "spec.when: 'yesterday' is not a 'date-time'"),
        ({"size": 1, "partial": {"known": "x"}}, "spec.partial.known: 'x' is not of type 'integer'"),
        ({"size": 1, "env": {"A": 1}}, "spec.env.A: 1 is not of type 'string'"),
        ({"size": None, "count": 1}, "spec.size: None is not of type 'integer', 'string'"),
        ({"sise": 1, "count": 1}, "spec.sise: unknown field"),
        ({"note": "x"}, "spec: size or count is required"),
        (
            {"size": 1, "ports": [{"port": 80}, {"port": 80, "protocol": "TCP"}]},
            "spec.ports[1]: duplicate entry with key port=80, protocol='TCP'",
        ),
        ({"size": 1, "tags": ["a", "a"]}, "spec.tags[1]: duplicate value 'a'"),
    ],
)
def test_synthetic_invalid(widgets: CRDRegistry, spec: dict[str, Any], expected: str) -> None:
    assert widgets.validate(_widget(**spec)) == [f"Widget example.test/v1 ns/w: {expected}"]


# --------------------------------------------------------------------------------------------------
# Unknown kinds and routing
# --------------------------------------------------------------------------------------------------


def test_embedded_resource_and_pattern_properties() -> None:
    # Carried over from the fake API server's former converter when the two were merged: an
    # ``x-kubernetes-embedded-resource`` object implicitly has apiVersion/kind/metadata, and
    # ``patternProperties`` values are converted (strict) like ``properties`` ones.
    crd = _widget_crd()
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    spec["template"] = {
        "type": "object",
        "x-kubernetes-embedded-resource": True,
        "properties": {"spec": {"type": "object", "properties": {"replicas": {"type": "integer"}}}},
    }
    spec["byZone"] = {
        "type": "object",
        "patternProperties": {"^z-": {"type": "object", "properties": {"n": {"type": "integer"}}}},
    }
    registry = CRDRegistry([crd])
    template = {"apiVersion": "v1", "kind": "Thing", "metadata": {"name": "t"}, "spec": {"replicas": 1}}
    assert registry.validate(_widget(size=1, template=template, byZone={"z-a": {"n": 1}})) == []
    errors = registry.validate(_widget(size=1, template={**template, "extra": 1}, byZone={"z-a": {"m": 1}}))
    assert any("spec.template.extra: unknown field" in e for e in errors), errors
    assert any("spec.byZone.z-a.m: unknown field" in e for e in errors), errors
    converted = schemas.crd_schema_to_jsonschema(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
    assert {"apiVersion", "kind", "metadata", "spec"} <= set(
        converted["properties"]["spec"]["properties"]["template"]["properties"]
    )


def test_builtin_schemas_come_from_the_product_loader() -> None:
    # One implementation of the kubernetes-validate lookup: the conformance checks and the fake
    # API server both compile built-in validators through grove_gitops.validation.podspec.
    from grove_gitops.validation import podspec
    from tests.fakeserver import KubernetesSchemaValidator

    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "s", "namespace": "n"},
        "spec": {"ports": [{"port": 80}]},
    }
    assert builtin_errors(service, "1.36") == []
    assert KubernetesSchemaValidator("1.36.0")(service) == []
    before = podspec.builtin_validator.cache_info()
    assert builtin_errors(service, "1.36") == []
    assert KubernetesSchemaValidator("1.36.0")(service) == []
    after = podspec.builtin_validator.cache_info()
    assert after.hits - before.hits == 2 and after.misses == before.misses


def test_unknown_crd_kind_and_version(crds: CRDRegistry) -> None:
    obj = kai_podgroup()
    obj["apiVersion"] = "scheduling.run.ai/v2"
    error = _one(crds.validate(obj))
    assert "no CustomResourceDefinition serves scheduling.run.ai/v2 PodGroup" in error
    assert "scheduling.run.ai/v2alpha2 PodGroup" in error  # the hint lists what the group does serve
    obj["kind"] = "PodGang"
    obj["apiVersion"] = "scheduler.grove.io/v1"
    assert "no CustomResourceDefinition serves" in _one(validate_any(obj, crds, "1.35"))


def test_unknown_builtin_kind_is_an_error(crds: CRDRegistry) -> None:
    obj = {"apiVersion": "v1", "kind": "Frobnicator", "metadata": {"name": "x"}}
    assert _one(builtin_errors(obj, "1.35")) == (
        "Frobnicator v1 x: no built-in schema for v1 Frobnicator in Kubernetes 1.35 "
        "(unknown kind or API version)"
    )
    assert "no built-in schema" in _one(validate_any(obj, crds, "1.37"))


def test_missing_api_version_or_kind() -> None:
    assert "apiVersion: required field is missing" in _one(builtin_errors({"kind": "Pod"}, "1.35"))
    assert "object is not a mapping" in _one(builtin_errors([], "1.35"))  # type: ignore[arg-type]


def test_unsupported_kube_version_raises() -> None:
    with pytest.raises(ValueError, match="no schemas for Kubernetes"):
        builtin_errors(pod(), "9.99")


def test_validate_any_routes_by_group(crds: CRDRegistry) -> None:
    assert validate_any(pod(), crds, "1.35") == []
    bad_pod = pod()
    bad_pod["spec"]["podgroups"] = []
    assert _one(validate_any(bad_pod, crds, "1.35")).endswith("spec.podgroups: unknown field")
    assert schemas.validate_all([podgang(), kai_podgroup(), pod()], crds, "1.36") == []


# --------------------------------------------------------------------------------------------------
# Built-in kinds (kubernetes-validate schemas)
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", KUBE_VERSIONS)
def test_pod_with_scheduling_gates_is_valid(version: str) -> None:
    assert builtin_errors(pod(), version) == []


@pytest.mark.parametrize("version", KUBE_VERSIONS)
def test_pod_unknown_field_fails_strict(version: str) -> None:
    obj = pod()
    obj["spec"]["containers"][0]["imagee"] = "x"
    obj["spec"]["schedulingGate"] = []
    assert builtin_errors(obj, version) == [
        "Pod v1 team-a/worker-0: spec.containers[0].imagee: unknown field",
        "Pod v1 team-a/worker-0: spec.schedulingGate: unknown field",
    ]


def test_pod_type_and_required_errors() -> None:
    obj = pod()
    obj["spec"]["containers"][0]["ports"] = [{"containerPort": "80"}]
    del obj["spec"]["containers"][0]["name"]
    assert builtin_errors(obj, "1.35") == [
        "Pod v1 team-a/worker-0: spec.containers[0].name: required field is missing",
        "Pod v1 team-a/worker-0: spec.containers[0].ports[0].containerPort: '80' is not of type 'integer'",
    ]


def test_pod_label_rules_apply_to_builtins() -> None:
    obj = pod()
    obj["metadata"]["labels"]["grove.io/podgang"] = "x" * 64
    assert "no more than 63 characters" in _one(builtin_errors(obj, "1.36"))


def test_pod_workload_reference_field_names_per_version() -> None:
    # 1.35 (scheduling.k8s.io/v1alpha1 era): spec.workloadRef {name, podGroup, podGroupReplicaKey}.
    ref_135 = pod(workloadRef={"name": "inference", "podGroup": "prefill", "podGroupReplicaKey": "0"})
    assert builtin_errors(ref_135, "1.35") == []
    missing = pod(workloadRef={"name": "inference"})
    assert _one(builtin_errors(missing, "1.35")).endswith(
        "spec.workloadRef.podGroup: required field is missing"
    )
    # 1.36+ replaced it with spec.schedulingGroup {podGroupName}.
    ref_136 = pod(schedulingGroup={"podGroupName": "inference-prefill-0"})
    for version in ("1.36", "1.37"):
        assert builtin_errors(ref_136, version) == []
        assert _one(builtin_errors(ref_135, version)).endswith("spec.workloadRef: unknown field")
    assert _one(builtin_errors(ref_136, "1.35")).endswith("spec.schedulingGroup: unknown field")


def test_workload_v1alpha1_in_135() -> None:
    workload = {
        "apiVersion": "scheduling.k8s.io/v1alpha1",
        "kind": "Workload",
        "metadata": {"name": "inference", "namespace": "team-a"},
        "spec": {
            "controllerRef": {"apiGroup": "grove.io", "kind": "PodCliqueSet", "name": "inference"},
            "podGroups": [
                {"name": "prefill", "policy": {"gang": {"minCount": 2}}},
                {"name": "router", "policy": {"basic": {}}},
            ],
        },
    }
    assert builtin_errors(workload, "1.35") == []
    bad = copy.deepcopy(workload)
    bad["spec"]["podGroups"][0]["policy"]["gang"] = {"minMember": 2}
    assert builtin_errors(bad, "1.35") == [
        "Workload scheduling.k8s.io/v1alpha1 team-a/inference: spec.podGroups[0].policy.gang.minCount: "
        "required field is missing",
        "Workload scheduling.k8s.io/v1alpha1 team-a/inference: "
        "spec.podGroups[0].policy.gang.minMember: unknown field",
    ]
    # v1alpha1 is gone in 1.36.
    assert "no built-in schema" in _one(builtin_errors(workload, "1.36"))


def test_workload_and_podgroup_in_136_and_137() -> None:
    def workload(api_version: str) -> dict[str, Any]:
        return {
            "apiVersion": api_version,
            "kind": "Workload",
            "metadata": {"name": "inference", "namespace": "team-a"},
            "spec": {
                "podGroupTemplates": [{"name": "prefill", "schedulingPolicy": {"gang": {"minCount": 2}}}]
            },
        }

    assert builtin_errors(workload("scheduling.k8s.io/v1alpha2"), "1.36") == []
    assert builtin_errors(workload("scheduling.k8s.io/v1beta1"), "1.37") == []
    assert builtin_errors(workload("scheduling.k8s.io/v1alpha3"), "1.37") == []
    assert "no built-in schema" in _one(builtin_errors(workload("scheduling.k8s.io/v1alpha2"), "1.37"))

    podgroup_136 = {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": "inference-prefill-0", "namespace": "team-a"},
        "spec": {
            "podGroupTemplateRef": {
                "workload": {"workloadName": "inference", "podGroupTemplateName": "prefill"}
            },
            "schedulingPolicy": {"gang": {"minCount": 2}},
        },
    }
    assert builtin_errors(podgroup_136, "1.36") == []
    podgroup_137 = copy.deepcopy(podgroup_136)
    podgroup_137["apiVersion"] = "scheduling.k8s.io/v1beta1"
    del podgroup_137["spec"]["podGroupTemplateRef"]
    podgroup_137["spec"]["workloadRef"] = {"workloadName": "inference", "templateName": "prefill"}
    assert builtin_errors(podgroup_137, "1.37") == []


def test_embedded_struct_schema_is_not_mistaken_for_a_kind() -> None:
    # kubernetes-validate 1.35 ships podgroup-scheduling-v1alpha1.json for the Workload's *inline*
    # PodGroup struct; there is no PodGroup kind in scheduling.k8s.io/v1alpha1.
    obj = {
        "apiVersion": "scheduling.k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": "x", "namespace": "ns"},
        "name": "x",
        "policy": {"basic": {}},
    }
    assert "no built-in schema" in _one(builtin_errors(obj, "1.35"))


@pytest.mark.parametrize(
    "obj",
    [
        pod(),
        pod(workloadRef={"name": "w", "podGroup": "g"}),
        pod(bogus=True),
        pod(containers=[{"name": "c", "image": 3}]),
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"ports": [{"prot": 80}]}},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "rb", "namespace": "ns"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
            "subjects": [{"kind": "ServiceAccount", "name": "sa", "namespace": "ns"}],
        },
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": "rc", "namespace": "ns"},
            "spec": {"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "gpu"}}]}},
        },
    ],
)
def test_verdict_matches_kubernetes_validate(obj: dict[str, Any]) -> None:
    # The fast path resolves and caches schemas itself; it must agree with the reference implementation.
    try:
        kubernetes_validate.validate(obj, "1.35.0", strict=True)
        reference_valid = True
    except kubernetes_validate.ValidationError:
        reference_valid = False
    assert (builtin_errors(obj, "1.35") == []) is reference_valid


def test_builtin_validation_is_fast() -> None:
    import time

    obj = pod()
    builtin_errors(obj, "1.37")  # warm the cache
    start = time.perf_counter()
    for _ in range(200):
        assert builtin_errors(obj, "1.37") == []
    per_object = (time.perf_counter() - start) / 200
    assert per_object < 0.005, f"{per_object * 1000:.2f} ms per pod"
