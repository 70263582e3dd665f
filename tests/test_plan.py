"""``grove-gitops plan``: the rollout the agent will perform, from the bundled example.

Every case copies ``examples/`` to a temporary directory, edits the PodCliqueSet as a user
would, and runs the real command (``grove-gitops plan``) on the two trees.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import git
import pytest
import yaml
from click.testing import CliRunner, Result

from grove_gitops.cli import main
from grove_gitops.output.layout import build_tree
from grove_gitops.output.writer import write_tree
from grove_gitops.readmodel.order import ReplicaRank, SlotRef, order_replicas, steps_for_replica
from grove_gitops.render import render_source
from tests.support import PROJECT, plain

EXAMPLES = PROJECT / "examples"
PCS_FILE = Path("workloads/llm-inference/llama-disagg.yaml")
P = "llama-disagg-0"

#: The example's 12 slots in the documented order: standalone cliques by PodClique name then
#: index, one pod per step; then scaling groups by name, each replica's pods together.
EXAMPLE_STEPS = [
    [f"{P}-router-0"],
    [f"{P}-router-1"],
    [f"{P}-decode-0-dleader-0", f"{P}-decode-0-dworker-0"],
    [f"{P}-prefill-0-pleader-0", f"{P}-prefill-0-pworker-0", f"{P}-prefill-0-pworker-1", f"{P}-prefill-0-pworker-2"],
    [f"{P}-prefill-1-pleader-0", f"{P}-prefill-1-pworker-0", f"{P}-prefill-1-pworker-1", f"{P}-prefill-1-pworker-2"],
]

Edit = Callable[[dict[str, Any]], None]


def example(tmp_path: Path, name: str, *edits: Edit) -> Path:
    """A copy of the bundled example with the PodCliqueSet document edited."""
    root = tmp_path / name
    shutil.copytree(EXAMPLES, root)
    path = root / PCS_FILE
    doc = yaml.safe_load(path.read_text())
    for edit in edits:
        edit(doc)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return root


def clique(doc: dict[str, Any], name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(c for c in doc["spec"]["template"]["cliques"] if c["name"] == name)
    return found


def group(doc: dict[str, Any], name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(g for g in doc["spec"]["template"]["podCliqueScalingGroups"] if g["name"] == name)
    return found


def bump_images(doc: dict[str, Any]) -> None:
    for c in doc["spec"]["template"]["cliques"]:
        for container in c["spec"]["podSpec"]["containers"]:
            container["image"] = container["image"].rsplit(":", 1)[0] + ":2.0.0"


def on_delete(doc: dict[str, Any]) -> None:
    doc["spec"]["updateStrategy"] = {"type": "OnDelete"}


def run(*args: str) -> Result:
    return CliRunner().invoke(main, ["plan", *args], catch_exceptions=False)


def plan_json(base: Path, head: Path, *extra: str) -> dict[str, Any]:
    result = run(str(base), str(head), "--output", "json", *extra)
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def only(data: dict[str, Any]) -> dict[str, Any]:
    assert len(data["podcliquesets"]) == 1, data
    entry: dict[str, Any] = data["podcliquesets"][0]
    return entry


def test_image_bump_of_the_example_rolls_in_the_documented_order(tmp_path: Path) -> None:
    base = example(tmp_path, "base")
    head = example(tmp_path, "head", bump_images)
    data = plan_json(base, head)
    assert list(data) == ["ok", "schemaVersion", "problems", "podcliquesets"]  # every report's JSON opens alike
    p = only(data)
    assert (p["namespace"], p["name"], p["strategy"], p["change"]) == (
        "inference",
        "llama-disagg",
        "RollingRecreate",
        "modified",
    )
    assert len(p["changed"]) == 12
    assert [{"replica": s["replica"], "pods": s["pods"]} for s in p["steps"]] == [
        {"replica": 0, "pods": pods} for pods in EXAMPLE_STEPS
    ]
    assert p["maxUnavailable"] == 4
    assert p["restartFields"][f"{P}-router"] == ["spec.containers[router].image"]
    assert p["restartFields"][f"{P}-prefill-1-pworker"] == ["spec.containers[prefill].image"]
    assert set(p["restartFields"]) == {
        f"{P}-router",
        f"{P}-decode-0-dleader",
        f"{P}-decode-0-dworker",
        f"{P}-prefill-0-pleader",
        f"{P}-prefill-0-pworker",
        f"{P}-prefill-1-pleader",
        f"{P}-prefill-1-pworker",
    }
    assert p["added"] == [] and p["removed"] == [] and p["message"] == ""


def test_steps_are_the_agents_order_function(tmp_path: Path) -> None:
    """The plan hands readmodel/order.py what the agent will: the same steps come back."""
    head = example(tmp_path, "head", bump_images)
    pods = [o.obj for o in render_source(head).objects if o.obj.get("kind") == "Pod"]
    refs = []
    for pod in pods:
        labels = pod["metadata"]["labels"]
        group_name = labels.get("grove.io/podcliquescalinggroup")
        refs.append(
            SlotRef(
                pod["spec"]["hostname"],
                labels["grove.io/podclique"],
                int(labels["grove.io/podclique-pod-index"]),
                group_name,
                int(labels["grove.io/podcliquescalinggroup-replica-index"]) if group_name else None,
            )
        )
    assert order_replicas([ReplicaRank(0)]) == [0]
    expected = [list(s.hostnames) for s in steps_for_replica(0, refs)]
    assert expected == EXAMPLE_STEPS
    assert [s["pods"] for s in only(plan_json(example(tmp_path, "base"), head))["steps"]] == expected


def test_text_output_lists_strategy_steps_bound_and_fields(tmp_path: Path) -> None:
    result = run(str(example(tmp_path, "base")), str(example(tmp_path, "head", bump_images)))
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "inference/llama-disagg: RollingRecreate; 12 pods replaced in 5 steps; at most 4 unavailable at once" in out
    assert f"    1. replica 0, podclique {P}-router: {P}-router-0\n" in out
    assert f"    5. replica 0, scaling group {P}-prefill replica 1: {P}-prefill-1-pleader-0, " in out
    assert f"spec.containers[router].image  (PodCliques: {P}-router)" in out
    assert "1 PodCliqueSet(s) to roll out, 5 step(s) in all" in result.stderr


def test_on_delete_has_no_steps_and_says_why(tmp_path: Path) -> None:
    base = example(tmp_path, "base", on_delete)
    head = example(tmp_path, "head", on_delete, bump_images)
    p = only(plan_json(base, head))
    assert p["strategy"] == "OnDelete"
    assert p["steps"] == [] and p["maxUnavailable"] == 0
    assert len(p["changed"]) == 12
    assert "replaced only when deleted" in p["message"]
    text = run(str(base), str(head)).stdout
    assert "OnDelete" in text and "Steps:" not in text


def test_strategy_is_heads(tmp_path: Path) -> None:
    """Switching to OnDelete in the same change: the agent reads HEAD, so no steps."""
    p = only(plan_json(example(tmp_path, "base"), example(tmp_path, "head", on_delete, bump_images)))
    assert p["strategy"] == "OnDelete" and p["steps"] == []


def test_podgang_level_change_has_no_steps(tmp_path: Path) -> None:
    """The PodCliqueSet's own labels go to its PodGangs, not its pods: nothing restarts."""

    def relabel(doc: dict[str, Any]) -> None:
        doc["metadata"]["labels"]["team"] = "platform"

    p = only(plan_json(example(tmp_path, "base"), example(tmp_path, "head", relabel)))
    assert p["steps"] == [] and p["changed"] == [] and p["restartFields"] == {}
    assert "no pod changes" in p["message"]


