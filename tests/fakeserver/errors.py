"""Kubernetes ``Status`` errors with the codes, reasons and message shapes of a real apiserver.

Clients branch on these fields, not on prose: the stock leader elector only creates a Lease
after a 404 whose body says ``"code": 404``, controllers retry on ``reason: Conflict`` and give
up on ``reason: Invalid``. So every failure the fake returns goes through one constructor here,
and each constructor mirrors the matching ``k8s.io/apimachinery/pkg/api/errors.New*`` function.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tests.fakeserver.resources import GroupKind, GroupResource

JsonObj = dict[str, Any]

# The real server's wording for a stale write; controllers and humans grep for it.
CONFLICT_DETAIL = (
    "the object has been modified; please apply your changes to the latest version and try again"
)

_REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "Gone",
    413: "RequestEntityTooLarge",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


def reason_for(code: int) -> str:
    """The apiserver's ``reason`` for an HTTP code (``Unknown`` when it has none)."""
    return _REASONS.get(code, "Unknown")


class ApiError(Exception):
    """A request failure that becomes a ``Status`` body with HTTP ``code``."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: JsonObj | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = dict(headers or {})

    def to_status(self) -> JsonObj:
        """The ``Status`` object the real server would send."""
        status: JsonObj = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details:
            status["details"] = self.details
        return status


_CAUSE_REASONS = {
    "Required": "FieldValueRequired",
    "Forbidden": "FieldValueForbidden",
    "Invalid": "FieldValueInvalid",
    "Duplicate": "FieldValueDuplicate",
    "NotSupported": "FieldValueNotSupported",
    "TooLong": "FieldValueTooLong",
}


class OmitValue:
    """apimachinery's ``field.OmitValueType``: an error that shows no bad value (``Invalid value: detail``)."""

    def __repr__(self) -> str:
        return "OMIT_VALUE"


OMIT_VALUE = OmitValue()


@dataclass(frozen=True)
class FieldError:
    """One ``field.Error``: rendered exactly like apimachinery's ``Error()`` so messages match."""

    type: str  # Required, Forbidden, Invalid, Duplicate, NotSupported, TooLong
    field: str
    detail: str = ""
    value: Any = None

    def body(self) -> str:
        """The part after ``field: `` (apimachinery's ``ErrorBody``)."""
        if self.value is OMIT_VALUE and self.type in ("Invalid", "Duplicate", "NotSupported"):
            head = {"Invalid": "Invalid value", "Duplicate": "Duplicate value", "NotSupported": "Unsupported value"}[
                self.type
            ]
        elif self.type == "Required":
            head = "Required value"
        elif self.type == "Forbidden":
            head = "Forbidden"
        elif self.type == "Duplicate":
            return f"Duplicate value: {render_value(self.value)}"
        elif self.type == "NotSupported":
            head = f"Unsupported value: {render_value(self.value)}"
        elif self.type == "TooLong":
            head = "Too long"
        else:
            head = f"Invalid value: {render_value(self.value)}"
        return f"{head}: {self.detail}" if self.detail else head

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}" if self.field else self.body()

    def cause(self) -> JsonObj:
        """The ``StatusCause`` the server lists under ``details.causes``."""
        return {
            "reason": _CAUSE_REASONS.get(self.type, "FieldValueInvalid"),
            "message": self.body(),
            "field": self.field,
        }


def render_value(value: Any) -> str:
    """Render a bad value like Go's ``%#v``-ish output: strings quoted, numbers bare."""
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int | float):
        return str(value)
    return '"object"' if isinstance(value, dict) else '"array"'


def _gr_details(gr: GroupResource, name: str) -> JsonObj:
    details: JsonObj = {"name": name, "kind": gr.resource}
    if gr.group:
        details["group"] = gr.group
    return details


def not_found(gr: GroupResource, name: str) -> ApiError:
    return ApiError(404, "NotFound", f'{gr} "{name}" not found', _gr_details(gr, name))


def path_not_found(detail: str = "404 page not found") -> ApiError:
    """An unknown URL or resource type (what the mux answers before any handler runs)."""
    return ApiError(
        404,
        "NotFound",
        "the server could not find the requested resource",
        {"causes": [{"reason": "UnexpectedServerResponse", "message": detail}]},
    )


