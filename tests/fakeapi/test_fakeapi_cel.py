"""CRD ``x-kubernetes-validations`` (CEL) rules, pinned to the Kubernetes documentation.

Source of the rules: kubernetes.io, *Extend the Kubernetes API with CustomResourceDefinitions* →
"Validation rules" (``self``, transition rules with ``oldSelf``, ``message``,
``messageExpression``, ``reason``, ``fieldPath``, "Validation rules are only evaluated on
values that are present", resource-root ``metadata`` limited to ``name``/``generateName``,
cost limits) and "Validation ratcheting"; the ``ValidationRule`` API reference; the error text
of apiextensions-apiserver's ``schema/cel/validation.go`` (Kubernetes 1.35, which omits the value
of objects and arrays from the message, PRs 132798/133832; older releases show the type).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from celpy.evaluation import CELEvalError

from tests.fakeapi.crd_fixtures import WIDGET_CRD, write_crds
from tests.fakeapi.fakeapi_helpers import raw
from tests.fakeserver import FakeApiServer
from tests.fakeserver import cel as fake_cel
from tests.fakeserver.crd_rules import CelRuleValidator

WIDGETS = "/apis/test.grove.io/v1/namespaces/default/widgets"
GROVE_SAMPLES = Path(__file__).resolve().parents[3] / "shared" / "samples" / "grove"


def widget(name: str = "w", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "test.grove.io/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec}


@pytest.fixture
def widgets(tmp_path: Path) -> Any:
    with FakeApiServer(extra_crds=[write_crds(tmp_path, WIDGET_CRD)]) as fake:
        yield fake
        assert fake.internal_errors == []


def _causes(body: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(c["reason"], c["field"], c["message"]) for c in body["details"]["causes"]]


# ------------------------------------------------------------------------------ failures and shape
def test_a_failing_rule_is_a_422_with_kubes_message_and_causes(widgets: FakeApiServer) -> None:
    """Docs: a rule evaluating to false rejects the write with 422 Invalid; the error is at the
    rule's schema node (``spec``); without ``message`` the text is ``failed rule: <rule>``;
    ``messageExpression`` (a one-line string) replaces the message; ``reason`` picks the cause
    type (FieldValueForbidden → ``Forbidden``) and ``fieldPath`` is appended to the node's path.
    Kubernetes 1.35 shows no value for an object (``Invalid value: <detail>``)."""
    status, body = raw(widgets, "POST", WIDGETS, widget(low=5, high=1))
    assert status == 422, body
    assert body["reason"] == "Invalid"
    assert body["details"] == {
        "name": "w",
        "group": "test.grove.io",
        "kind": "Widget",
        "causes": body["details"]["causes"],
    }
    assert _causes(body) == [
        ("FieldValueInvalid", "spec", "Invalid value: failed rule: self.low <= self.high"),
        ("FieldValueInvalid", "spec", "Invalid value: low (5) exceeds high (1)"),
        ("FieldValueForbidden", "spec.low", "Forbidden: bounds are inverted"),
    ]
    assert body["message"] == (
        'Widget.test.grove.io "w" is invalid: [spec: Invalid value: failed rule: self.low <= self.high, '
        "spec: Invalid value: low (5) exceeds high (1), spec.low: Forbidden: bounds are inverted]"
    )


def test_before_1_35_the_schema_type_is_shown_as_the_value(tmp_path: Path) -> None:
    """Before Kubernetes 1.35 the CEL validator passed the schema type as the bad value:
    ``spec: Invalid value: "object": <message>``."""
    with FakeApiServer(extra_crds=[write_crds(tmp_path, WIDGET_CRD)], kubernetes_version="1.34.0") as fake:
        status, body = raw(fake, "POST", WIDGETS, widget(low=5, high=1))
    assert status == 422
    assert body["message"].startswith(
        'Widget.test.grove.io "w" is invalid: [spec: Invalid value: "object": failed rule: self.low <= self.high,'
    )


def test_scalar_nodes_show_their_value(widgets: FakeApiServer) -> None:
    """A rule on a scalar (here under ``additionalProperties``, path ``spec.labels[k]``) reports the
    value itself in 1.35 (a string quoted); map values are addressed with ``[key]``."""
    status, body = raw(widgets, "POST", WIDGETS, widget(labels={"k": "much-too-long"}))
    assert status == 422
    assert _causes(body) == [("FieldValueInvalid", "spec.labels[k]", 'Invalid value: "much-too-long": too long')]


def test_rules_run_on_each_list_item_with_its_index(widgets: FakeApiServer) -> None:
    """A rule under ``items`` has ``self`` = one element; the path carries its index."""
    status, body = raw(widgets, "POST", WIDGETS, widget(items=[{"name": "a", "size": 1}, {"name": "b", "size": 0}]))
    assert status == 422
    assert _causes(body) == [("FieldValueInvalid", "spec.items[1]", "Invalid value: size must be positive")]


def test_root_rules_see_metadata_name_and_report_at_nil(widgets: FakeApiServer) -> None:
    """At the resource root ``self.metadata.name`` is available; a root error's path is a nil
    ``field.Path``, rendered ``<nil>``."""
    status, body = raw(widgets, "POST", WIDGETS, widget(name="same", forbiddenName="same"))
    assert status == 422
    assert _causes(body) == [
        ("FieldValueInvalid", "<nil>", "Invalid value: spec.forbiddenName may not be the object's name")
    ]
    assert raw(widgets, "POST", WIDGETS, widget(name="other", forbiddenName="same"))[0] == 201


def test_a_runtime_error_is_reported_with_the_rule(widgets: FakeApiServer) -> None:
    """A rule that errors at run time (here: no such key) fails validation with
    ``<error> evaluating rule: <message or rule>``; the value shown is the schema type."""
    status, body = raw(widgets, "POST", WIDGETS, widget(missing={}))
    assert status == 422
    assert _causes(body) == [
        ("FieldValueInvalid", "spec", 'Invalid value: "object": no such key: nope evaluating rule: unreachable')
    ]


def test_a_valid_object_passes_and_absent_values_are_not_validated(widgets: FakeApiServer) -> None:
    """Rules are evaluated only for values that are present: no ``items``/``labels`` → no rule."""
    status, body = raw(widgets, "POST", WIDGETS, widget(low=1, high=2))
    assert status == 201, body


# ------------------------------------------------------------------------------ transition rules
def test_transition_rules_run_only_on_update_against_the_old_value(widgets: FakeApiServer) -> None:
    """A rule naming ``oldSelf`` is a transition rule: not evaluated on create, evaluated on update
    with ``oldSelf`` = the stored value (through patch, PUT and the status subresource alike)."""
    assert raw(widgets, "POST", WIDGETS, widget(version=5))[0] == 201
    path = f"{WIDGETS}/w"
    status, body = raw(widgets, "PATCH", path, {"spec": {"version": 4}}, "application/merge-patch+json")
    assert status == 422
    assert _causes(body) == [("FieldValueInvalid", "spec.version", "Invalid value: 4: version may not go back")]
    assert raw(widgets, "PATCH", path, {"spec": {"version": 6}}, "application/merge-patch+json")[0] == 200
    current = raw(widgets, "GET", path)[1]
    current["spec"]["version"] = 1
    assert raw(widgets, "PUT", path, current)[0] == 422


def test_transition_rules_correlate_list_map_entries_by_key(widgets: FakeApiServer) -> None:
    """``oldSelf`` exists for an element of an ``x-kubernetes-list-type: map`` list when the old list
    has an element with the same keys; a new element has none, so its transition rule is skipped."""
    named = [{"name": "a", "size": 3}]
    assert raw(widgets, "POST", WIDGETS, widget(named=named))[0] == 201
    path = f"{WIDGETS}/w"
    patch = {"spec": {"named": [{"name": "new", "size": 1}, {"name": "a", "size": 2}]}}
    status, body = raw(widgets, "PATCH", path, patch, "application/merge-patch+json")
    assert status == 422
    assert _causes(body) == [("FieldValueInvalid", "spec.named[1]", "Invalid value: size may only grow")]
    patch = {"spec": {"named": [{"name": "new", "size": 1}, {"name": "a", "size": 4}]}}
    assert raw(widgets, "PATCH", path, patch, "application/merge-patch+json")[0] == 200


def test_status_writes_validate_the_whole_object(widgets: FakeApiServer) -> None:
    """The status subresource runs the CRD's rules over the whole object too; with the spec unchanged
    the spec's rules pass (transition rules compare equal values; others are ratcheted)."""
    assert raw(widgets, "POST", WIDGETS, widget(version=2))[0] == 201
    status, body = raw(
        widgets, "PATCH", f"{WIDGETS}/w/status", {"status": {"phase": "Ready"}}, "application/merge-patch+json"
    )
    assert status == 200, body


