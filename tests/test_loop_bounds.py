"""Issue 21 §2, first finding: every number that sizes a loop is bounded before anything
iterates over it, not only the pod count.

``minAvailable: 1000000000`` on a scaling group (gang scheduling on, explicit startup) made
``validate`` grow to 24 GB: the gang backend planned the first replica's PodGangs while the
PodCliqueSet was being validated, and the planner iterated over ``minAvailable``. In process,
:func:`tests.bombs.bounded_planner` turns "builds millions of objects" into a failure.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from grove_gitops.cli import main
from grove_gitops.expand import plan
from grove_gitops.validation.limits import BYTES_RULE, MAX_STARTUP_WAITS
from grove_gitops.validation.podcliqueset import _dups, _strongly_connected, starts_after_warnings
from tests.bombs import GANG_OPCFG, bounded_planner, clique, gang_source, pcs_doc, run_limited
from tests.support import plain, write_source

LIMIT = "(RenderConfiguration limits.maxPodsPerPodCliqueSet)"
ABOVE = f"must be no more than 20000, the most pods this PodCliqueSet may have {LIMIT}"
INT32 = "must be a 32-bit integer (-2147483648 to 2147483647), the type Grove declares"


def _errors(src: Path, tmp_path: Path) -> list[str]:
    """``validate`` and ``render`` agree on exit 1 and on the error lines, which are returned."""
    runner = CliRunner()
    v = runner.invoke(main, ["validate", str(src)])
    r = runner.invoke(main, ["render", str(src), "--out", str(tmp_path / "out"), "--jobs", "1"])
    for result in (v, r):
        assert result.exit_code == 1, result.output
        assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
        assert "Traceback" not in result.output
    v_err = [plain(line) for line in v.output.splitlines() if line.startswith("error:")]
    assert v_err == [plain(line) for line in r.output.splitlines() if line.startswith("error:")]
    assert not (tmp_path / "out").exists()
    return v_err


def _issue_bomb() -> dict[str, Any]:
    """The finding as reported: explicit startup, a scaling group with minAvailable 10^9."""
    return pcs_doc(
        [clique("a"), clique("b", startsAfter=["a"])],
        [{"name": "g", "cliqueNames": ["a"], "replicas": 2, "minAvailable": 1_000_000_000}],
    )


def test_the_scaling_group_minavailable_bomb_is_refused_before_planning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = gang_source(tmp_path / "src", _issue_bomb())
    with bounded_planner(monkeypatch, 10_000):
        errors = _errors(src, tmp_path)
    assert errors == [
        "error: pcs.yaml: spec.template.podCliqueScalingGroups[0].minAvailable: Invalid value: 1000000000: "
        "minAvailable must not be greater than replicas"
    ]


def test_the_bomb_in_a_subprocess_under_a_memory_limit(tmp_path: Path) -> None:
    """The CLI as the controller runs it: a clean error within 1.5 GiB and 2 CPU minutes."""
    src = gang_source(tmp_path / "src", _issue_bomb())
    proc = run_limited(["validate", str(src)])
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "MemoryError" not in proc.stderr
    assert "podCliqueScalingGroups[0].minAvailable: Invalid value: 1000000000" in proc.stderr


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        pytest.param(
            pcs_doc([clique("a", replicas=-1)], [{"name": "g", "cliqueNames": ["a"], "replicas": 2**31 - 1}]),
            f"spec.template.podCliqueScalingGroups[0].replicas: Invalid value: 2147483647: {ABOVE}",
            id="group-replicas-whose-cliques-have-no-pods",
        ),
        pytest.param(
            pcs_doc([clique("a")], [{"name": "g", "cliqueNames": [], "replicas": 1_000_000, "minAvailable": 3}]),
            f"spec.template.podCliqueScalingGroups[0].replicas: Invalid value: 1000000: {ABOVE}",
            id="group-replicas-without-cliques",
        ),
        pytest.param(
            pcs_doc([clique("a", replicas=-3)], replicas=2**31 - 1),
            f"spec.replicas: Invalid value: 2147483647: {ABOVE}",
            id="pcs-replicas-of-cliques-without-pods",
        ),
        pytest.param(
            pcs_doc([clique("a", replicas=2**40)]),
            f"spec.template.cliques[0].spec.replicas: Invalid value: 1099511627776: {INT32}",
            id="clique-replicas-beyond-int32",
        ),
        pytest.param(
            pcs_doc([clique("a", minAvailable=-(2**40))]),
            f"spec.template.cliques[0].spec.minAvailable: Invalid value: -1099511627776: {INT32}",
            id="clique-minavailable-below-int32",
        ),
        pytest.param(
            pcs_doc([clique("a", autoScalingConfig={"minReplicas": 1, "maxReplicas": 10**15})]),
            f"spec.template.cliques[0].spec.autoScalingConfig.maxReplicas: Invalid value: 1000000000000000: {INT32}",
            id="autoscaling-maxreplicas",
        ),
        pytest.param(
            pcs_doc(
                [clique("a")],
                [{"name": "g", "cliqueNames": ["a"], "scaleConfig": {"minReplicas": 2**31, "maxReplicas": 3}}],
            ),
            f"spec.template.podCliqueScalingGroups[0].scaleConfig.minReplicas: Invalid value: 2147483648: {INT32}",
            id="scaleconfig-minreplicas",
        ),
        pytest.param(
            pcs_doc([clique("a")], [{"name": "g", "cliqueNames": ["a"], "minAvailable": 2**31 - 1}]),
            "spec.template.podCliqueScalingGroups[0].minAvailable: Invalid value: 2147483647: "
            "minAvailable must not be greater than replicas",
            id="group-minavailable-above-default-replicas",
        ),
    ],
)
def test_each_count_is_bounded_with_its_field(
    doc: dict[str, Any], expected: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = gang_source(tmp_path / "src", doc)
    with bounded_planner(monkeypatch, 10_000):
        assert _errors(src, tmp_path) == [f"error: pcs.yaml: {expected}"]


def test_repeated_scaling_group_members_are_counted_as_podcliques(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pod count takes each clique once; the planner makes one PodClique per listed name."""
    doc = pcs_doc([clique("a")], [{"name": "g", "cliqueNames": ["a"] * 5000, "replicas": 20}])
    src = gang_source(tmp_path / "src", doc)
    with bounded_planner(monkeypatch, 10_000):
        errors = _errors(src, tmp_path)
    assert errors == [
        'error: pcs.yaml: spec.template.podCliqueScalingGroups: Invalid value: "object": this PodCliqueSet would '
        "have 100000 PodCliques, above the limit of 20000 (RenderConfiguration limits.maxPodsPerPodCliqueSet; "
        "every PodClique holds at least one pod)"
    ]


