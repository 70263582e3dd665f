"""Structural defaulting of custom resources: the CRD schema's ``default:`` values.

Kubernetes docs ("Defaulting" in *Extend the Kubernetes API with CustomResourceDefinitions*):
defaults are applied when reading data from etcd, on the request body of create and update, and
after mutating admission (so after a patch). A default is set where the field is missing, or is
``null`` while the field is not ``nullable`` (the apiserver prunes such nulls and then
defaults); defaults are applied top-down, so a defaulted object gets its own fields' defaults
too. This is ``structuraldefaulting.Default`` in apiextensions-apiserver.

The fake defaults create/update/patch bodies and every object it reads back for GET, LIST and
any write (``/scale`` and ``/status`` included). Watch events carry what was stored; since every
write through HTTP is defaulted, they differ only for objects put with ``put_object``.
"""

from __future__ import annotations

import json
import threading
from typing import Any

JsonObj = dict[str, Any]
_MAX_DEPTH = 100  # schemas are finite trees; this only guards a pathological (self-referencing) one
_LOCK = threading.Lock()
_HAS_DEFAULTS: dict[int, tuple[JsonObj, bool]] = {}  # id(schema) → (schema kept alive, answer)


def apply(schema: JsonObj | None, obj: Any) -> None:
    """Set the schema's defaults into ``obj`` in place (``schema`` is the ``openAPIV3Schema``)."""
    if isinstance(schema, dict) and has_defaults(schema):
        _default(obj, schema, 0)


def has_defaults(schema: JsonObj) -> bool:
    """Whether any node of ``schema`` declares a default (cached per schema object)."""
    with _LOCK:
        cached = _HAS_DEFAULTS.get(id(schema))
    if cached is not None and cached[0] is schema:
        return cached[1]
    answer = _has_defaults(schema, 0)
    with _LOCK:
        _HAS_DEFAULTS[id(schema)] = (schema, answer)
    return answer


def _has_defaults(schema: JsonObj, depth: int) -> bool:
    if depth > _MAX_DEPTH:
        return False
    properties = schema.get("properties")
    if isinstance(properties, dict):
        for prop in properties.values():
            if isinstance(prop, dict) and ("default" in prop or _has_defaults(prop, depth + 1)):
                return True
    return any(
        isinstance(schema.get(key), dict) and _has_defaults(schema[key], depth + 1)
        for key in ("items", "additionalProperties")
    )


def _default(value: Any, schema: JsonObj, depth: int) -> None:
    if depth > _MAX_DEPTH:
        return
    if isinstance(value, dict):
        properties: JsonObj = schema["properties"] if isinstance(schema.get("properties"), dict) else {}
        for key, prop in properties.items():
            if not isinstance(prop, dict) or "default" not in prop or prop["default"] is None:
                continue
            if key not in value or (value[key] is None and not prop.get("nullable")):
                value[key] = json.loads(json.dumps(prop["default"]))
        additional = schema.get("additionalProperties")
        for key, child in value.items():
            child_schema = properties.get(key) if key in properties else additional
            if isinstance(child_schema, dict):
                _default(child, child_schema, depth + 1)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for item in value:
                _default(item, items, depth + 1)
