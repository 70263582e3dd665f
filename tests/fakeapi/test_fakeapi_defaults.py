"""Structural defaults of custom resources, pinned to the Kubernetes documentation.

Rules (kubernetes.io, *Extend the Kubernetes API with CustomResourceDefinitions* → "Defaulting"):
defaulting happens on the object when reading data from etcd, in the request body on create and
update, and after mutating admission (so the result of a patch is defaulted); defaults apply
where a field is missing, and a ``null`` for a field that is not nullable is pruned and then
defaulted; a default object is itself defaulted (top-down).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes.client
import pytest

from tests.fakeapi.crd_fixtures import WIDGET_CRD, write_crds
from tests.fakeapi.fakeapi_helpers import raw
from tests.fakeserver import FakeApiServer
from tests.fakeserver import defaults as fake_defaults

WIDGETS = "/apis/test.grove.io/v1/namespaces/default/widgets"


@pytest.fixture
def widgets(tmp_path: Path) -> Iterator[FakeApiServer]:
    with FakeApiServer(extra_crds=[write_crds(tmp_path, WIDGET_CRD)]) as fake:
        yield fake
        assert fake.internal_errors == []


def widget(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "test.grove.io/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": spec}


def test_create_fills_missing_fields_top_down(widgets: FakeApiServer) -> None:
    """Missing ``low``/``high``/``mode`` get their defaults; the missing ``limits`` gets ``{}`` and then
    that object's own defaults (``cpu: "1"``, ``gpu: 0``). Stored as returned."""
    status, body = raw(widgets, "POST", WIDGETS, widget())
    assert status == 201, body
    assert body["spec"] == {"low": 0, "high": 10, "mode": "fast", "limits": {"cpu": "1", "gpu": 0}}
    assert widgets.get_object("widgets.test.grove.io", "default", "w")["spec"] == body["spec"]


def test_explicit_values_win_and_non_nullable_nulls_are_defaulted(widgets: FakeApiServer) -> None:
    """A value that is present is kept; ``null`` for a non-nullable field with a default becomes the default."""
    status, body = raw(widgets, "POST", WIDGETS, widget(low=3, limits={"cpu": "2", "gpu": None}))
    assert status == 201, body
    assert body["spec"]["low"] == 3
    assert body["spec"]["limits"] == {"cpu": "2", "gpu": 0}


def test_patch_results_and_reads_from_storage_are_defaulted(widgets: FakeApiServer) -> None:
    """An object stored without defaults (put_object stands in for data written before the default
    existed) reads back defaulted; a patch removing a defaulted field gets it back."""
    widgets.put_object(widget(low=1))
    status, body = raw(widgets, "GET", f"{WIDGETS}/w")
    assert status == 200 and body["spec"]["high"] == 10
    listed = raw(widgets, "GET", WIDGETS)[1]
    assert listed["items"][0]["spec"]["mode"] == "fast"
    status, body = raw(widgets, "PATCH", f"{WIDGETS}/w", {"spec": {"mode": None}}, "application/merge-patch+json")
    assert status == 200, body
    assert body["spec"]["mode"] == "fast"


def test_grove_pcsg_without_replicas_gets_1_and_scale_works(server: FakeApiServer) -> None:
    """Grove's PodCliqueScalingGroup CRD defaults ``spec.replicas`` to 1, so a PCSG created without it
    has ``/scale`` (which needs the spec value) answering ``spec.replicas: 1``."""
    custom = kubernetes.client.CustomObjectsApi(server.api_client())
    pcsg = {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueScalingGroup",
        "metadata": {"name": "p-0-sga"},
        "spec": {"cliqueNames": ["w"]},
    }
    created = custom.create_namespaced_custom_object("grove.io", "v1alpha1", "default", "podcliquescalinggroups", pcsg)
    assert created["spec"]["replicas"] == 1
    scale = custom.get_namespaced_custom_object_scale("grove.io", "v1alpha1", "default", "podcliquescalinggroups", "p-0-sga")
    assert scale["spec"]["replicas"] == 1


def test_apply_leaves_schemas_without_defaults_alone() -> None:
    """A schema with no ``default`` anywhere changes nothing (and is recognised as such)."""
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    obj: dict[str, Any] = {}
    fake_defaults.apply(schema, obj)
    assert obj == {}
    assert not fake_defaults.has_defaults(schema)
