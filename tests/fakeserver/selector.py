"""Label and field selectors, parsed and matched like ``k8s.io/apimachinery/pkg/labels``/``fields``.

A controller that lists ``grove.io/podgang=x`` must get exactly the matching pods, and a typo in
a selector must fail with 400 as it would in a cluster instead of silently matching everything.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

JsonObj = dict[str, Any]

_KEY = r"(?:[A-Za-z0-9.\-]+/)?[A-Za-z0-9](?:[A-Za-z0-9_.\-]*[A-Za-z0-9])?"
_VALUE = r"(?:[A-Za-z0-9](?:[A-Za-z0-9_.\-]*[A-Za-z0-9])?)?"
_SET_RE = re.compile(rf"^({_KEY})\s+(in|notin)\s*\(([^)]*)\)$")
_EQ_RE = re.compile(rf"^({_KEY})\s*(==|=|!=)\s*({_VALUE})$")
_CMP_RE = re.compile(rf"^({_KEY})\s*(<|>)\s*(-?\d+)$")
_EXISTS_RE = re.compile(rf"^(!?)\s*({_KEY})$")
_VALUE_RE = re.compile(rf"^{_VALUE}$")


class SelectorError(ValueError):
    """A selector the real server would reject with 400 BadRequest."""


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # =, !=, in, notin, exists, !, <, >
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        if self.op in ("=", "in"):
            return present and value in self.values
        if self.op in ("!=", "notin"):
            return not present or value not in self.values
        if not present or value is None:
            return False
        try:
            number = int(value)
        except ValueError:
            return False
        bound = int(self.values[0])
        return number > bound if self.op == ">" else number < bound


def _split_terms(text: str) -> list[str]:
    """Split on commas that are not inside ``(...)``."""
    terms: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            terms.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    terms.append("".join(current).strip())
    return terms


def parse_label_selector(text: str | None) -> list[Requirement]:
    """``a=b,c!=d,e in (x,y),!f,g`` → requirements (ANDed). Empty → matches everything."""
    if not text or not text.strip():
        return []
    out = []
    for term in _split_terms(text):
        if not term:
            raise SelectorError(f"unable to parse requirement: found '', expected: identifier in {text!r}")
        if match := _SET_RE.match(term):
            key, op, raw = match.groups()
            values = tuple(v.strip() for v in raw.split(",") if v.strip())
            if not values or not all(_VALUE_RE.match(v) for v in values):
                raise SelectorError(f"unable to parse requirement: invalid values in {term!r}")
            out.append(Requirement(key, op, values))
        elif match := _EQ_RE.match(term):
            key, op, value = match.groups()
            out.append(Requirement(key, "=" if op in ("=", "==") else "!=", (value,)))
        elif match := _CMP_RE.match(term):
            key, op, value = match.groups()
            out.append(Requirement(key, op, (value,)))
        elif match := _EXISTS_RE.match(term):
            bang, key = match.groups()
            out.append(Requirement(key, "!" if bang else "exists"))
        else:
            raise SelectorError(f"unable to parse requirement: {term!r}")
    return out


def labels_match(requirements: list[Requirement], obj: JsonObj) -> bool:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return all(r.matches(labels) for r in requirements)


# Field selectors the real server supports per type (everything else is a 400).
_COMMON_FIELDS = ("metadata.name", "metadata.namespace")
_FIELDS_BY_RESOURCE: dict[str, tuple[str, ...]] = {
    "pods": (
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "spec.hostNetwork",
        "status.phase",
        "status.podIP",
        "status.nominatedNodeName",
    ),
    "events": (
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
    ),
    "namespaces": ("status.phase",),
    "secrets": ("type",),
    "nodes": ("spec.unschedulable",),
}


@dataclass(frozen=True)
class FieldRequirement:
    field: str
    op: str  # = or !=
    value: str

    def matches(self, obj: JsonObj) -> bool:
        actual = field_value(obj, self.field)
        return (actual == self.value) == (self.op == "=")


def field_value(obj: JsonObj, path: str) -> str:
    """A dotted field as the server's field set renders it: missing → ``""``, bools lowercase."""
    node: Any = obj
    for part in path.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    if node is None:
        return ""
    if isinstance(node, bool):
        return "true" if node else "false"
    return str(node)


def parse_field_selector(text: str | None, resource: str, builtin: bool) -> list[FieldRequirement]:
    """``metadata.name=x,spec.nodeName=`` → requirements; unsupported fields raise (400)."""
    if not text or not text.strip():
        return []
    allowed = set(_COMMON_FIELDS)
    if builtin:
        allowed.update(_FIELDS_BY_RESOURCE.get(resource, ()))
    out = []
    for term in text.split(","):
        term = term.strip()
        match = re.match(r"^([A-Za-z0-9_.]+)\s*(==|=|!=)\s*(.*)$", term)
        if not match:
            raise SelectorError(f"invalid selector: '{text}'; can't understand '{term}'")
        field, op, value = match.groups()
        if field not in allowed:
            raise SelectorError(f"field label not supported: {field}")
        out.append(FieldRequirement(field, "=" if op in ("=", "==") else "!=", value))
    return out


def fields_match(requirements: list[FieldRequirement], obj: JsonObj) -> bool:
    return all(r.matches(obj) for r in requirements)
