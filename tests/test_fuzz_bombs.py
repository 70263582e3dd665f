"""Property-based fuzzing of the bombs of issue 21 §2: huge counts in every numeric field,
and huge integers anywhere.

``tests/test_fuzz.py`` mutates random leaves; these classes aim at what sizes loops and
allocations instead:

- every numeric field of a PodCliqueSet (PCS, clique, scaling group, autoscaling and
  scaleConfig counts, pod-spec numbers and resource quantities), of the OperatorConfiguration
  (backend profile numbers) and of the RenderConfiguration (the limits), set to values up to
  10**30 in size, negative, at the int32/int64 edges, or small enough to render, under every
  startup type and every gang backend, with random ``startsAfter`` lists;
- integers of 4,300+ digits placed anywhere: as a value, a list item or a mapping key, in
  any document of any seed tree.

Rules asserted: exit 0 or 1, never a traceback; ``validate`` and ``render`` agree; and, in
process, the planner never builds more than a bound of PodCliques and startup dependencies
(``tests.bombs.bounded_planner``: an unbounded loop fails the example instead of exhausting
memory). A handful of bombs also run in a subprocess under an address-space limit.
"""

from __future__ import annotations

import copy
import itertools
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import event, given
from hypothesis import strategies as st

from grove_gitops.cli import main
from tests.bombs import GANG_OPCFG, bounded_planner, clique, pcs_doc, run_limited
from tests.support import PROJECT, SAMPLES, write_source

EXAMPLE_PCS = yaml.safe_load((PROJECT / "examples/workloads/llm-inference/llama-disagg.yaml").read_text())
BINDING = (PROJECT / "examples/topology/gpu-fabric.yaml").read_text()
#: Small limits, so that a fuzzed count that is valid renders in a moment.
RENDER_LIMITS = {"maxPodsPerPodCliqueSet": 300, "maxPodsPerRender": 600}
#: Above what the bounded limits can make valid: PodCliques + startup dependencies of 300 pods.
PLANNED_BOUND = 300 * 300 + 10_000

_huge = st.one_of(
    st.integers(-(10**30), 10**30),
    st.sampled_from([0, -1, 2**31 - 1, 2**31, -(2**31), -(2**31) - 1, 2**63 - 1, 2**63, -(2**63) - 1, 10**9, 10**30]),
    st.integers(-2, 40),  # small enough to pass validation and reach the planner and the writer
    st.integers(1, 12),
    st.integers(1, 12),
)


def _pcs_number_paths(doc: dict[str, Any]) -> dict[str, list[tuple[Any, ...]]]:
    """Every numeric field of a PodCliqueSet the renderer reads (created when absent), by class."""
    tmpl = ("spec", "template")
    out: dict[str, list[tuple[Any, ...]]] = {"pcs": [("spec", "replicas")], "clique": [], "autoscaling": [], "pod": []}
    for i, _ in enumerate(doc["spec"]["template"]["cliques"]):
        spec = (*tmpl, "cliques", i, "spec")
        out["clique"] += [(*spec, "replicas"), (*spec, "minAvailable")]
        out["autoscaling"] += [(*spec, "autoScalingConfig", "minReplicas"), (*spec, "autoScalingConfig", "maxReplicas")]
        pod = (*spec, "podSpec")
        out["pod"] += [(*pod, "terminationGracePeriodSeconds"), (*pod, "containers", 0, "resources", "requests", "cpu")]
        out["pod"] += [(*pod, "containers", 0, "resources", "limits", "nvidia.com/gpu")]
        out["pod"] += [(*pod, "containers", 0, "ports", 0, "containerPort")]
    out["group"] = []
    for j, _ in enumerate(doc["spec"]["template"].get("podCliqueScalingGroups") or []):
        group = (*tmpl, "podCliqueScalingGroups", j)
        out["group"] += [(*group, "replicas"), (*group, "minAvailable")]
        out["autoscaling"] += [(*group, "scaleConfig", "minReplicas"), (*group, "scaleConfig", "maxReplicas")]
    return out


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> None:
    """``doc[path] = value``, making the mappings (and one-item lists) on the way."""
    node = doc
    for step, following in itertools.pairwise(path):
        if isinstance(node, list):
            while len(node) <= step:
                node.append({} if not isinstance(following, int) else [])
            node = node[step]
            continue
        if not isinstance(node.get(step), dict | list):
            node[step] = [] if isinstance(following, int) else {}
        node = node[step]
    if isinstance(node, list):
        while len(node) <= path[-1]:
            node.append(None)
    node[path[-1]] = value


