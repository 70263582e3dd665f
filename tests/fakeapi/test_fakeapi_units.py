"""Unit tests of the fake's pure parts: patch formats, selectors, schema conversion, the store."""

from __future__ import annotations

from typing import Any

import pytest

from tests.fakeserver.patch import (
    PatchError,
    PatchFormatError,
    apply_json_patch,
    apply_merge_patch,
    apply_strategic_merge_patch,
)
from tests.fakeserver.resources import ResourceRegistry, builtin_types
from tests.fakeserver.schema import CrdSchemaValidator
from tests.fakeserver.selector import SelectorError, labels_match, parse_label_selector
from tests.fakeserver.store import ResourceExpired, Store
from tests.schemas import crd_schema_to_jsonschema


def _doc() -> dict[str, Any]:
    return {"metadata": {"labels": {"a": "1"}}, "spec": {"gates": [{"name": "x"}, {"name": "y"}], "n": 1}}


def test_json_patch_operations_and_atomicity() -> None:
    doc = _doc()
    out = apply_json_patch(
        doc,
        [
            {"op": "add", "path": "/metadata/labels/b", "value": "2"},
            {"op": "replace", "path": "/spec/n", "value": 2},
            {"op": "move", "from": "/spec/gates/0", "path": "/spec/gates/-"},
            {"op": "copy", "from": "/spec/n", "path": "/spec/m"},
            {"op": "test", "path": "/spec/gates/1/name", "value": "x"},
            {"op": "remove", "path": "/metadata/labels/a"},
            {"op": "add", "path": "/metadata/labels/a~1b", "value": "slash"},
        ],
    )
    assert out == {
        "metadata": {"labels": {"b": "2", "a/b": "slash"}},
        "spec": {"gates": [{"name": "y"}, {"name": "x"}], "n": 2, "m": 2},
    }
    assert doc == _doc()  # input untouched
    with pytest.raises(PatchError, match="testing value /spec/n failed"):
        apply_json_patch(
            doc,
            [
                {"op": "replace", "path": "/spec/n", "value": 5},
                {"op": "test", "path": "/spec/n", "value": True},
            ],
        )  # true is not 1
    with pytest.raises(PatchError, match="remove operation does not apply"):
        apply_json_patch(doc, [{"op": "remove", "path": "/spec/gates/5"}])
    with pytest.raises(PatchError, match="replace operation does not apply"):
        apply_json_patch(doc, [{"op": "replace", "path": "/spec/missing", "value": 1}])
    with pytest.raises(PatchFormatError):
        apply_json_patch(doc, {"op": "add"})
    assert apply_json_patch(doc, [{"op": "test", "path": "/spec/absent", "value": None}]) == doc


def test_merge_patch_replaces_lists_and_deletes_nulls() -> None:
    out = apply_merge_patch(_doc(), {"metadata": {"labels": {"a": None, "c": "3"}}, "spec": {"gates": []}})
    assert out == {"metadata": {"labels": {"c": "3"}}, "spec": {"gates": [], "n": 1}}
    with pytest.raises(PatchFormatError):
        apply_merge_patch(_doc(), [{"op": "remove", "path": "/spec"}])


def test_strategic_merge_patch_merge_keys_and_directives() -> None:
    pod = {
        "metadata": {"finalizers": ["a"]},
        "spec": {
            "schedulingGates": [{"name": "g1"}, {"name": "g2"}],
            "containers": [{"name": "c", "image": "i:1", "env": [{"name": "A", "value": "1"}]}],
            "tolerations": [{"key": "t"}],
        },
        "status": {"conditions": [{"type": "PodScheduled", "status": "False"}]},
    }
    out = apply_strategic_merge_patch(
        pod,
        {
            "metadata": {"finalizers": ["b", "a"]},
            "spec": {
                "schedulingGates": [{"$patch": "delete", "name": "g1"}],
                "containers": [{"name": "c", "image": "i:2", "env": [{"name": "B", "value": "2"}]}],
                "tolerations": [{"key": "u"}],
            },
            "status": {
                "conditions": [
                    {"type": "Ready", "status": "True"},
                    {"type": "PodScheduled", "status": "True"},
                ]
            },
        },
    )
    assert out["metadata"]["finalizers"] == ["a", "b"]
    assert out["spec"]["schedulingGates"] == [{"name": "g2"}]
    assert out["spec"]["containers"] == [
        {"name": "c", "image": "i:2", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}
    ]
    assert out["spec"]["tolerations"] == [{"key": "u"}]  # no patch strategy: replaced
    assert out["status"]["conditions"] == [
        {"type": "PodScheduled", "status": "True"},
        {"type": "Ready", "status": "True"},
    ]
    assert apply_strategic_merge_patch(pod, {"spec": {"schedulingGates": []}}) == pod
    cleared = apply_strategic_merge_patch(pod, {"spec": {"schedulingGates": None}})
    assert "schedulingGates" not in cleared["spec"]
    replaced = apply_strategic_merge_patch(
        pod, {"spec": {"schedulingGates": [{"$patch": "replace"}, {"name": "g9"}]}}
    )
    assert replaced["spec"]["schedulingGates"] == [{"name": "g9"}]
    trimmed = apply_strategic_merge_patch(pod, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}})
    assert "finalizers" not in trimmed["metadata"] or trimmed["metadata"]["finalizers"] == []
    with pytest.raises(PatchFormatError, match="merge key"):
        apply_strategic_merge_patch(pod, {"spec": {"containers": [{"image": "x"}]}})


