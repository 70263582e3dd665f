"""Warnings for namespaces a render relies on without saying so.

Two silent surprises of a GitOps apply: a PodCliqueSet without ``metadata.namespace`` in a
source whose RenderConfiguration sets no ``defaultNamespace`` lands in ``default``; and an
object rendered into a namespace that the source does not create (no ``v1`` Namespace
object) fails to apply unless the cluster happens to have it. Both are warnings, not errors
(namespaces are often made by another repository); RenderConfiguration's
``existingNamespaces`` names the ones the cluster has, which silences the second. The
namespaces every cluster has (``default``, ``kube-system``, ...) never need declaring.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

from grove_gitops.api.renderconfig import RenderConfig
from grove_gitops.fields.fielderrors import go_value
from grove_gitops.fields.suggest import MAX_CANDIDATES, did_you_mean
from grove_gitops.load.source import SourceSet

#: Namespaces Kubernetes creates itself.
BUILT_IN = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})
FIELD = "metadata.namespace"


def _namespace_of(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata")
    value = meta.get("namespace") if isinstance(meta, dict) else None
    return value if isinstance(value, str) else ""


def created_namespaces(source: SourceSet) -> set[str]:
    """The namespaces the source's own ``v1`` Namespace objects create."""
    out: set[str] = set()
    for item in source.passthrough:
        obj = item.obj
        if obj.get("apiVersion") == "v1" and obj.get("kind") == "Namespace":
            meta = obj.get("metadata")
            name = meta.get("name") if isinstance(meta, dict) else None
            if isinstance(name, str):
                out.add(name)
    return out


def namespace_warnings(source: SourceSet, render: RenderConfig, in_cluster: Collection[str] = ()) -> list[str]:
    """``file: metadata.namespace: message`` for each file that relies on an implicit or
    undeclared namespace, once per file and namespace. ``in_cluster``: the namespaces of the
    source's ClusterFacts, which RenderConfiguration's ``existingNamespaces`` predates."""
    explicit_default = "defaultNamespace" in render.model_fields_set
    known = BUILT_IN | created_namespaces(source) | set(render.existingNamespaces) | set(in_cluster)
    warnings: list[str] = []
    seen: set[tuple[str, str]] = set()
    # the namespaces the source, RenderConfiguration or the cluster facts name: the ones a typo
    # is likely of (Kubernetes' own four are never guessed, and without others nothing is tried)
    candidates = sorted(known - BUILT_IN)[:MAX_CANDIDATES]

    def undeclared(file: str, namespace: str, how: str) -> None:
        if namespace in known or (file, namespace) in seen:
            return
        seen.add((file, namespace))
        warnings.append(
            f"{file}: {FIELD}: namespace {go_value(namespace)}{how} is not created by the source (no v1 Namespace "
            "object) nor listed in RenderConfiguration existingNamespaces or ClusterFacts; applying fails unless the "
            "cluster has it"
            + did_you_mean(namespace, candidates)
        )

    for item in source.podcliquesets:
        written = _namespace_of(item.obj)
        if written:
            undeclared(item.file, written, "")
        elif not explicit_default:
            if (item.file, "") not in seen:
                seen.add((item.file, ""))
                warnings.append(
                    f"{item.file}: {FIELD}: not set, and RenderConfiguration sets no defaultNamespace: the "
                    f"PodCliqueSet renders into namespace {go_value(render.defaultNamespace)}; set one of them"
                )
            undeclared(item.file, render.defaultNamespace, "")
        else:
            undeclared(item.file, render.defaultNamespace, " (RenderConfiguration defaultNamespace)")
    for file, namespace in _passthrough_namespaces(source):
        undeclared(file, namespace, "")
    return warnings


def _passthrough_namespaces(source: SourceSet) -> Iterable[tuple[str, str]]:
    for item in source.passthrough:
        namespace = _namespace_of(item.obj)
        if namespace:
            yield item.file, namespace
