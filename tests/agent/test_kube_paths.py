"""Names and API versions read from objects cannot steer the agent's requests elsewhere.

The agent builds REST paths from what objects say: a PodGang's gang-objects annotation names
the backend objects it waits for (any tenant who may edit the PodGang can write it), the
scaling half creates and deletes what a render holds, and ``migrate`` patches and deletes live
objects by the names it read. Each name is one escaped path segment (a ``?`` cannot add a
query, a ``/`` or ``..`` cannot climb to another resource) and an API version must be one, or
nothing is sent at all.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kubernetes.client.exceptions import ApiException

from grove_gitops.agent import kube as K
from grove_gitops.migrate import live
from grove_gitops.readmodel.gangs import ObjectRef
from tests.fakeapi.fakeapi_helpers import pod_manifest
from tests.fakeserver import FakeApiServer


def _in(namespace: str, obj: dict[str, Any]) -> dict[str, Any]:
    obj["metadata"]["namespace"] = namespace
    return obj


def test_a_name_with_a_query_deletes_nothing_else() -> None:
    """``p?x=1`` unescaped was the path of pod ``p``: deleting it deleted ``p``."""
    with FakeApiServer(namespaces=("default",)) as server:
        kube = K.Kube(server.api_client())
        pod = kube.create(_in("default", pod_manifest("p")))
        kube.delete_object("v1", "Pod", "default", "p?x=1", pod["metadata"]["uid"])  # 404: gone is success
        assert kube.read_pod("default", "p")["metadata"]["uid"] == pod["metadata"]["uid"]
        deletes = [r for r in server.requests if r.verb == "delete"]
        assert [r.path for r in deletes] == ["/api/v1/namespaces/default/pods/p%3Fx%3D1"]


def test_a_climbing_name_in_a_gang_annotation_stays_one_segment() -> None:
    with FakeApiServer(namespaces=("default", "kube-system")) as server:
        kube = K.Kube(server.api_client())
        kube.create(_in("kube-system", pod_manifest("secret-pod")))
        hostile = ObjectRef("v1", "Pod", "default", "../../kube-system/pods/secret-pod")
        assert kube.object_exists(hostile) is False  # the pod of that name in kube-system is not it
        gets = [r.path for r in server.requests if r.verb == "get" and "secret-pod" in r.path]
        assert gets == ["/api/v1/namespaces/default/pods/..%2F..%2Fkube-system%2Fpods%2Fsecret-pod"]


@pytest.mark.parametrize(
    "api_version",
    ["v1/../../apis/rbac.authorization.k8s.io/v1", "v1?watch=true", "scheduling.run.ai/v2/../v1", "", "apps/", "V1",
     "a" * 400 + "/v1"],
)
def test_an_api_version_that_is_not_one_sends_nothing(api_version: str) -> None:
    with FakeApiServer(namespaces=("default",)) as server:
        kube = K.Kube(server.api_client())
        before = len(server.requests)
        with pytest.raises(ApiException) as info:
            kube.object_exists(ObjectRef(api_version, "PodGroup", "default", "g"))
        assert info.value.status == 400 and "not an API version" in str(info.value.reason)
        with pytest.raises(ApiException):
            kube.create({"apiVersion": api_version, "kind": "X", "metadata": {"name": "x", "namespace": "default"}})
        assert len(server.requests) == before


@pytest.mark.parametrize("api_version", ["v1", "apps/v1", "scheduling.run.ai/v2", "scheduler.grove.io/v1alpha1",
                                         "autoscaling/v2beta2", "scheduling.k8s.io/v1beta1"])
def test_real_api_versions_are_accepted(api_version: str) -> None:
    assert K.api_root(api_version).endswith("/" + api_version)


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1, max_size=80))
def test_migrate_paths_keep_any_name_in_its_segment(name: str) -> None:
    path = live.member("v1", "pods", "default", name)
    prefix = "/api/v1/namespaces/default/pods/"
    assert path.startswith(prefix)
    tail = path[len(prefix):]
    assert "/" not in tail and "?" not in tail and "#" not in tail
    assert unquote(tail) == name