def test_template_field_the_pod_does_not_carry_names_the_hash(tmp_path: Path) -> None:
    """priorityClassName is part of Grove's pod template hash but not of the rendered pod
    here: every pod is replaced and the only field that says so is the hash label."""

    def priority(doc: dict[str, Any]) -> None:
        doc["spec"]["template"]["priorityClassName"] = "inference-low"

    p = only(plan_json(example(tmp_path, "base"), example(tmp_path, "head", priority)))
    assert len(p["steps"]) == 5
    assert set(map(tuple, p["restartFields"].values())) == {("metadata.labels['grove.io/pod-template-hash']",)}


def test_scale_out_and_in_are_listed_not_stepped(tmp_path: Path) -> None:
    def resize(doc: dict[str, Any]) -> None:
        clique(doc, "router")["spec"]["replicas"] = 3
        group(doc, "prefill")["replicas"] = 1

    p = only(plan_json(example(tmp_path, "base"), example(tmp_path, "head", resize)))
    assert p["added"] == [f"{P}-router-2"]
    assert p["removed"] == [f"{P}-prefill-1-pleader-0", *(f"{P}-prefill-1-pworker-{i}" for i in range(3))]
    assert p["steps"] == [] and p["changed"] == []


def test_scale_in_of_a_clique_removes_the_highest_index(tmp_path: Path) -> None:
    def fewer(doc: dict[str, Any]) -> None:
        clique(doc, "router")["spec"]["replicas"] = 1
        clique(doc, "router")["spec"]["minAvailable"] = 1

    p = only(plan_json(example(tmp_path, "base"), example(tmp_path, "head", fewer)))
    assert p["removed"] == [f"{P}-router-1"]
    text = run(str(example(tmp_path, "b2")), str(example(tmp_path, "h2", fewer))).stdout
    assert f"Removed (scale-in; deleted by the agent after its grace period): {P}-router-1" in text


