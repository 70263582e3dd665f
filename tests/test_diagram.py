"""The gang-structure diagram's text (grove_gitops/output/diagram.py): its structure for every
backend, collapsing of identical replicas, the size cap, escaping of hostile names,
determinism, the shard README and diff's size budget. tests/test_diagram_browser.py renders
the same diagrams in Chromium."""

from __future__ import annotations

import copy
import json
import random
import re
from pathlib import Path
from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from grove_gitops.diff.markdown import DIAGRAM_DROPPED, render_markdown
from grove_gitops.diff.model import load_objects
from grove_gitops.diff.report import Side, build_report
from grove_gitops.output import diagram
from grove_gitops.output.layout import build_tree, build_tree_from_plan
from grove_gitops.render import plan_source, render_source
from tests.backends import test_coscheduling as cosched
from tests.backends import test_kai as kai
from tests.backends import test_koordinator as koord
from tests.backends import test_volcano as volcano
from tests.backends import test_workload_api as wapi
from tests.support import GPU_FABRIC, INF, PROJECT, write_source

#: One source tree per scheduler backend (the browser test renders their diagrams too).
BACKEND_CASES: dict[str, dict[str, str]] = {
    "kai": {
        "op.yaml": kai.KAI_DEFAULT,
        "t.yaml": GPU_FABRIC,
        "p.yaml": INF,
    },
    "volcano": {"op.yaml": volcano.TIERS, "t.yaml": GPU_FABRIC, "q.yaml": volcano.QUEUE_GPU, "p.yaml": volcano.INF_TAS},
    "workload-1.35": {"c.yaml": wapi.config("1.35", True, True), "t.yaml": wapi.FABRIC, "p.yaml": wapi.TOPO_DISAGG},
    "workload-1.37": {"c.yaml": wapi.config("1.37", True, True), "t.yaml": wapi.FABRIC, "p.yaml": wapi.TOPO_DISAGG},
    "koordinator": {"op.yaml": koord.opcfg(tas=True), "t.yaml": koord.CTB, "p.yaml": yaml.safe_dump(koord.pcs_doc())},
    "coscheduling": {"op.yaml": cosched.opcfg(), "p.yaml": yaml.safe_dump(cosched.pcs_doc())},
}

#: Every line a diagram may hold: labels of safe characters and entity codes only.
_LINE = re.compile(
    r'flowchart LR|  n\d+\["(?:[A-Za-z0-9 ._/:=+-]|#\d+;|<br/>)*"\]:::[a-z]+|  n\d+ (?:-->|-\.->) n\d+'
    r"|  classDef [a-z]+ [a-z0-9:#,.\- ]+|  class n\d+(?:,n\d+)* (?:added|changed|removed)"
)


def _objects(tmp_path: Path, files: dict[str, str]) -> list[dict[str, Any]]:
    result = render_source(write_source(tmp_path, files))
    return [o.obj for o in result.objects if o.obj["kind"] != "Pod"]


def _shard(objects: list[dict[str, Any]]) -> str:
    gang = next(o for o in objects if o["kind"] == "PodGang")
    return f"{gang['metadata']['namespace']}/{gang['metadata']['labels']['app.kubernetes.io/part-of']}"


def _labels(graph: diagram.Graph, cls: str) -> list[tuple[str, ...]]:
    return [n.lines for n in graph.nodes if n.cls == cls]


def _parent(graph: diagram.Graph, first_line: str) -> tuple[str, ...]:
    index = next(i for i, n in enumerate(graph.nodes) if n.lines[0] == first_line)
    return graph.nodes[next(a for a, b, _ in graph.edges if b == index)].lines


def _graph(tmp_path: Path, case: str) -> diagram.Graph:
    objects = _objects(tmp_path / case, BACKEND_CASES[case])
    return diagram.build_graph(_shard(objects), objects)


