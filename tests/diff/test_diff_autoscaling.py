"""``diff`` shows autoscaling changes: per scale target its bounds, metrics, who owns which
replica and what changed; the workload object's render inputs stay one line (issue 23 item 7)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from grove_gitops.diff.autoscaling import AGENT_NOTE, BASE_GANG_NOTE, FLOOR_NOTE, shard_autoscaling
from grove_gitops.diff.markdown import code
from grove_gitops.diff.model import ObjectKey, TreeObject
from grove_gitops.diff.renderinputs import condense_text
from grove_gitops.diff.views import autoscaling_notes, autoscaling_rows
from tests.diff.diffhelpers import run_diff
from tests.support import PROJECT, sample_text

EXAMPLE = "workloads/llm-inference/llama-disagg.yaml"


def _simple1(floor: int | None = None, maximum: int = 5, utilization: int = 80, metric_name: str = "") -> str:
    """Grove's simple1 sample: ``pca`` autoscaled (floor = its 3 replicas unless given), ``sga`` too."""
    doc = yaml.safe_load(sample_text("simple/simple1.yaml"))
    pca = doc["spec"]["template"]["cliques"][0]
    asc = pca["spec"]["autoScalingConfig"]
    asc["maxReplicas"] = maximum
    asc["metrics"][0]["resource"]["target"]["averageUtilization"] = utilization
    if floor is not None:
        asc["minReplicas"] = floor
        pca["spec"]["minAvailable"] = floor
    if metric_name:
        asc["metrics"] = [
            {"type": "Pods", "pods": {"metric": {"name": metric_name}, "target": {"type": "AverageValue", "averageValue": "1"}}}
        ]
    return yaml.safe_dump(doc, sort_keys=False)


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _examples(root: Path, autoscaled: bool = True) -> Path:
    """The project's examples/ tree; without ``autoscaled`` its prefill group has no scaleConfig."""
    shutil.copytree(PROJECT / "examples", root)
    if not autoscaled:
        doc = yaml.safe_load((root / EXAMPLE).read_text())
        for group in doc["spec"]["template"]["podCliqueScalingGroups"]:
            group.pop("scaleConfig", None)
        (root / EXAMPLE).write_text(yaml.safe_dump(doc, sort_keys=False))
    return root


def _row(markdown: str, target: str) -> list[str]:
    """The cells of the autoscaling table's row for ``target``."""
    for line in markdown.splitlines():
        if line.startswith(f"| `{target}` |"):
            return [c.strip() for c in line.strip("|").split(" | ")]
    raise AssertionError(f"no autoscaling row for {target}:\n{markdown}")


def _object_block(markdown: str, label: str) -> str:
    start = markdown.index(f"<code>{label}</code>")
    return markdown[start : markdown.index("</details>", start)]


def test_floor_max_and_metric_changes_give_a_row_per_scale_target(tmp_path: Path) -> None:
    base = _write(tmp_path / "base", {"simple1.yaml": _simple1()})
    head = _write(tmp_path / "head", {"simple1.yaml": _simple1(floor=2, maximum=7, utilization=70)})
    result = run_diff([str(base), str(head)])
    assert result.exit_code == 0, result.output
    md = result.stdout
    assert "**Autoscaling**" in md
    assert _row(md, "simple1-0-pca") == [
        "`simple1-0-pca`", "PodClique", "3 → 2", "5 → 7", "`cpu 70%`", "pods 0–1", "pods 2–6, up to the live count",
        "floor 3 → 2; max 5 → 7; minAvailable 3 → 2; metrics changed",
    ]
    assert _row(md, "simple1-0-sga") == [
        "`simple1-0-sga`", "PodCliqueScalingGroup", "1", "6", "`cpu 80%`", "replica 0",
        "replicas 1–5, up to the live count", "—",
    ]
    assert AGENT_NOTE in md and "the live count" in md and "is not in Git" in md
    assert FLOOR_NOTE in md
    assert "- `simple1-0-pca`: pod 2 leaves Git: the agent creates it while the live count covers it." in md
    # HPA bounds are autoscaling, not gang settings: no "size" row for them
    assert "| `HorizontalPodAutoscaler.autoscaling`" not in md