def test_two_replicas_roll_replica_0_first(tmp_path: Path) -> None:
    def two(doc: dict[str, Any]) -> None:
        doc["spec"]["replicas"] = 2

    p = only(plan_json(example(tmp_path, "base", two), example(tmp_path, "head", two, bump_images)))
    replicas = [s["replica"] for s in p["steps"]]
    assert replicas == [0] * 5 + [1] * 5
    assert [s["pods"] for s in p["steps"][5:]] == [[h.replace(P, "llama-disagg-1") for h in s] for s in EXAMPLE_STEPS]


def test_scale_out_of_podcliqueset_replicas(tmp_path: Path) -> None:
    def two(doc: dict[str, Any]) -> None:
        doc["spec"]["replicas"] = 2

    p = only(plan_json(example(tmp_path, "base"), example(tmp_path, "head", two)))
    assert len(p["added"]) == 12 and all(h.startswith("llama-disagg-1-") for h in p["added"])
    assert p["steps"] == []


def test_podcliqueset_added_and_removed(tmp_path: Path) -> None:
    base = example(tmp_path, "base")
    head = example(tmp_path, "head")
    (head / PCS_FILE).rename(head / "workloads/llm-inference/renamed.yaml")
    doc = yaml.safe_load((head / "workloads/llm-inference/renamed.yaml").read_text())
    doc["metadata"]["name"] = "llama-next"
    (head / "workloads/llm-inference/renamed.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    data = plan_json(base, head)
    by_name = {p["name"]: p for p in data["podcliquesets"]}
    assert by_name["llama-next"]["change"] == "added" and len(by_name["llama-next"]["added"]) == 12
    assert by_name["llama-disagg"]["change"] == "removed" and len(by_name["llama-disagg"]["removed"]) == 12
    assert "grace period" in by_name["llama-disagg"]["message"]
    assert all(p["steps"] == [] for p in data["podcliquesets"])


def test_identical_trees_plan_nothing(tmp_path: Path) -> None:
    assert plan_json(example(tmp_path, "base"), example(tmp_path, "head"))["podcliquesets"] == []
    result = run(
        str(
            example(tmp_path, "b"),
        ),
        str(example(tmp_path, "h")),
    )
    assert "nothing to roll out" in result.stdout


# -- rendered trees and the day-2 annotation --------------------------------------------


def rendered(tmp_path: Path, name: str, *edits: Edit, day2: str | None = None) -> Path:
    """The example rendered to disk, with every PodGang's ``gitops.grove.io/day2`` set."""
    out = tmp_path / f"{name}-out"
    write_tree(build_tree(render_source(example(tmp_path, name, *edits))), out)
    if day2 is not None:
        for path in out.rglob("20-podgang.*.yaml"):
            obj = yaml.safe_load(path.read_text())
            obj["metadata"].setdefault("annotations", {})["gitops.grove.io/day2"] = day2
            path.write_text(yaml.safe_dump(obj, sort_keys=False))
    return out


def test_rendered_trees_read_the_strategy_from_the_day2_annotation(tmp_path: Path) -> None:
    day2 = json.dumps({"podCliqueSet": "llama-disagg", "replicaIndex": 0, "updateStrategy": "OnDelete"})
    base = rendered(tmp_path, "base", day2=day2)
    head = rendered(tmp_path, "head", bump_images, day2=day2)
    p = only(plan_json(base, head, "--rendered"))
    assert p["strategy"] == "OnDelete" and p["steps"] == [] and len(p["changed"]) == 12


def test_malformed_day2_annotation_is_an_input_error(tmp_path: Path) -> None:
    base = rendered(tmp_path, "base")
    head = rendered(tmp_path, "head", bump_images, day2='{"updateStrategy": "Sometimes"}')
    result = run(str(base), str(head), "--rendered")
    assert result.exit_code == 1
    assert "error: inference/llama-disagg/20-podgang.scheduler.grove.io--llama-disagg-0" in result.stderr
    assert ".yaml: metadata.annotations[gitops.grove.io/day2]" in result.stderr
    assert "Traceback" not in result.output
    as_json = run(str(base), str(head), "--rendered", "--output", "json")
    assert as_json.exit_code == 1 and json.loads(as_json.stdout)["ok"] is False


# -- git refs -------------------------------------------------------------------------------

BOT = git.Actor("grove-gitops tests", "tests@example.com")


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[git.Repo]:
    r = git.Repo.init(tmp_path / "repo", initial_branch="main")
    yield r
    r.close()


def test_git_refs_mode(repo: git.Repo, tmp_path: Path) -> None:
    root = Path(repo.working_dir)
    shutil.copytree(EXAMPLES, root / "deploy")
    repo.index.add([p.relative_to(root).as_posix() for p in (root / "deploy").rglob("*.yaml")])
    v1 = repo.index.commit("v1", author=BOT, committer=BOT).hexsha
    edited = example(tmp_path, "edited", bump_images)
    shutil.copy(edited / PCS_FILE, root / "deploy" / PCS_FILE)
    repo.index.add([f"deploy/{PCS_FILE.as_posix()}"])
    v2 = repo.index.commit("v2", author=BOT, committer=BOT).hexsha
    data = plan_json(v1, v2, "--repo", str(root), "--source-path", "deploy")
    assert [s["pods"] for s in only(data)["steps"]] == EXAMPLE_STEPS
    text = run(v1, "main", "--repo", str(root), "--source-path", "deploy")
    assert text.exit_code == 0 and text.stdout.startswith(
        f"grove-gitops rollout plan: base {v1[:7]} -> head main ({v2[:7]})"
    )
    bad = run(v1, "no-such-ref", "--repo", str(root))
    assert bad.exit_code == 1 and "no-such-ref: not a commit" in bad.stderr


# -- exit codes -------------------------------------------------------------------------------


def test_invalid_head_exits_1_with_file_field_message(tmp_path: Path) -> None:
    def broken(doc: dict[str, Any]) -> None:
        doc["spec"]["replicas"] = -1

    base, head = example(tmp_path, "base"), example(tmp_path, "head", broken)
    result = run(str(base), str(head))
    assert result.exit_code == 1 and result.stdout == ""
    assert f"error: head: {PCS_FILE.as_posix()}: spec.replicas" in plain(result.stderr)
    as_json = run(str(base), str(head), "--output", "json")
    assert as_json.exit_code == 1
    problems = json.loads(as_json.stdout)["problems"]
    assert problems[0]["file"] == PCS_FILE.as_posix() and problems[0]["field"] == "spec.replicas"


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    base = str(example(tmp_path, "base"))
    assert run(base).exit_code == 2
    assert run(base, base, "--rendered", "--repo", base).exit_code == 2
    assert run(base, base, "--source-path", "x").exit_code == 2
    assert run(base, base, "--output", "yaml").exit_code == 2
    result = CliRunner().invoke(main, ["--help"])
    assert "plan" in result.stdout


def test_docs_name_the_command_and_every_json_key() -> None:
    """README's usage lists ``plan``; docs/diff.md documents every key the JSON prints."""
    from grove_gitops.plan.formats import pcs_dict
    from grove_gitops.plan.model import PodCliqueSetPlan

    readme = (PROJECT / "README.md").read_text(encoding="utf-8")
    assert "grove-gitops plan BASE HEAD" in readme[readme.index("## Usage") :]
    # The full command list moved to docs/cli.md (issue 34 §12); it lists plan too.
    cli = (PROJECT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert "grove-gitops plan BASE HEAD" in cli[cli.index("## Commands and options") :]
    doc = (PROJECT / "docs" / "diff.md").read_text(encoding="utf-8")
    section = doc[doc.index("## `grove-gitops plan`") : doc.index("## Modules")]
    for key in pcs_dict(PodCliqueSetPlan("ns", "x", "modified", "RollingRecreate")):
        assert f'"{key}"' in section, key


@pytest.mark.parametrize("value", ["9" * 4301, "²", "١٢", ""])
def test_a_hostile_index_label_is_no_index_not_a_crash(value: str) -> None:
    """Issue 21 §2: ``plan`` reads Grove's index labels of rendered pods (a tree from the PR).
    ``str.isdigit`` admits superscripts, other scripts' digits and 4,301-digit strings, all of
    which ``int`` refuses with a ValueError; such a label is no index."""
    from grove_gitops.plan.pods import slot_ref

    labels = {
        "grove.io/podclique": "p-0-c",
        "grove.io/podclique-pod-index": value,
        "grove.io/podcliqueset-replica-index": value,
    }
    ref, replica = slot_ref("p-0-c-3", labels)
    assert replica == 0
    assert ref.index in (0, 3)


# -- autoscaling (issue 23 item 7) -------------------------------------------------------

PREFILL_1 = [f"{P}-prefill-1-pleader-0", *(f"{P}-prefill-1-pworker-{i}" for i in range(3))]


def floor(value: int) -> Edit:
    def edit(doc: dict[str, Any]) -> None:
        group(doc, "prefill")["scaleConfig"]["minReplicas"] = value

    return edit


def test_autoscaled_units_say_which_replicas_git_and_the_agent_own(tmp_path: Path) -> None:
    base, head = example(tmp_path, "base"), example(tmp_path, "head", bump_images)
    p = only(plan_json(base, head))
    assert p["autoscaled"] == [
        {
            "name": f"{P}-prefill",
            "kind": "PodCliqueScalingGroup",
            "minReplicas": 2,
            "maxReplicas": 4,
            "gitOwned": "replicas 0–1",
            "clusterOwned": "replicas 2–3, up to the live count",
        }
    ]
    assert [{"replica": s["replica"], "pods": s["pods"]} for s in p["steps"]] == [
        {"replica": 0, "pods": pods} for pods in EXAMPLE_STEPS
    ]  # Git's replicas only
    text = run(str(base), str(head)).stdout
    assert (
        "  Autoscaled: this plan covers the replicas Git holds (below each floor); the agent rolls the replicas it "
        "created (from the floor up to the live count, which is not in Git) the same way, with the same template.\n"
        f"    {P}-prefill (PodCliqueScalingGroup): Git holds replicas 0–1; the agent creates replicas 2–3, "
        "up to the live count\n"
    ) in text
    md = CliRunner().invoke(main, ["diff", str(base), str(head)], catch_exceptions=False).stdout
    assert "- **Autoscaled:** this plan covers the replicas Git holds" in md
    assert f"  - `{P}-prefill` (PodCliqueScalingGroup): Git holds replicas 0–1; the agent creates replicas 2–3" in md


def test_lowering_the_floor_hands_replicas_to_the_agent_not_to_deletion(tmp_path: Path) -> None:
    base, head = example(tmp_path, "base"), example(tmp_path, "head", floor(1))
    p = only(plan_json(base, head))
    assert p["removed"] == PREFILL_1 and p["toCluster"] == PREFILL_1 and p["fromCluster"] == []
    text = run(str(base), str(head)).stdout
    assert "Removed (scale-in" not in text
    assert (
        f"  Leaving Git (floor lowered; the agent keeps them while the live count covers them): {', '.join(PREFILL_1)}"
    ) in text
    assert "4 handed to the agent" in text


def test_raising_the_floor_takes_replicas_from_the_agent_into_git(tmp_path: Path) -> None:
    base, head = example(tmp_path, "base", floor(1)), example(tmp_path, "head")
    p = only(plan_json(base, head))
    assert p["added"] == PREFILL_1 and p["fromCluster"] == PREFILL_1 and p["toCluster"] == []
    text = run(str(base), str(head)).stdout
    assert "Added (scale-out" not in text
    assert f"  Into Git (floor raised; the agent may have created them already): {', '.join(PREFILL_1)}" in text


def test_a_workload_without_autoscaling_lists_no_scale_targets(tmp_path: Path) -> None:
    def fixed(doc: dict[str, Any]) -> None:
        group(doc, "prefill").pop("scaleConfig")

    p = only(plan_json(example(tmp_path, "base", fixed), example(tmp_path, "head", fixed, bump_images)))
    assert p["autoscaled"] == [] and p["toCluster"] == [] and p["fromCluster"] == []
    assert "Autoscaled" not in run(str(example(tmp_path, "b2", fixed)), str(example(tmp_path, "h2", fixed))).stdout
