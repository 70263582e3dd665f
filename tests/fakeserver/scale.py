"""The ``scale`` subresource of custom resources: how a CR maps to an ``autoscaling/v1`` Scale and back.

HPAs, KEDA, ``kubectl scale`` and planners change a custom resource's replica count through
``/scale`` only, so the fake must answer it the way apiextensions-apiserver does
(``pkg/registry/customresource/etcd.go`` ``ScaleREST``/``scaleFromCustomResource`` and
``validator.go`` ``ValidateScaleSpec``/``ValidateScaleStatus``). The rules kept here, all pure:

- the CRD's ``specReplicasPath``/``statusReplicasPath``/``labelSelectorPath`` are simple dotted
  JSON paths (validated when a CRD is served, with apiextensions' messages);
- reading: a missing status value reads as 0, a missing selector as empty (omitted), a missing
  spec value is reported to the caller (GET answers 500 "does not exist"); a value of the wrong
  type is unstructured's "accessor error";
- the Scale body is decoded like the typed ``autoscaling/v1`` Scale it is: ``spec.replicas``
  must fit an int32 (else 400), and unknown fields are rejected (the fake is strict everywhere);
- every write of such a CR, through any endpoint, checks that the spec value is an integer in
  ``[0, MaxInt32]`` and the status value likewise ("should be a non-negative integer").

The verbs themselves live in :mod:`tests.fakeserver.scale_api`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tests.fakeserver.errors import FieldError, bad_request
from tests.fakeserver.resources import ResourceType, ScaleSubresource

JsonObj = dict[str, Any]

MAX_INT32 = 2**31 - 1
MIN_INT32 = -(2**31)
# What ScaleREST puts in the old Scale when the CR has no spec value, so that a patch which does
# not set one can be told apart (and refused) from one that sets 0.
INVALID_SPEC_REPLICAS = MIN_INT32
_INT64 = (-(2**63), 2**63 - 1)
SCALE_API_VERSION = "autoscaling/v1"
SCALE_KIND = "Scale"


class AccessorError(ValueError):
    """unstructured's ``Nested*`` error: a value on the path has the wrong type."""


# ------------------------------------------------------------------------------------ CRD side
class ScalePathError(ValueError):
    """A CRD's scale subresource that apiextensions validation refuses.

    ``errors`` are the causes to report; ``schema_errors`` (a missing path) are left out of
    them because the CRD's own OpenAPI schema, which the fake validates too, reports those.
    """

    def __init__(self, errors: list[FieldError], schema_errors: list[FieldError]) -> None:
        super().__init__("; ".join(str(e) for e in [*schema_errors, *errors]))
        self.errors = errors


def _path_errors(value: Any, field: str, prefixes: tuple[str, ...], under: str) -> list[FieldError]:
    """apiextensions' ``validateSimpleJSONPath`` plus its "under .spec/.status" rule."""
    if not isinstance(value, str):
        return [FieldError("Invalid", field, "must be a string", value)]
    if not value.startswith("."):
        return [FieldError("Invalid", field, "must be a simple json path starting with .", value)]
    if not value.startswith(prefixes):
        return [FieldError("Invalid", field, f"should be a json path under {under}", value)]
    return []


def parse_scale(subresources: Any, field: str) -> ScaleSubresource | None:
    """The ``scale`` entry of a CRD's ``subresources`` at ``field`` (``None`` when absent).

    Raises :class:`ScalePathError` for paths a real server refuses, so such a CRD is refused
    when posted (422) and never reaches the path walker below.
    """
    if not isinstance(subresources, dict) or subresources.get("scale") is None:
        return None
    scale = subresources["scale"]
    base = f"{field}.scale"
    if not isinstance(scale, dict):
        raise ScalePathError([], [FieldError("Invalid", base, "must be an object", scale)])
    errors: list[FieldError] = []
    missing: list[FieldError] = []
    spec_path = scale.get("specReplicasPath")
    status_path = scale.get("statusReplicasPath")
    selector_path = scale.get("labelSelectorPath")
    if not spec_path:
        missing.append(FieldError("Required", f"{base}.specReplicasPath"))
    else:
        errors += _path_errors(spec_path, f"{base}.specReplicasPath", (".spec.",), ".spec")
    if not status_path:
        missing.append(FieldError("Required", f"{base}.statusReplicasPath"))
    else:
        errors += _path_errors(status_path, f"{base}.statusReplicasPath", (".status.",), ".status")
    if selector_path:
        errors += _path_errors(
            selector_path, f"{base}.labelSelectorPath", (".spec.", ".status."), "either .spec or .status"
        )
    if errors or missing:
        raise ScalePathError(errors, missing)
    return ScaleSubresource(str(spec_path), str(status_path), str(selector_path) if selector_path else None)


# ------------------------------------------------------------------------------------ paths
def _fields(path: str) -> list[str]:
    """``.spec.replicas`` → ``["spec", "replicas"]`` (one leading period ignored, as upstream)."""
    return (path[1:] if path.startswith(".") else path).split(".")