def test_label_selector_parsing() -> None:
    obj = {"metadata": {"labels": {"app": "x", "n": "5"}}}
    assert labels_match(parse_label_selector("app=x,n>3,!gone"), obj)
    assert not labels_match(parse_label_selector("app in (y, z)"), obj)
    assert labels_match(parse_label_selector("app notin (y),n<6"), obj)
    assert labels_match(parse_label_selector(""), obj)
    for bad in ("app=", "=x", "app in ()", "a b"):
        if bad == "app=":  # an empty value is legal: app= selects app=""
            assert not labels_match(parse_label_selector(bad), obj)
            continue
        with pytest.raises(SelectorError):
            parse_label_selector(bad)


def test_openapi_conversion_handles_kubernetes_extensions() -> None:
    schema = crd_schema_to_jsonschema(
        {
            "type": "object",
            "properties": {
                "port": {
                    "x-kubernetes-int-or-string": True,
                    "anyOf": [{"type": "integer"}, {"type": "string"}],
                },
                "note": {"type": "string", "nullable": True},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "closed": {"type": "object", "properties": {"a": {"type": "string"}}},
            },
        },
    )
    assert schema["properties"]["port"]["type"] == ["integer", "string"]
    assert schema["properties"]["note"]["type"] == ["string", "null"]
    assert "additionalProperties" not in schema["properties"]["free"]
    assert schema["properties"]["closed"]["additionalProperties"] is False
    assert {"apiVersion", "kind", "metadata"} <= set(schema["properties"])


def test_crd_validator_reports_every_problem() -> None:
    from tests.fakeserver.crds import load_crd_documents, resource_types_from_crd
    from tests.fakeserver.server import default_crd_dir

    crd_dir = default_crd_dir()
    assert crd_dir is not None, "the shared CRDs must be next to the project"
    registry = ResourceRegistry()
    for crd in load_crd_documents(crd_dir):
        for rt in resource_types_from_crd(crd):
            registry.register(rt)
    validate = CrdSchemaValidator(registry)
    gang = {
        "apiVersion": "scheduler.grove.io/v1alpha1",
        "kind": "PodGang",
        "metadata": {"name": "g"},
        "spec": {
            "podgroups": [{"name": "w", "minReplicas": "1", "podReferences": [{"name": "p"}]}],
            "bogus": True,
        },
    }
    errors = validate(gang)
    assert 'unknown field "spec.bogus"' in errors
    assert "spec.podgroups[0].podReferences[0].namespace: Required value" in errors
    assert any(e.startswith('spec.podgroups[0].minReplicas: Invalid value: "string"') for e in errors)


def test_store_compare_and_swap_and_compaction() -> None:
    registry = ResourceRegistry()
    for rt in builtin_types():
        registry.register(rt)
    store = Store(registry, event_window=10)
    created = store.put(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns"}}
    )
    assert created["metadata"]["resourceVersion"] == "1" and created["metadata"]["uid"]
    updated = store.update("configmaps", "ns", "c", lambda o: o.setdefault("data", {}).update(k="v"))
    assert updated["metadata"]["resourceVersion"] == "2"
    epoch = store.watch_epoch()
    assert [e.type for e in store.wait_events(0, 0, epoch)] == ["ADDED", "MODIFIED"]
    store.compact()
    with pytest.raises(ResourceExpired):
        store.wait_events(1, 0, epoch)
    assert store.wait_events(2, 0, epoch) == []
    assert store.delete("configmaps", "ns", "c") is not None and store.get("configmaps", "ns", "c") is None