def _operator_config(draw: st.DrawFn) -> dict[str, Any]:
    """One gang backend as the default profile, with its numeric settings drawn too."""
    def number(valid: int) -> Any:
        return draw(_huge) if draw(st.integers(0, 2)) == 0 else valid

    profiles: list[dict[str, Any]] = [
        {"name": "default-scheduler", "config": {"gangScheduling": True}},
        {"name": "kai-scheduler"},
        {"name": "volcano", "config": {"hyperNodeTiers": {"gpu-fabric": {"zone": number(3), "rack": number(2)}}}},
        {"name": "koord-scheduler", "config": {"scheduleTimeoutSeconds": number(60)}},
        {"name": "scheduler-plugins-scheduler", "config": {"scheduleTimeoutSeconds": number(60)}},
    ]
    # the default-scheduler's gang scheduling plans PodGangs while validating: drawn most often
    default = draw(st.sampled_from([profiles[0]["name"]] * 4 + [p["name"] for p in profiles[1:]]))
    return {
        "apiVersion": "operator.config.grove.io/v1alpha1",
        "kind": "OperatorConfiguration",
        "topologyAwareScheduling": {"enabled": draw(st.integers(0, 3)) > 0},
        "scheduler": {"defaultProfileName": default, "profiles": profiles},
    }


def _render_config(draw: st.DrawFn) -> dict[str, Any]:
    limits: dict[str, Any] = dict(RENDER_LIMITS)
    if draw(st.integers(0, 4)) == 0:  # a limit out of its range is refused, whatever else
        key = draw(st.sampled_from(sorted(limits)))
        limits[key] = draw(st.one_of(st.integers(-(10**30), 0), st.integers(200_001, 10**30)))
    return {"apiVersion": "gitops.grove.io/v1alpha1", "kind": "RenderConfiguration", "limits": limits}


@st.composite
def counted_sources(draw: st.DrawFn) -> dict[str, Any]:
    """The example PodCliqueSet with numeric fields replaced, a gang backend and small limits."""
    doc = copy.deepcopy(EXAMPLE_PCS)
    tmpl = doc["spec"]["template"]
    tmpl["cliqueStartupType"] = draw(
        st.sampled_from(["CliqueStartupTypeAnyOrder", "CliqueStartupTypeInOrder", "CliqueStartupTypeExplicit"] * 2)
        | st.just("CliqueStartupTypeExplicit")
    )
    if draw(st.booleans()):  # not every backend takes the example's constraints
        for holder in [tmpl, *tmpl["cliques"], *tmpl["podCliqueScalingGroups"]]:
            holder.pop("topologyConstraint", None)
    names = [c["name"] for c in tmpl["cliques"]]
    for c in tmpl["cliques"]:
        if draw(st.booleans()):
            c["spec"]["startsAfter"] = draw(st.lists(st.sampled_from([*names, *names, "nope"]), max_size=4))
    paths = _pcs_number_paths(doc)
    for _ in range(draw(st.integers(1, 4))):
        _set(doc, draw(st.sampled_from(paths[draw(st.sampled_from(sorted(paths)))])), draw(_huge))
    return {"pcs.yaml": doc, "opcfg.yaml": _operator_config(draw), "render.yaml": _render_config(draw)}


def _write(root: Path, files: dict[str, Any]) -> None:
    root.mkdir(parents=True)
    for name, doc in files.items():
        (root / name).write_text(yaml.safe_dump(doc, sort_keys=False))
    (root / "binding.yaml").write_text(BINDING)


