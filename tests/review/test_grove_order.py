"""Grove's rollout order for review-only mode (grove_gitops.plan.groveorder), one test per rule
of spec/grove-day2.md it predicts, plus the CLI in every format."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from grove_gitops.cli import main
from grove_gitops.plan.groveorder import grove_steps
from grove_gitops.plan.pods import RenderedPod
from grove_gitops.readmodel.order import SlotRef
from tests.review.reviewsource import SERVE, bump_both, write_source
from tests.support import PROJECT

#: A stand-in for the rendered pod object: grove_steps reads slots and replicas only.
_OBJ = None


def standalone(clique: str, index: int, replica: int = 0) -> RenderedPod:
    fqn = f"p-{replica}-{clique}"
    return RenderedPod(_OBJ, SlotRef(f"{fqn}-{index}", fqn, index), replica)  # type: ignore[arg-type]


def grouped(group: str, j: int, clique: str, index: int, replica: int = 0) -> RenderedPod:
    fqn = f"p-{replica}-{group}"
    pclq = f"{fqn}-{j}-{clique}"
    return RenderedPod(_OBJ, SlotRef(f"{pclq}-{index}", pclq, index, fqn, j), replica)  # type: ignore[arg-type]


def test_roles_of_one_replica_roll_concurrently() -> None:
    """§2.2: inside the current replica every standalone PodClique and every scaling group
    progresses concurrently: their first units share round 1."""
    pods = [standalone("router", 0), standalone("router", 1), standalone("frontend", 0), grouped("prefill", 0, "w", 0)]
    steps, rounds = grove_steps(pods)
    first = [s.unit for s, r in zip(steps, rounds, strict=True) if r == 1]
    assert first == ["podclique p-0-frontend", "scaling group p-0-prefill replica 0", "podclique p-0-router"]
    assert [(s.hostnames, r) for s, r in zip(steps, rounds, strict=True) if r == 2] == [(("p-0-router-1",), 2)]


def test_a_standalone_clique_loses_one_pod_at_a_time_in_index_order() -> None:
    """§2.3: one Ready old pod at a time (oldest first; the index order a render can show)."""
    steps, rounds = grove_steps([standalone("router", i) for i in (2, 0, 1)])
    assert [s.hostnames for s in steps] == [("p-0-router-0",), ("p-0-router-1",), ("p-0-router-2",)]
    assert rounds == [1, 2, 3]


def test_a_scaling_group_recreates_one_replica_at_a_time_lowest_first_all_cliques() -> None:
    """§2.4: one scaling-group replica at a time, lowest index first, its cliques together."""
    pods = [grouped("g", j, c, 0) for j in (1, 0) for c in ("leader", "worker")]
    steps, rounds = grove_steps(pods)
    assert [s.unit for s in steps] == ["scaling group p-0-g replica 0", "scaling group p-0-g replica 1"]
    assert steps[0].hostnames == ("p-0-g-0-leader-0", "p-0-g-0-worker-0")
    assert rounds == [1, 2]


def test_one_podcliqueset_replica_at_a_time() -> None:
    """§2.2: exactly one PodCliqueSet replica at a time, by index when all are healthy: replica 1's
    rounds come after every round of replica 0."""
    pods = [standalone("router", i, r) for r in (1, 0) for i in (0, 1)] + [grouped("g", 0, "w", 0, 1)]
    steps, rounds = grove_steps(pods)
    assert [(s.replica, r) for s, r in zip(steps, rounds, strict=True)] == [(0, 1), (0, 2), (1, 3), (1, 3), (1, 4)]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 2), st.sampled_from(["a", "b", "g1", "g2"]), st.integers(0, 3)),
        min_size=1,
        max_size=30,
        unique=True,
    )
)
def test_every_slot_once_and_never_two_units_of_one_role_at_once(spec: list[tuple[int, str, int]]) -> None:
    pods = [
        grouped(role, i, "w", 0, replica) if role.startswith("g") else standalone(role, i, replica)
        for replica, role, i in spec
    ]
    steps, rounds = grove_steps(pods)
    assert sorted(h for s in steps for h in s.hostnames) == sorted(p.slot.hostname for p in pods)
    assert rounds == sorted(rounds)
    seen: set[tuple[int, str]] = set()
    for step, number in zip(steps, rounds, strict=True):
        role = step.unit.rsplit(" replica ", 1)[0]
        assert (number, role) not in seen  # one unit per role per round
        seen.add((number, role))
    by_round: dict[int, set[int]] = {}
    for step, number in zip(steps, rounds, strict=True):
        by_round.setdefault(number, set()).add(step.replica)
    assert all(len(replicas) == 1 for replicas in by_round.values())  # one PCS replica at a time


def _sides(tmp_path: Path, serve: str = SERVE) -> tuple[str, str]:
    base = write_source(tmp_path / "base", serve)
    head = write_source(tmp_path / "head", bump_both(serve))
    return str(base), str(head)


def test_plan_json_in_groves_order_matches_its_schema(tmp_path: Path) -> None:
    base, head = _sides(tmp_path)
    result = CliRunner().invoke(main, ["plan", base, head, "--output", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    schema = json.loads((PROJECT / "docs" / "schemas" / "plan-output.schema.json").read_text())
    jsonschema.validate(doc, schema)
    assert doc["mode"] == "review"
    (pcs,) = doc["podcliquesets"]
    assert pcs["order"] == "grove" and pcs["maxUnavailable"] == 4
    assert [s["round"] for s in pcs["steps"]] == [1, 1, 2, 2, 3, 3, 4, 4]
    assert pcs["grove"]["concurrent"] is True
    assert (pcs["grove"]["agentSteps"], pcs["grove"]["agentMaxUnavailable"]) == (8, 3)
    assert "minAvailable - 1" in pcs["grove"]["note"]


def test_plan_text_says_grove_rolls_it_and_no_agent_is_expected(tmp_path: Path) -> None:
    base, head = _sides(tmp_path)
    result = CliRunner().invoke(main, ["plan", base, head])
    assert result.exit_code == 0, result.output
    assert "Grove's operator reconciles these PodCliqueSets and no grove-gitops agent is expected" in result.stdout
    assert "1. round 1, replica 0, scaling group serve-0-prefill replica 0" in result.stdout
    assert "2. round 1, replica 0, podclique serve-0-router: serve-0-router-0" in result.stdout
    assert "Grove's order: Grove's operator rolls the roles of a replica side by side" in result.stdout


def test_on_delete_in_review_mode_names_groves_operator(tmp_path: Path) -> None:
    """§3: OnDelete replaces nothing until a pod is deleted; Grove recreates it from the new template."""
    serve = SERVE.replace("  replicas: 2\n  template:", "  replicas: 2\n  updateStrategy:\n    type: OnDelete\n  template:")
    base, head = _sides(tmp_path, serve)
    result = CliRunner().invoke(main, ["plan", base, head, "--output", "json"])
    assert result.exit_code == 0, result.output
    (pcs,) = json.loads(result.stdout)["podcliquesets"]
    assert pcs["strategy"] == "OnDelete" and pcs["steps"] == []
    assert "Grove's operator retires none itself" in pcs["message"]



def test_a_round_takes_as_long_as_its_longest_step(tmp_path: Path) -> None:
    """Grove's roles roll side by side: the time bound adds rounds, not steps (each step's
    bound is its grace plus its replacements' probe budget, docs/diff.md)."""
    probe = "                readinessProbe: {periodSeconds: 10, successThreshold: 1}\n"
    serve = SERVE.replace("image: ghcr.io/example/router:1.0\n", "image: ghcr.io/example/router:1.0\n" + probe)
    serve = serve.replace("image: ghcr.io/example/vllm:1.0\n", "image: ghcr.io/example/vllm:1.0\n" + probe.replace("10", "100", 1))
    base, head = _sides(tmp_path, serve)
    result = CliRunner().invoke(main, ["plan", base, head, "--output", "json"])
    assert result.exit_code == 0, result.output
    (pcs,) = json.loads(result.stdout)["podcliquesets"]
    bounds = [(s["round"], s["time"]["boundSeconds"]) for s in pcs["steps"]]
    assert bounds[:2] == [(1, 130), (1, 40)]  # prefill replica (30 s grace + 100 s) beside a router pod (30 + 10)
    assert pcs["time"]["boundSeconds"] == 4 * 130  # 4 rounds of 130 s, not 4 × (130 + 40)