def test_kai_podgroup_with_subgroups_nested_by_parent(tmp_path: Path) -> None:
    g = _graph(tmp_path, "kai")
    assert _labels(g, "pcs") == [("PodCliqueSet inf", "namespace ml", "replicas: 1", "scheduler kai-scheduler")]
    assert _labels(g, "gang")[0][:3] == (
        "PodGang inf-0",
        "base gang",
        "topology gpu-fabric required: topology.kubernetes.io/zone",
    )
    assert _labels(g, "scaled")[0][:2] == ("PodGang inf-0-prefill-0", "scaled gang")
    assert ("scaling group prefill-0", "required: topology.kubernetes.io/rack") in _labels(g, "group")
    assert ("podgroup prefill-0-pworker", "minReplicas 2 of 2 pods", "preferred: kubernetes.io/hostname") in _labels(
        g, "podgroup"
    )
    assert _parent(g, "podgroup prefill-0-pworker")[0] == "scaling group prefill-0"
    kai = [n for n in _labels(g, "backend") if n[0] == "PodGroup.scheduling.run.ai"]
    assert [n[1] for n in kai] == ["inf-0", "inf-0-prefill-0"]
    assert "minMember: 4" in kai[0] and "queue: team-a" in kai[0]
    assert _parent(g, "prefill-0-pworker")[0] == "prefill-0"  # SubGroup.parent → nested
    assert "minSubGroup: 2" in _parent(g, "prefill-0-pworker")
    assert " -.-> " in diagram.to_mermaid(g)  # PodGang ⇢ its scheduler objects


def test_volcano_podgroup_with_subgroup_policy(tmp_path: Path) -> None:
    g = _graph(tmp_path, "volcano")
    pgs = [n for n in _labels(g, "backend") if n[0] == "PodGroup.scheduling.volcano.sh"]
    assert pgs[0][1] == "inf-0"
    assert {"minMember: 7", "queue: gpu", "networkTopology.mode: hard", "highestTierAllowed: 3"} <= set(pgs[0])
    parts = {n[0]: n for n in _labels(g, "part")}
    assert "subGroupSize: 3" in parts["prefill-0"] and "minSubGroups: 1" in parts["prefill-0"]


def test_workload_api_137_objects_chain_through_parent_names(tmp_path: Path) -> None:
    g = _graph(tmp_path, "workload-1.37")
    kinds = [n[0] for n in _labels(g, "backend")]
    assert "Workload.scheduling.k8s.io" in kinds and "CompositePodGroup.scheduling.k8s.io" in kinds
    pcsg = next(
        i
        for i, n in enumerate(g.nodes)
        if n.lines[:2] == ("CompositePodGroup.scheduling.k8s.io", "disagg-0-prefill-0-pcsg")
    )
    parent = g.nodes[next(a for a, b, _ in g.edges if b == pcsg)]
    assert parent.lines[:2] == ("CompositePodGroup.scheduling.k8s.io", "disagg-0")  # parentCompositePodGroupName
    # The Workload's nested templates are parts of parts.
    assert ("pworker", "minCount: 4", "topology.key: topology.kubernetes.io/rack") in _labels(g, "part")


def test_workload_api_135_and_flat_backends(tmp_path: Path) -> None:
    g = _graph(tmp_path, "workload-1.35")
    assert ("disagg-0", "minCount: 6") in _labels(g, "part")
    for case in ("koordinator", "coscheduling"):
        g = _graph(tmp_path, case)
        assert _labels(g, "backend"), case
        assert all(any(line.startswith("minMember: ") for line in n) for n in _labels(g, "backend")), case


def test_default_scheduler_without_gang_objects_draws_the_gangs_only(tmp_path: Path) -> None:
    objects = _objects(
        tmp_path, {"p.yaml": volcano.INF.replace("schedulerName: volcano", "schedulerName: default-scheduler")}
    )
    g = diagram.build_graph("ml/inf", objects)
    assert _labels(g, "gang") and not _labels(g, "backend")
    assert diagram.build_graph("ml/none", []).empty and diagram.shard_diagram("ml/none", []) == ""


