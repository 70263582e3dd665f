"""Compile and run one CRD ``x-kubernetes-validations`` rule with ``cel-python`` (``celpy``), bounded.

kube-apiserver evaluates these rules with cel-go plus the Kubernetes CEL libraries. celpy is a
pure-Python CEL interpreter with the standard macros and functions only, so this module decides
per rule whether the fake can evaluate it faithfully:

- a rule (or ``messageExpression``) that does not parse, or that calls a function celpy does not
  have (the Kubernetes libraries: ``isSorted``, ``lowerAscii``, ``split``, ``format``, ``quantity``,
  ``url``, ``ip``/``cidr``, CEL optionals such as ``orValue``, regex ``find`` …)
  is *unsupported*: the fake skips it (it neither rejects objects nor crashes) and lists it in
  :func:`skipped_rules`;
- a rule with ``optionalOldSelf: true`` runs on create too, with ``oldSelf`` a CEL optional;
  celpy has no optionals, so the fake supports such a rule only when it uses ``oldSelf`` solely
  as ``oldSelf.hasValue()`` (Grove's "deprecated on new workloads" rules) and ``oldSelf.value()``
  (the scale targets' ``(oldSelf.hasValue() && ...oldSelf.value()...) || bound``), by binding
  the first call's result and the second to the old value (left unbound on create, so a use
  that ``hasValue()`` does not guard is an error there, as ``optional.none().value()`` is);
  any other use makes the rule unsupported;
- a rule that names ``oldSelf`` is a *transition rule* (the caller evaluates it on update only).

Cost bound. cel-go meters a rule's runtime cost and stops it past the per-call limit (1,000,000
units). The fake meters celpy's interpreter instead: every AST node visited costs one unit, and a rule
stops with kube's ``operation cancelled: actual cost limit exceeded`` once it spends
:data:`PER_CALL_LIMIT` units; one object's rules share :data:`PER_OBJECT_BUDGET` units (kube's
``RuntimeCELCostBudget``). One unit is about ten microseconds of Python, so a single rule is
bounded to about a second and one write's rules to a few seconds, whatever the input size or
nesting. The units are not cel-go's (a visit is finer-grained than a cel-go step), so a rule near
kube's limit may stop earlier here; each rule in the project's CRDs costs well under a hundred units.

Speed. celpy's interpreter needs about a millisecond per rule (its transpiling runner is faster
but mis-evaluates ``!has(...)``, the commonest CRD idiom, so it is not used). CEL is a pure
function of its inputs, so results for small inputs (≤ :data:`CACHE_INPUT_BYTES` of JSON) are
memoised in a bounded LRU (:data:`CACHE_ENTRIES`) together with the units they cost, which are
charged again on a hit: a controller rewriting the same spec (status writes, scale writes back
and forth) pays microseconds.
"""

from __future__ import annotations

import json
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import celpy
import lark
from celpy import celtypes
from celpy.adapter import json_to_cel
from celpy.evaluation import CELEvalError, Evaluator, base_functions

JsonObj = dict[str, Any]

PER_CALL_LIMIT = 100_000
PER_OBJECT_BUDGET = 300_000
MAX_RULE_LENGTH = 64 * 1024  # a rule longer than this is not compiled (kube bounds it by cost estimation)

# The standard CEL macros celpy implements (as methods or as ``has``/``dyn``), plus its functions.
_MACROS = frozenset({"has", "dyn", "all", "exists", "exists_one", "map", "filter"})
_SUPPORTED = frozenset(base_functions) | _MACROS

COST_EXCEEDED = "operation cancelled: actual cost limit exceeded"
HAS_VALUE_VARIABLE = "oldSelfHasValue__"  # what ``oldSelf.hasValue()`` becomes in optionalOldSelf rules
_HAS_VALUE = re.compile(r"\boldSelf\s*\.\s*hasValue\s*\(\s*\)")
OLD_VALUE_VARIABLE = "oldSelfValue__"  # what ``oldSelf.value()`` becomes in optionalOldSelf rules
_OLD_VALUE = re.compile(r"\boldSelf\s*\.\s*value\s*\(\s*\)")


class CostExceeded(Exception):
    """The rule spent more than its allowance (per call or per object)."""


