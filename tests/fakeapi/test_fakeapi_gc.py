"""Garbage collection by ``ownerReferences``, pinned to the Kubernetes documentation.

Rules (kubernetes.io "Garbage Collection" → "Cascading deletion", and "Owners and Dependents"):

- deleting an owner deletes its dependents (background cascading deletion is the default);
- ``propagationPolicy: Orphan`` leaves the dependents, removing the owner's reference from them;
- a dependent with another owner that still exists is not deleted (the collector drops the
  reference to the owner that is gone);
- "Namespaced dependents can only specify owners in the same namespace"; cluster-scoped owners
  may own namespaced dependents;
- the cascade continues through dependents' own dependents; a dependent with finalizers is
  marked for deletion and removed (cascading further) once its finalizers are cleared.

The fake collects synchronously (before the DELETE answers); the cluster does it shortly after.
"""

from __future__ import annotations

from typing import Any

import kubernetes.client
import pytest

from tests.fakeapi.fakeapi_helpers import pod_manifest
from tests.fakeserver import FakeApiServer


def owned(manifest: dict[str, Any], *owners: dict[str, Any]) -> dict[str, Any]:
    manifest["metadata"]["ownerReferences"] = [
        {
            "apiVersion": o["apiVersion"],
            "kind": o["kind"],
            "name": o["metadata"]["name"],
            "uid": o["metadata"]["uid"],
            "controller": index == 0,
            "blockOwnerDeletion": True,
        }
        for index, o in enumerate(owners)
    ]
    return manifest


def configmap(core: kubernetes.client.CoreV1Api, name: str, namespace: str = "default", *owners: dict[str, Any]) -> dict[str, Any]:
    body = owned({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}, *owners)
    created = core.create_namespaced_config_map(namespace, body)
    return dict(kubernetes.client.ApiClient().sanitize_for_serialization(created), apiVersion="v1", kind="ConfigMap")


def pod_of(core: kubernetes.client.CoreV1Api, name: str, *owners: dict[str, Any], namespace: str = "default") -> None:
    core.create_namespaced_pod(namespace, owned(pod_manifest(name, gates=()), *owners))


def names(core: kubernetes.client.CoreV1Api, namespace: str = "default") -> list[str]:
    return [p.metadata.name for p in core.list_namespaced_pod(namespace).items]


def test_deleting_an_owner_deletes_its_dependents_by_default(core: kubernetes.client.CoreV1Api) -> None:
    """Background cascading deletion is the default: both owned pods go, an unowned one stays."""
    owner = configmap(core, "owner")
    pod_of(core, "a", owner)
    pod_of(core, "b", owner)
    pod_of(core, "free")
    core.delete_namespaced_config_map("owner", "default")
    assert names(core) == ["free"]


def test_cascade_follows_chains(core: kubernetes.client.CoreV1Api) -> None:
    """Owner → ConfigMap → pod: deleting the top removes the whole chain."""
    top = configmap(core, "top")
    middle = configmap(core, "middle", "default", top)
    pod_of(core, "leaf", middle)
    core.delete_namespaced_config_map("top", "default")
    assert names(core) == []
    assert [c.metadata.name for c in core.list_namespaced_config_map("default").items] == []


def test_orphan_keeps_dependents_and_drops_the_reference(core: kubernetes.client.CoreV1Api) -> None:
    """``propagationPolicy: Orphan``: the pod stays and no longer names the owner."""
    owner = configmap(core, "owner")
    pod_of(core, "a", owner)
    core.delete_namespaced_config_map("owner", "default", propagation_policy="Orphan")
    assert names(core) == ["a"]
    assert core.read_namespaced_pod("a", "default").metadata.owner_references is None


def test_foreground_is_treated_as_background(core: kubernetes.client.CoreV1Api) -> None:
    """Foreground deletion also removes dependents (the fake does not wait for them first)."""
    owner = configmap(core, "owner")
    pod_of(core, "a", owner)
    core.delete_namespaced_config_map("owner", "default", propagation_policy="Foreground")
    assert names(core) == []