def _run_both(src: Path, out: Path) -> tuple[int, list[str]]:
    runner = CliRunner()
    v = runner.invoke(main, ["validate", str(src)])
    r = runner.invoke(main, ["render", str(src), "--out", str(out), "-q", "--jobs", "1"])
    errors: list[list[str]] = []
    for result in (v, r):
        assert result.exit_code in (0, 1), (result.exit_code, result.output, result.exception)
        assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
        assert "Traceback" not in result.output
        errors.append([line for line in result.output.splitlines() if line.startswith("error:")])
        if result.exit_code == 1:
            assert errors[-1], result.output
    assert v.exit_code == r.exit_code, (v.output, r.output)
    assert errors[0] == errors[1]
    return r.exit_code, errors[0]


@given(files=counted_sources())
def test_huge_counts_in_every_numeric_field(files: dict[str, Any]) -> None:
    with (
        tempfile.TemporaryDirectory() as tmp,
        pytest.MonkeyPatch.context() as patch,
        bounded_planner(patch, PLANNED_BOUND),
    ):
        src = Path(tmp, "src")
        _write(src, files)
        code, errors = _run_both(src, Path(tmp, "out"))
        event(f"exit {code}")
        if code == 1 and any("out of range" in e or "32-bit" in e for e in errors):
            event("refused as out of range")


# -- integers of 4,300+ digits anywhere ---------------------------------------------------

SEEDS: dict[str, dict[str, str]] = {
    "examples": {str(p.relative_to(PROJECT / "examples")): p.read_text() for p in (PROJECT / "examples").rglob("*.yaml")},
    **{p.name: {p.name: p.read_text()} for p in sorted(SAMPLES.rglob("*.yaml"))[:12]},
}
PLACEHOLDER = "grove_gitops_fuzz_big_integer"


