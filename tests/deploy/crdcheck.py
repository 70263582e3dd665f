"""What kube-apiserver checks on a CustomResourceDefinition beyond its OpenAPI shape.

``tests.schemas.builtin_errors`` validates a CRD manifest against Kubernetes' own OpenAPI schema
of ``apiextensions.k8s.io/v1 CustomResourceDefinition`` (field names and types). The API server
then runs Go validation (``apiextensions-apiserver/pkg/apis/apiextensions/validation``) that no
OpenAPI schema expresses; this module reproduces the parts our CRDs depend on, so a mistake shows
up in a test instead of as a refused ``kubectl apply``:

* :func:`structural_errors`: the structural-schema rules ("Specifying a structural schema" in the
  Kubernetes docs): a type on every node, nothing but value validations inside logical junctors,
  ``properties`` and ``additionalProperties`` exclusive, ``metadata`` restricted, list-type map keys
  required scalars, ``x-kubernetes-preserve-unknown-fields`` only ``true``;
* :func:`resolve_path`: a printer column's JSONPath or a scale subresource path resolved to the
  schema node it reads (``None`` when the schema has no such field);
* :class:`TransitionRule`: a CEL transition rule of the form
  ``self.a == oldSelf.a || self.a >= self.b [|| ...]`` evaluated on an (old, new) pair, or with
  ``optionalOldSelf: true`` the guarded form ``(oldSelf.hasValue() && self.a == oldSelf.value().a)
  || ...`` (run on creates too, where the guard is false). Only that grammar is accepted (anything
  else raises), so the tests evaluate exactly the rules the CRDs ship, not a guess at CEL.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

_JUNCTORS = ("allOf", "anyOf", "oneOf", "not")
#: Keywords a structural schema forbids inside allOf/anyOf/oneOf/not.
_FORBIDDEN_IN_JUNCTORS = ("description", "type", "default", "additionalProperties", "nullable")
_SCALARS = ("string", "integer", "number", "boolean")


def _children(node: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for name, sub in (node.get("properties") or {}).items():
        yield f".{name}", sub
    if isinstance(node.get("items"), Mapping):
        yield "[*]", node["items"]
    if isinstance(node.get("additionalProperties"), Mapping):
        yield ".<key>", node["additionalProperties"]


def _junctor_errors(node: Mapping[str, Any], path: str) -> list[str]:
    errors = []
    for junctor in _JUNCTORS:
        branches = node.get(junctor)
        if branches is None:
            continue
        for i, branch in enumerate(branches if isinstance(branches, list) else [branches]):
            for key in _FORBIDDEN_IN_JUNCTORS:
                if key in branch:
                    errors.append(f"{path}.{junctor}[{i}]: {key} is not allowed inside a logical junctor")
    return errors


def structural_errors(schema: Mapping[str, Any]) -> list[str]:
    """Every structural-schema rule the openAPIV3Schema ``schema`` breaks ([] when structural)."""
    errors: list[str] = []
    if schema.get("type") != "object":
        errors.append("<root>: type must be object")
    metadata = (schema.get("properties") or {}).get("metadata")
    if metadata is not None and set(metadata) - {"type", "properties", "description"}:
        errors.append(".metadata: only type, description and restrictions of name/generateName are allowed")
    if metadata is not None and set(metadata.get("properties") or {}) - {"name", "generateName"}:
        errors.append(".metadata: only name and generateName may be restricted")

    def walk(node: Mapping[str, Any], path: str) -> None:
        preserve = node.get("x-kubernetes-preserve-unknown-fields")
        if preserve is not None and preserve is not True:
            errors.append(f"{path}: x-kubernetes-preserve-unknown-fields must be true or unset")
        if not node.get("type") and not (preserve or node.get("x-kubernetes-int-or-string")):
            errors.append(f"{path}: type is required")
        if "properties" in node and "additionalProperties" in node:
            errors.append(f"{path}: properties and additionalProperties are mutually exclusive")
        if node.get("uniqueItems") is True:
            errors.append(f"{path}: uniqueItems cannot be true")
        if node.get("type") == "object" and not (
            node.get("properties") or isinstance(node.get("additionalProperties"), Mapping) or preserve
        ) and path != ".metadata":
            errors.append(f"{path}: an object without properties prunes every field it is given")
        if node.get("type") == "array" and not isinstance(node.get("items"), Mapping):
            errors.append(f"{path}: an array needs items")
        errors.extend(_junctor_errors(node, path))
        if node.get("x-kubernetes-list-type") == "map":
            items = node.get("items") or {}
            keys = node.get("x-kubernetes-list-map-keys") or []
            if not keys:
                errors.append(f"{path}: list-type map needs x-kubernetes-list-map-keys")
            for key in keys:
                prop = (items.get("properties") or {}).get(key)
                if prop is None or prop.get("type") not in _SCALARS:
                    errors.append(f"{path}: map key {key} must be a scalar property of the items")
                elif key not in (items.get("required") or []) and "default" not in prop:
                    errors.append(f"{path}: map key {key} must be required or defaulted")
        for suffix, child in _children(node):
            walk(child, path + suffix)

    walk(schema, "")
    return errors


# -- paths ----------------------------------------------------------------------------------------
_FILTER = re.compile(r'\[\?\(@\.(?P<field>[A-Za-z_][A-Za-z0-9_]*)==(?P<quote>["\'])(?P<value>[^"\']*)(?P=quote)\)\]')
_STEP = re.compile(r"\.(?P<name>[A-Za-z_][A-Za-z0-9_]*)")


def resolve_path(schema: Mapping[str, Any], path: str) -> Mapping[str, Any] | None:
    """The schema node a simple JSONPath (``.a.b``, ``.a[?(@.k=="v")].b``) reads, or ``None``.

    The filter's field must exist in the array's items too. ``.metadata.*`` resolves to the
    fields every object has (the API server fills them, the schema does not list them).
    """
    if path in (".metadata.creationTimestamp", ".metadata.name", ".metadata.namespace"):
        return {"type": "string", "format": "date-time" if path.endswith("Timestamp") else ""}
    node: Mapping[str, Any] | None = schema
    pos = 0
    while pos < len(path):
        assert node is not None
        step = _STEP.match(path, pos)
        if step is not None:
            node = (node.get("properties") or {}).get(step.group("name"))
            pos = step.end()
        else:
            filt = _FILTER.match(path, pos)
            if filt is None or node.get("type") != "array":
                return None
            items = node.get("items") or {}
            if filt.group("field") not in (items.get("properties") or {}):
                return None
            node = items
            pos = filt.end()
        if node is None:
            return None
    return node


# -- CEL transition rules -------------------------------------------------------------------------
_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
}
_OPERAND = r"(?:self|oldSelf)\.[A-Za-z_][A-Za-z0-9_]*|\d+"
_COMPARISON = re.compile(rf"^\s*({_OPERAND})\s*(==|!=|>=|<=|>|<)\s*({_OPERAND})\s*$")
_GUARD = re.compile(
    r"^\s*\(\s*oldSelf\.hasValue\(\)\s*&&\s*self\.([A-Za-z_][A-Za-z0-9_]*)\s*==\s*"
    r"oldSelf\.value\(\)\.([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*$"
)


@dataclass(frozen=True)
class TransitionRule:
    """A disjunction of comparisons between fields of ``self`` / ``oldSelf`` and integer literals
    (with ``optional_old_self``, the first may be the ``oldSelf.hasValue() &&`` guard)."""

    rule: str
    optional_old_self: bool = False

    def __post_init__(self) -> None:
        for index, part in enumerate(self.rule.split("||")):
            guard = self.optional_old_self and index == 0 and _GUARD.match(part)
            if guard:
                if guard.group(1) != guard.group(2):
                    raise ValueError(f"guard compares different fields: {part.strip()!r}")
                continue
            if not _COMPARISON.match(part) or (self.optional_old_self and "oldSelf" in part):
                raise ValueError(f"not in the supported grammar: {part.strip()!r} of {self.rule!r}")

    @property
    def is_transition_rule(self) -> bool:
        """Kubernetes runs a rule that mentions oldSelf on updates only."""
        return re.search(r"\boldSelf\b", self.rule) is not None

    @staticmethod
    def _value(operand: str, new: Mapping[str, Any], old: Mapping[str, Any]) -> Any:
        if operand.isdigit():
            return int(operand)
        root, _, name = operand.partition(".")
        source = new if root == "self" else old
        if name not in source:
            raise KeyError(f"{operand}: no such key")  # CEL: "no such key" is an evaluation error
        return source[name]

    def allows(self, new: Mapping[str, Any], old: Mapping[str, Any] | None) -> bool:
        """The rule's verdict on an update ``old`` → ``new`` (on a create, ``old`` is None and a
        transition rule is not evaluated unless ``optionalOldSelf``; then its guard is false)."""
        if old is None and self.is_transition_rule and not self.optional_old_self:
            return True
        for index, part in enumerate(self.rule.split("||")):
            guard = self.optional_old_self and index == 0 and _GUARD.match(part)
            if guard:
                if old is not None and new[guard.group(1)] == old[guard.group(1)]:
                    return True
                continue
            match = _COMPARISON.match(part)
            assert match is not None
            left, op, right = match.groups()
            if _OPS[op](self._value(left, new, old or {}), self._value(right, new, old or {})):
                return True
        return False