def _replicated(tmp_path: Path, replicas: int) -> list[dict[str, Any]]:
    text = INF.replace("replicas: 1\n  template", f"replicas: {replicas}\n  template")
    return _objects(
        tmp_path / f"r{replicas}", {"op.yaml": BACKEND_CASES["kai"]["op.yaml"], "t.yaml": GPU_FABRIC, "p.yaml": text}
    )


def test_identical_replicas_collapse(tmp_path: Path) -> None:
    objects = _replicated(tmp_path, 8)
    g = diagram.build_graph("ml/inf", objects)
    assert [n.lines[0] for n in g.nodes if n.cls == "replica"] == ["replica 0"]
    assert ("replicas 1..7 like 0",) in _labels(g, "note")
    one = diagram.build_graph("ml/inf", _replicated(tmp_path, 1))
    assert len(g.nodes) == len(one.nodes) + 1
    # A replica that differs is drawn; the others still collapse around it.
    changed = copy.deepcopy(objects)
    gang3 = next(o for o in changed if o["kind"] == "PodGang" and o["metadata"]["name"] == "inf-3")
    gang3["spec"]["podgroups"][0]["minReplicas"] = 0
    g = diagram.build_graph("ml/inf", changed)
    assert [n.lines[0] for n in g.nodes if n.cls == "replica"] == ["replica 0", "replica 3"]
    assert ("replicas 1..2, 4..7 like 0",) in _labels(g, "note")


def test_size_is_capped(tmp_path: Path) -> None:
    objects = _replicated(tmp_path, 60)
    for o in objects:  # make every replica different, so none collapses
        if o["kind"] == "PodGang" and o["metadata"]["name"].count("-") == 1:
            o["spec"]["podgroups"][0]["minReplicas"] = int(o["metadata"]["name"].split("-")[1])
    g = diagram.build_graph("ml/inf", objects)
    assert len(g.nodes) <= diagram.MAX_NODES
    assert len(diagram.to_mermaid(g)) < 50_000  # Mermaid's default maxTextSize
    note = [n for n in _labels(g, "note") if "not drawn" in n[0]]
    assert note and note[0][0].endswith(f"diagram size cap of {diagram.MAX_NODES} nodes")
    # Many podgroups in one gang: MAX_CHILDREN drawn, the rest counted.
    gang = copy.deepcopy(next(o for o in objects if o["kind"] == "PodGang"))
    gang["spec"]["podgroups"] = [{"name": f"inf-0-c{i}", "minReplicas": 1, "podReferences": []} for i in range(40)]
    gang["spec"].pop("topologyConstraintGroupConfigs", None)
    g = diagram.build_graph("ml/inf", [gang])
    assert len(_labels(g, "podgroup")) == diagram.MAX_CHILDREN
    assert (f"{40 - diagram.MAX_CHILDREN} more podgroups not drawn",) in _labels(g, "note")


def _hostile_gang(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "scheduler.grove.io/v1alpha1",
        "kind": "PodGang",
        "metadata": {
            "name": name,
            "namespace": "ml",
            "labels": {"grove.io/scheduler-name": 'sched"]\nclick n0 href "javascript:alert(1)"'},
            "annotations": {
                "grove.io/topology-name": "<script>alert(1)</script>",
                diagram.GANG_OBJECTS: json.dumps([{"apiVersion": "x.io/v1", "kind": "Grp`", "name": "o<b>"}]),
            },
        },
        "spec": {
            "podgroups": [{"name": "%%{init: {}}%%", "minReplicas": "1</br>", "podReferences": []}],
            "topologyConstraint": {"packConstraint": {"required": "a&b;#35;`end`"}},
        },
    }


