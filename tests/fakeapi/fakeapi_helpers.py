"""Manifests and raw-HTTP helpers shared by the fake apiserver tests."""

from __future__ import annotations

import json
from typing import Any

import urllib3

from tests.fakeserver import FakeApiServer

GATE = "grove.io/podgang-pending-creation"


def pod_manifest(
    name: str,
    *,
    gates: tuple[str, ...] = (GATE,),
    labels: dict[str, str] | None = None,
    image: str = "registry.k8s.io/pause:3.10",
) -> dict[str, Any]:
    """A minimal pod like the renderer emits: one container, Grove's gate."""
    spec: dict[str, Any] = {"containers": [{"name": "main", "image": image}]}
    if gates:
        spec["schedulingGates"] = [{"name": g} for g in gates]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {"app": "demo"}},
        "spec": spec,
    }


def podgang_manifest(name: str, pods: list[str] | None = None) -> dict[str, Any]:
    """A PodGang valid against the real scheduler.grove.io CRD."""
    refs = [{"name": p, "namespace": "default"} for p in (pods or ["p-0"])]
    return {
        "apiVersion": "scheduler.grove.io/v1alpha1",
        "kind": "PodGang",
        "metadata": {"name": name},
        "spec": {"podgroups": [{"name": "workers", "minReplicas": 1, "podReferences": refs}]},
    }


def raw(
    server: FakeApiServer, method: str, path: str, body: Any = None, content_type: str = "application/json"
) -> tuple[int, Any]:
    """One request bypassing the typed client (which validates bodies client-side)."""
    data = None if body is None else json.dumps(body).encode()
    response = urllib3.request(
        method, server.url + path, body=data, headers={"Content-Type": content_type}, retries=False, timeout=30
    )
    text = response.data.decode()
    return response.status, json.loads(text) if text.startswith(("{", "[")) else text
