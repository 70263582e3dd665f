"""What the cluster runs for one PodCliqueSet: the ``grove.io`` objects and their children.

Read with the user's credentials (``migrate plan|apply``), by name and by the label
``app.kubernetes.io/part-of: <P>`` that Grove puts on every child
(``spec/grove-desired-state.md`` §4, §7). Both managers' objects are read: a migration that was
interrupted has some pods handed over already (``managed-by: grove-gitops``) and some not.
Every list is bounded (:data:`MAX_OBJECTS` per kind): a namespace with more is refused, never
read whole into memory.
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass, field
from typing import Any

from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from grove_gitops.agent.kube import Kube, api_root, path_segment
from grove_gitops.errors import GroveGitopsError

Raw = dict[str, Any]
GROVE_API = "grove.io/v1alpha1"
PODGANG_API = "scheduler.grove.io/v1alpha1"
PART_OF = "app.kubernetes.io/part-of"
#: Objects of one kind read at most: far more pods than a PodCliqueSet the agent accepts
#: (grove_gitops.readmodel.gangs.MAX_WORKLOAD_PODS) plus terminating ones.
MAX_OBJECTS = 20_000

#: The children handed over by name (Grove and the render use the same names): apiVersion, plural.
HANDOVER_KINDS = (
    (PODGANG_API, "podgangs"),
    ("v1", "services"),
    ("v1", "serviceaccounts"),
    ("v1", "secrets"),
    ("rbac.authorization.k8s.io/v1", "roles"),
    ("rbac.authorization.k8s.io/v1", "rolebindings"),
)


class MigrateError(GroveGitopsError):
    """The cluster could not be read or written (the server's message is in it)."""


def collection(api_version: str, plural: str, namespace: str) -> str:
    """The path of a namespaced collection, every part checked or escaped (see :func:`member`)."""
    return f"{api_root(api_version)}/namespaces/{path_segment(namespace)}/{path_segment(plural)}"


def member(api_version: str, plural: str, namespace: str, name: object) -> str:
    """The path of one object. Its name is read from a live object: escaped, it stays that
    object's own path segment whatever it holds."""
    return f"{collection(api_version, plural, namespace)}/{path_segment(str(name))}"


@dataclass
class Live:
    """The live objects of PodCliqueSet ``namespace/name`` (empty lists when none)."""

    namespace: str
    name: str
    pcs: Raw | None = None
    podcliques: list[Raw] = field(default_factory=list)
    scaling_groups: list[Raw] = field(default_factory=list)
    pods: list[Raw] = field(default_factory=list)
    podgangs: list[Raw] = field(default_factory=list)
    hpas: list[Raw] = field(default_factory=list)
    #: Children handed over by name: (apiVersion, plural, object), PodGangs included.
    others: list[tuple[str, str, Raw]] = field(default_factory=list)


def get(kube: Kube, path: str) -> Raw | None:
    try:
        return kube.raw("GET", path)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise MigrateError(f"GET {path}: {exc.status} {exc.reason}: {str(exc.body or '')[:300]}") from None
    except (HTTPError, OSError) as exc:
        raise MigrateError(f"GET {path}: {exc}") from None


def _list(kube: Kube, api_version: str, plural: str, namespace: str, name: str) -> list[Raw]:
    selector = urllib.parse.quote(f"{PART_OF}={name}")
    path = f"{collection(api_version, plural, namespace)}?labelSelector={selector}&limit={MAX_OBJECTS}"
    found = get(kube, path)
    if found is None:
        return []  # the kind is not served (e.g. no Grove CRDs): nothing of it exists
    if (found.get("metadata") or {}).get("continue"):
        raise MigrateError(f"{namespace}: more than {MAX_OBJECTS} {plural} labelled {PART_OF}={name}; not read")
    items = found.get("items") or []
    return [i for i in items if isinstance(i, dict)]


def read(kube: Kube, namespace: str, name: str) -> Live:
    """Everything :mod:`.compare` and :mod:`.handover` need, read now."""
    live = Live(namespace, name)
    live.pcs = get(kube, member(GROVE_API, "podcliquesets", namespace, name))
    live.podcliques = _list(kube, GROVE_API, "podcliques", namespace, name)
    live.scaling_groups = _list(kube, GROVE_API, "podcliquescalinggroups", namespace, name)
    live.pods = _list(kube, "v1", "pods", namespace, name)
    live.hpas = _list(kube, "autoscaling/v2", "horizontalpodautoscalers", namespace, name)
    for api_version, plural in HANDOVER_KINDS:
        for obj in _list(kube, api_version, plural, namespace, name):
            live.others.append((api_version, plural, obj))
            if plural == "podgangs":
                live.podgangs.append(obj)
    return live