def hostile_objects() -> list[dict[str, Any]]:
    """Objects whose every name tries to break out of a Mermaid label (the loader would refuse
    most of them; the diagram must not rely on that)."""
    gang = _hostile_gang('x"]:::evil\n<img src=x onerror=alert(1)>')
    other = {
        "apiVersion": "x.io/v1",
        "kind": "Grp`",
        "metadata": {"name": "o<b>"},
        "spec": {"minMember": "click n0 call alert()", "parts": [{"name": "p|q]]", "minX": "\u202e\u0000;"}]},
    }
    return [gang, other]


def test_hostile_names_are_escaped() -> None:
    text = diagram.to_mermaid(diagram.build_graph("ml/demo", hostile_objects()))
    bad = [line for line in text.splitlines() if not _LINE.fullmatch(line)]
    assert bad == []
    assert "<img" not in text and "<script" not in text and "%%" not in text and "`" not in text
    assert not re.search(r"^\s*click", text, re.M)
    assert "#34;#93;:::evil" in text  # the quote and bracket survive as entity codes
    assert diagram.escape_label('a"b') == "a#34;b" and diagram.escape_label("ok-1.x/y") == "ok-1.x/y"
    fenced = diagram.fenced(text)
    assert fenced.startswith("```mermaid\n") and fenced.count("```") == 2


def test_deterministic_whatever_the_object_order(tmp_path: Path) -> None:
    objects = _replicated(tmp_path, 3)
    first = diagram.shard_diagram("ml/inf", objects)
    shuffled = list(objects)
    random.Random(7).shuffle(shuffled)
    assert diagram.shard_diagram("ml/inf", shuffled) == first
    assert diagram.shard_diagram("ml/inf", copy.deepcopy(objects)) == first


def test_shard_readme_carries_the_diagram_on_every_render_path() -> None:
    tree = build_tree(render_source(PROJECT / "examples"))
    readme = tree.files["inference/llama-disagg/README.md"].decode()
    assert "## Gang structure" in readme and "```mermaid\nflowchart LR\n" in readme
    assert "PodGroup.scheduling.run.ai" in readme
    planned = build_tree_from_plan(plan_source(PROJECT / "examples"))
    assert planned.files["inference/llama-disagg/README.md"].decode() == readme


def test_mark_changes() -> None:
    before, after = diagram.Graph(), diagram.Graph()
    before.add(diagram.Node("a", ("A",), "pcs"))
    before.add(diagram.Node("b", ("B",), "gang"), 0)
    after.add(diagram.Node("a", ("A2",), "pcs"))
    after.add(diagram.Node("c", ("C",), "gang"), 0)
    old, new = diagram.mark_changes(before, after)
    assert old == {"a": "changed", "b": "removed"} and new == {"a": "changed", "c": "added"}
    text = diagram.to_mermaid(after, new)
    assert "  class n1 added" in text and "  class n0 changed" in text and "classDef removed" not in text


def _side(tmp_path: Path, name: str, replicas: int, workers: int) -> Side:
    cliques = [
        {
            "name": "w",
            "spec": {"roleName": "w", "replicas": workers, "podSpec": {"containers": [{"name": "c", "image": "x"}]}},
        }
    ]
    docs = [
        {
            "apiVersion": "grove.io/v1alpha1",
            "kind": "PodCliqueSet",
            "metadata": {"name": f"p{i}", "namespace": "ml"},
            "spec": {"replicas": replicas, "template": {"cliques": cliques}},
        }
        for i in range(4)
    ]
    src = write_source(tmp_path / name, {"pcs.yaml": yaml.safe_dump_all(docs)})
    return Side(name, load_objects(build_tree(render_source(src)).files))


def test_diff_markdown_draws_before_and_after_and_drops_diagrams_first(tmp_path: Path) -> None:
    report = build_report(_side(tmp_path, "base", 1, 1), _side(tmp_path, "head", 2, 2))
    parts = render_markdown(report)
    assert len(parts) == 1
    text = parts[0]
    assert text.count("<summary>Gang structure: before → after</summary>") == 4
    assert text.count("```mermaid") == 8 and "class n" in text and DIAGRAM_DROPPED not in text
    # Small budget: with the diagrams the comment needs more parts than without, so they go.
    lean = render_markdown(report, max_chars=len(text) - 500)
    assert all("```mermaid" not in p for p in lean)
    assert sum(p.count(DIAGRAM_DROPPED) for p in lean) == 4
    assert all(len(p) < len(text) - 500 for p in lean)


