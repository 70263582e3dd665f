"""Schema conformance checks for rendered Kubernetes objects.

The renderer emits plain dicts; nothing in the normal code path proves that those dicts would be
accepted by a real API server.  This module is the stand-in for that server-side validation, used by
the test suite and by the in-project fake API server:

* :class:`CRDRegistry` validates custom resources (Grove PodGangs, KAI / Volcano / scheduler-plugins /
  Koordinator PodGroups, ...) against the *upstream* CustomResourceDefinition manifests, with the same
  strict unknown-field checking that ``kubectl apply`` (``--validate=strict``) performs.  A typo such as
  ``spec.podGroups`` instead of ``spec.podgroups`` would otherwise be silently pruned by the API server
  and the gang would never form.
* :func:`builtin_errors` validates built-in kinds (Pod, Service, scheduling.k8s.io Workload, ...) against
  the OpenAPI-derived JSON schemas shipped in the ``kubernetes-validate`` package, for a given minor
  Kubernetes version, because the Workload API changes shape between 1.35, 1.36 and 1.37.
* :func:`validate_any` picks the right one of the two.

Every check returns a list of human-readable strings (empty = valid) rather than raising, so a test can
assert on the whole list and a fake API server can put the strings into a ``Status`` response.
"""

from __future__ import annotations

import functools
import json
import re
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import jsonschema
import kubernetes_validate.utils
import referencing
import referencing.exceptions
import yaml

from grove_gitops.validation.podspec import builtin_validator

__all__ = [
    "CRDRegistry",
    "CRDVersion",
    "builtin_errors",
    "crd_schema_to_jsonschema",
    "supported_kube_versions",
    "validate_all",
    "validate_any",
]

# --------------------------------------------------------------------------------------------------
# Kubernetes name / label syntax (k8s.io/apimachinery/pkg/util/validation).  Implemented here because
# neither the CRD schemas nor the kubernetes-validate JSON schemas encode them: the API server checks
# ObjectMeta in Go code, not through OpenAPI.
# --------------------------------------------------------------------------------------------------

_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_QUALIFIED_NAME_PART = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_DNS1123_LABEL_MAX = 63
_DNS1123_SUBDOMAIN_MAX = 253
_QUALIFIED_NAME_MAX = 63
_LABEL_VALUE_MAX = 63
_ANNOTATIONS_TOTAL_MAX = 256 * 1024

# ObjectMeta's JSON field names.  A key outside this set is an unknown field, which strict field
# validation rejects (and which non-strict servers silently drop - exactly the kind of bug we want
# the tests to see).
_OBJECT_META_FIELDS = frozenset(
    {
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "ownerReferences",
        "finalizers",
        "managedFields",
    }
)
_OWNER_REFERENCE_REQUIRED = ("apiVersion", "kind", "name", "uid")

# Messages embed the offending value; a whole podSpec in an error string helps nobody.
_MAX_MESSAGE_CHARS = 300


def _qualified_name_errors(key: str) -> list[str]:
    """Check a label/annotation key: an optional DNS-subdomain prefix plus ``/`` plus a short name."""
    errs: list[str] = []
    prefix, sep, name = key.rpartition("/")
    if sep:
        if not prefix:
            errs.append("prefix part must be non-empty")
        elif len(prefix) > _DNS1123_SUBDOMAIN_MAX:
            errs.append(f"prefix part must be no more than {_DNS1123_SUBDOMAIN_MAX} characters")
        elif not _DNS1123_SUBDOMAIN.fullmatch(prefix):
            errs.append("prefix part must be a lowercase RFC 1123 subdomain")
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > _QUALIFIED_NAME_MAX:
        errs.append(f"name part must be no more than {_QUALIFIED_NAME_MAX} characters")
    elif not _QUALIFIED_NAME_PART.fullmatch(name):
        errs.append(
            "name part must consist of alphanumeric characters, '-', '_' or '.', "
            "and must start and end with an alphanumeric character"
        )
    return errs


def _label_value_errors(value: str) -> list[str]:
    """Check a label value: at most 63 characters of a restricted alphabet (may be empty)."""
    if len(value) > _LABEL_VALUE_MAX:
        return [f"must be no more than {_LABEL_VALUE_MAX} characters (got {len(value)})"]
    if not _LABEL_VALUE.fullmatch(value):
        return [
            "must be empty or consist of alphanumeric characters, '-', '_' or '.', "
            "and must start and end with an alphanumeric character"
        ]
    return []