def test_the_workload_objects_render_inputs_are_one_line_and_summarised(tmp_path: Path) -> None:
    base = _write(tmp_path / "base", {"simple1.yaml": _simple1()})
    head = _write(tmp_path / "head", {"simple1.yaml": _simple1(maximum=7)})
    md = run_diff([str(base), str(head)]).stdout
    block = _object_block(md, "PodCliqueSet.gitops.grove.io")
    assert "podSpec" not in block and "image: nginx" not in block  # the source document is not repeated
    condensed = [line for line in block.splitlines() if line.startswith(("-  source:", "+  source:"))]
    assert len(condensed) == 2 and all("1 document, sha256:" in line for line in condensed), block
    assert "<code>spec.source</code>" in block.split("</summary>")[0]  # one path in the header
    assert "+    maxReplicas: 7" in block  # the bounds Git sets are still diffed
    assert (
        "Render inputs changed (spec.source of the gitops.grove.io PodCliqueSet, what the agent renders from; "
        "condensed to one line in its diff): `PodCliqueSet simple1` modified "
        "(`spec.template.cliques[pca].spec.autoScalingConfig.maxReplicas`)"
    ) in md
    text = run_diff([str(base), str(head), "--output", "text"]).stdout
    assert "podSpec" not in text.split("PodCliqueSet.gitops.grove.io", 1)[1].split("### ")[0]
    assert "  Autoscaling:" in text and AGENT_NOTE in text


def test_autoscaling_added_to_the_examples_prefill_group(tmp_path: Path) -> None:
    base = _examples(tmp_path / "base", autoscaled=False)
    head = _examples(tmp_path / "head")
    md = run_diff([str(base), str(head)]).stdout
    assert _row(md, "llama-disagg-0-prefill") == [
        "`llama-disagg-0-prefill`", "PodCliqueScalingGroup", "2", "4", "`external metric vllm_prefill_queue_depth 8 average`",
        "replicas 0–1", "replicas 2–3, up to the live count", "autoscaling added",
    ]
    assert AGENT_NOTE in md
    assert BASE_GANG_NOTE not in md  # a scaling group: the base PodGang stays in Git
    text = run_diff([str(base), str(head), "--output", "text"]).stdout
    assert (
        "    scale target: llama-disagg-0-prefill; kind: PodCliqueScalingGroup; floor: 2; max: 4; "
        "metrics (HPA): external metric vllm_prefill_queue_depth 8 average; Git holds: replicas 0–1; "
        "the agent creates: replicas 2–3, up to the live count; change: autoscaling added"
    ) in text
    removed = run_diff([str(head), str(base)]).stdout
    assert _row(removed, "llama-disagg-0-prefill")[-1] == (
        "autoscaling removed: Git renders every replica of the template's count again"
    )


def test_a_standalone_clique_gaining_autoscaling_says_the_agent_makes_its_base_gang(tmp_path: Path) -> None:
    plain = yaml.safe_load(_simple1())
    plain["spec"]["template"]["cliques"][0]["spec"].pop("autoScalingConfig")
    base = _write(tmp_path / "base", {"simple1.yaml": yaml.safe_dump(plain, sort_keys=False)})
    head = _write(tmp_path / "head", {"simple1.yaml": _simple1()})
    md = run_diff([str(base), str(head)]).stdout
    assert _row(md, "simple1-0-pca")[-1] == "autoscaling added"
    assert BASE_GANG_NOTE in md
    assert "**PodGangs removed (1):** `simple1-0`" in md  # what Git loses, and the note says why


