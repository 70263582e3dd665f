"""Rollout risk in ``grove-gitops plan`` (issue 25, "Rollout risk in the plan"): per step the
capacity the rolled role keeps in its PodCliqueSet replica and in the whole PodCliqueSet, and
an OUTAGE flag, with the fix, for a step that leaves a role no available pod anywhere.

The numbers follow Grove's rolling update (spec/grove-day2.md §2.3-§2.6): one Ready pod of a
standalone PodClique or one scaling-group replica at a time, deleted before its replacement
exists, the only guard being ``ready >= minAvailable`` *before* the deletion.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from grove_gitops.plan.formats import markdown_blocks, outage_blocks
from grove_gitops.plan.model import Plan, PodCliqueSetPlan
from grove_gitops.plan.risk import Role, step_risks
from grove_gitops.readmodel.order import SlotRef, Step
from tests.test_plan import Edit, bump_images, clique, example, group, on_delete, only, plan_json, run


def _capacity(step: dict[str, Any]) -> list[tuple[str, str, int, int, int, int, bool]]:
    return [
        (
            c["role"],
            c["kind"],
            c["replica"]["available"],
            c["replica"]["total"],
            c["podCliqueSet"]["available"],
            c["podCliqueSet"]["total"],
            c["outage"],
        )
        for c in step["capacity"]
    ]


def test_the_examples_image_bump_takes_the_decode_scaling_group_down(tmp_path: Path) -> None:
    """The example's ``decode`` scaling group has one replica in a PodCliqueSet of one
    replica: Grove deletes both its pods before their replacements exist."""
    p = only(plan_json(example(tmp_path, "base"), example(tmp_path, "head", bump_images)))
    assert [_capacity(s) for s in p["steps"]] == [
        [("router", "podclique", 1, 2, 1, 2, False)],
        [("router", "podclique", 1, 2, 1, 2, False)],
        [("decode", "scalingGroup", 0, 2, 0, 2, True)],
        [("prefill", "scalingGroup", 4, 8, 4, 8, False)],
        [("prefill", "scalingGroup", 4, 8, 4, 8, False)],
    ]
    (outage,) = p["outages"]
    assert (outage["role"], outage["kind"], outage["steps"], outage["autoscaled"]) == (
        "decode",
        "scalingGroup",
        [3],
        False,
    )
    assert "set replicas: 2 on the scaling group decode" in outage["fix"] and "OnDelete" in outage["fix"]
    assert outage["fixField"] == "spec.template.podCliqueScalingGroups[decode].replicas"
    assert outage["message"].startswith("OUTAGE of decode (scaling group): step 3 leaves it no available pod")
    assert p["roles"] == [
        {"role": "decode", "kind": "scalingGroup", "pods": 2},
        {"role": "prefill", "kind": "scalingGroup", "pods": 8},
        {"role": "router", "kind": "podclique", "pods": 2},
    ]


def test_text_flags_the_outage_with_its_fix_and_every_steps_capacity(tmp_path: Path) -> None:
    result = run(str(example(tmp_path, "base")), str(example(tmp_path, "head", bump_images)))
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "at most 4 unavailable at once; OUTAGE of decode" in out
    assert "  OUTAGE of decode (scaling group): step 3 leaves it no available pod in the whole PodCliqueSet." in out
    assert (
        "Fix: set replicas: 2 on the scaling group decode (spec.template.podCliqueScalingGroups[decode].replicas), "
        "or spec.replicas: 2 on the PodCliqueSet" in out
    )
    assert "spec.updateStrategy.type: OnDelete" in out
    assert "left: decode: 0/2 pods in replica 0, 0/2 in the PodCliqueSet (OUTAGE)" in out
    assert "left: router: 1/2 pods in replica 0, 1/2 in the PodCliqueSet\n" in out


def test_a_second_podcliqueset_replica_is_no_outage_and_counts_across_replicas(tmp_path: Path) -> None:
    def two(doc: dict[str, Any]) -> None:
        doc["spec"]["replicas"] = 2

    p = only(plan_json(example(tmp_path, "base", two), example(tmp_path, "head", two, bump_images)))
    assert p["outages"] == []
    decode = [_capacity(s) for s in p["steps"] if s["capacity"][0]["role"] == "decode"]
    # replica 0's only decode replica is down; replica 1's serves
    assert decode == [[("decode", "scalingGroup", 0, 2, 2, 4, False)], [("decode", "scalingGroup", 0, 2, 2, 4, False)]]


def test_a_second_scaling_group_replica_is_no_outage(tmp_path: Path) -> None:
    def more(doc: dict[str, Any]) -> None:
        group(doc, "decode")["replicas"] = 2

    p = only(plan_json(example(tmp_path, "base", more), example(tmp_path, "head", more, bump_images)))
    assert p["outages"] == []
    assert [_capacity(s) for s in p["steps"] if s["capacity"][0]["role"] == "decode"] == [
        [("decode", "scalingGroup", 2, 4, 2, 4, False)]
    ] * 2


def test_a_single_pod_standalone_clique_is_an_outage(tmp_path: Path) -> None:
    def one(doc: dict[str, Any]) -> None:
        clique(doc, "router")["spec"]["replicas"] = 1

    p = only(plan_json(example(tmp_path, "base", one), example(tmp_path, "head", one, bump_images)))
    assert [(o["role"], o["kind"], o["steps"]) for o in p["outages"]] == [
        ("decode", "scalingGroup", [2]),
        ("router", "podclique", [1]),
    ]
    assert "set spec.replicas: 2 on the PodClique router (spec.template.cliques[router].spec.replicas)" in (
        p["outages"][1]["fix"]
    )


def test_on_delete_rolls_nothing_so_there_is_no_outage(tmp_path: Path) -> None:
    p = only(plan_json(example(tmp_path, "base", on_delete), example(tmp_path, "head", on_delete, bump_images)))
    assert p["steps"] == [] and p["outages"] == []


def test_an_autoscaled_role_at_its_floor_is_flagged_with_the_live_count_caveat(tmp_path: Path) -> None:
    def floor_one(doc: dict[str, Any]) -> None:
        group(doc, "prefill")["replicas"] = 1

    p = only(plan_json(example(tmp_path, "base", floor_one), example(tmp_path, "head", floor_one, bump_images)))
    prefill = next(o for o in p["outages"] if o["role"] == "prefill")
    assert prefill["autoscaled"] is True
    assert "the live count may be higher" in prefill["message"]


def test_markdown_flags_the_outage_in_the_plan_and_in_a_banner_for_the_top(tmp_path: Path) -> None:
    from grove_gitops.plan.compute import build_plan
    from grove_gitops.reviewsides import load_sides

    base, head, _ = load_sides(
        str(example(tmp_path, "base")), str(example(tmp_path, "head", bump_images)), False, None, None, (None, None)
    )
    plan = build_plan(base, head)
    section = "".join(b.text for b in markdown_blocks(plan))
    assert "🛑 **OUTAGE of `decode`** (scaling group) in `inference/llama-disagg`: step 3" in section
    assert "| 🛑 **`decode` 0/2 · 0/2 OUTAGE** |" in section
    assert "`router` 1/2 · 1/2 |" in section
    (banner,) = outage_blocks(plan)
    assert banner.text.startswith("### 🛑 Rollout outage\n")
    assert "`spec.updateStrategy.type: OnDelete`" in banner.text
    assert outage_blocks(Plan(())) == []


def test_roles_count_across_replicas_by_template_name() -> None:
    """``P-0-decode`` and ``P-1-decode`` are one role; a role is counted in pods."""

    def pod(host: str, replica: int, group_name: str | None, j: int | None) -> Any:
        from grove_gitops.plan.pods import RenderedPod

        ref = SlotRef(host, host.rsplit("-", 1)[0], 0, group_name, j)
        return RenderedPod(None, ref, replica)  # type: ignore[arg-type]

    staying = [
        pod("p-0-d-0-l-0", 0, "p-0-d", 0),
        pod("p-0-d-0-w-0", 0, "p-0-d", 0),
        pod("p-1-d-0-l-0", 1, "p-1-d", 0),
        pod("p-1-d-0-w-0", 1, "p-1-d", 0),
        pod("p-0-r-0", 0, None, None),
    ]
    risks, outages = step_risks("p", staying, [Step(0, "scaling group p-0-d replica 0", ("p-0-d-0-l-0", "p-0-d-0-w-0"))])
    (cap,) = risks[0].capacities
    assert cap.role == Role("d", "scalingGroup")
    assert (cap.replica_available, cap.replica_total, cap.pcs_available, cap.pcs_total) == (0, 2, 2, 4)
    assert outages == ()
    assert PodCliqueSetPlan("ns", "x", "modified", "RollingRecreate").outages == ()


def test_a_role_name_from_a_crafted_tree_is_inert_in_the_markdown() -> None:
    """A ``--rendered`` tree (or a PR's) names the roles through its labels: every mention in
    the Markdown is a code span, never HTML, a mention or a link."""
    from grove_gitops.diff.markdown import code
    from grove_gitops.plan.formats import outage_markdown, pcs_markdown
    from grove_gitops.plan.risk import Outage

    name = "<img src=x onerror=alert(1)> @admin [x](http://e.example)"
    outage = Outage(Role(name, "scalingGroup"), (1,))
    plan = PodCliqueSetPlan("ns", "x", "modified", "RollingRecreate", outages=(outage,))
    (line,) = outage_markdown(plan)
    assert line.count(code(name)) == 2  # the OUTAGE title and the fix
    assert line.count(code(outage.field)) == 1  # the field that decides, in one code span
    block = pcs_markdown(plan)
    assert block.count(code(name)) == 3  # and the summary line
    for text in (line, block):
        rest = text.replace(code(name), "").replace(code(outage.field), "")
        assert "<img" not in rest and "@admin" not in rest and "](" not in rest


def test_a_change_of_one_clique_takes_its_whole_scaling_group_replica_down(tmp_path: Path) -> None:
    """Grove deletes and recreates every clique of a scaling-group replica when any of them
    changed (spec/grove-day2.md §2.4), and a decode leader without its worker serves nothing:
    bumping only ``dworker`` is still an outage of ``decode``."""

    def bump_dworker(doc: dict[str, Any]) -> None:
        clique(doc, "dworker")["spec"]["podSpec"]["containers"][0]["image"] = "ghcr.io/example/vllm:9.9.9"

    p = only(plan_json(example(tmp_path, "base"), example(tmp_path, "head", bump_dworker)))
    assert [s["pods"] for s in p["steps"]] == [["llama-disagg-0-decode-0-dworker-0"]]
    assert [_capacity(s) for s in p["steps"]] == [[("decode", "scalingGroup", 0, 2, 0, 2, True)]]
    assert [o["role"] for o in p["outages"]] == ["decode"]


@pytest.mark.parametrize(
    ("edit", "role", "field", "fix"),
    [
        (
            lambda doc: group(doc, "decode").update(replicas=2, scaleConfig={"minReplicas": 1, "maxReplicas": 4}),
            "decode",
            "spec.template.podCliqueScalingGroups[decode].scaleConfig.minReplicas",
            "set minReplicas: 2 in the scaleConfig of the scaling group decode",
        ),
        (
            lambda doc: clique(doc, "router")["spec"].update(
                replicas=2, autoScalingConfig={"minReplicas": 1, "maxReplicas": 3}
            ),
            "router",
            "spec.template.cliques[router].spec.autoScalingConfig.minReplicas",
            "set minReplicas: 2 in the autoScalingConfig of the PodClique router",
        ),
        (
            lambda doc: clique(doc, "router")["spec"].update(
                replicas=1, autoScalingConfig={"minReplicas": 1, "maxReplicas": 1}
            ),
            "router",
            "spec.template.cliques[router].spec.autoScalingConfig.minReplicas",
            "; raise its maxReplicas to 2 as well",
        ),
    ],
    ids=["scaling-group", "standalone-clique", "standalone-clique-max-1"],
)
def test_an_autoscaled_outage_names_the_floor_not_the_replicas_already_above_it(
    tmp_path: Path, edit: Edit, role: str, field: str, fix: str
) -> None:
    """Decode at ``replicas: 2`` with ``scaleConfig.minReplicas: 1``: Git holds one replica
    (the floor) and the autoscaler may keep the live count there, so a bump takes decode down.
    "replicas >= 2" is already true; the field that decides is the floor (issue 34.1), in the
    JSON, the text and the PR comment's banner."""
    p = only(plan_json(example(tmp_path, "base", edit), example(tmp_path, "head", edit, bump_images)))
    outage = next(o for o in p["outages"] if o["role"] == role)
    assert outage["autoscaled"] is True
    assert outage["fixField"] == field
    assert fix in outage["fix"] and field in outage["fix"]
    assert "replicas >= 2" not in outage["fix"]
    result = run(str(tmp_path / "base"), str(tmp_path / "head"))
    assert fix in " ".join(result.stdout.split())

    from grove_gitops.plan.compute import build_plan
    from grove_gitops.reviewsides import load_sides

    base, head, _ = load_sides(str(tmp_path / "base"), str(tmp_path / "head"), False, None, None, (None, None))
    banner = "".join(b.text for b in outage_blocks(build_plan(base, head)))
    assert f"`{field}`" in banner and "`minReplicas: 2`" in banner