def test_a_startsafter_fanout_within_the_pod_limit_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """20,000 pods, each of the second group's 10,000 waiting for all 10,000 PodCliques of the first."""
    doc = pcs_doc(
        [clique("a"), clique("b", startsAfter=["a"])],
        [
            {"name": "g1", "cliqueNames": ["a"], "replicas": 10_000, "minAvailable": 10_000},
            {"name": "g2", "cliqueNames": ["b"], "replicas": 10_000, "minAvailable": 10_000},
        ],
    )
    src = gang_source(tmp_path / "src", doc)
    with bounded_planner(monkeypatch, 100_000):
        errors = _errors(src, tmp_path)
    assert errors == [
        'error: pcs.yaml: spec.template.cliques: Invalid value: "object": its pods would wait for 100000000 '
        f"PodCliques in total (one init-container argument each), above the limit of {MAX_STARTUP_WAITS}: "
        "startsAfter a scaling group makes every pod wait for each of the group's minAvailable replicas"
    ]


def test_a_legitimate_startsafter_a_scaling_group_renders(tmp_path: Path) -> None:
    doc = pcs_doc(
        [clique("lead"), clique("work", replicas=4, startsAfter=["lead"])],
        [{"name": "g", "cliqueNames": ["lead"], "replicas": 3, "minAvailable": 2}],
    )
    src = gang_source(tmp_path / "src", doc)
    result = CliRunner().invoke(main, ["render", str(src), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    pods = [p for p in (tmp_path / "out" / "ml" / "demo").glob("*pod--demo-0-work-*.yaml")]
    assert len(pods) == 4
    init = yaml.safe_load(pods[0].read_text())["spec"]["initContainers"][0]
    assert init["args"] == ["--podcliques=demo-0-g-0-lead:1", "--podcliques=demo-0-g-1-lead:1"]


def test_gang_backend_plans_each_replica_once_not_once_per_gang(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """300 scaling groups of 2 replicas make 301 PodGangs per replica; planning every replica's
    PodCliques again for each gang was quadratic (3,000 groups ran for minutes)."""
    n = 300
    doc = pcs_doc(
        [clique(f"c{i}") for i in range(n)],
        [{"name": f"g{i}", "cliqueNames": [f"c{i}"], "replicas": 2, "minAvailable": 1} for i in range(n)],
        replicas=2,
    )
    src = gang_source(tmp_path / "src", doc)
    calls = {"instances": 0}
    original = plan.Planner.instances

    def counted(self: plan.Planner, replica: int) -> list[plan.CliqueInstance]:
        calls["instances"] += 1
        return original(self, replica)

    monkeypatch.setattr(plan.Planner, "instances", counted)
    result = CliRunner().invoke(main, ["render", str(src), "--out", str(tmp_path / "out"), "--jobs", "1"])
    assert result.exit_code == 0, result.output
    assert len(list((tmp_path / "out" / "ml" / "demo").glob("*podgang*"))) == 2 * (n + 1)
    # validation plans replica 0 once; expansion plans each replica once, and the backend
    # indexes each replica once for all of its gangs
    assert calls["instances"] <= 1 + 2 * 2


def test_render_limits_have_a_ceiling(tmp_path: Path) -> None:
    """The limits come from the source tree, which a pull request may change."""
    cfg = "apiVersion: gitops.grove.io/v1alpha1\nkind: RenderConfiguration\nlimits: {maxPodsPerPodCliqueSet: 1000000000}\n"
    src = write_source(tmp_path / "src", {"cfg.yaml": cfg, "opcfg.yaml": GANG_OPCFG})
    assert _errors(src, tmp_path) == [
        "error: cfg.yaml: limits.maxPodsPerPodCliqueSet: Invalid value: 1000000000: "
        "Input should be less than or equal to 200000"
    ]


def test_duplicates_are_found_in_linear_time() -> None:
    """100,000 distinct repeated names: the old list membership test was quadratic (hours)."""
    names = [f"n{i}" for i in range(100_000)] * 2
    assert _dups(names) == [f"n{i}" for i in range(100_000)]
    assert _dups(["a", "b", "a", "a", "c", "b"]) == ["a", "b"]


def test_cycle_search_is_linear_in_the_dependencies() -> None:
    """One clique waiting for 200,000 others: recomputing a node's children at every resume
    was quadratic."""
    graph: dict[str, list[str]] = {f"c{i}": [] for i in range(200_000)}
    graph["w"] = list(graph)
    graph["c0"] = ["w"]
    cycles = [sorted(scc) for scc in _strongly_connected(graph) if len(scc) > 1]
    assert cycles == [["c0", "w"]]


def test_unknown_startsafter_warnings_do_not_repeat_every_clique_name() -> None:
    """One warning per clique listed every clique name: 20,000 cliques made 20,000 x 20,000 names."""
    from grove_gitops.api.podcliqueset import PodCliqueSet

    pcs = PodCliqueSet.model_validate(
        pcs_doc([clique(f"c{i}", startsAfter=["nope"]) for i in range(2000)], startup="CliqueStartupTypeAnyOrder")
    )
    warnings = starts_after_warnings(pcs)
    assert len(warnings) == 2000
    assert max(len(w) for w in warnings) < 600
    assert warnings[0].endswith(
        "(known: c0, c1, c10, c100, c1000, c1001, c1002, c1003, c1004, c1005, c1006, c1007, c1008, c1009, c101, "
        "c1010, c1011, c1012, c1013, c1014 and 1980 more); ignored unless cliqueStartupType is "
        "CliqueStartupTypeExplicit"
    )


def _claims_doc(refs: int, pods: int) -> dict[str, Any]:
    doc = pcs_doc([clique("a", replicas=pods)], startup="CliqueStartupTypeAnyOrder")
    tmpl = doc["spec"]["template"]
    request = {"name": "r", "exactly": {"deviceClassName": "gpu"}}
    tmpl["resourceClaimTemplates"] = [
        {"name": f"t{i}", "templateSpec": {"spec": {"devices": {"requests": [request]}}}} for i in range(refs)
    ]
    tmpl["resourceSharing"] = [{"name": f"t{i}", "scope": "AllReplicas"} for i in range(refs)]
    return doc


def test_resource_claim_references_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """5,000 shared claims x 2,000 pods (an 853 KB file) grew to 3 GB and failed with a
    MemoryError traceback; the references summed over pods are bounded (here the bound is
    lowered so that a small tree exceeds it)."""
    from grove_gitops.validation import limits

    monkeypatch.setattr(limits, "MAX_CLAIM_REFERENCES", 1000)
    src = gang_source(tmp_path / "src", _claims_doc(60, 20))
    assert _errors(src, tmp_path) == [
        'error: pcs.yaml: spec.template.resourceSharing: Invalid value: "object": its pods would hold up to 1200 '
        "ResourceClaim references in total (each resourceSharing entry once per pod it applies to), above the limit "
        "of 1000"
    ]


def test_filtered_claim_references_are_counted_where_they_apply(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A filtered reference counts only for the pods of the cliques (or groups) it names."""
    from grove_gitops.validation import limits

    monkeypatch.setattr(limits, "MAX_CLAIM_REFERENCES", 1000)
    doc = _claims_doc(60, 1)
    doc["spec"]["template"]["cliques"].append(clique("b", replicas=900))
    for ref in doc["spec"]["template"]["resourceSharing"]:
        ref["filter"] = {"childCliqueNames": ["a"]}
    src = gang_source(tmp_path / "src", doc)
    result = CliRunner().invoke(main, ["validate", str(src)])
    assert result.exit_code == 0, result.output


def test_internal_claim_templates_are_looked_up_by_name() -> None:
    """Every reference scanned every template: 60,000 of each was quadratic (hours)."""
    from grove_gitops.api.podcliqueset import PodCliqueSet
    from grove_gitops.expand.resourceclaims import validate_templates

    pcs = PodCliqueSet.model_validate(_claims_doc(60_000, 1))
    assert validate_templates(pcs, {}) == []


def test_pod_bytes_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A 1 MB podSpec (30,000 env entries) x 20,000 pods ran for more than 5 minutes: every pod
    is hashed and written. Pods x their podSpec, labels and annotations are bounded (here the
    bound is lowered so that a small tree exceeds it)."""
    from grove_gitops.validation import limits

    monkeypatch.setattr(limits, "MAX_POD_BYTES", 2 * 1024 * 1024)
    env = [{"name": f"E{i}", "value": "v" * 20} for i in range(300)]
    doc = pcs_doc([clique("a", replicas=200)], startup="CliqueStartupTypeAnyOrder")
    doc["spec"]["template"]["cliques"][0]["spec"]["podSpec"] = {"containers": [{"name": "c", "image": "x", "env": env}]}
    src = gang_source(tmp_path / "src", doc)
    assert _errors(src, tmp_path) == [
        f'error: pcs.yaml: spec.template.cliques: Invalid value: "object": its pods and PodGangs would take about 2 MiB '
        f"({BYTES_RULE}), above the limit of 2 MiB"
    ]


def test_pod_bytes_of_a_whole_render_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Several PodCliqueSets of one short file, each below the per-PodCliqueSet bound."""
    import grove_gitops.render as render

    monkeypatch.setattr(render, "MAX_RENDER_POD_BYTES", 3 * 1024 * 1024)
    env = [{"name": f"E{i}", "value": "v" * 20} for i in range(300)]
    docs = []
    for name in ("one", "two"):
        doc = pcs_doc([clique("a", replicas=200)], startup="CliqueStartupTypeAnyOrder")
        doc["metadata"]["name"] = name
        doc["spec"]["template"]["cliques"][0]["spec"]["podSpec"] = {"containers": [{"name": "c", "image": "x", "env": env}]}
        docs.append(doc)
    src = write_source(tmp_path / "src", {"pcs.yaml": yaml.safe_dump_all(docs), "opcfg.yaml": GANG_OPCFG})
    assert _errors(src, tmp_path) == [
        "error: pcs.yaml: spec.template.cliques: Too many: the render's pods and PodGangs would take more than 3 MiB "
        f"({BYTES_RULE}): 2 MiB before this PodCliqueSet, 2 MiB in it"
    ]


def test_podgangs_copying_the_podcliqueset_labels_are_counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every PodGang copies the PodCliqueSet's labels and annotations: 100,000 labels on a
    PodCliqueSet of 20,000 scaled gangs would be two billion label copies."""
    from grove_gitops.validation import limits

    monkeypatch.setattr(limits, "MAX_POD_BYTES", 1024 * 1024)
    doc = pcs_doc([clique("a")], [{"name": "g", "cliqueNames": ["a"], "replicas": 500}])
    doc["metadata"]["labels"] = {f"l{i}": "v" for i in range(200)}
    src = gang_source(tmp_path / "src", doc)
    assert _errors(src, tmp_path) == [
        f'error: pcs.yaml: spec.template.cliques: Invalid value: "object": its pods and PodGangs would take about 1 MiB '
        f"({BYTES_RULE}), above the limit of 1 MiB"
    ]


def test_acknowledged_warnings_are_bounded(tmp_path: Path) -> None:
    """``-q`` compares every warning with every acknowledgement."""
    acks = "".join(f"- w{i}\n" for i in range(1001))
    cfg = f"apiVersion: gitops.grove.io/v1alpha1\nkind: RenderConfiguration\nacknowledgedWarnings:\n{acks}"
    src = write_source(tmp_path / "src", {"cfg.yaml": cfg, "opcfg.yaml": GANG_OPCFG})
    assert _errors(src, tmp_path) == [
        'error: cfg.yaml: acknowledgedWarnings: Invalid value: ["w0","w1",'
        + ",".join(f'"w{i}"' for i in range(2, 1001))
        + "]: List should have at most 1000 items after validation, not 1001"
    ]


def test_the_pod_bytes_come_from_the_walk_that_bounds_the_loops(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 35.4: a plan walks each PodCliqueSet's spec once for the loop bounds and the bytes
    together (it walked it twice), and the bytes are the same as :func:`estimate_pod_bytes`'s."""
    from grove_gitops.api.podcliqueset import PodCliqueSet
    from grove_gitops.api.renderconfig import RenderLimits
    from grove_gitops.render import plan_source
    from grove_gitops.validation import limits

    doc = pcs_doc([clique("a", replicas=3), clique("b")], [{"name": "g", "cliqueNames": ["b"], "replicas": 2}])
    doc["metadata"]["labels"] = {"team": "x"}
    pcs = PodCliqueSet.model_validate(doc)
    errs, pod_bytes = limits.loop_bounds(pcs, RenderLimits())
    assert errs == [] and pod_bytes == limits.estimate_pod_bytes(pcs) > 0
    monkeypatch.setattr(limits, "MAX_POD_BYTES", pod_bytes - 1)
    errs, refused = limits.loop_bounds(pcs, RenderLimits())
    assert [e.path for e in errs] == ["spec.template.cliques"] and refused == 0
    monkeypatch.undo()

    walks = 0
    real_of = limits._Size.of

    def counted(pcs: PodCliqueSet) -> Any:
        nonlocal walks
        walks += 1
        return real_of(pcs)

    monkeypatch.setattr(limits._Size, "of", staticmethod(counted))
    docs = [dict(doc, metadata={"name": name, "namespace": "default"}) for name in ("one", "two", "three")]
    src = write_source(tmp_path / "src", {"pcs.yaml": yaml.safe_dump_all(docs), "opcfg.yaml": GANG_OPCFG})
    assert [item.key[1] for item in plan_source(src).items] == ["one", "two", "three"]
    assert walks == 3
