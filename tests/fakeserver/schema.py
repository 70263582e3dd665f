"""Validate custom resources against their CRD's ``openAPIV3Schema`` with ``jsonschema``.

A CRD schema is OpenAPI v3 with Kubernetes extensions, not JSON Schema. The conversion is
:func:`tests.schemas.crd_schema_to_jsonschema`, the one converter the test support has; the
parts that change the verdict:

- ``nullable: true`` adds ``null`` to the allowed types;
- ``x-kubernetes-int-or-string: true`` allows integers and strings;
- ``x-kubernetes-preserve-unknown-fields: true`` keeps unknown fields allowed;
- every other object rejects unknown fields (``additionalProperties: false``). A real server
  prunes them by default and rejects them only with ``fieldValidation=Strict``; the fake is
  strict on purpose, so a typo in a rendered manifest fails a test instead of silently
  disappearing in the cluster;
- ``x-kubernetes-embedded-resource`` objects implicitly allow apiVersion/kind/metadata;
- ``metadata`` at the root is left to the server's own metadata validation.

Not evaluated by the fake (it compiles a plain Draft 2020-12 validator, so the converter's
extension keywords are inert here): CEL ``x-kubernetes-validations``, ``x-kubernetes-list-type``
uniqueness and ``format`` checks. :class:`tests.schemas.CRDRegistry` evaluates those.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import jsonschema

from tests.fakeserver.resources import ResourceRegistry
from tests.schemas import crd_schema_to_jsonschema

JsonObj = dict[str, Any]


def field_path(parts: Any) -> str:
    """``["spec", "podgroups", 0, "name"]`` → ``spec.podgroups[0].name``."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "object"
    return "array" if isinstance(value, list) else "string"


def format_schema_error(error: jsonschema.ValidationError) -> list[str]:
    """Render one jsonschema error in the apiserver's ``path: Kind: detail`` style."""
    path = field_path(error.absolute_path)
    prefix = f"{path}." if path else ""
    instance = error.instance
    if error.validator == "required" and isinstance(instance, dict):
        missing = [r for r in error.validator_value if r not in instance]
        return [f"{prefix}{m}: Required value" for m in missing] or [f"{path}: Required value"]
    if error.validator == "additionalProperties" and isinstance(instance, dict):
        known = set((error.schema or {}).get("properties", {}))
        extra = [k for k in instance if k not in known]
        return [f'unknown field "{prefix}{k}"' for k in extra] or [error.message]
    if error.validator == "type":
        expected = error.validator_value
        expected_text = " or ".join(expected) if isinstance(expected, list) else str(expected)
        return [
            f'{path}: Invalid value: "{_json_type(instance)}": {path} in body must be of type '
            f"{expected_text}: {json.dumps(instance)[:80]}"
        ]
    if error.validator == "enum":
        supported = ", ".join(json.dumps(v) for v in error.validator_value)
        return [f"{path}: Unsupported value: {json.dumps(instance)}: supported values: {supported}"]
    if error.validator in ("minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems", "pattern"):
        return [f"{path}: Invalid value: {json.dumps(instance)[:80]}: {error.message}"]
    return [f"{path or '<root>'}: Invalid value: {json.dumps(instance)[:80]}: {error.message}"]


def sorted_errors(validator: Any, obj: JsonObj) -> list[str]:
    """All schema errors of ``obj`` as messages, in document order, without duplicates."""
    errors = sorted(validator.iter_errors(obj), key=lambda e: [str(p) for p in e.absolute_path])
    out: list[str] = []
    for error in errors:
        for message in format_schema_error(error):
            if message not in out:
                out.append(message)
    return out


class CrdSchemaValidator:
    """The default custom-resource validator: ``validator(obj) -> list of error messages``.

    Looks the object's type up in the live registry (so CRDs posted over HTTP are covered too)
    and compiles each schema once.
    """

    def __init__(self, registry: ResourceRegistry) -> None:
        self._registry = registry
        self._lock = threading.Lock()
        self._compiled: dict[tuple[str, str, int], Any] = {}

    def __call__(self, obj: JsonObj) -> list[str]:
        rt = self._registry.by_kind(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
        if rt is None:
            return [f"no custom resource type serves {obj.get('apiVersion')}, Kind={obj.get('kind')}"]
        if rt.schema is None:
            return []
        key = (rt.api_version, rt.kind, id(rt.schema))
        with self._lock:
            validator = self._compiled.get(key)
            if validator is None:
                schema = crd_schema_to_jsonschema(rt.schema)
                validator = jsonschema.Draft202012Validator(schema)
                self._compiled[key] = validator
        return sorted_errors(validator, obj)
