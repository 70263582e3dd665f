"""``diff --output json`` is structured (issue 25, "Reviewing"): a CI script gates on "a
PodGang removed" or "a scheduler changed" with a few lines over the JSON, no Markdown parsed.

The sides are real git commits read with ``--repo``; the filters below are what a user's
script would be (``jq -e '[.shards[].objects[] | select(.kind == "PodGang" and .change ==
"removed")] | length > 0'``). Every document is checked against the published JSON Schema.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import yaml
from click.testing import CliRunner

from grove_gitops.cli.main import main
from grove_gitops.diff.fields import MAX_FIELDS, MAX_VALUE_CHARS, TRUNCATION_MARK
from tests.diff.diffhelpers import LPX_PROFILES, clique, pcs
from tests.support import PROJECT

SCHEMA = json.loads((PROJECT / "docs" / "schemas" / "diff-output.schema.json").read_text(encoding="utf-8"))


# -- the gates a CI script writes -------------------------------------------------------------


def podgang_removed(doc: dict[str, Any]) -> list[str]:
    return [
        f"{o['namespace']}/{o['name']}"
        for s in doc["shards"]
        for o in s["objects"]
        if o["kind"] == "PodGang" and o["change"] == "removed"
    ]


def scheduler_changed(doc: dict[str, Any]) -> list[str]:
    return [s["shard"] for s in doc["shards"] if s["schedulers"]["switched"]]


# -- a repository with one commit per state ---------------------------------------------------


def _git(repo: Path, *args: str) -> str:
    proc = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return proc.stdout.strip()


def _tree(replicas: int = 2, scheduler: str | None = None, image: str = "nginx:1.27") -> dict[str, str]:
    pod: dict[str, Any] = {"pod": {"schedulerName": scheduler}} if scheduler else {}
    doc = yaml.safe_load(pcs("serving", [clique("router", 1, image, **pod), clique("worker", 2, image, **pod)]))
    doc["spec"]["replicas"] = replicas
    return {"config.yaml": LPX_PROFILES, "serving.yaml": yaml.safe_dump(doc, sort_keys=False)}


def _commit(repo: Path, files: dict[str, str], message: str) -> str:
    for name, text in files.items():
        (repo / name).write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", message, "--allow-empty")
    return _git(repo, "rev-parse", "HEAD")


def _repo(tmp_path: Path, *states: dict[str, str]) -> tuple[Path, list[str]]:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    return repo, [_commit(repo, files, f"state {i}") for i, files in enumerate(states)]


def diff_json(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(main, ["diff", *args, "--output", "json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(result.stdout)
    jsonschema.validate(doc, SCHEMA)
    return doc


def _objects(doc: dict[str, Any], pick: Callable[[dict[str, Any]], bool]) -> list[dict[str, Any]]:
    return [o for s in doc["shards"] for o in s["objects"] if pick(o)]


# -- tests ------------------------------------------------------------------------------------


def test_a_ci_script_gates_on_a_removed_podgang_and_a_scheduler_switch(tmp_path: Path) -> None:
    repo, (two, switched, one) = _repo(
        tmp_path, _tree(2), _tree(2, "lpx-scheduler"), _tree(1, "lpx-scheduler")
    )
    doc = diff_json("--repo", str(repo), two, switched)
    assert scheduler_changed(doc) == ["ml/serving"] and podgang_removed(doc) == []
    (shard,) = doc["shards"]
    assert shard["schedulers"] == {"base": ["default-scheduler"], "head": ["lpx-scheduler"], "switched": True}

    doc = diff_json("--repo", str(repo), switched, one)
    assert podgang_removed(doc) == ["ml/serving-1"] and scheduler_changed(doc) == []
    assert doc["shards"][0]["podGangs"]["removed"] == ["serving-1"]


def test_an_image_bump_trips_neither_gate_and_pairs_replaced_pods_with_values(tmp_path: Path) -> None:
    repo, (old, new) = _repo(tmp_path, _tree(1), _tree(1, image="nginx:1.28"))
    doc = diff_json("--repo", str(repo), old, new)
    assert podgang_removed(doc) == [] and scheduler_changed(doc) == []
    pods = _objects(doc, lambda o: o["kind"] == "Pod")
    assert {p["hostname"] for p in pods} == {"serving-0-router-0", "serving-0-worker-0", "serving-0-worker-1"}
    for p in pods:
        assert p["change"] == "replaced" and p["replaces"] == p["base"]["name"] != p["head"]["name"]
        # the name hash, template hash and ownership proof are noise; the image is the change
        assert p["fields"] == [{"path": "spec.containers[main].image", "old": "nginx:1.27", "new": "nginx:1.28"}]
    # the rollout plan rides along, as plan --output json prints it
    (plan,) = doc["plan"]["podcliquesets"]
    assert [s["pods"] for s in plan["steps"]] == [["serving-0-router-0"], ["serving-0-worker-0"], ["serving-0-worker-1"]]
    assert [o["role"] for o in plan["outages"]] == ["router"]


def test_the_day2_annotation_is_compared_field_by_field(tmp_path: Path) -> None:
    """Issue 25, "Quieter": a replica change shows the annotation's changed fields, not two
    400-character lines."""
    repo, (one, two) = _repo(tmp_path, _tree(1), _tree(1))
    worker = yaml.safe_load(_tree(1)["serving.yaml"])
    worker["spec"]["template"]["cliques"][1]["spec"]["replicas"] = 3
    _commit(repo, {"serving.yaml": yaml.safe_dump(worker, sort_keys=False)}, "three workers")
    three = _git(repo, "rev-parse", "HEAD")
    doc = diff_json("--repo", str(repo), one, three)
    (gang,) = _objects(doc, lambda o: o["kind"] == "PodGang")
    day2 = [f for f in gang["fields"] if "gitops.grove.io/day2" in f["path"]]
    prefix = "metadata.annotations['gitops.grove.io/day2'].cliques[serving-0-worker]"
    # minAvailable defaults to replicas
    assert day2 == [
        {"path": f"{prefix}.minAvailable", "old": 2, "new": 3},
        {"path": f"{prefix}.replicas", "old": 2, "new": 3},
    ]
    assert two  # the unchanged commit in between renders identically
    assert diff_json("--repo", str(repo), one, two)["identical"] is True


def _rendered(root: Path, data: dict[str, Any]) -> Path:
    root.mkdir(parents=True)
    (root / "ml" / "_resources").mkdir(parents=True)
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big", "namespace": "ml"}, "data": data}
    (root / "ml" / "_resources" / "10-configmap--big.yaml").write_text(yaml.safe_dump(cm))
    return root


def test_values_and_field_lists_are_bounded_with_a_marker(tmp_path: Path) -> None:
    old = {"blob": "a" * 50_000, **{f"k{i}": "1" for i in range(MAX_FIELDS + 20)}}
    new = {"blob": "b" * 50_000, **{f"k{i}": "2" for i in range(MAX_FIELDS + 20)}}
    doc = diff_json("--rendered", str(_rendered(tmp_path / "a", old)), str(_rendered(tmp_path / "b", new)))
    (cm,) = _objects(doc, lambda o: o["kind"] == "ConfigMap")
    assert len(cm["fields"]) == MAX_FIELDS and cm["fieldsOmitted"] == 21
    blob = cm["fields"][0]
    assert blob["path"] == "data.blob" and blob["oldTruncated"] is True and blob["newTruncated"] is True
    assert len(blob["new"]) == MAX_VALUE_CHARS and blob["new"].endswith(TRUNCATION_MARK)
    assert len(json.dumps(doc)) < 400_000  # two 50,000-character values, not in the structured part


def test_added_and_removed_objects_carry_no_field_rows(tmp_path: Path) -> None:
    repo, (one, two) = _repo(tmp_path, _tree(1), _tree(2))
    doc = diff_json("--repo", str(repo), one, two)
    added = _objects(doc, lambda o: o["change"] == "added")
    assert added and all("fields" not in o and o["base"] is None and o["head"]["path"] for o in added)
    assert doc["shards"][0]["podGangs"]["added"] == ["serving-1"]


def test_docs_describe_every_key_and_point_at_the_schema() -> None:
    doc = (PROJECT / "docs" / "diff.md").read_text(encoding="utf-8")
    section = doc[doc.index("### `--output json`") :]
    for key in ("schemaVersion", "shards", "objects", "fields", "fieldsOmitted", "oldTruncated", "replaces", "hostname",
                "schedulers", "podGangs", "settings", "plan", "docs/schemas/diff-output.schema.json"):
        assert key in section, key
