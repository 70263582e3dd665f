"""Transport-independent request dispatch: route, inject faults, run the verb, log, render errors.

Kept apart from the socket code so the whole API surface is a plain function of a request,
and so every outcome — including bugs in the fake itself — becomes a ``Status`` response and a
request-log entry instead of a dropped connection.
"""

from __future__ import annotations

import json
import logging
import threading
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from tests.fakeserver import discovery
from tests.fakeserver.errors import (
    ApiError,
    bad_request,
    from_code,
    internal,
    method_not_allowed,
    not_found,
    path_not_found,
)
from tests.fakeserver.faults import FaultInjector, RequestLog, RequestRecord
from tests.fakeserver.handlers import ApiHandlers
from tests.fakeserver.resources import ResourceRegistry, ResourceType
from tests.fakeserver.routing import RequestInfo, parse_request
from tests.fakeserver.scale_api import ScaleApi
from tests.fakeserver.watch import WatchStream

JsonObj = dict[str, Any]
log = logging.getLogger("tests.fakeserver")


@dataclass
class HttpRequest:
    method: str
    path: str
    query: dict[str, str]
    headers: Mapping[str, str]
    body: bytes


@dataclass
class HttpResponse:
    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    stream: WatchStream | None = None


class ApiApp:
    """Turns :class:`HttpRequest` into :class:`HttpResponse` for the fake apiserver."""

    def __init__(
        self,
        registry: ResourceRegistry,
        handlers: ApiHandlers,
        faults: FaultInjector,
        request_log: RequestLog,
        *,
        kubernetes_version: str,
        server_address: Callable[[], str],
        stopping: threading.Event,
    ) -> None:
        self.registry = registry
        self.handlers = handlers
        self.scale = ScaleApi(handlers)
        self.faults = faults
        self.request_log = request_log
        self.kubernetes_version = kubernetes_version
        self._server_address = server_address
        self._stopping = stopping
        self._errors_lock = threading.Lock()
        self.internal_errors: list[str] = []

    def handle(self, request: HttpRequest) -> HttpResponse:
        info = parse_request(
            request.method, request.path, request.query.get("watch", "").lower() in ("true", "1")
        )
        try:
            response = self._handle(request, info)
        except ApiError as error:
            response = HttpResponse(error.code, error.to_status(), dict(error.headers))
        except Exception as error:  # a bug in the fake: answer like the apiserver would, and keep it
            detail = "".join(traceback.format_exception(error))
            log.error("fake apiserver failed on %s %s:\n%s", request.method, request.path, detail)
            with self._errors_lock:
                self.internal_errors.append(detail)
            failure = internal(f"{type(error).__name__}: {error}")
            response = HttpResponse(failure.code, failure.to_status())
        self.request_log.append(
            RequestRecord(
                info.verb, request.path, info.resource_label, info.namespace, info.name, response.status
            )
        )
        return response

    def _handle(self, request: HttpRequest, info: RequestInfo) -> HttpResponse:
        if info.kind == "discovery":
            return self._discovery(request, info)
        if info.kind == "other":
            return self._other(request)
        rt = self.registry.lookup(info.group, info.version, info.plural)
        if rt is None:
            raise path_not_found()
        headers = {k.lower(): v for k, v in request.headers.items()}
        self.handlers.caller.user_agent = headers.get("user-agent", "")
        self.handlers.caller.token = headers.get("authorization", "").removeprefix("Bearer ").strip()
        self._check_scope(rt, info)
        late = 0.0
        for fault in self.faults.take(info):
            if fault.late_answer:
                late = max(late, fault.delay)
                continue
            if fault.delay:
                self._stopping.wait(fault.delay)
            if fault.status is not None:
                raise from_code(fault.status, rt.group_resource, info.name, fault.message, fault.retry_after)
        response = self._dispatch(request, info, rt)
        if late:
            self._stopping.wait(late)
        return response

    @staticmethod
    def _check_scope(rt: ResourceType, info: RequestInfo) -> None:
        if rt.namespaced and info.namespace is None and info.verb not in ("list", "watch"):
            raise path_not_found()
        if not rt.namespaced and info.namespace is not None:
            raise path_not_found()
        if info.subresource:
            allowed = {"status"} if rt.has_status else set()
            if rt.scale is not None:
                allowed.add("scale")
            if rt.group == "" and rt.plural == "pods":
                allowed.add("binding")
            if info.subresource not in allowed:
                if not rt.builtin and info.name:  # apiextensions' crdHandler: an unserved subresource
                    raise not_found(rt.group_resource, info.name)
                raise path_not_found()
            verbs = ("create",) if info.subresource == "binding" else ("get", "update", "patch")
            if info.verb not in verbs:
                raise method_not_allowed(info.verb, rt.group_resource)
        elif info.verb not in rt.verbs:
            raise method_not_allowed(info.verb, rt.group_resource)

    def _dispatch(self, request: HttpRequest, info: RequestInfo, rt: ResourceType) -> HttpResponse:
        h = self.handlers
        q = request.query
        if info.subresource == "scale":
            return self._dispatch_scale(request, info, rt)
        if info.verb == "get":
            return HttpResponse(200, h.get(rt, info.namespace, info.name or ""))
        if info.verb == "list":
            return HttpResponse(200, h.list_objects(rt, info.namespace, q))
        if info.verb == "watch":
            return HttpResponse(200, stream=h.watch(rt, info.namespace, q))
        if info.verb == "create":
            if info.subresource == "binding":
                return HttpResponse(201, h.bind_pod(rt, info.namespace, info.name or "", self._body(request)))
            if info.name is not None:
                raise method_not_allowed("create", rt.group_resource)
            return HttpResponse(201, h.create(rt, info.namespace, self._body(request), q))
        if info.verb in ("update", "patch") and info.name is None:
            raise method_not_allowed(info.verb, rt.group_resource)
        if info.verb == "update":
            return HttpResponse(
                200, h.update(rt, info.namespace, info.name or "", self._body(request), info.subresource, q)
            )
        if info.verb == "patch":
            content_type = request.headers.get("Content-Type", "")
            if content_type.split(";", 1)[0].strip().lower() == "application/apply-patch+yaml":
                obj, created = h.apply_patch(rt, info.namespace, info.name or "", request.body, info.subresource or "", q)
                return HttpResponse(201 if created else 200, obj)
            return HttpResponse(
                200,
                h.patch(rt, info.namespace, info.name or "", request.body, content_type, info.subresource, q),
            )
        if info.verb == "delete":
            body = self._body(request) if request.body.strip() else None
            return HttpResponse(200, h.delete(rt, info.namespace, info.name or "", body, q))
        if info.verb == "deletecollection":
            return HttpResponse(200, h.delete_collection(rt, info.namespace, q))
        raise method_not_allowed(info.verb, rt.group_resource)

    def _dispatch_scale(self, request: HttpRequest, info: RequestInfo, rt: ResourceType) -> HttpResponse:
        name = info.name or ""
        if info.verb == "get":
            return HttpResponse(200, self.scale.get(rt, info.namespace, name))
        if info.verb == "update":
            return HttpResponse(200, self.scale.update(rt, info.namespace, name, self._body(request), request.query))
        content_type = request.headers.get("Content-Type", "")
        return HttpResponse(
            200, self.scale.patch(rt, info.namespace, name, request.body, content_type, request.query)
        )

    @staticmethod
    def _body(request: HttpRequest) -> Any:
        content_type = request.headers.get("Content-Type", "application/json").split(";")[0].strip().lower()
        try:
            if content_type in ("application/yaml", "text/yaml", "application/x-yaml"):
                return yaml.safe_load(request.body.decode("utf-8"))
            if content_type and "json" not in content_type:
                raise ApiError(
                    415,
                    "UnsupportedMediaType",
                    f"the body of the request was in an unknown format - accepted media types "
                    f"include: application/json, application/yaml (got {content_type})",
                )
            return json.loads(request.body or b"null")
        except (ValueError, yaml.YAMLError) as error:
            raise bad_request(f"the body of the request could not be decoded: {error}") from error

    def _discovery(self, request: HttpRequest, info: RequestInfo) -> HttpResponse:
        if request.method not in ("GET", "HEAD"):
            raise method_not_allowed(info.verb)
        kind = info.discovery[0]
        doc: JsonObj | None
        if kind == "api":
            doc = discovery.api_versions(self._server_address())
        elif kind == "apis" and len(info.discovery) == 1:
            doc = discovery.api_group_list(self.registry)
        elif kind == "apis":
            doc = discovery.api_group(self.registry, info.discovery[1])
        else:
            doc = discovery.api_resource_list(self.registry, info.group, info.version)
        if doc is None:
            raise path_not_found()
        return HttpResponse(200, doc)

    def _other(self, request: HttpRequest) -> HttpResponse:
        path = request.path.rstrip("/")
        if request.method == "GET" and path == "/version":
            return HttpResponse(200, discovery.version_info(self.kubernetes_version))
        if request.method == "GET" and path in ("/healthz", "/readyz", "/livez"):
            return HttpResponse(200, "ok", {"Content-Type": "text/plain; charset=utf-8"})
        raise path_not_found()