class Budget:
    """Cost units left for one object's rules; each call also has :data:`PER_CALL_LIMIT`."""

    def __init__(self, total: int = PER_OBJECT_BUDGET) -> None:
        self.remaining = total
        self._call_left = 0

    def start_call(self) -> None:
        self._call_left = PER_CALL_LIMIT

    def spend(self) -> None:
        self._call_left -= 1
        self.remaining -= 1
        if self._call_left < 0 or self.remaining < 0:
            raise CostExceeded(COST_EXCEEDED)

    def charge(self, units: int) -> None:
        """Charge what a memoised evaluation cost when it ran."""
        self._call_left -= units
        self.remaining -= units
        if self._call_left < 0 or self.remaining < 0:
            raise CostExceeded(COST_EXCEEDED)

    @property
    def exhausted(self) -> bool:
        return self.remaining <= 0


class _MeteredEvaluator(Evaluator):
    """celpy's tree-walking evaluator, charging one unit per node visited (macro bodies included)."""

    def __init__(self, ast: lark.Tree[Any], activation: Any, budget: Budget) -> None:
        super().__init__(ast, activation)
        self._budget = budget

    def _visit_tree(self, tree: lark.Tree[Any]) -> Any:
        self._budget.spend()
        return super()._visit_tree(tree)

    def sub_evaluator(self, ast: lark.Tree[Any]) -> Evaluator:
        return _MeteredEvaluator(ast, self.activation, self._budget)


@dataclass(frozen=True)
class Expression:
    """One compiled CEL expression (a rule or a messageExpression)."""

    source: str
    ast: lark.Tree[Any]
    runner: Any  # celpy.Runner (untyped library object)
    uses_old_self: bool


@dataclass(frozen=True)
class CompiledRule:
    """A validation rule as the CRD states it, compiled; ``unsupported`` says why it is skipped."""

    rule: str
    message: str
    message_expression: Expression | None
    reason: str
    field_path: str
    program: Expression | None
    unsupported: str = ""
    optional_old_self: bool = False  # runs without an old value; ``oldSelf.hasValue()`` is bound

    @property
    def uses_old_self(self) -> bool:
        return self.optional_old_self or (self.program is not None and self.program.uses_old_self)


class Unsupported(ValueError):
    """celpy cannot evaluate this expression the way cel-go with Kubernetes' libraries would."""


_ENV = celpy.Environment()
CACHE_ENTRIES = 2048
CACHE_INPUT_BYTES = 2048
_RESULTS: OrderedDict[tuple[str, str], tuple[Any, int]] = OrderedDict()  # → (value or error, units)
_LOCK = threading.Lock()
_EXPRESSIONS: dict[str, Expression | Unsupported] = {}
_SKIPPED: dict[str, str] = {}


def _names_called(ast: lark.Tree[Any]) -> set[str]:
    names: set[str] = set()
    for node in ast.iter_subtrees():
        if node.data == "member_dot_arg" and len(node.children) >= 2:
            names.add(str(node.children[1]))
        elif node.data == "ident_arg" and node.children:
            names.add(str(node.children[0]))
    return names


def _uses_old_self(ast: lark.Tree[Any]) -> bool:
    return any(
        node.data == "ident" and node.children and str(node.children[0]) == "oldSelf"
        for node in ast.iter_subtrees()
    )


def compile_expression(source: str) -> Expression:
    """Compile ``source`` once per process (cached); raises :class:`Unsupported`."""
    with _LOCK:
        cached = _EXPRESSIONS.get(source)
    if cached is None:
        cached = _compile(source)
        with _LOCK:
            _EXPRESSIONS[source] = cached
    if isinstance(cached, Unsupported):
        raise cached
    return cached


def _compile(source: str) -> Expression | Unsupported:
    if len(source) > MAX_RULE_LENGTH:
        return Unsupported(f"longer than {MAX_RULE_LENGTH} characters")
    try:
        with _LOCK:
            ast = _ENV.compile(source)
            runner = _ENV.program(ast)
    except Exception as error:  # celpy raises its own parse errors and, for odd input, lark's
        return Unsupported(f"celpy cannot parse it: {type(error).__name__}: {str(error).splitlines()[0][:200]}")
    missing = sorted(_names_called(ast) - _SUPPORTED)
    if missing:
        return Unsupported(f"uses functions celpy lacks: {', '.join(missing)}")
    return Expression(source, ast, runner, _uses_old_self(ast))