def test_json_output_carries_the_same_autoscaling_facts(tmp_path: Path) -> None:
    base = _write(tmp_path / "base", {"simple1.yaml": _simple1()})
    head = _write(tmp_path / "head", {"simple1.yaml": _simple1(floor=2, maximum=7)})
    result = run_diff([str(base), str(head), "--output", "json"])
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(result.stdout)
    [shard] = doc["autoscaling"]
    assert shard["shard"] == "default/simple1"
    pca = next(t for t in shard["targets"] if t["name"] == "simple1-0-pca")
    assert pca["change"] == "modified"
    assert pca["changes"] == ["floor 3 → 2", "max 5 → 7", "minAvailable 3 → 2"]
    assert pca["floorMove"] == "pod 2 leaves Git: the agent creates it while the live count covers it"
    assert pca["base"]["minReplicas"] == 3 and pca["head"] == {
        "kind": "PodClique", "templateName": "pca", "podCliqueSetReplica": 0, "minReplicas": 2, "maxReplicas": 7,
        "minAvailable": 2, "metrics": "cpu 80%", "gitOwned": "pods 0–1", "clusterOwned": "pods 2–6, up to the live count",
    }
    sga = next(t for t in shard["targets"] if t["name"] == "simple1-0-sga")
    assert sga["change"] == "unchanged" and sga["changes"] == []
    assert shard["renderInputs"] == [
        {
            "document": "PodCliqueSet simple1",
            "change": "modified",
            "paths": [
                "spec.template.cliques[pca].spec.autoScalingConfig.maxReplicas",
                "spec.template.cliques[pca].spec.autoScalingConfig.minReplicas",
                "spec.template.cliques[pca].spec.minAvailable",
            ],
        }
    ]


_CODE_SPAN = re.compile(r"(`+)(.+?)\1")


def test_metric_names_from_the_source_stay_inert(tmp_path: Path) -> None:
    hostile = "@octocat [click](https://x) ![i](https://y) | `tick` <b>"
    base = _write(tmp_path / "base", {"simple1.yaml": _simple1()})
    head = _write(tmp_path / "head", {"simple1.yaml": _simple1(metric_name=hostile)})
    result = run_diff([str(base), str(head)])
    assert result.exit_code == 0, result.output
    row = _row(result.stdout, "simple1-0-pca")
    assert len(row) == 8  # the pipe did not add a cell
    outside = _CODE_SPAN.sub("", "\n".join(result.stdout.split("<details>")[0:1]))
    assert "@octocat" not in outside and "](https" not in outside and "<b>" not in outside


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 10**12) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=20,
)
_entry = st.fixed_dictionaries(
    {
        "name": st.text(max_size=30) | _json,
        "kind": st.sampled_from(["PodClique", "PodCliqueScalingGroup", "Other"]) | _json,
        "templateName": st.text(max_size=10) | _json,
        "podCliqueSetReplica": st.integers(0, 3) | _json,
        "minReplicas": st.integers(0, 5) | _json,
        "maxReplicas": st.integers(0, 9) | _json,
        "minAvailable": st.integers(0, 5) | _json,
    }
)

_metric = st.fixed_dictionaries(
    {"type": st.sampled_from(["Resource", "ContainerResource", "Pods", "Object", "External"]) | _json},
    optional={k: _json for k in ("resource", "containerResource", "pods", "object", "external")},
)


def _tree_object(obj: dict[str, Any]) -> TreeObject:
    meta = obj.get("metadata") or {}
    key = ObjectKey("ns/w", obj["apiVersion"], obj["kind"], "ns", str(meta.get("name", "")))
    return TreeObject(key, "f.yaml", yaml.safe_dump(obj), obj)


@settings(max_examples=150, deadline=None)
@given(entries=st.lists(_entry, max_size=5), metrics=st.lists(_metric, max_size=3) | _json, source=_json)
def test_malformed_rendered_workload_objects_are_skipped_never_a_crash(
    entries: list[dict[str, Any]], metrics: Any, source: Any
) -> None:
    """A ``--rendered`` tree is anyone's YAML: any scaleTargets, metrics or source gives rows of
    eight one-line cells (or none), never an exception."""
    workload = {
        "apiVersion": "gitops.grove.io/v1alpha1", "kind": "PodCliqueSet", "metadata": {"name": "w"},
        "spec": {"scaleTargets": entries, "source": source},
    }
    names = [e["name"] for e in entries if isinstance(e.get("name"), str)]
    hpas = [
        {
            "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": f"h{i}"},
            "spec": {"scaleTargetRef": {"apiVersion": "gitops.grove.io/v1alpha1", "name": n}, "metrics": metrics},
        }
        for i, n in enumerate(names)
    ]
    objects = [_tree_object(o) for o in [workload, *hpas]]
    scaling = shard_autoscaling("ns/w", [], objects)
    for row in autoscaling_rows(scaling, code):
        assert len(row) == 8
        assert all("\n" not in cell and "\r" not in cell for cell in row)
    autoscaling_notes(scaling, code)
    condense_text(objects[0].key, objects[0].text, workload)