def test_a_dependent_with_another_live_owner_is_kept(core: kubernetes.client.CoreV1Api) -> None:
    """Two owners: deleting one keeps the pod and leaves only the other's reference."""
    first = configmap(core, "first")
    second = configmap(core, "second")
    pod_of(core, "shared", first, second)
    core.delete_namespaced_config_map("first", "default")
    refs = core.read_namespaced_pod("shared", "default").metadata.owner_references
    assert [r.name for r in refs] == ["second"]
    core.delete_namespaced_config_map("second", "default")
    assert names(core) == []


def test_a_namespaced_owner_owns_nothing_in_other_namespaces(core: kubernetes.client.CoreV1Api) -> None:
    """An ownerReference from another namespace does not make the pod a dependent of that owner."""
    core.create_namespace({"metadata": {"name": "other"}})
    owner = configmap(core, "owner")
    pod_of(core, "elsewhere", owner, namespace="other")
    core.delete_namespaced_config_map("owner", "default")
    assert names(core, "other") == ["elsewhere"]


def test_a_cluster_scoped_owner_owns_namespaced_dependents(core: kubernetes.client.CoreV1Api) -> None:
    """A Namespace (cluster-scoped) owning a pod in another namespace: the pod goes with it."""
    ns_owner = core.create_namespace({"metadata": {"name": "owner-ns"}})
    owner = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "owner-ns", "uid": ns_owner.metadata.uid}}
    pod_of(core, "a", owner)
    core.delete_namespace("owner-ns")
    assert names(core) == []


def test_dependents_with_finalizers_wait_for_them(server: FakeApiServer, core: kubernetes.client.CoreV1Api) -> None:
    """A dependent with a finalizer is marked for deletion; clearing the finalizer removes it and
    continues the cascade to its own dependents."""
    owner = configmap(core, "owner")
    body = owned({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "held", "finalizers": ["x/y"]}}, owner)
    held = core.create_namespaced_config_map("default", body)
    held_ref = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "held", "uid": held.metadata.uid}}
    pod_of(core, "leaf", held_ref)
    core.delete_namespaced_config_map("owner", "default")
    marked = core.read_namespaced_config_map("held", "default")
    assert marked.metadata.deletion_timestamp is not None
    assert names(core) == ["leaf"]
    core.patch_namespaced_config_map("held", "default", {"metadata": {"finalizers": None}})
    assert names(core) == []


def test_custom_resources_are_collected_too(server: FakeApiServer, custom: kubernetes.client.CustomObjectsApi) -> None:
    """Pods owned by a custom resource go when the custom resource is deleted (any kind can own)."""
    core = kubernetes.client.CoreV1Api(server.api_client())
    gang = custom.create_namespaced_custom_object(
        "scheduler.grove.io",
        "v1alpha1",
        "default",
        "podgangs",
        {
            "apiVersion": "scheduler.grove.io/v1alpha1",
            "kind": "PodGang",
            "metadata": {"name": "g"},
            "spec": {"podgroups": [{"name": "w", "minReplicas": 1, "podReferences": [{"name": "p", "namespace": "default"}]}]},
        },
    )
    pod_of(core, "p", gang)
    custom.delete_namespaced_custom_object("scheduler.grove.io", "v1alpha1", "default", "podgangs", "g")
    assert names(core) == []


@pytest.mark.parametrize("policy", ["Background", None])
def test_delete_collection_cascades(core: kubernetes.client.CoreV1Api, policy: str | None) -> None:
    """DELETE of a collection deletes each item, each with its cascade."""
    owner = configmap(core, "owner")
    pod_of(core, "a", owner)
    core.delete_collection_namespaced_config_map("default", propagation_policy=policy)
    assert names(core) == []