def compile_rule(rule: Any) -> CompiledRule:
    """Compile one ``x-kubernetes-validations`` entry; never raises (bad rules become unsupported)."""
    if not isinstance(rule, dict) or not isinstance(rule.get("rule"), str):
        return CompiledRule(str(rule), "", None, "", "", None, "not a rule object with a string rule")
    text = rule["rule"]
    message = rule.get("message") if isinstance(rule.get("message"), str) else ""
    reason = rule.get("reason") if isinstance(rule.get("reason"), str) else ""
    field_path = rule.get("fieldPath") if isinstance(rule.get("fieldPath"), str) else ""
    unsupported = ""
    program: Expression | None = None
    message_expression: Expression | None = None
    optional = rule.get("optionalOldSelf") is True
    source = _OLD_VALUE.sub(OLD_VALUE_VARIABLE, _HAS_VALUE.sub(HAS_VALUE_VARIABLE, text)) if optional else text
    try:
        program = compile_expression(source)
        if optional and program.uses_old_self:
            raise Unsupported("optionalOldSelf with oldSelf used beyond hasValue()/value() needs CEL optionals")
        if isinstance(rule.get("messageExpression"), str) and rule["messageExpression"]:
            message_expression = compile_expression(rule["messageExpression"])
    except Unsupported as error:
        unsupported = str(error)
        program = None
    if unsupported:
        with _LOCK:
            _SKIPPED[text] = unsupported
    return CompiledRule(
        text, message or "", message_expression, reason or "", field_path or "", program, unsupported, optional
    )


def skipped_rules() -> dict[str, str]:
    """Every rule the fake has declined to evaluate so far in this process, with the reason."""
    with _LOCK:
        return dict(_SKIPPED)


def to_cel(value: Any) -> Any:
    """A JSON value as the CEL value cel-go would bind (objects become maps, numbers int/double)."""
    return json_to_cel(value)


def evaluate(expression: Expression, variables: JsonObj, budget: Budget) -> Any:
    """Run ``expression`` with ``variables`` (JSON values: ``self``, ``oldSelf`` …) under ``budget``.

    Returns the CEL value; raises :class:`CELEvalError` for a runtime error (no such key, no such
    overload, division by zero …) and :class:`CostExceeded` past the cost limits.
    """
    budget.start_call()
    text = json.dumps(variables, sort_keys=True, separators=(",", ":"))
    key = (expression.source, text) if len(text) <= CACHE_INPUT_BYTES else None
    with _LOCK:  # celpy annotates the shared AST while it evaluates: one evaluation at a time
        cached = _RESULTS.get(key) if key is not None else None
        if cached is not None and key is not None:
            _RESULTS.move_to_end(key)
    if cached is not None:
        outcome, units = cached
        budget.charge(units)
        if isinstance(outcome, CELEvalError):
            raise CELEvalError(*outcome.args)  # a fresh error: re-raising one instance grows its traceback
        return outcome
    activation = {name: to_cel(value) for name, value in variables.items()}
    before = budget.remaining
    with _LOCK:
        evaluator = _MeteredEvaluator(expression.ast, expression.runner.new_activation(), budget)
        try:
            outcome = evaluator.evaluate(activation)
        except CELEvalError as error:
            outcome = error
        if key is not None:
            _RESULTS[key] = (outcome, before - budget.remaining)
            while len(_RESULTS) > CACHE_ENTRIES:
                _RESULTS.popitem(last=False)
    if isinstance(outcome, CELEvalError):
        raise outcome
    return outcome


def is_true(value: Any) -> bool:
    """CEL ``true`` (and nothing else: a rule yielding a non-bool fails, as cel-go's ``!= types.True``)."""
    return isinstance(value, celtypes.BoolType) and bool(value)


def eval_error_text(error: CELEvalError) -> str:
    """celpy's error text, shaped like cel-go's where the meaning is the same."""
    args: Any = error.args
    # The transpiled runner wraps the real error: ("evaluation error", type, (message, ...)).
    while args and args[0] == "evaluation error" and len(args) > 2 and isinstance(args[2], tuple) and args[2]:
        args = args[2]
    text = str(args[0]) if args else str(error)
    if text.startswith("no such member in mapping: "):
        return "no such key: " + text.removeprefix("no such member in mapping: ").strip("'")
    return text
