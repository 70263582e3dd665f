"""Map an HTTP method and URL path to a Kubernetes request (verb, group/version, resource, scope).

Follows ``k8s.io/apiserver/pkg/endpoints/request.RequestInfoFactory``: ``/api/v1/...`` is the
core group, ``/apis/<group>/<version>/...`` the others, ``namespaces/<ns>/`` scopes a request,
and GET without a name is ``list`` or, with ``?watch=true``, ``watch``.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote

# Subresources of a Namespace object itself (/api/v1/namespaces/<name>/<sub>).
_NAMESPACE_SUBRESOURCES = ("status", "finalize")


@dataclass(frozen=True)
class RequestInfo:
    """What a request addresses. ``kind`` is resource, discovery or other (``/version``...)."""

    kind: str
    verb: str
    path: str
    group: str = ""
    version: str = ""
    plural: str = ""
    namespace: str | None = None
    name: str | None = None
    subresource: str = ""
    discovery: tuple[str, ...] = ()

    @property
    def resource_label(self) -> str:
        """``pods`` or ``pods/status``: how the request log and faults name the target."""
        return f"{self.plural}/{self.subresource}" if self.subresource else self.plural


def _verb(method: str, has_name: bool, watch: bool) -> str:
    if method in ("GET", "HEAD"):
        if has_name:
            return "get"
        return "watch" if watch else "list"
    if method == "POST":
        return "create"
    if method == "PUT":
        return "update"
    if method == "PATCH":
        return "patch"
    if method == "DELETE":
        return "delete" if has_name else "deletecollection"
    return method.lower()


def parse_request(method: str, path: str, watch: bool) -> RequestInfo:
    """Classify one request; never raises (unknown shapes become ``kind="other"``)."""
    parts = [unquote(p) for p in path.split("/") if p]
    if not parts or parts[0] not in ("api", "apis"):
        return RequestInfo("other", _verb(method, True, False), path)
    if parts[0] == "api":
        if len(parts) == 1:
            return RequestInfo("discovery", "get", path, discovery=("api",))
        group, version, rest = "", parts[1], parts[2:]
    else:
        if len(parts) == 1:
            return RequestInfo("discovery", "get", path, discovery=("apis",))
        if len(parts) == 2:
            return RequestInfo("discovery", "get", path, group=parts[1], discovery=("apis", parts[1]))
        group, version, rest = parts[1], parts[2], parts[3:]
    if not rest:
        return RequestInfo(
            "discovery", "get", path, group=group, version=version, discovery=("resources", group, version)
        )
    namespace: str | None = None
    namespace_object = (
        group == "" and rest[0] == "namespaces" and len(rest) == 3 and rest[2] in _NAMESPACE_SUBRESOURCES
    )
    if rest[0] == "namespaces" and len(rest) >= 3 and not namespace_object:
        namespace, rest = rest[1], rest[2:]
    if len(rest) > 3:
        return RequestInfo("other", _verb(method, True, False), path)
    plural = rest[0]
    name = rest[1] if len(rest) > 1 else None
    subresource = rest[2] if len(rest) > 2 else ""
    return RequestInfo(
        "resource",
        _verb(method, name is not None, watch),
        path,
        group,
        version,
        plural,
        namespace,
        name,
        subresource,
    )