def _positions(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _positions(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _positions(v, (*prefix, i))
    return out


@st.composite
def big_integer_trees(draw: st.DrawFn) -> tuple[dict[str, str], str, int]:
    """A seed tree with one integer of 4,300+ digits put somewhere; also its file and length."""
    seed = SEEDS[draw(st.sampled_from(sorted(SEEDS)))]
    file = draw(st.sampled_from(sorted(seed)))
    docs = [d for d in yaml.safe_load_all(seed[file]) if d is not None]
    d = draw(st.integers(0, len(docs) - 1))
    where = draw(st.sampled_from(_positions(docs[d])))
    node = docs[d]
    for step in where:
        node = node[step]
    how = draw(st.sampled_from(["value", "item", "key"]))
    if how == "key" and isinstance(node, dict):
        # as an explicit key: an implicit one over 1024 characters is not YAML at all
        node[PLACEHOLDER] = "v"
    elif how == "item" and isinstance(node, list):
        node.insert(draw(st.integers(0, len(node))), PLACEHOLDER)
    elif where:
        parent = docs[d]
        for step in where[:-1]:
            parent = parent[step]
        parent[where[-1]] = PLACEHOLDER
    else:
        docs[d] = {"x": PLACEHOLDER}
    digits = draw(st.integers(4301, 6000))
    sign = draw(st.sampled_from(["", "-", "+"]))
    text = yaml.safe_dump_all(docs, sort_keys=False)
    if f"{PLACEHOLDER}: v" in text:
        start = text.index(f"{PLACEHOLDER}: v")
        indent = text[text.rfind("\n", 0, start) + 1 : start]
        text = text.replace(f"{PLACEHOLDER}: v", f"? {PLACEHOLDER}\n{' ' * len(indent)}: v", 1)
    text = text.replace(PLACEHOLDER, sign + "9" * digits, 1)
    return {**seed, file: text}, file, digits + len(sign)


@given(case=big_integer_trees())
def test_huge_integers_anywhere(case: tuple[dict[str, str], str, int]) -> None:
    files, file, length = case
    with tempfile.TemporaryDirectory() as tmp:
        src = write_source(Path(tmp, "src"), files)
        code, errors = _run_both(src, Path(tmp, "out"))
        assert code == 1
        wanted = f"integer of {length} characters is out of range (Kubernetes integers are 64-bit; quote it if it is text)"
        assert any(e.startswith(f"error: {file}: invalid YAML: line ") and e.endswith(wanted) for e in errors), errors
        assert not Path(tmp, "out").exists()


# -- a handful of bombs in a subprocess under an address-space limit -----------------------


def _bomb_fanout() -> dict[str, Any]:
    return pcs_doc(
        [clique("a"), clique("b", startsAfter=["a"])],
        [
            {"name": "g1", "cliqueNames": ["a"], "replicas": 10_000, "minAvailable": 10_000},
            {"name": "g2", "cliqueNames": ["b"], "replicas": 10_000, "minAvailable": 10_000},
        ],
    )


def _claims_bomb() -> dict[str, Any]:
    """5,000 shared claims x 2,000 pods: 10 million ResourceClaim references."""
    doc = pcs_doc([clique("a", replicas=2000)], startup="CliqueStartupTypeAnyOrder")
    request = {"name": "r", "exactly": {"deviceClassName": "gpu"}}
    doc["spec"]["template"]["resourceClaimTemplates"] = [
        {"name": f"t{i}", "templateSpec": {"spec": {"devices": {"requests": [request]}}}} for i in range(5000)
    ]
    doc["spec"]["template"]["resourceSharing"] = [{"name": f"t{i}", "scope": "AllReplicas"} for i in range(5000)]
    return doc


def _pod_bytes_bomb() -> dict[str, Any]:
    """A 1 MB podSpec (30,000 env entries) x 20,000 pods: about 17 GB of pods."""
    doc = pcs_doc([clique("a", replicas=20_000)], startup="CliqueStartupTypeAnyOrder")
    env = [{"name": f"E{i}", "value": "v"} for i in range(30_000)]
    doc["spec"]["template"]["cliques"][0]["spec"]["podSpec"] = {"containers": [{"name": "c", "image": "x", "env": env}]}
    return doc


BOMBS: dict[str, tuple[dict[str, str], str]] = {
    "group-minavailable": (
        {
            "pcs.yaml": yaml.safe_dump(
                pcs_doc(
                    [clique("a"), clique("b", startsAfter=["a"])],
                    [{"name": "g", "cliqueNames": ["a"], "replicas": 2, "minAvailable": 1_000_000_000}],
                )
            )
        },
        "minAvailable must not be greater than replicas",
    ),
    "group-replicas-no-pods": (
        {
            "pcs.yaml": yaml.safe_dump(
                pcs_doc([clique("a", replicas=-1)], [{"name": "g", "cliqueNames": ["a"], "replicas": 2**31 - 1}])
            )
        },
        "must be no more than 20000",
    ),
    "startsafter-fanout": ({"pcs.yaml": yaml.safe_dump(_bomb_fanout())}, "above the limit of 1000000"),
    "repeated-members": (
        {
            "pcs.yaml": yaml.safe_dump(
                pcs_doc([clique("a")], [{"name": "g", "cliqueNames": ["a"] * 100_000, "replicas": 20_000}])
            )
        },
        "would have 2000000000 PodCliques",
    ),
    "shared-claims": ({"pcs.yaml": yaml.safe_dump(_claims_bomb())}, "ResourceClaim references in total"),
    "pod-bytes": ({"pcs.yaml": yaml.safe_dump(_pod_bytes_bomb())}, "its pods and PodGangs would take about"),
    "integer-4301-digits": ({"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nx: " + "9" * 4301 + "\n"}, "out of range"),
    "base60-integer": ({"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nx: " + "1:" * 500_000 + "1\n"}, "out of range"),
}


@pytest.mark.parametrize("name", sorted(BOMBS))
def test_bombs_end_cleanly_under_a_memory_limit(name: str, tmp_path: Path) -> None:
    files, message = BOMBS[name]
    src = write_source(tmp_path / "src", {**files, "opcfg.yaml": GANG_OPCFG})
    for args in (["validate", str(src)], ["render", str(src), "--out", str(tmp_path / "out")]):
        proc = run_limited(args, memory_bytes=1024 * 1024 * 1024, cpu_seconds=90)
        assert proc.returncode == 1, proc.stderr[-2000:]
        assert "Traceback" not in proc.stderr and "MemoryError" not in proc.stderr
        assert message in proc.stderr
    assert not (tmp_path / "out").exists()