def already_exists(gr: GroupResource, name: str) -> ApiError:
    return ApiError(409, "AlreadyExists", f'{gr} "{name}" already exists', _gr_details(gr, name))


def conflict(gr: GroupResource, name: str, detail: str = CONFLICT_DETAIL) -> ApiError:
    return ApiError(
        409, "Conflict", f'Operation cannot be fulfilled on {gr} "{name}": {detail}', _gr_details(gr, name)
    )


def invalid(gk: GroupKind, name: str, errors: list[FieldError]) -> ApiError:
    """422 with apimachinery's aggregate formatting: one error bare, several in ``[a, b]``."""
    rendered = [str(e) for e in errors]
    aggregate = rendered[0] if len(rendered) == 1 else "[" + ", ".join(rendered) + "]"
    details: JsonObj = {"name": name, "kind": gk.kind, "causes": [e.cause() for e in errors]}
    if not name:
        del details["name"]  # omitempty (PatchOptions errors have none)
    if gk.group:
        details["group"] = gk.group
    return ApiError(422, "Invalid", f'{gk} "{name}" is invalid: {aggregate}', details)


def forbidden(gr: GroupResource, name: str, detail: str) -> ApiError:
    """``NewForbidden``: 403 with ``<resource> "<name>" is forbidden: <detail>`` (admission refusals)."""
    return ApiError(403, "Forbidden", f'{gr} "{name}" is forbidden: {detail}', _gr_details(gr, name))


def invalid_patch(detail: str) -> ApiError:
    """A JSON patch that does not apply (failed ``test``, missing path).

    The real server answers with ``NewGenericServerResponse(422, ...)``, whose message is the
    generic sentence below and which drops the json-patch library's text. The fake keeps that
    text as a cause so a failing test says why; clients must not rely on it.
    """
    return ApiError(
        422,
        "Invalid",
        "the server rejected our request due to an error in our request",
        {"causes": [{"reason": "FieldValueInvalid", "message": detail}]},
    )


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def gone(message: str, reason: str = "Gone") -> ApiError:
    return ApiError(410, reason, message)


def expired(requested: int, oldest: int) -> ApiError:
    """What a watch or continue token from before the compaction gets (reason ``Expired``)."""
    return ApiError(410, "Expired", f"too old resource version: {requested} ({oldest})")


def method_not_allowed(verb: str, gr: GroupResource | None = None) -> ApiError:
    target = f" ({verb} {gr})" if gr else ""
    return ApiError(
        405, "MethodNotAllowed", f"the server does not allow this method on the requested resource{target}"
    )


def unsupported_media_type(accepted: list[str]) -> ApiError:
    return ApiError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - accepted media types include: "
        f"{', '.join(accepted)}",
    )


def internal(message: str) -> ApiError:
    return ApiError(
        500, "InternalError", f"Internal error occurred: {message}", {"causes": [{"message": message}]}
    )


def from_code(
    code: int,
    gr: GroupResource | None,
    name: str | None,
    message: str | None = None,
    retry_after: int | None = None,
) -> ApiError:
    """An error for an arbitrary HTTP code, as injected by :mod:`faults`.

    Uses the same message shapes as the real constructors so a controller under test cannot
    tell an injected 409 from a genuine one.
    """
    headers = {"Retry-After": str(retry_after)} if retry_after is not None else None
    target_gr = gr or GroupResource("", "")
    target = name or ""
    if message is None:
        if code == 404 and gr is not None and name:
            err = not_found(target_gr, target)
        elif code == 409 and gr is not None and name:
            err = conflict(target_gr, target)
        elif code == 500:
            err = internal("injected fault")
        elif code == 429:
            err = ApiError(
                429,
                "TooManyRequests",
                "Too many requests: injected fault",
                {"retryAfterSeconds": retry_after or 1},
            )
        else:
            err = ApiError(code, reason_for(code), f"injected fault ({code})")
    else:
        err = ApiError(code, reason_for(code), message)
    err.headers.update(headers or {})
    return err
