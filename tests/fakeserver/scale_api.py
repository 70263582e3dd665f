"""GET, PUT and PATCH of ``<plural>/<name>/scale`` for custom resources, as apiextensions' ``ScaleREST``.

A scale write is an update of the custom resource itself: the new ``spec.replicas`` is set at
the CRD's ``specReplicasPath`` in the stored object, and the result goes through the main
resource's whole update pipeline (:meth:`ApiHandlers.update_via`): resourceVersion and UID
preconditions (409), status carried over, generation bumped, metadata and CRD-schema
validation plus the scale range checks (422), compare-and-swap commit and a MODIFIED watch
event of the object. Nothing of the Scale except ``spec.replicas`` and those preconditions
reaches the object (its ``status`` is ignored). A patch is applied to the Scale as GET would
return it — with the int32 minimum standing in for a missing spec value, so a patch that does
not set one is refused ("cannot be empty") — and then treated like a PUT of the result.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tests.fakeserver.errors import ApiError, bad_request, internal, invalid_patch, unsupported_media_type
from tests.fakeserver.handlers import APPLY_PATCH, JSON_PATCH, MERGE_PATCH, ApiHandlers, Query
from tests.fakeserver.patch import PatchError, PatchFormatError, apply_json_patch, apply_merge_patch
from tests.fakeserver.resources import ResourceType, ScaleSubresource
from tests.fakeserver.scale import (
    INVALID_SPEC_REPLICAS,
    AccessorError,
    ScaleRequest,
    decode_scale,
    scale_of,
    set_nested,
)

JsonObj = dict[str, Any]


def _unconverted(message: str) -> ApiError:
    """What the apiserver answers for a plain Go error (not a Status): 500, reason unknown."""
    return ApiError(500, "", message)


def _scale_spec(rt: ResourceType) -> ScaleSubresource:
    if rt.scale is None:  # the router only sends scale requests for types that have one
        raise internal(f"{rt.group_resource} has no scale subresource")
    return rt.scale


def _read(spec: ScaleSubresource, obj: JsonObj) -> tuple[JsonObj, bool]:
    try:
        return scale_of(spec, obj)
    except AccessorError as error:
        raise _unconverted(str(error)) from error


class ScaleApi:
    """The ``scale`` subresource verbs; one per fake server, sharing its :class:`ApiHandlers`."""

    def __init__(self, handlers: ApiHandlers) -> None:
        self.handlers = handlers

    def get(self, rt: ResourceType, namespace: str | None, name: str) -> JsonObj:
        spec = _scale_spec(rt)
        scale, found = _read(spec, self.handlers.get(rt, namespace, name))
        if not found:
            raise internal(f'the spec replicas field "{spec.spec_replicas_path}" does not exist')
        return scale

    def update(self, rt: ResourceType, namespace: str | None, name: str, body: Any, query: Query) -> JsonObj:
        request = decode_scale(body)
        _check_identity(rt, namespace, name, request)
        return self._write(rt, namespace, name, lambda _old: request, query, uid_precondition=True)

    def patch(
        self, rt: ResourceType, namespace: str | None, name: str, raw: bytes, content_type: str, query: Query
    ) -> JsonObj:
        media = content_type.split(";", 1)[0].strip().lower()
        appliers: dict[str, Callable[[JsonObj, Any], JsonObj]] = {
            JSON_PATCH: apply_json_patch,
            MERGE_PATCH: apply_merge_patch,
        }
        if media not in appliers:  # custom resources take no strategic merge patch, /scale included
            accepted = list(appliers)
            if media == APPLY_PATCH:
                accepted.append("(server-side apply is not emulated by the fake)")
            raise unsupported_media_type(accepted)
        try:
            document = json.loads(raw or b"null")
        except ValueError as error:
            raise bad_request(f"error decoding patch: {error}") from error
        apply = appliers[media]

        def patched(old: JsonObj) -> ScaleRequest:
            try:
                new = apply(old, document)
            except PatchFormatError as error:
                raise bad_request(str(error)) from error
            except PatchError as error:
                raise invalid_patch(str(error)) from error
            request = decode_scale(new)
            _check_identity(rt, namespace, name, request)
            return request

        return self._write(rt, namespace, name, patched, query, uid_precondition=False)

    def _write(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        requested: Callable[[JsonObj], ScaleRequest],
        query: Query,
        *,
        uid_precondition: bool,
    ) -> JsonObj:
        spec = _scale_spec(rt)

        def mutate(current: JsonObj) -> JsonObj:
            old, found = _read(spec, current)
            if not found:
                old["spec"]["replicas"] = INVALID_SPEC_REPLICAS
            request = requested(old)
            if request.replicas == INVALID_SPEC_REPLICAS:
                raise bad_request(f'the spec replicas field "{spec.spec_replicas_path}" cannot be empty')
            try:
                set_nested(current, spec.spec_replicas_path, request.replicas)
            except AccessorError as error:
                raise _unconverted(str(error)) from error
            meta = current["metadata"]
            if request.resource_version:  # the client's precondition; without one the write is unconditional
                meta["resourceVersion"] = request.resource_version
            if uid_precondition and request.uid:
                meta["uid"] = request.uid
            return current

        stored = self.handlers.update_via(rt, namespace, name, mutate, "scale", query)
        try:
            return scale_of(spec, stored)[0]
        except AccessorError as error:
            raise bad_request(str(error)) from error


def _check_identity(rt: ResourceType, namespace: str | None, name: str, request: ScaleRequest) -> None:
    """The handlers' ``checkName`` and namespace rules, applied to the Scale in the request."""
    if not request.name:
        raise bad_request("name must be provided")
    if request.name != name:
        raise bad_request(f"the name of the object ({request.name}) does not match the name on the URL ({name})")
    if rt.namespaced and request.namespace and request.namespace != namespace:
        raise bad_request("the namespace of the provided object does not match the namespace sent on the request")