def _dns_errors(value: str, *, subdomain: bool) -> list[str]:
    """Check a resource name (DNS-1123 subdomain) or namespace name (DNS-1123 label)."""
    pattern, limit, what = (
        (_DNS1123_SUBDOMAIN, _DNS1123_SUBDOMAIN_MAX, "RFC 1123 subdomain")
        if subdomain
        else (_DNS1123_LABEL, _DNS1123_LABEL_MAX, "RFC 1123 label")
    )
    if len(value) > limit:
        return [f"must be no more than {limit} characters"]
    if not pattern.fullmatch(value):
        return [f"must be a lowercase {what} (got {value!r})"]
    return []


def _metadata_errors(
    meta: object,
    *,
    namespaced: bool | None,
    check_name_syntax: bool,
    check_unknown_fields: bool,
) -> list[str]:
    """Validate ``metadata`` the way the API server's ObjectMeta validation does.

    ``namespaced`` is the resource scope (``None`` when unknown, as for built-in kinds, where a
    namespace is then only syntax-checked).  ``check_name_syntax`` is off for built-ins because the
    name rule is per kind (a ClusterRole may be called ``system:foo``; a Service needs a DNS label).
    ``check_unknown_fields`` is off for built-ins because their strict JSON schema already covers it.
    """
    if not isinstance(meta, Mapping):
        return ["metadata: required field is missing or not an object"]
    errs: list[str] = []
    if check_unknown_fields:
        errs.extend(f"metadata.{key}: unknown field" for key in meta if key not in _OBJECT_META_FIELDS)

    name = meta.get("name")
    if name is None or name == "":
        errs.append("metadata.name: required field is missing")
    elif not isinstance(name, str):
        errs.append(f"metadata.name: must be a string (got {type(name).__name__})")
    elif check_name_syntax:
        errs.extend(f"metadata.name: {e}" for e in _dns_errors(name, subdomain=True))

    namespace = meta.get("namespace")
    if namespaced is True and (namespace is None or namespace == ""):
        errs.append("metadata.namespace: required for a namespaced resource")
    elif namespaced is False and namespace not in (None, ""):
        errs.append(f"metadata.namespace: must not be set on a cluster-scoped resource (got {namespace!r})")
    elif namespace not in (None, ""):
        if not isinstance(namespace, str):
            errs.append(f"metadata.namespace: must be a string (got {type(namespace).__name__})")
        else:
            errs.extend(f"metadata.namespace: {e}" for e in _dns_errors(namespace, subdomain=False))

    labels = meta.get("labels")
    if labels is not None:
        if not isinstance(labels, Mapping):
            errs.append("metadata.labels: must be a map of string to string")
        else:
            for key, value in labels.items():
                where = f"metadata.labels[{key}]"
                if not isinstance(key, str):
                    errs.append(f"{where}: label key must be a string")
                    continue
                errs.extend(f"{where}: invalid label key: {e}" for e in _qualified_name_errors(key))
                if not isinstance(value, str):
                    errs.append(
                        f"{where}: label value must be a string (got {type(value).__name__} {value!r})"
                    )
                else:
                    errs.extend(
                        f"{where}: invalid label value {value!r}: {e}" for e in _label_value_errors(value)
                    )

    annotations = meta.get("annotations")
    if annotations is not None:
        if not isinstance(annotations, Mapping):
            errs.append("metadata.annotations: must be a map of string to string")
        else:
            total = 0
            for key, value in annotations.items():
                where = f"metadata.annotations[{key}]"
                if not isinstance(key, str):
                    errs.append(f"{where}: annotation key must be a string")
                    continue
                errs.extend(f"{where}: invalid annotation key: {e}" for e in _qualified_name_errors(key))
                if not isinstance(value, str):
                    errs.append(
                        f"{where}: annotation value must be a string (got {type(value).__name__} {value!r})"
                    )
                else:
                    total += len(key) + len(value)
            if total > _ANNOTATIONS_TOTAL_MAX:
                errs.append(
                    f"metadata.annotations: total size {total} exceeds {_ANNOTATIONS_TOTAL_MAX} bytes"
                )

    owners = meta.get("ownerReferences")
    if owners is not None:
        if not isinstance(owners, list):
            errs.append("metadata.ownerReferences: must be a list")
        else:
            for i, ref in enumerate(owners):
                where = f"metadata.ownerReferences[{i}]"
                if not isinstance(ref, Mapping):
                    errs.append(f"{where}: must be an object")
                    continue
                errs.extend(
                    f"{where}.{k}: required field is missing"
                    for k in _OWNER_REFERENCE_REQUIRED
                    if not ref.get(k)
                )

    finalizers = meta.get("finalizers")
    if finalizers is not None and (
        not isinstance(finalizers, list) or not all(isinstance(f, str) for f in finalizers)
    ):
        errs.append("metadata.finalizers: must be a list of strings")
    return errs


