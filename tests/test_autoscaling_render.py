"""What the render writes for autoscaled cliques and scaling groups (docs/autoscaling.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grove_gitops.errors import InvalidInputError
from tests.schemas import CRDRegistry
from tests.support import PROJECT, assert_schema_valid, objects_by_kind, plain, render_files, sample_text

SIMPLE1 = "simple/simple1.yaml"


def test_the_example_renders_its_hpa_and_record_without_the_old_warning(crds: CRDRegistry) -> None:
    from grove_gitops.render import render_source

    result = render_source(PROJECT / "examples")
    assert not [w for w in result.warnings if "autoscal" in w.lower() or "HorizontalPodAutoscaler" in w]
    assert_schema_valid(result, crds)
    hpa = objects_by_kind(result, "HorizontalPodAutoscaler")["llama-disagg-0-prefill"]
    assert hpa["spec"]["scaleTargetRef"] == {
        "apiVersion": "gitops.grove.io/v1alpha1", "kind": "PodCliqueScalingGroup", "name": "llama-disagg-0-prefill"}
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 4)
    assert hpa["metadata"]["labels"] == {
        "app.kubernetes.io/managed-by": "grove-gitops", "app.kubernetes.io/part-of": "llama-disagg",
        "app.kubernetes.io/name": "llama-disagg-0-prefill", "app.kubernetes.io/component": "pcs-hpa"}
    record = objects_by_kind(result, "PodCliqueSet")["llama-disagg"]
    assert record["apiVersion"] == "gitops.grove.io/v1alpha1"
    [target] = record["spec"]["scaleTargets"]
    assert target == {
        "kind": "PodCliqueScalingGroup", "name": "llama-disagg-0-prefill", "podCliqueSetReplica": 0,
        "templateName": "prefill", "minAvailable": 1, "minReplicas": 2, "maxReplicas": 4, "initialReplicas": 2,
        "selector": "app.kubernetes.io/managed-by=grove-gitops,app.kubernetes.io/part-of=llama-disagg,"
                    "grove.io/podcliquescalinggroup=llama-disagg-0-prefill"}
    assert record["spec"]["source"][0]["kind"] == "PodCliqueSet"


def test_grove_sample_with_both_autoscaling_kinds_renders_grove_hpas_in_grove_order(
    tmp_path: Path, crds: CRDRegistry
) -> None:
    result = render_files(tmp_path, {"s.yaml": sample_text(SIMPLE1)})
    assert_schema_valid(result, crds)
    hpas = [o.obj for o in result.objects if o.obj["kind"] == "HorizontalPodAutoscaler"]
    assert [(h["metadata"]["name"], h["spec"]["scaleTargetRef"]["kind"]) for h in hpas] == [
        ("simple1-0-pca", "PodClique"), ("simple1-0-sga", "PodCliqueScalingGroup")]
    # CPU at 80 %: metrics copied verbatim
    assert hpas[1]["spec"]["metrics"][0]["resource"]["name"] == "cpu"


def test_the_unit_mismatch_of_a_multi_pod_group_is_warned_with_its_factor(tmp_path: Path) -> None:
    result = render_files(tmp_path, {"s.yaml": sample_text(SIMPLE1)})
    [warning] = [w for w in result.warnings if "counts pods" in w]
    assert "podCliqueScalingGroups[0].scaleConfig.metrics" in warning
    assert "4 pods" in warning and "4x" in warning  # pcb 2 + pcc 2 pods per replica of sga


def test_an_average_value_external_metric_is_per_replica_and_not_warned(tmp_path: Path) -> None:
    result = render_files(tmp_path, {"s.yaml": _external_metric(sample_text(SIMPLE1))})
    assert not [w for w in result.warnings if "counts pods" in w]


def _external_metric(text: str) -> str:
    marker = "        scaleConfig:\n          maxReplicas: 6\n          metrics:\n"
    assert marker in text
    head, _ = text.split(marker)
    # drop the group's metric list (the rest of the file after it), replace with an External AverageValue one
    return head + marker + (
        "            - type: External\n"
        "              external:\n"
        "                metric: {name: queue_depth}\n"
        "                target: {type: AverageValue, averageValue: '8'}\n"
    )


def test_an_external_autoscaler_gets_scale_targets_and_no_hpa(tmp_path: Path) -> None:
    text = sample_text(SIMPLE1).replace("metadata:\n  name: simple1\n",
                                        "metadata:\n  name: simple1\n  annotations:\n    gitops.grove.io/autoscaler: external\n", 1)
    assert "gitops.grove.io/autoscaler" in text
    result = render_files(tmp_path, {"s.yaml": text})
    assert not objects_by_kind(result, "HorizontalPodAutoscaler")
    record = objects_by_kind(result, "PodCliqueSet")["simple1"]
    assert [t["name"] for t in record["spec"]["scaleTargets"]] == ["simple1-0-pca", "simple1-0-sga"]


def test_an_autoscaled_clique_leaves_its_count_dependent_base_gang_to_the_agent(tmp_path: Path) -> None:
    git = render_files(tmp_path / "git", {"s.yaml": sample_text(SIMPLE1)})
    live = render_files(tmp_path / "live", {"s.yaml": sample_text(SIMPLE1)}, at="initial")
    assert "simple1-0" not in objects_by_kind(git, "PodGang")  # its pca podReferences follow the live count
    assert "simple1-0" in objects_by_kind(live, "PodGang")
    # every pod Git holds is also in the live picture, unchanged
    git_pods, live_pods = objects_by_kind(git, "Pod"), objects_by_kind(live, "Pod")
    assert git_pods and all(live_pods[n] == p for n, p in git_pods.items())


def test_group_max_replicas_below_min_is_refused_where_grove_accepts_it(tmp_path: Path) -> None:
    text = sample_text(SIMPLE1).replace("maxReplicas: 6", "maxReplicas: 0")
    with pytest.raises(InvalidInputError) as info:
        render_files(tmp_path, {"s.yaml": text})
    assert any("scaleConfig.maxReplicas" in str(p) and "minReplicas" in str(p) for p in info.value.problems)


def test_an_autoscaling_maximum_beyond_the_pod_limit_is_refused_before_anything_loops(tmp_path: Path) -> None:
    text = sample_text(SIMPLE1).replace("maxReplicas: 6", "maxReplicas: 2000000000")
    with pytest.raises(InvalidInputError) as info:
        render_files(tmp_path, {"s.yaml": text})
    assert any("scaleConfig.maxReplicas" in str(p) and "above the limit" in str(p) for p in info.value.problems)


def test_counts_never_enter_a_name_or_hash_grove_565(tmp_path: Path) -> None:
    """Every object two counts both hold is byte-identical: scaling never renames a pod (which
    would roll it) nor rewrites a gang that exists at both counts."""
    from grove_gitops.render import plan_source
    from tests.support import write_source

    src = write_source(tmp_path / "src", {"s.yaml": sample_text(SIMPLE1)})
    plan = plan_source(src)
    [item] = plan.items

    def at(pca: int, sga: int) -> dict[tuple[str, str], dict]:
        objects, _ = plan.expand(item, {(0, "pca"): pca, (0, "sga"): sga})
        return {(o.obj["kind"], o.obj["metadata"]["name"]): o.obj for o in objects}

    low, high = at(3, 1), at(5, 3)
    shared = set(low) & set(high)
    assert {k for k in shared if k[0] == "Pod"} == {k for k in low if k[0] == "Pod"}
    changed = sorted(k for k in shared if low[k] != high[k])
    # only the base PodGang (its pca podgroup lists pca's pods) depends on a count
    assert changed == [("PodGang", "simple1-0")]


@pytest.mark.parametrize(
    ("old", "new", "field", "message"),
    [
        ("                type: Utilization\n", "                type: Bogus\n",
         "spec.template.cliques[0].spec.autoScalingConfig.metrics[0].resource.target.type", "Unsupported value"),
        ("              - type: Resource\n", "              - type: Resource\n                bogus: 1\n",
         "spec.template.cliques[0].spec.autoScalingConfig.metrics[0].bogus", "unknown field"),
    ],
)
def test_a_metric_the_api_server_would_refuse_is_an_input_error_not_a_stuck_hpa(
    tmp_path: Path, old: str, new: str, field: str, message: str
) -> None:
    """Grove copies metrics unchecked and its HPA is then refused, stopping the whole
    PodCliqueSet (§6.2); here the source field is named before anything reaches Git."""
    text = sample_text(SIMPLE1).replace(old, new, 1)
    assert text != sample_text(SIMPLE1)
    with pytest.raises(InvalidInputError) as info:
        render_files(tmp_path, {"s.yaml": text})
    assert any(plain(str(p)).startswith(f"s.yaml: {field}: {message}") for p in info.value.problems), info.value.problems


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=3),
    max_leaves=12,
)
_count = st.one_of(st.none(), st.integers(-3, 12), st.sampled_from([2**31 - 1, 2**31, -(2**31), 10**9]))


@settings(max_examples=60, deadline=None)
@given(minimum=_count, maximum=_count, metrics=st.one_of(st.none(), st.lists(_json, max_size=3)),
       group=st.booleans())
def test_any_autoscaling_config_renders_valid_hpas_or_names_the_field(
    minimum: object, maximum: object, metrics: object, group: bool
) -> None:
    import tempfile

    import yaml

    from tests.schemas import CRDRegistry, validate_any
    from tests.support import CRDS, OUR_CRDS

    doc = yaml.safe_load(sample_text(SIMPLE1))
    config: dict[str, object] = {k: v for k, v in (("minReplicas", minimum), ("maxReplicas", maximum),
                                                   ("metrics", metrics)) if v is not None}
    if group:
        doc["spec"]["template"]["podCliqueScalingGroups"][0]["scaleConfig"] = config
    else:
        doc["spec"]["template"]["cliques"][0]["spec"]["autoScalingConfig"] = config
    with tempfile.TemporaryDirectory() as raw:
        try:
            result = render_files(Path(raw), {"s.yaml": yaml.safe_dump(doc)})
        except InvalidInputError as exc:
            assert exc.problems and all(p.file == "s.yaml" for p in exc.problems)
            return
    crds = _CRDS.setdefault("r", CRDRegistry.from_dirs(CRDS, OUR_CRDS))
    for item in result.objects:
        if item.obj["kind"] in ("HorizontalPodAutoscaler", "PodCliqueSet"):
            assert validate_any(item.obj, crds, "1.35") == [], item.obj


_CRDS: dict[str, CRDRegistry] = {}
