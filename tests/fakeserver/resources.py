"""Which resource types the fake serves, and how each one behaves.

A real apiserver's behaviour differs per type in small ways that controllers notice: whether
there is a ``status`` subresource (then main-resource writes ignore status), whether the type is
namespaced, whether strategic merge patch is accepted (built-ins only), and whether DELETE
answers with the object or with a ``Status``. :class:`ResourceType` records exactly those
switches; :class:`ResourceRegistry` is the thread-safe table the router and discovery read.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Any, NamedTuple

ALL_VERBS: tuple[str, ...] = (
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
)


class GroupResource(NamedTuple):
    """``pods`` or ``podgangs.scheduler.grove.io``: how the server names a type in messages."""

    group: str
    resource: str

    def __str__(self) -> str:
        return f"{self.resource}.{self.group}" if self.group else self.resource

    @classmethod
    def parse(cls, text: str) -> GroupResource:
        """``"leases.coordination.k8s.io"`` → ``("coordination.k8s.io", "leases")``."""
        plural, _, group = text.partition(".")
        return cls(group, plural)


class GroupKind(NamedTuple):
    """``Pod`` or ``PodGang.scheduler.grove.io``: how the server names a kind in 422 messages."""

    group: str
    kind: str

    def __str__(self) -> str:
        return f"{self.kind}.{self.group}" if self.group else self.kind


@dataclass(frozen=True)
class ScaleSubresource:
    """A CRD version's ``subresources.scale``: where ``/scale`` reads and writes its numbers.

    Paths are the CRD's simple JSON paths (``.spec.replicas``); ``label_selector_path`` is
    ``None`` when the CRD sets none (the Scale's ``status.selector`` is then always empty).
    """

    spec_replicas_path: str
    status_replicas_path: str
    label_selector_path: str | None = None


@dataclass(frozen=True)
class ResourceType:
    """One served (group, version, plural) and the per-type switches the handlers consult.

    ``builtin`` types are validated by the built-in (Kubernetes schema) validator and accept
    strategic merge patch; the others are custom resources validated against ``schema`` (the
    CRD's ``openAPIV3Schema``) and reject strategic merge with 415, as a real server does.
    ``scale`` is set for a custom resource version that declares a scale subresource.
    """

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True
    has_status: bool = False
    singular: str = ""
    short_names: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    builtin: bool = True
    returns_deleted_object: bool = False
    schema: dict[str, Any] | None = field(default=None, compare=False, hash=False, repr=False)
    categories: tuple[str, ...] = ()
    scale: ScaleSubresource | None = None

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_resource(self) -> GroupResource:
        return GroupResource(self.group, self.plural)

    @property
    def group_kind(self) -> GroupKind:
        return GroupKind(self.group, self.kind)

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def singular_name(self) -> str:
        return self.singular or self.kind.lower()


_VERSION_RE = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(version: str) -> tuple[int, int, int]:
    """Kube-aware version order key: v1 > v1beta2 > v1beta1 > v1alpha1 > anything odd.

    Discovery lists a group's versions in this order and the first is the preferred one.
    """
    match = _VERSION_RE.match(version)
    if not match:
        return (0, 0, 0)
    major, stage, minor = match.groups()
    rank = {"alpha": 1, "beta": 2, None: 3}[stage]
    return (rank, int(major), int(minor or 0))


class ResourceRegistry:
    """Thread-safe table of served resource types (built-ins, CRDs, programmatic extras)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._types: dict[tuple[str, str, str], ResourceType] = {}

    def register(self, rt: ResourceType) -> None:
        """Serve ``rt`` (replacing an earlier registration of the same group/version/plural)."""
        with self._lock:
            self._types[(rt.group, rt.version, rt.plural)] = rt

    def unregister(self, group: str, plural: str) -> list[ResourceType]:
        """Stop serving every version of ``plural.group``; returns what was removed."""
        with self._lock:
            gone = [rt for key, rt in self._types.items() if key[0] == group and key[2] == plural]
            for rt in gone:
                del self._types[(rt.group, rt.version, rt.plural)]
            return gone

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        with self._lock:
            return self._types.get((group, version, plural))

    def versions_of(self, gr: GroupResource) -> list[ResourceType]:
        """Every served version of a group/resource, preferred version first."""
        with self._lock:
            found = [rt for (g, _, p), rt in self._types.items() if g == gr.group and p == gr.resource]
        return sorted(found, key=lambda rt: version_priority(rt.version), reverse=True)

    def by_kind(self, api_version: str, kind: str) -> ResourceType | None:
        group, _, version = api_version.rpartition("/")
        with self._lock:
            for (g, v, _), rt in self._types.items():
                if g == group and v == version and rt.kind == kind:
                    return rt
        return None

    def resolve(self, resource: str) -> ResourceType:
        """Find the preferred version for ``"pods"``, ``"leases.coordination.k8s.io"`` or a kind.

        Tests use this to address objects directly without spelling out versions.
        """
        gr = GroupResource.parse(resource)
        versions = self.versions_of(gr)
        if versions:
            return versions[0]
        with self._lock:
            candidates = [
                rt for rt in self._types.values() if resource in (rt.kind, rt.singular_name, *rt.short_names)
            ]
        if len(candidates) >= 1 and len({rt.group_resource for rt in candidates}) == 1:
            return sorted(candidates, key=lambda rt: version_priority(rt.version), reverse=True)[0]
        raise KeyError(f"unknown or ambiguous resource {resource!r}")

    def groups(self) -> dict[str, list[str]]:
        """group → served versions, preferred first (the core group is ``""``)."""
        with self._lock:
            pairs = {(g, v) for (g, v, _) in self._types}
        out: dict[str, list[str]] = {}
        for group, version in pairs:
            out.setdefault(group, []).append(version)
        for versions in out.values():
            versions.sort(key=version_priority, reverse=True)
        return dict(sorted(out.items()))

    def in_group_version(self, group: str, version: str) -> list[ResourceType]:
        with self._lock:
            found = [rt for (g, v, _), rt in self._types.items() if g == group and v == version]
        return sorted(found, key=lambda rt: rt.plural)

    def all(self) -> list[ResourceType]:
        with self._lock:
            return list(self._types.values())


def builtin_types() -> list[ResourceType]:
    """The built-in kinds a gate-lifter or renderer test plausibly touches.

    Pods and namespaces answer DELETE with the object (pods are gracefully deleted, namespaces
    go Terminating); the rest answer with a ``Status``, as the real registries do.
    """
    core = [
        ResourceType(
            "",
            "v1",
            "pods",
            "Pod",
            has_status=True,
            short_names=("po",),
            returns_deleted_object=True,
            categories=("all",),
        ),
        ResourceType(
            "",
            "v1",
            "namespaces",
            "Namespace",
            namespaced=False,
            has_status=True,
            short_names=("ns",),
            returns_deleted_object=True,
        ),
        ResourceType(
            "",
            "v1",
            "services",
            "Service",
            has_status=True,
            short_names=("svc",),
            returns_deleted_object=True,
            categories=("all",),
        ),
        ResourceType("", "v1", "events", "Event", short_names=("ev",)),
        ResourceType("", "v1", "resourcequotas", "ResourceQuota", has_status=True, short_names=("quota",)),
        ResourceType("", "v1", "configmaps", "ConfigMap", short_names=("cm",)),
        ResourceType("", "v1", "secrets", "Secret"),
        ResourceType("", "v1", "serviceaccounts", "ServiceAccount", short_names=("sa",)),
        ResourceType("", "v1", "nodes", "Node", namespaced=False, has_status=True, short_names=("no",)),
    ]
    others = [
        ResourceType("coordination.k8s.io", "v1", "leases", "Lease"),
        ResourceType("events.k8s.io", "v1", "events", "Event", short_names=("ev",)),
        ResourceType("rbac.authorization.k8s.io", "v1", "roles", "Role"),
        ResourceType("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding"),
        ResourceType("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", namespaced=False),
        ResourceType(
            "rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", namespaced=False
        ),
        ResourceType(
            "apiextensions.k8s.io",
            "v1",
            "customresourcedefinitions",
            "CustomResourceDefinition",
            namespaced=False,
            has_status=True,
            short_names=("crd", "crds"),
        ),
    ]
    return core + others
