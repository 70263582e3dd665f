"""The HPA schema check's memo (issue 35.4): its answers are the check's own.

HPAs of PodCliqueSets that scale alike differ only in names, so the check runs once per
distinct spec; the memo must never hand one HPA's answer to another whose spec differs, nor
depend on the names it blanks.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from grove_gitops.expand import hpacheck
from grove_gitops.validation.podspec import object_errors

KUBE = "1.35"


def _hpa(name: str, metrics: list[Any], lo: int = 1, hi: int = 4) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name, "namespace": "default", "labels": {"app.kubernetes.io/name": name}},
        "spec": {"scaleTargetRef": {"apiVersion": "gitops.grove.io/v1alpha1", "kind": "PodClique", "name": name},
                 "minReplicas": lo, "maxReplicas": hi, "metrics": metrics},
    }


RESOURCE = {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}
_metric = st.sampled_from([
    RESOURCE,
    {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": "x"}}},
    {"type": "Resource", "bogus": 1, "resource": {"name": "cpu", "target": {"type": "Utilization"}}},
    {"type": "External", "external": {"metric": {"name": "q"}, "target": {"type": "AverageValue", "averageValue": "8"}}},
    {"type": "External", "external": {"metric": {"name": "q"}, "target": {"type": "AverageValue", "averageValue": "8x!"}}},
    {"type": "Pods"},
])


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "b-0-prefill", "llama-0001-1-decode"]), st.lists(_metric, max_size=3),
                          st.integers(-1, 3)), min_size=1, max_size=6))
def test_memoised_answers_are_the_checks_own(hpas: list[tuple[str, list[Any], int]]) -> None:
    hpacheck._MEMO.clear()
    for name, metrics, lo in hpas:
        obj = _hpa(name, metrics, lo)
        assert list(hpacheck._schema_errors(obj, KUBE)) == object_errors(obj, KUBE)


def test_one_check_per_distinct_spec_whatever_the_names() -> None:
    hpacheck._MEMO.clear()
    bad = {**RESOURCE, "bogus": 1}
    for i in range(20):
        assert hpacheck._schema_errors(_hpa(f"w-{i}", [RESOURCE]), KUBE) == ()
        assert [e.path for e in hpacheck._schema_errors(_hpa(f"w-{i}", [bad]), KUBE)] == ["spec.metrics[0].bogus"]
    assert len(hpacheck._MEMO) == 2
    hpacheck._MEMO.clear()


def test_the_memo_is_bounded() -> None:
    hpacheck._MEMO.clear()
    for i in range(hpacheck._MEMO_MAX + 5):
        hpacheck._schema_errors(_hpa("w", [RESOURCE], 1, 2 + i), KUBE)
    assert len(hpacheck._MEMO) <= hpacheck._MEMO_MAX
    hpacheck._MEMO.clear()