def test_ratcheting_keeps_an_unchanged_invalid_value_writable(widgets: FakeApiServer) -> None:
    """Validation ratcheting: on update, a rule without ``oldSelf`` that fails on a value equal to the
    stored one is not an error; changing that value makes it count again."""
    widgets.put_object(widget(low=9, high=1))  # stored before the rule existed, say
    path = f"{WIDGETS}/w"
    assert raw(widgets, "PATCH", path, {"metadata": {"labels": {"a": "b"}}}, "application/merge-patch+json")[0] == 200
    status, _ = raw(widgets, "PATCH", path, {"spec": {"low": 8}}, "application/merge-patch+json")
    assert status == 422


# ------------------------------------------------------------------------------ what the fake skips / bounds
def test_rules_celpy_cannot_run_are_skipped_and_listed(widgets: FakeApiServer) -> None:
    """``lowerAscii`` is a Kubernetes CEL library function celpy lacks: the fake neither rejects the
    object nor fails; the rule is listed with the reason (a real server would enforce it)."""
    status, body = raw(widgets, "POST", WIDGETS, widget(mode="FAST"))
    assert status == 201, body
    skipped = fake_cel.skipped_rules()
    assert "lowerAscii" in skipped["self.mode.lowerAscii() == self.mode"]


def test_the_shared_crds_rules_all_run_in_the_fake() -> None:
    """Every rule in the shared CRDs compiles in celpy or is skipped with a reason; today none is
    skipped (Grove's ``optionalOldSelf`` rules use ``oldSelf`` only as ``oldSelf.hasValue()``)."""
    with FakeApiServer() as fake:
        validator = CelRuleValidator()
        for rt in fake.registry.all():
            if rt.schema is not None and validator.has_rules(rt.schema):
                validator.errors(rt.schema, {"apiVersion": rt.api_version, "kind": rt.kind, "metadata": {}}, None)
    shared = {k: v for k, v in fake_cel.skipped_rules().items() if "lowerAscii" not in k}
    assert shared == {}


