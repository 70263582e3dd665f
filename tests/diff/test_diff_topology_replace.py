"""Issue 32.3: a KAI Topology level change is a delete and re-create on sync, and the diff says so.

KAI's Topology CRD keeps ``spec.levels[].nodeLabel`` immutable, so the rendered Topology carries
the sync options that make Argo CD (``Force=true,Replace=true``) and Flux (``force: enabled``)
re-create it; the diff calls such a change "replaced: immutable field", not a modification.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema

from tests.diff.diffhelpers import run_diff, write_rendered
from tests.support import PROJECT

REPLACED = "replaced: immutable field"


def _examples(tmp_path: Path, side: str, relabel_rack: bool) -> Path:
    """The examples; with ``relabel_rack`` the rack level reads another node label."""
    root = tmp_path / side
    shutil.copytree(PROJECT / "examples", root)
    if relabel_rack:
        binding = root / "topology" / "gpu-fabric.yaml"
        text = binding.read_text()
        assert "key: network.example.com/rack\n" in text
        binding.write_text(text.replace("key: network.example.com/rack\n", "key: network.example.com/rack-v2\n"))
    return root


def _header(output: str, kind_label: str) -> str:
    lines = [line for line in output.splitlines() if line.startswith("### ") and kind_label in line]
    assert len(lines) == 1, output
    return lines[0]


def test_a_topology_level_change_is_a_replacement(tmp_path: Path) -> None:
    base = _examples(tmp_path, "base", relabel_rack=False)
    head = _examples(tmp_path, "head", relabel_rack=True)
    result = run_diff([str(base), str(head), "--format", "text"])
    assert result.exit_code == 0, result.output
    header = _header(result.stdout, "Topology.kai.scheduler gpu-fabric")
    assert f"| {REPLACED} |" in header
    assert "spec.levels" in header


def test_an_object_without_the_recreate_options_stays_a_modification(tmp_path: Path) -> None:
    """The wording follows the sync options, not the kind: a hand-made Topology without them is
    updated in place by Argo CD / Flux, so the diff says "modified"."""

    def topology(levels: list[str]) -> dict[str, object]:
        return {
            "apiVersion": "kai.scheduler/v1alpha1",
            "kind": "Topology",
            "metadata": {"name": "plain"},
            "spec": {"levels": [{"nodeLabel": label} for label in levels]},
        }

    base = write_rendered(tmp_path / "base", {"_cluster/topology.yaml": topology(["a.io/zone", "kubernetes.io/hostname"])})
    head = write_rendered(tmp_path / "head", {"_cluster/topology.yaml": topology(["kubernetes.io/hostname"])})
    result = run_diff(["--rendered", str(base), str(head), "--format", "text"])
    assert result.exit_code == 0, result.output
    header = _header(result.stdout, "Topology.kai.scheduler plain")
    assert "| modified |" in header and REPLACED not in header


def test_the_json_output_says_the_topology_is_recreated(tmp_path: Path) -> None:
    base = _examples(tmp_path, "base", relabel_rack=False)
    head = _examples(tmp_path, "head", relabel_rack=True)
    result = run_diff([str(base), str(head), "--output", "json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    jsonschema.validate(document, json.loads((PROJECT / "docs" / "schemas" / "diff-output.schema.json").read_text()))
    objects = [o for s in document["shards"] for o in s["objects"]]
    topology = next(o for o in objects if o["kind"] == "Topology" and o["name"] == "gpu-fabric")
    assert (topology["change"], topology.get("recreatedOnSync"), topology.get("note")) == ("modified", True, REPLACED)
    assert not any(o.get("recreatedOnSync") for o in objects if o is not topology)


def _plan(args: list[str]) -> str:
    from click.testing import CliRunner

    from grove_gitops.cli.main import main

    result = CliRunner().invoke(main, ["plan", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_plan_says_the_topology_is_replaced_in_every_format(tmp_path: Path) -> None:
    """``plan`` too: its JSON names the Topology under ``recreatedOnSync`` with the note (and
    validates against the schema); text and Markdown say it beside the (unchanged) rollout."""
    base = _examples(tmp_path, "base", relabel_rack=False)
    head = _examples(tmp_path, "head", relabel_rack=True)
    document = json.loads(_plan([str(base), str(head), "--output", "json"]))
    jsonschema.validate(document, json.loads((PROJECT / "docs" / "schemas" / "plan-output.schema.json").read_text()))
    assert document["recreatedOnSync"] == [{"kind": "Topology", "namespace": "", "name": "gpu-fabric", "note": REPLACED}]
    text = _plan([str(base), str(head)])
    assert f"{REPLACED}: Argo CD / Flux delete and re-create these on sync" in text and "  Topology gpu-fabric" in text
    markdown = _plan([str(base), str(head), "--output", "markdown"])
    assert f"**{REPLACED}**" in markdown and "`Topology gpu-fabric`" in markdown
    unchanged = json.loads(_plan([str(base), str(base), "--output", "json"]))
    assert "recreatedOnSync" not in unchanged