def _json_path(fields: list[str]) -> str:
    return "." + ".".join(fields)


def go_type(value: Any) -> str:
    """Go's ``%T`` of a decoded JSON value (numbers outside int64 decode as float64)."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64" if _INT64[0] <= value <= _INT64[1] else "float64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    return "map[string]interface {}" if isinstance(value, dict) else "[]interface {}"


def go_value(value: Any) -> str:
    """Go's ``%v`` of a decoded JSON value, close enough for error messages."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) and go_type(value) == "float64":
        value = float(value)
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e21:
            return str(int(value))
        return repr(value)  # shortest round-trip form, as Go's %v (1e+21, 2.5)
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{go_value(v)}" for k, v in value.items()) + "]"
    if isinstance(value, list):
        return "[" + " ".join(go_value(v) for v in value) + "]"
    return str(value)


def _nested(obj: JsonObj, fields: list[str]) -> tuple[Any, bool]:
    """``unstructured.NestedFieldNoCopy``: (value, found); a non-map on the way is an error."""
    value: Any = obj
    for index, key in enumerate(fields):
        if value is None:
            return None, False
        if not isinstance(value, dict):
            raise AccessorError(
                f"{_json_path(fields[: index + 1])} accessor error: {go_value(value)} is of the type "
                f"{go_type(value)}, expected map[string]interface{{}}"
            )
        if key not in value:
            return None, False
        value = value[key]
    return value, True


def nested_int64(obj: JsonObj, path: str) -> tuple[int, bool]:
    """``unstructured.NestedInt64`` at a CRD path: (value, found); 0 when absent."""
    fields = _fields(path)
    value, found = _nested(obj, fields)
    if not found:
        return 0, False
    if go_type(value) != "int64":
        raise AccessorError(
            f"{_json_path(fields)} accessor error: {go_value(value)} is of the type {go_type(value)}, expected int64"
        )
    return int(value), True


def nested_string(obj: JsonObj, path: str) -> tuple[str, bool]:
    """``unstructured.NestedString`` at a CRD path: (value, found); "" when absent."""
    fields = _fields(path)
    value, found = _nested(obj, fields)
    if not found:
        return "", False
    if not isinstance(value, str):
        raise AccessorError(
            f"{_json_path(fields)} accessor error: {go_value(value)} is of the type {go_type(value)}, expected string"
        )
    return value, True


def set_nested(obj: JsonObj, path: str, value: Any) -> None:
    """``unstructured.SetNestedField``: create missing maps on the way, refuse to cross a non-map."""
    fields = _fields(path)
    node = obj
    for index, key in enumerate(fields[:-1]):
        child = node.get(key)
        if child is None:
            child = node[key] = {}
        elif not isinstance(child, dict):
            raise AccessorError(
                f"value cannot be set because {_json_path(fields[: index + 1])} is not a map[string]interface{{}}"
            )
        node = child
    node[fields[-1]] = value


# ------------------------------------------------------------------------------------ CR → Scale
def scale_of(spec: ScaleSubresource, obj: JsonObj) -> tuple[JsonObj, bool]:
    """``scaleFromCustomResource``: the Scale of ``obj`` and whether its spec value was found.

    Serialised as the typed Scale is: ``spec.replicas`` is ``omitempty`` (0 is not sent),
    ``status.replicas`` always, ``status.selector`` only when non-empty. Raises
    :class:`AccessorError` for a value of the wrong type.
    """
    spec_replicas, found = nested_int64(obj, spec.spec_replicas_path)
    status_replicas, _ = nested_int64(obj, spec.status_replicas_path)
    selector = nested_string(obj, spec.label_selector_path)[0] if spec.label_selector_path else ""
    meta = obj.get("metadata") or {}
    scale_meta: JsonObj = {"name": meta.get("name")}
    if meta.get("namespace"):
        scale_meta["namespace"] = meta["namespace"]
    for key in ("uid", "resourceVersion"):
        if meta.get(key):
            scale_meta[key] = meta[key]
    scale_meta["creationTimestamp"] = meta.get("creationTimestamp")
    status: JsonObj = {"replicas": _int32(status_replicas)}
    if selector:
        status["selector"] = selector
    scale_spec: JsonObj = {"replicas": _int32(spec_replicas)} if _int32(spec_replicas) else {}
    scale = {
        "kind": SCALE_KIND,
        "apiVersion": SCALE_API_VERSION,
        "metadata": scale_meta,
        "spec": scale_spec,
        "status": status,
    }
    return scale, found


def _int32(value: int) -> int:
    """Go's ``int32(x)`` conversion (wraps around), which ``scaleFromCustomResource`` applies."""
    return (value + 2**31) % 2**32 - 2**31