# --------------------------------------------------------------------------------------------------
# jsonschema error -> readable string
# --------------------------------------------------------------------------------------------------


def _path_str(path: Iterable[object]) -> str:
    """Render a JSON path the way kubectl does: ``spec.podgroups[0].name``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif isinstance(part, str) and re.fullmatch(r"[A-Za-z_$][A-Za-z0-9_$-]*", part):
            out += f".{part}" if out else part
        else:
            out += f"[{part}]"
    return out or "(root)"


def _shorten(message: str) -> str:
    if len(message) <= _MAX_MESSAGE_CHARS:
        return message
    return message[: _MAX_MESSAGE_CHARS - 3] + "..."


_FieldPath = tuple[str | int, ...]


def _schema_error_strings(error: Any) -> list[tuple[_FieldPath, str]]:
    """Turn one ``jsonschema.ValidationError`` into ``(field path, readable string)`` pairs.

    ``additionalProperties: false`` and ``required`` are rephrased so that the *field* is named in the
    path (``spec.podGroups: unknown field``) instead of buried in a generic jsonschema sentence.
    """
    base: _FieldPath = tuple(error.absolute_path)
    instance = error.instance
    schema = error.schema if isinstance(error.schema, Mapping) else {}
    unknown_fields = error.validator == "additionalProperties" and error.validator_value is False
    if unknown_fields and isinstance(instance, Mapping):
        declared = schema.get("properties") or {}
        hint = " (the schema declares no fields here; the API server would prune it)" if not declared else ""
        return [
            ((*base, k), f"{_path_str((*base, k))}: unknown field{hint}")
            for k in instance
            if k not in declared
        ]
    if error.validator == "required" and isinstance(instance, Mapping):
        missing = [k for k in error.validator_value if k not in instance]
        return [((*base, k), f"{_path_str((*base, k))}: required field is missing") for k in missing]
    return [(base, f"{_path_str(base)}: {_shorten(str(error.message))}")]


def _path_sort_key(path: _FieldPath) -> tuple[tuple[int, int, str], ...]:
    """Order paths structurally so ``[2]`` sorts before ``[10]`` and a parent before its children."""
    return tuple((0, p, "") if isinstance(p, int) else (1, 0, str(p)) for p in path)


def _collect(validator: Any, obj: Mapping[str, Any]) -> list[str]:
    """Run a compiled validator and return de-duplicated readable errors, ordered by field path."""
    pairs = [pair for error in validator.iter_errors(obj) for pair in _schema_error_strings(error)]
    pairs.sort(key=lambda pair: _path_sort_key(pair[0]))
    return list(dict.fromkeys(text for _, text in pairs))


def _describe(obj: Mapping[str, Any]) -> str:
    """``Kind apiVersion ns/name`` - the prefix of every error string, so failures are attributable."""
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    name = meta.get("name") or meta.get("generateName") or "<unnamed>"
    namespace = meta.get("namespace")
    ref = f"{namespace}/{name}" if namespace else str(name)
    return f"{obj.get('kind', '<no kind>')} {obj.get('apiVersion', '<no apiVersion>')} {ref}"


def _type_errors(obj: object) -> list[str]:
    """The checks every object needs before we can even pick a schema."""
    if not isinstance(obj, Mapping):
        return [f"object is not a mapping (got {type(obj).__name__})"]
    errs: list[str] = []
    for key in ("apiVersion", "kind"):
        value = obj.get(key)
        if not isinstance(value, str) or not value:
            errs.append(f"{_describe(obj)}: {key}: required field is missing or not a string")
    return errs


def _split_api_version(api_version: str) -> tuple[str, str]:
    """``scheduling.run.ai/v2alpha2`` -> (``scheduling.run.ai``, ``v2alpha2``); ``v1`` -> (``""``, ``v1``)."""
    group, _, version = api_version.rpartition("/")
    return group, version


# --------------------------------------------------------------------------------------------------
# Format checking.  Kubernetes validates a handful of OpenAPI formats; jsonschema knows none of the
# integer ones and would raise on nothing (unknown formats are ignored), so we register exactly the
# formats that appear in the CRDs and leave every other format unchecked rather than failing on it.
# --------------------------------------------------------------------------------------------------

_FORMATS = jsonschema.FormatChecker(formats=())
_RFC3339 = re.compile(
    r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})",
)


def _is_int32(value: object) -> bool:
    return not isinstance(value, int) or isinstance(value, bool) or -(2**31) <= value < 2**31


def _is_int64(value: object) -> bool:
    return not isinstance(value, int) or isinstance(value, bool) or -(2**63) <= value < 2**63


def _is_date_time(value: object) -> bool:
    if not isinstance(value, str):
        return True
    if not _RFC3339.fullmatch(value):
        return False
    try:
        datetime.fromisoformat(value.replace("z", "Z").replace("t", "T"))
    except ValueError:
        return False
    return True


_FORMATS.checks("int32")(_is_int32)
_FORMATS.checks("int64")(_is_int64)
_FORMATS.checks("date-time")(_is_date_time)


# --------------------------------------------------------------------------------------------------
# x-kubernetes-validations: a deliberately tiny CEL subset.
#
# Real CEL cannot be evaluated here, and guessing would produce false failures, so every rule is
# parsed against a grammar of just ``has(self.a.b)``, ``!``, ``&&``, ``||`` and parentheses; anything
# else (``oldSelf`` transition rules, ``size()``, ternaries, ...) does not parse and is skipped.  This
# covers the presence rules in the upstream CRDs, e.g. Grove's
# ``has(self.pack) || has(self.packDomain)`` and
# ``!(has(self.packDomain) && has(self.pack) && has(self.pack.required))``.
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Has:
    path: tuple[str, ...]


@dataclass(frozen=True)
class _Not:
    operand: _Cel


@dataclass(frozen=True)
class _BoolOp:
    op: Literal["&&", "||"]
    operands: tuple[_Cel, ...]


_Cel = _Has | _Not | _BoolOp

_CEL_TOKEN = re.compile(r"\s*(\|\||&&|!|\(|\)|has\b|self(?:\.[A-Za-z_][A-Za-z0-9_]*)+)")


class _CelUnsupported(Exception):
    """The rule is outside the supported subset; it is skipped, never reported."""


class _CelParser:
    def __init__(self, tokens: list[str]) -> None:
        self._tokens = tokens
        self._pos = 0

    def _peek(self) -> str | None:
        return self._tokens[self._pos] if self._pos < len(self._tokens) else None

    def _take(self, expected: str | None = None) -> str:
        tok = self._peek()
        if tok is None or (expected is not None and tok != expected):
            raise _CelUnsupported
        self._pos += 1
        return tok

    def parse(self) -> _Cel:
        node = self._or()
        if self._peek() is not None:
            raise _CelUnsupported
        return node

    def _or(self) -> _Cel:
        operands = [self._and()]
        while self._peek() == "||":
            self._take()
            operands.append(self._and())
        return operands[0] if len(operands) == 1 else _BoolOp("||", tuple(operands))

    def _and(self) -> _Cel:
        operands = [self._unary()]
        while self._peek() == "&&":
            self._take()
            operands.append(self._unary())
        return operands[0] if len(operands) == 1 else _BoolOp("&&", tuple(operands))

    def _unary(self) -> _Cel:
        tok = self._take()
        if tok == "!":
            return _Not(self._unary())
        if tok == "(":
            node = self._or()
            self._take(")")
            return node
        if tok == "has":
            self._take("(")
            path = self._take()
            if not path.startswith("self."):
                raise _CelUnsupported
            self._take(")")
            return _Has(tuple(path.split(".")[1:]))
        raise _CelUnsupported


@functools.lru_cache(maxsize=256)
def _parse_cel(rule: str) -> _Cel | None:
    """Parse a rule in the supported subset, or return ``None`` to mean "skip this rule"."""
    text = rule.strip()
    tokens: list[str] = []
    pos = 0
    while pos < len(text):
        match = _CEL_TOKEN.match(text, pos)
        if match is None:
            return None
        tokens.append(match.group(1))
        pos = match.end()
    try:
        return _CelParser(tokens).parse()
    except _CelUnsupported:
        return None


def _eval_cel(node: _Cel, self_obj: Mapping[str, Any]) -> bool:
    """Evaluate a parsed rule.  ``has()`` of an explicit null is false: the API server prunes nulls
    of non-nullable fields before CEL runs, and a missing intermediate field makes ``has`` false too.
    """
    if isinstance(node, _Has):
        current: Any = self_obj
        for part in node.path:
            if not isinstance(current, Mapping) or current.get(part) is None:
                return False
            current = current[part]
        return True
    if isinstance(node, _Not):
        return not _eval_cel(node.operand, self_obj)
    if node.op == "&&":
        return all(_eval_cel(o, self_obj) for o in node.operands)
    return any(_eval_cel(o, self_obj) for o in node.operands)


def _cel_keyword(validator: Any, rules: Any, instance: Any, schema: Any) -> Iterator[Any]:
    """jsonschema keyword implementation for ``x-kubernetes-validations``."""
    if not isinstance(instance, Mapping) or not isinstance(rules, list):
        return
    for rule in rules:
        if not isinstance(rule, Mapping) or not isinstance(rule.get("rule"), str):
            continue
        parsed = _parse_cel(rule["rule"])
        if parsed is None or _eval_cel(parsed, instance):
            continue
        field_path = rule.get("fieldPath")
        rel: list[str] = []
        if isinstance(field_path, str) and re.fullmatch(r"(\.[A-Za-z_][A-Za-z0-9_]*)+", field_path):
            rel = field_path.split(".")[1:]
        message = rule.get("message") or f"failed rule: {rule['rule']}"
        yield jsonschema.ValidationError(str(message), path=rel)


def _freeze(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _list_type_keyword(validator: Any, list_type: Any, instance: Any, schema: Any) -> Iterator[Any]:
    """``x-kubernetes-list-type``: ``set`` items and ``map`` keys must be unique (API server rule)."""
    if not isinstance(instance, list):
        return
    if list_type == "set":
        seen: set[str] = set()
        for i, item in enumerate(instance):
            key = _freeze(item)
            if key in seen:
                yield jsonschema.ValidationError(f"duplicate value {_shorten(repr(item))}", path=[i])
            seen.add(key)
    elif list_type == "map":
        key_names = schema.get("x-kubernetes-list-map-keys") or []
        item_props = (schema.get("items") or {}).get("properties") or {}
        seen_keys: set[str] = set()
        for i, item in enumerate(instance):
            if not isinstance(item, Mapping):
                continue
            values = {k: item.get(k, (item_props.get(k) or {}).get("default")) for k in key_names}
            key = _freeze(values)
            if key in seen_keys:
                shown = ", ".join(f"{k}={v!r}" for k, v in values.items())
                yield jsonschema.ValidationError(f"duplicate entry with key {shown}", path=[i])
            seen_keys.add(key)


_CRDValidator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    validators={
        "x-kubernetes-validations": _cel_keyword,
        "x-kubernetes-list-type": _list_type_keyword,
    },
)


# --------------------------------------------------------------------------------------------------
# openAPIV3Schema (structural schema) -> JSON Schema 2020-12
# --------------------------------------------------------------------------------------------------

# Keywords with identical meaning in OpenAPI v3.0 (as restricted by structural schemas) and 2020-12.
_PASSTHROUGH = (
    "minimum",
    "maximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "required",
    "format",
    "default",
    "x-kubernetes-validations",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
)


def _convert(node: Mapping[str, Any], *, structural: bool = True) -> dict[str, Any]:
    """Convert one structural-schema node.

    ``structural`` is false inside ``anyOf``/``allOf``/``oneOf``/``not``: those branches only add value
    constraints in Kubernetes and do not declare fields, so they must not reject unknown fields.
    """
    out: dict[str, Any] = {}
    preserve = node.get("x-kubernetes-preserve-unknown-fields") is True
    int_or_string = node.get("x-kubernetes-int-or-string") is True
    nullable = node.get("nullable") is True

    types: list[str] = []
    if int_or_string:
        types = ["integer", "string"]
    elif isinstance(node.get("type"), str):
        types = [node["type"]]
    if types and nullable:
        types.append("null")
    if types:
        out["type"] = types[0] if len(types) == 1 else types

    for key in _PASSTHROUGH:
        if key in node:
            out[key] = node[key]
    if "enum" in node:
        out["enum"] = [*node["enum"], None] if nullable else list(node["enum"])
    # OpenAPI 3.0 spells exclusive bounds as booleans modifying minimum/maximum.
    for bound, exclusive in (("minimum", "exclusiveMinimum"), ("maximum", "exclusiveMaximum")):
        if node.get(exclusive) is True and bound in node:
            out[exclusive] = out.pop(bound)

    if isinstance(node.get("properties"), Mapping):
        out["properties"] = {k: _convert(v, structural=structural) for k, v in node["properties"].items()}
    if isinstance(node.get("patternProperties"), Mapping):
        out["patternProperties"] = {
            k: _convert(v, structural=structural) for k, v in node["patternProperties"].items()
        }
    if node.get("x-kubernetes-embedded-resource") is True:
        # An embedded object (e.g. a template) implicitly has apiVersion, kind and metadata.
        props = out.setdefault("properties", {})
        props.setdefault("apiVersion", {"type": "string"})
        props.setdefault("kind", {"type": "string"})
        props.setdefault("metadata", {"type": "object"})
    if isinstance(node.get("items"), Mapping):
        out["items"] = _convert(node["items"], structural=structural)
    additional = node.get("additionalProperties")
    if isinstance(additional, Mapping):
        out["additionalProperties"] = _convert(additional, structural=structural)
    elif isinstance(additional, bool):
        out["additionalProperties"] = additional
    elif structural and not preserve and (node.get("type") == "object" or "properties" in node):
        # Strict unknown-field checking.  An object with no declared properties at all (for example
        # controller-gen's bare ``metadata: {type: object}`` inside embedded templates) is included on
        # purpose: the API server prunes *everything* under it, which strict validation reports.
        out["additionalProperties"] = False

    # Structural schemas only use anyOf for int-or-string, which the ``type`` list above already
    # expresses; keeping the anyOf would just produce a second, vaguer error for the same problem.
    for combinator in ("anyOf", "allOf", "oneOf"):
        if combinator in node and not (combinator == "anyOf" and int_or_string):
            out[combinator] = [_convert(s, structural=False) for s in node[combinator]]
    if isinstance(node.get("not"), Mapping):
        out["not"] = _convert(node["not"], structural=False)
    return out


def crd_schema_to_jsonschema(schema: Mapping[str, Any], *, preserve_unknown: bool = False) -> dict[str, Any]:
    """Convert the openAPIV3Schema of a CRD version: the one CRD-schema converter of the test
    support, used by :class:`CRDRegistry` and by the fake API server (``tests.fakeserver.schema``).

    The root ``metadata`` is replaced by a bare object: the API server validates ObjectMeta itself (it
    is not governed by the CRD schema), and :func:`_metadata_errors` reproduces that.
    ``preserve_unknown`` is the CRD's legacy ``spec.preserveUnknownFields``.
    """
    root = dict(schema)
    if preserve_unknown:
        root["x-kubernetes-preserve-unknown-fields"] = True
    out = _convert(root)
    props = dict(out.get("properties") or {})
    props["metadata"] = {"type": "object"}
    props.setdefault("apiVersion", {"type": "string"})
    props.setdefault("kind", {"type": "string"})
    out["properties"] = props
    out["type"] = "object"
    out["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return out


# --------------------------------------------------------------------------------------------------
# CRD registry
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CRDVersion:
    """One served version of a CustomResourceDefinition: what a fake API server needs to route and
    validate requests for it."""

    group: str
    version: str
    kind: str
    plural: str
    scope: Literal["Namespaced", "Cluster"]
    has_status_subresource: bool
    schema: Mapping[str, Any] = field(repr=False, compare=False)
    preserve_unknown_fields: bool = field(default=False, repr=False)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    @property
    def namespaced(self) -> bool:
        return self.scope == "Namespaced"


class CRDRegistry:
    """A set of CRDs, indexed by (group, version, kind), with lazily compiled and cached validators."""

    def __init__(self, crds: Iterable[Mapping[str, Any]]) -> None:
        self._versions: dict[tuple[str, str, str], CRDVersion] = {}
        self._validators: dict[tuple[str, str, str], Any] = {}
        self._lock = threading.Lock()
        self.crds = list(crds)
        for crd in self.crds:
            self._add(crd)
        self._groups = frozenset(group for group, _, _ in self._versions)

    @classmethod
    def from_dir(cls, path: Path) -> CRDRegistry:
        """Load every CustomResourceDefinition in ``*.yaml``/``*.yml`` files below ``path``.

        Documents of other kinds are ignored so a directory can also hold unrelated manifests.
        """
        if not path.is_dir():
            raise FileNotFoundError(f"CRD directory not found: {path}")
        crds: list[Mapping[str, Any]] = []
        files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in (".yaml", ".yml"))
        for file in files:
            with file.open("rb") as fh:
                docs = list(yaml.load_all(fh, Loader=yaml.CSafeLoader))
            crds.extend(
                d for d in docs if isinstance(d, Mapping) and d.get("kind") == "CustomResourceDefinition"
            )
        return cls(crds)

    @classmethod
    def from_dirs(cls, *paths: Path) -> CRDRegistry:
        """:meth:`from_dir` of several directories in one registry."""
        return cls([crd for path in paths for crd in cls.from_dir(path).crds])

    def _add(self, crd: Mapping[str, Any]) -> None:
        spec = crd.get("spec") or {}
        group = spec["group"]
        kind = spec["names"]["kind"]
        plural = spec["names"]["plural"]
        scope = spec.get("scope", "Namespaced")
        if scope not in ("Namespaced", "Cluster"):
            raise ValueError(f"CRD {crd.get('metadata', {}).get('name')}: unknown scope {scope!r}")
        for ver in spec.get("versions") or []:
            if not ver.get("served", False):
                continue
            key = (group, ver["name"], kind)
            if key in self._versions:
                raise ValueError(f"duplicate CRD for {group}/{ver['name']} {kind}")
            schema = ((ver.get("schema") or {}).get("openAPIV3Schema")) or {}
            self._versions[key] = CRDVersion(
                group=group,
                version=ver["name"],
                kind=kind,
                plural=plural,
                scope=scope,
                has_status_subresource="status" in (ver.get("subresources") or {}),
                schema=schema,
                preserve_unknown_fields=bool(spec.get("preserveUnknownFields", False)),
            )

    def lookup(self, api_version: str, kind: str) -> CRDVersion | None:
        """The served CRD version for ``apiVersion``/``kind``, or ``None`` if no CRD serves it."""
        group, version = _split_api_version(api_version)
        return self._versions.get((group, version, kind))

    def kinds(self) -> list[tuple[str, str]]:
        """Every served ``(apiVersion, kind)``, sorted."""
        return sorted((v.api_version, v.kind) for v in self._versions.values())

    def groups(self) -> frozenset[str]:
        """API groups served by at least one CRD (used to route objects to CRD validation)."""
        return self._groups

    def _validator(self, crd: CRDVersion) -> Any:
        key = (crd.group, crd.version, crd.kind)
        with self._lock:
            validator = self._validators.get(key)
            if validator is None:
                json_schema = crd_schema_to_jsonschema(crd.schema, preserve_unknown=crd.preserve_unknown_fields)
                validator = _CRDValidator(json_schema, format_checker=_FORMATS)
                self._validators[key] = validator
            return validator

    def json_schema(self, api_version: str, kind: str) -> dict[str, Any]:
        """The converted JSON schema (for debugging and for schema self-checks in tests)."""
        crd = self.lookup(api_version, kind)
        if crd is None:
            raise KeyError(f"{api_version} {kind}")
        return dict(self._validator(crd).schema)

    def validate(self, obj: Mapping[str, Any]) -> list[str]:
        """Validate a custom resource; returns readable errors, ``[]`` when valid."""
        basic = _type_errors(obj)
        if basic:
            return basic
        prefix = _describe(obj)
        crd = self.lookup(obj["apiVersion"], obj["kind"])
        if crd is None:
            group, _ = _split_api_version(obj["apiVersion"])
            served = sorted(f"{v.api_version} {v.kind}" for v in self._versions.values() if v.group == group)
            hint = f" (served in this group: {', '.join(served)})" if served else ""
            return [f"{prefix}: no CustomResourceDefinition serves {obj['apiVersion']} {obj['kind']}{hint}"]
        errs = _metadata_errors(
            obj.get("metadata"), namespaced=crd.namespaced, check_name_syntax=True, check_unknown_fields=True
        )
        errs.extend(_collect(self._validator(crd), obj))
        return [f"{prefix}: {e}" for e in errs]


# --------------------------------------------------------------------------------------------------
# Built-in kinds via kubernetes-validate's bundled schemas
#
# kubernetes_validate.validate() re-reads and re-parses the ~1.5 MB ``_definitions.json`` and builds a
# fresh validator on every call (~10 ms per object).  The product's render-time check
# (:func:`grove_gitops.validation.podspec.builtin_validator`) resolves files exactly as it does but
# loads each file once and keeps one compiled validator per (version, apiVersion, kind); the tests
# reuse that loader, so there is one implementation of the lookup.
# --------------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def supported_kube_versions() -> tuple[str, ...]:
    """Full Kubernetes versions that the installed kubernetes-validate has strict schemas for."""
    return tuple(dict.fromkeys(kubernetes_validate.utils.all_versions()))


@functools.lru_cache(maxsize=32)
def _resolve_kube_version(kube_version: str) -> str:
    """``"1.35"`` / ``"v1.35"`` / ``"1.35.0"`` -> ``"1.35.0"`` (the bundled schema directory's version)."""
    wanted = kubernetes_validate.utils.major_minor(kube_version.removeprefix("v"))
    for full in supported_kube_versions():
        if kubernetes_validate.utils.major_minor(full) == wanted:
            return full
    raise ValueError(
        f"kubernetes-validate has no schemas for Kubernetes {kube_version!r}; "
        f"supported: {', '.join(supported_kube_versions())}"
    )


def builtin_errors(obj: Mapping[str, Any], kube_version: str) -> list[str]:
    """Validate a built-in Kubernetes object against the strict schema of ``kube_version``.

    ``kube_version`` is a minor version such as ``"1.35"``; an unsupported one raises ``ValueError``
    because that is a bug in the caller, not in the object.  Besides the schema (which rejects unknown
    fields), label/annotation syntax and ``metadata.name`` presence are checked, since the OpenAPI
    schema cannot express them.
    """
    full_version = _resolve_kube_version(kube_version)
    basic = _type_errors(obj)
    if basic:
        return basic
    prefix = _describe(obj)
    minor = kubernetes_validate.utils.major_minor(full_version)
    try:
        validator = builtin_validator(minor, obj["apiVersion"], obj["kind"])
    except (ValueError, OSError) as exc:  # unreadable / unparsable bundled schema file
        return [f"{prefix}: cannot load the schema for {obj['apiVersion']} {obj['kind']}: {exc}"]
    if validator is None:
        return [
            f"{prefix}: no built-in schema for {obj['apiVersion']} {obj['kind']} in Kubernetes "
            f"{minor} (unknown kind or API version)"
        ]
    errs = _metadata_errors(
        obj.get("metadata"), namespaced=None, check_name_syntax=False, check_unknown_fields=False
    )
    try:
        errs.extend(_collect(validator, obj))
    except referencing.exceptions.Unresolvable as exc:
        errs.append(f"schema error: unresolvable reference {exc}")
    return [f"{prefix}: {e}" for e in errs]


def validate_any(obj: Mapping[str, Any], crds: CRDRegistry, kube_version: str) -> list[str]:
    """Validate any rendered object: custom resources via ``crds``, everything else as a built-in.

    Routing is by API group rather than by (group, version, kind) so that a custom resource with a
    wrong version or kind is reported against its CRD instead of as an unknown built-in.
    """
    basic = _type_errors(obj)
    if basic:
        return basic
    group, _ = _split_api_version(obj["apiVersion"])
    if group and group in crds.groups():
        return crds.validate(obj)
    return builtin_errors(obj, kube_version)


def validate_all(objs: Sequence[Mapping[str, Any]], crds: CRDRegistry, kube_version: str) -> list[str]:
    """Convenience: :func:`validate_any` over many objects, errors concatenated in input order."""
    return [e for obj in objs for e in validate_any(obj, crds, kube_version)]
