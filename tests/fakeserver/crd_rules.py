"""CRD ``x-kubernetes-validations`` (CEL rules) walked over an object, as apiextensions' CEL validator does.

The rules enforced here (Kubernetes docs, "Validation rules" in *Extend the Kubernetes API with
CustomResourceDefinitions*, and ``apiextensions-apiserver/pkg/apiserver/schema/cel/validation.go``):

- a rule sits at any schema node; ``self`` is the value at that node. Rules are evaluated only for
  values that are present and not null;
- at the resource root ``self.metadata`` exposes ``name`` and ``generateName`` only, and the
  rest of ``metadata`` is not walked;
- a rule naming ``oldSelf`` is a *transition rule*: it runs only on an update where the old
  object has a correlatable value at the same place (with ``optionalOldSelf: true`` it runs on
  create too, ``oldSelf.hasValue()`` being false, ``oldSelf.value()`` unbound) (through properties, map keys,
  ``x-kubernetes-list-type: map`` entries with the same keys and ``set`` entries; never through
  atomic lists);
- validation ratcheting (CRDValidationRatcheting, on by default since 1.30): on update a failing
  rule without ``oldSelf`` is not an error where the value equals its correlated old value;
- a failure is one field error at the node's path (or the node's path plus the rule's
  ``fieldPath``), ``Invalid`` unless ``reason`` says ``FieldValueForbidden``/``Required``/
  ``Duplicate``; the detail is ``messageExpression``'s result when it yields a one-line
  non-empty string, else ``message``, else ``failed rule: <rule>``. The value shown is the
  schema type (``"object"``) before Kubernetes 1.35; from 1.35 it is omitted for objects and
  arrays and is the value itself for scalars (kubernetes PRs 132798/133832);
- a runtime error is ``<error> evaluating rule: <message or rule>`` (``no such overload`` gets
  cel-go's longer text); a rule over its cost allowance stops all further rules.

Rules celpy cannot run faithfully are skipped (see :mod:`tests.fakeserver.cel`). ``allOf``/
``anyOf`` branches are not walked for rules.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
from typing import Any

from celpy.evaluation import CELEvalError

from tests.fakeserver import cel
from tests.fakeserver.errors import OMIT_VALUE, FieldError

JsonObj = dict[str, Any]
Path = tuple[str | int, ...]
MAX_MESSAGE_BYTES = 5 * 1024  # celconfig.MaxEvaluatedMessageExpressionSizeBytes

_REASONS = {"FieldValueForbidden": "Forbidden", "FieldValueRequired": "Required", "FieldValueDuplicate": "Duplicate"}


class _StopAll(Exception):
    """A cost limit was hit: kube reports it and runs no further rule on this object."""


def render_path(path: Path) -> str:
    """``("spec", "items", 0)`` → ``spec.items[0]``; the root is ``<nil>`` (a nil ``*field.Path``)."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part.startswith("["):
            out += part
        else:
            out += f".{part}" if out else part
    return out or "<nil>"


def _normalize_field_path(field_path: str) -> str:
    """A rule's ``fieldPath`` (``.a['b.c']``) as the child path kube appends (``a.b.c``)."""
    return re.sub(r"\[\s*'((?:[^'\\]|\\.)*)'\s*\]", r".\1", field_path).lstrip(".")


def _equal(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


class CelRuleValidator:
    """Evaluates every supported rule of a CRD schema against an object (and its old version).

    ``omit_complex_values``: Kubernetes ≥ 1.35 error rendering (see the module docstring).
    Compiled rules are cached per schema node; schemas are treated as read-only.
    """

    def __init__(self, *, omit_complex_values: bool = True, ratcheting: bool = True) -> None:
        self.omit_complex_values = omit_complex_values
        self.ratcheting = ratcheting
        self._lock = threading.Lock()
        self._rules: dict[int, tuple[JsonObj, list[cel.CompiledRule]]] = {}
        self._has_rules: dict[int, tuple[JsonObj, bool]] = {}

    # ------------------------------------------------------------------------------ schema caches
    def _node_rules(self, schema: JsonObj) -> list[cel.CompiledRule]:
        with self._lock:
            cached = self._rules.get(id(schema))
        if cached is not None and cached[0] is schema:
            return cached[1]
        raw = schema.get("x-kubernetes-validations")
        rules = [cel.compile_rule(r) for r in raw] if isinstance(raw, list) else []
        with self._lock:
            self._rules[id(schema)] = (schema, rules)
        return rules

    def _subtree_has_rules(self, schema: JsonObj) -> bool:
        with self._lock:
            cached = self._has_rules.get(id(schema))
        if cached is not None and cached[0] is schema:
            return cached[1]
        found = bool(schema.get("x-kubernetes-validations")) or any(
            self._subtree_has_rules(child) for child in _children(schema)
        )
        with self._lock:
            self._has_rules[id(schema)] = (schema, found)
        return found

    # ------------------------------------------------------------------------------ entry point
    def has_rules(self, schema: JsonObj | None) -> bool:
        """Whether any node of ``schema`` declares ``x-kubernetes-validations``."""
        return isinstance(schema, dict) and self._subtree_has_rules(schema)

    def errors(self, schema: JsonObj | None, obj: JsonObj, old: JsonObj | None) -> list[FieldError]:
        """Every rule failure of ``obj`` (``old`` is the stored object on update, else ``None``)."""
        if not isinstance(schema, dict) or not self._subtree_has_rules(schema):
            return []
        out: list[FieldError] = []
        budget = cel.Budget()
        with contextlib.suppress(_StopAll):  # reported already; kube runs no further rule either
            self._walk(schema, obj, old, (), out, budget, root=True)
        return out

    # ------------------------------------------------------------------------------ walking
    def _walk(
        self,
        schema: JsonObj,
        value: Any,
        old: Any,
        path: Path,
        out: list[FieldError],
        budget: cel.Budget,
        *,
        root: bool = False,
    ) -> None:
        if value is None or not self._subtree_has_rules(schema):
            return
        if schema.get("x-kubernetes-validations"):
            self._run_rules(schema, value, old, path, out, budget, root=root)
        if isinstance(value, dict):
            properties: JsonObj = schema["properties"] if isinstance(schema.get("properties"), dict) else {}
            additional = schema.get("additionalProperties")
            old_map = old if isinstance(old, dict) else None
            for key, child_value in value.items():
                if root and key == "metadata":
                    continue
                child_schema = properties.get(key) if key in properties else additional
                if not isinstance(child_schema, dict):
                    continue
                segment: str = key if key in properties else f"[{key}]"
                child_old = old_map.get(key) if old_map is not None else None
                self._walk(child_schema, child_value, child_old, (*path, segment), out, budget)
        elif isinstance(value, list):
            items = schema.get("items")
            if not isinstance(items, dict):
                return
            correlate = _list_correlator(schema, old if isinstance(old, list) else None)
            for index, item in enumerate(value):
                self._walk(items, item, correlate(item), (*path, index), out, budget)

    def _run_rules(
        self,
        schema: JsonObj,
        value: Any,
        old: Any,
        path: Path,
        out: list[FieldError],
        budget: cel.Budget,
        *,
        root: bool,
    ) -> None:
        unchanged = old is not None and _equal(value, old)
        activation: JsonObj | None = None
        for rule in self._node_rules(schema):
            if rule.program is None:
                continue  # unsupported by celpy: skipped, listed by cel.skipped_rules()
            if rule.uses_old_self and old is None and not rule.optional_old_self:
                continue  # transition rules need a correlated old value (unless optionalOldSelf)
            if not rule.uses_old_self and self.ratcheting and unchanged:
                continue  # ratcheting: an unchanged value keeps passing
            if budget.exhausted:
                out.append(self._type_error(schema, path, _OUT_OF_BUDGET))
                raise _StopAll
            if activation is None:
                activation = {"self": _root_view(value) if root else value, cel.HAS_VALUE_VARIABLE: old is not None}
                if old is not None:
                    activation["oldSelf"] = _root_view(old) if root else old
                    activation[cel.OLD_VALUE_VARIABLE] = activation["oldSelf"]
            self._run_rule(rule, schema, value, path, activation, out, budget)

    def _run_rule(
        self,
        rule: cel.CompiledRule,
        schema: JsonObj,
        value: Any,
        path: Path,
        activation: JsonObj,
        out: list[FieldError],
        budget: cel.Budget,
    ) -> None:
        assert rule.program is not None
        shown = (rule.message.strip() if rule.message else "") or rule.rule.strip()
        try:
            result = cel.evaluate(rule.program, activation, budget)
        except cel.CostExceeded as error:
            out.append(self._type_error(schema, path, _cost_text(error, budget, f"for rule: {shown}")))
            raise _StopAll from error
        except CELEvalError as error:
            text = cel.eval_error_text(error)
            if text.startswith("no such overload"):
                detail = (
                    f"'{text}': call arguments did not match a supported operator, function or macro "
                    f"signature for rule: {shown}"
                )
            else:
                detail = f"{text} evaluating rule: {shown}"
            out.append(self._type_error(schema, path, detail))
            return
        if cel.is_true(result):
            return
        error_path = path
        if rule.field_path:
            error_path = (*path, _normalize_field_path(rule.field_path))
        detail = self._message(rule, schema, error_path, activation, out, budget)
        out.append(self._failure(rule, schema, value, error_path, detail))

    def _message(
        self,
        rule: cel.CompiledRule,
        schema: JsonObj,
        path: Path,
        activation: JsonObj,
        out: list[FieldError],
        budget: cel.Budget,
    ) -> str:
        fallback = rule.message or f"failed rule: {rule.rule.strip()}"
        if rule.message_expression is None:
            return fallback
        try:
            result = cel.evaluate(rule.message_expression, activation, budget)
        except cel.CostExceeded as error:
            source = json.dumps(rule.message_expression.source)
            out.append(self._type_error(schema, path, _cost_text(error, budget, f"for messageExpression: {source}")))
            raise _StopAll from error
        except CELEvalError:
            return fallback  # logged by kube, then the static message is used
        if not isinstance(result, str):
            return fallback
        text = str(result).strip()
        if not text or "\n" in text or len(text.encode()) > MAX_MESSAGE_BYTES:
            return fallback
        return text

    def _type_error(self, schema: JsonObj, path: Path, detail: str) -> FieldError:
        """An error kube reports with the schema type as the value (runtime errors, cost)."""
        return FieldError("Invalid", render_path(path), detail, str(schema.get("type", "")))

    def _failure(self, rule: cel.CompiledRule, schema: JsonObj, value: Any, path: Path, detail: str) -> FieldError:
        if self.omit_complex_values:
            shown: Any = OMIT_VALUE if isinstance(value, dict | list) else value
        else:
            shown = str(schema.get("type", ""))
        kind = _REASONS.get(rule.reason, "Invalid")
        if kind == "Duplicate":
            return FieldError("Duplicate", render_path(path), "", shown)
        return FieldError(kind, render_path(path), detail, shown)


_OUT_OF_BUDGET = "validation failed due to running out of cost budget, no further validation rules will be run"


def _cost_text(error: cel.CostExceeded, budget: cel.Budget, what: str) -> str:
    if budget.remaining < 0:
        return _OUT_OF_BUDGET
    return f"'{error}': no further validation rules will be run due to call cost exceeds limit {what}"


def _root_view(obj: Any) -> Any:
    """The resource root as CEL sees it: ``metadata`` reduced to ``name`` and ``generateName``."""
    if not isinstance(obj, dict):
        return obj
    view = {k: v for k, v in obj.items() if k != "metadata"}
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        view["metadata"] = {k: meta[k] for k in ("name", "generateName") if k in meta}
    return view


def _children(schema: JsonObj) -> list[JsonObj]:
    children: list[JsonObj] = []
    properties = schema.get("properties")
    if isinstance(properties, dict):
        children.extend(v for v in properties.values() if isinstance(v, dict))
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            children.append(schema[key])
    return children


def _list_correlator(schema: JsonObj, old: list[Any] | None) -> Any:
    """Function item → its correlated old item (``None`` when the list type does not correlate)."""
    list_type = schema.get("x-kubernetes-list-type")
    if old is None or list_type not in ("map", "set"):
        return lambda _item: None
    if list_type == "set":
        return lambda item: item if any(_equal(item, o) for o in old) else None
    keys = [k for k in schema.get("x-kubernetes-list-map-keys") or [] if isinstance(k, str)]

    def key_of(item: Any) -> str | None:
        if not isinstance(item, dict):
            return None
        return json.dumps([item.get(k) for k in keys])

    index = {key_of(o): o for o in old if key_of(o) is not None}
    return lambda item: index.get(key_of(item))