# ------------------------------------------------------------------------------------ Scale body
@dataclass(frozen=True)
class ScaleRequest:
    """What a decoded ``autoscaling/v1`` Scale asks for; only ``replicas`` reaches the CR."""

    name: str
    namespace: str
    uid: str
    resource_version: str
    replicas: int


_TOP = {"apiVersion", "kind", "metadata", "spec", "status"}
_INT32_FIELDS = {("spec", "replicas"): "ScaleSpec.spec.replicas", ("status", "replicas"): "ScaleStatus.status.replicas"}


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "object" if isinstance(value, dict) else "array"


def _unmarshal_error(value: Any, go_field: str, go_kind: str) -> Exception:
    shown = f"number {go_value(value)}" if _json_kind(value) == "number" else _json_kind(value)
    return bad_request(f"json: cannot unmarshal {shown} into Go struct field {go_field} of type {go_kind}")


def _int32_field(section: JsonObj, section_name: str) -> int:
    value = section.get("replicas")
    if value is None:
        return 0  # null into an int32 leaves the zero value
    go_field = _INT32_FIELDS[(section_name, "replicas")]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _unmarshal_error(value, go_field, "int32")
    if isinstance(value, float) or not MIN_INT32 <= value <= MAX_INT32:
        raise _unmarshal_error(value, go_field, "int32")
    return value


def decode_scale(body: Any) -> ScaleRequest:
    """Decode a PUT body or a patched Scale as the typed ``autoscaling/v1`` Scale (400 on failure)."""
    if not isinstance(body, dict):
        raise bad_request(f"json: cannot unmarshal {_json_kind(body)} into Go value of type v1.Scale")
    api_version, kind = body.get("apiVersion"), body.get("kind")
    if api_version and api_version != SCALE_API_VERSION:
        raise bad_request(
            f"the API version in the data ({api_version}) does not match the expected API version ({SCALE_API_VERSION})"
        )
    if kind and kind != SCALE_KIND:
        raise bad_request(f"the kind in the data ({kind}) does not match the expected kind ({SCALE_KIND})")
    unknown = [f'unknown field "{k}"' for k in body if k not in _TOP]
    sections: dict[str, JsonObj] = {}
    for name, allowed in (("metadata", None), ("spec", {"replicas"}), ("status", {"replicas", "selector"})):
        section = body.get(name)
        if section is None:
            section = {}
        if not isinstance(section, dict):
            raise bad_request(
                f"json: cannot unmarshal {_json_kind(section)} into Go struct field Scale.{name} of type "
                f"v1.{'ObjectMeta' if name == 'metadata' else 'Scale' + name.capitalize()}"
            )
        if allowed is not None:
            unknown += [f'unknown field "{name}.{k}"' for k in section if k not in allowed]
        sections[name] = section
    if unknown:
        raise bad_request("strict decoding error: " + ", ".join(unknown))
    replicas = _int32_field(sections["spec"], "spec")
    _int32_field(sections["status"], "status")  # decoded (so checked), then ignored: /scale never writes status
    selector = sections["status"].get("selector")
    if selector is not None and not isinstance(selector, str):
        raise _unmarshal_error(selector, "ScaleStatus.status.selector", "string")
    meta = sections["metadata"]
    texts: dict[str, str] = {}
    for key in ("name", "namespace", "uid", "resourceVersion"):
        value = meta.get(key)
        if value is not None and not isinstance(value, str):
            raise _unmarshal_error(value, f"ObjectMeta.metadata.{key}", "string")
        texts[key] = value or ""
    return ScaleRequest(texts["name"], texts["namespace"], texts["uid"], texts["resourceVersion"], replicas)


# ------------------------------------------------------------------------------------ validation
def _range_errors(obj: JsonObj, path: str) -> list[FieldError]:
    try:
        value, _ = nested_int64(obj, path)
    except AccessorError as error:
        return [FieldError("Invalid", path, str(error), 0)]
    if value < 0:
        return [FieldError("Invalid", path, "should be a non-negative integer", value)]
    if value > MAX_INT32:
        return [FieldError("Invalid", path, f"should be less than or equal to {MAX_INT32}", value)]
    return []


def field_errors(rt: ResourceType, obj: JsonObj, subresource: str) -> list[FieldError]:
    """``ValidateScaleSpec`` (not on ``/status`` writes) and ``ValidateScaleStatus`` (always).

    They run on every write of a CR whose version declares a scale subresource, whatever the
    endpoint, so a negative ``spec.replicas`` is refused through the main resource too. The
    field path is the CRD's path as written (``.spec.replicas``, leading period included).
    """
    spec = rt.scale
    if spec is None:
        return []
    errors = [] if subresource == "status" else _range_errors(obj, spec.spec_replicas_path)
    errors += _range_errors(obj, spec.status_replicas_path)
    if spec.label_selector_path:
        try:
            nested_string(obj, spec.label_selector_path)
        except AccessorError as error:
            errors.append(FieldError("Invalid", spec.label_selector_path, str(error), ""))
    return errors