def _grove_pcs(pack_domain: bool) -> dict[str, Any]:
    pcs = yaml.safe_load((GROVE_SAMPLES / "simple" / "simple1.yaml").read_text(encoding="utf-8"))
    pcs["metadata"] = {"name": "pcs"}
    if pack_domain:
        pcs["spec"]["template"]["topologyConstraint"] = {"topologyName": "t", "packDomain": "rack"}
    return dict(pcs)


def test_optional_old_self_rules_run_on_create(server: FakeApiServer) -> None:
    """``optionalOldSelf: true`` makes a transition rule run on create with ``oldSelf`` unset:
    Grove refuses the deprecated ``packDomain`` on new workloads (reason FieldValueForbidden,
    fieldPath ``.spec.template.topologyConstraint.packDomain``) but keeps accepting updates of
    a workload that already has it (``oldSelf.hasValue()``)."""
    path = "/apis/grove.io/v1alpha1/namespaces/default/podcliquesets"
    status, body = raw(server, "POST", path, _grove_pcs(pack_domain=True))
    assert status == 422, body
    assert _causes(body) == [
        (
            "FieldValueForbidden",
            "spec.template.topologyConstraint.packDomain",
            "Forbidden: packDomain is deprecated and cannot be used on new workloads; use pack.required",
        )
    ]
    server.put_object(dict(_grove_pcs(pack_domain=True), apiVersion="grove.io/v1alpha1", kind="PodCliqueSet"))
    status, body = raw(server, "PATCH", f"{path}/pcs", {"metadata": {"labels": {"x": "y"}}}, "application/merge-patch+json")
    assert status == 200, body
    assert raw(server, "POST", path, dict(_grove_pcs(pack_domain=False), metadata={"name": "new"}))[0] == 201


def test_a_shared_crd_transition_rule_is_enforced(server: FakeApiServer) -> None:
    """KAI's Topology forbids changing the levels' node labels (``self.map(l, l.nodeLabel) ==
    oldSelf.map(l, l.nodeLabel)``): a rule from a real CRD, evaluated by celpy."""
    path = "/apis/kai.scheduler/v1alpha1/topologies"
    topology = {
        "apiVersion": "kai.scheduler/v1alpha1",
        "kind": "Topology",
        "metadata": {"name": "t"},
        "spec": {"levels": [{"nodeLabel": "zone"}, {"nodeLabel": "kubernetes.io/hostname"}]},
    }
    status, body = raw(server, "POST", path, topology)
    assert status == 201, body
    patch = {"spec": {"levels": [{"nodeLabel": "rack"}, {"nodeLabel": "kubernetes.io/hostname"}]}}
    status, body = raw(server, "PATCH", f"{path}/t", patch, "application/merge-patch+json")
    assert status == 422
    assert body["details"]["causes"][0]["field"] == "spec.levels"