def test_parts_nest_under_their_parent_whatever_the_list_order(tmp_path: Path) -> None:
    objects = _objects(tmp_path, BACKEND_CASES["kai"])
    for o in objects:
        if o["kind"] == "PodGroup":
            o["spec"]["subGroups"].reverse()  # children before their parent
    g = diagram.build_graph("ml/inf", objects)
    assert _parent(g, "prefill-0-pworker")[0] == "prefill-0"
    # A parent cycle is broken at its first part (under the object): no loop, no hang.
    pg = next(o for o in objects if o["kind"] == "PodGroup")
    pg["spec"]["subGroups"] = [
        {"name": "a", "parent": "b", "minMember": 1},
        {"name": "b", "parent": "a", "minMember": 1},
    ]
    g = diagram.build_graph("ml/inf", objects)
    assert _parent(g, "a")[0] == "PodGroup.scheduling.run.ai" and _parent(g, "b")[0] == "a"


# --- the README's hot paths against their plain definitions (issue 35.4) ----------------

_NAMEISH = st.text(alphabet="ab-.0129 x:/", max_size=24)


def _masked_by_regex(line: str, pcs: str, index: int) -> str:
    """What ``_Builder._signature`` did before: a pattern compiled per replica."""
    return re.sub(rf"(?<![A-Za-z0-9.-]){re.escape(pcs)}-{index}(?![0-9])", "\0", line)


@settings(max_examples=400, deadline=None)
@given(line=_NAMEISH, pcs=st.text(alphabet="ab-.1", min_size=1, max_size=4), index=st.integers(0, 12))
def test_masked_replaces_what_the_replica_pattern_matched(line: str, pcs: str, index: int) -> None:
    assert diagram._masked(line, f"{pcs}-{index}") == _masked_by_regex(line, pcs, index)


def test_masked_keeps_longer_names_and_numbers() -> None:
    token = "p-1"
    assert diagram._masked("podgroup p-1-a, p-1", token) == "podgroup \0-a, \0"
    assert diagram._masked("p-12 xp-1 .p-1 -p-1 p-1p-1", token) == "p-12 xp-1 .p-1 -p-1 \0p-1"


def _facts_by_path(value: Any, path: tuple[str, ...] = ()) -> list[str]:
    """``diagram._facts`` as first written: each leaf tests every field name on its path."""
    out: list[str] = []
    if isinstance(value, dict):
        for key in value:
            if not isinstance(key, str) or key.lower().startswith("parent"):
                continue
            child = value[key]
            if isinstance(child, list) and any(isinstance(i, dict) and "name" in i for i in child):
                continue
            out += _facts_by_path(child, (*path, key))
    elif isinstance(value, list):
        for item in value:
            out += _facts_by_path(item, path)
    elif (
        path
        and isinstance(value, (str, int, float))
        and any(w in seg.lower() for seg in path for w in diagram._FACT_WORDS)
    ):
        label = path[-1] if path[-1] not in diagram._GENERIC or len(path) < 2 else f"{path[-2]}.{path[-1]}"
        out.append(f"{label}: {value}")
    return out


_KEYS = st.sampled_from(["minMember", "Topology", "key", "name", "mode", "spec", "parentX", "size", "other", "level"])
_SPECS = st.recursive(
    st.one_of(st.integers(-3, 3), st.text(max_size=3), st.booleans(), st.none()),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_KEYS, inner, max_size=4)),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(spec=_SPECS)
def test_facts_are_those_of_the_per_leaf_definition(spec: Any) -> None:
    assert diagram._facts(spec) == _facts_by_path(spec)