def test_an_expensive_rule_is_cut_off_by_the_cost_limit(widgets: FakeApiServer) -> None:
    """Rules have a per-call cost limit; past it the write fails with kube's "call cost exceeds limit"
    error and no further rule runs. A cubic rule over 100 elements (10⁶ steps) must stop early."""
    started = time.monotonic()
    status, body = raw(widgets, "POST", WIDGETS, widget(matrix=list(range(100))))
    elapsed = time.monotonic() - started
    assert status == 422
    (cause,) = body["details"]["causes"]
    assert cause["field"] == "spec.matrix"
    assert cause["message"] == (
        "Invalid value: \"array\": 'operation cancelled: actual cost limit exceeded': no further validation "
        "rules will be run due to call cost exceeds limit for rule: sums must be non-negative"
    )
    assert elapsed < 30  # generous: the limit bounds the work (about a second on a calm machine)


def test_budget_is_per_call_and_per_object() -> None:
    """The meter stops a call at PER_CALL_LIMIT units and an object at PER_OBJECT_BUDGET units."""
    budget = fake_cel.Budget(total=fake_cel.PER_CALL_LIMIT * 2)
    program = fake_cel.compile_expression("self.all(a, self.all(b, a + b >= 0))")
    assert fake_cel.is_true(fake_cel.evaluate(program, {"self": list(range(10))}, budget))
    with pytest.raises(fake_cel.CostExceeded):
        fake_cel.evaluate(program, {"self": list(range(1000))}, budget)


def test_blocking_schema_errors_skip_the_rules(widgets: FakeApiServer) -> None:
    """With a type error (a blocking schema error) kube does not run the CEL rules and adds
    "some validation rules were not checked because the object was invalid"."""
    status, body = raw(widgets, "POST", WIDGETS, widget(low="x", high=1))
    assert status == 422
    messages = [c["message"] for c in body["details"]["causes"]]
    assert any("must be of type integer" in m for m in messages)
    assert messages[-1].endswith(
        "some validation rules were not checked because the object was invalid; correct the existing errors to "
        "complete validation"
    )
    assert not any("failed rule" in m for m in messages)



def test_memoised_results_cost_the_same_and_errors_stay_errors() -> None:
    """CEL is a pure function of its inputs: a repeated evaluation is served from the memo but is
    charged the units it cost, and a runtime error is raised again (a fresh exception each time)."""
    program = fake_cel.compile_expression("self.all(a, a >= 0)")
    first, second = fake_cel.Budget(), fake_cel.Budget()
    assert fake_cel.is_true(fake_cel.evaluate(program, {"self": [1, 2, 3]}, first))
    assert fake_cel.is_true(fake_cel.evaluate(program, {"self": [1, 2, 3]}, second))
    assert first.remaining == second.remaining < fake_cel.PER_OBJECT_BUDGET
    failing = fake_cel.compile_expression("self.nope > 1")
    errors = []
    for _ in range(2):
        with pytest.raises(CELEvalError) as info:
            fake_cel.evaluate(failing, {"self": {"a": 1}}, fake_cel.Budget())
        errors.append(info.value)
    assert errors[0] is not errors[1]
    assert fake_cel.eval_error_text(errors[1]) == "no such key: nope"


def test_optional_old_self_rules_may_read_the_old_value_behind_has_value() -> None:
    """``optionalOldSelf`` with ``oldSelf.value()`` (the scale targets' rules, issue 32.4): on create
    the ``hasValue()`` guard is false and the bound is judged; on update the old value is read. An
    unguarded ``value()`` on create is an error, as ``optional.none().value()`` is in cel-go."""
    guarded = {
        "rule": "(oldSelf.hasValue() && self.n == oldSelf.value().n) || self.n <= self.max",
        "optionalOldSelf": True,
        "message": "n above max",
    }
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer"}, "max": {"type": "integer"}},
        "x-kubernetes-validations": [guarded],
    }
    validator = CelRuleValidator()
    assert [e.detail for e in validator.errors(schema, {"n": 9, "max": 5}, None)] == ["n above max"]
    assert validator.errors(schema, {"n": 3, "max": 5}, None) == []
    assert validator.errors(schema, {"n": 9, "max": 2}, {"n": 9, "max": 10}) == []  # n kept: bounds may move
    assert [e.detail for e in validator.errors(schema, {"n": 50, "max": 40}, {"n": 9, "max": 10})] == ["n above max"]
    assert fake_cel.skipped_rules().get(guarded["rule"]) is None

    unguarded = {**guarded, "rule": "self.n == oldSelf.value().n || self.n <= self.max"}
    errors = validator.errors({**schema, "x-kubernetes-validations": [unguarded]}, {"n": 3, "max": 5}, None)
    assert errors == []  # the second branch is true: CEL's || absorbs the error
    errors = validator.errors({**schema, "x-kubernetes-validations": [unguarded]}, {"n": 9, "max": 5}, None)
    assert len(errors) == 1 and "evaluating rule" in errors[0].detail
