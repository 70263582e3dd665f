"""How long the rollout takes (issue 34.4): per step what it waits for and a bound from the
replacement pods' probes, a total, and "no probe: unknown" otherwise, in text, Markdown and
JSON.

Bound per step = the old pods' ``terminationGracePeriodSeconds`` (30 when unset) + the
largest container budget of the replacements: ``startupProbe.initialDelaySeconds +
periodSeconds × failureThreshold`` plus ``readinessProbe.periodSeconds × successThreshold``
(plus its ``initialDelaySeconds`` without a startup probe), Kubernetes' probe defaults for
what is unset (plan/timing.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
from hypothesis import given
from hypothesis import strategies as st

from grove_gitops.plan.timing import container_budget, pod_budget
from tests.support import PROJECT
from tests.test_plan import bump_images, clique, example, only, plan_json, run


def probes(doc: dict[str, Any]) -> None:
    """The router gets a startup and a readiness probe, the decode leader a readiness probe
    only; every other container none."""
    router = clique(doc, "router")["spec"]["podSpec"]
    router["terminationGracePeriodSeconds"] = 20
    router["containers"][0]["startupProbe"] = {
        "httpGet": {"path": "/health", "port": 8000},
        "initialDelaySeconds": 5,
        "periodSeconds": 10,
        "failureThreshold": 30,
    }
    router["containers"][0]["readinessProbe"] = {"httpGet": {"path": "/ready", "port": 8000}, "periodSeconds": 5}
    dleader = clique(doc, "dleader")["spec"]["podSpec"]["containers"][0]
    dleader["readinessProbe"] = {"tcpSocket": {"port": 8000}, "initialDelaySeconds": 60, "successThreshold": 2}


def test_each_step_says_what_it_waits_for_and_its_probe_bound(tmp_path: Path) -> None:
    p = only(plan_json(example(tmp_path, "base", probes), example(tmp_path, "head", probes, bump_images)))
    times = [s["time"] for s in p["steps"]]
    # router: grace 20 + startup (5 + 10 × 30) + readiness 5 × 1
    assert times[0] == {
        "waitsFor": "1 old pod gone (grace 20 s), then 1 replacement Ready",
        "graceSeconds": 20,
        "probeSeconds": 310,
        "boundSeconds": 330,
    }
    assert times[1]["boundSeconds"] == 330
    # decode: the leader's readiness (60 + 10 × 2) but its worker has no probe: unknown
    assert times[2]["waitsFor"] == "2 old pods gone (grace 30 s), then 2 replacements Ready"
    assert times[2]["probeSeconds"] is None and times[2]["boundSeconds"] is None
    assert [t["boundSeconds"] for t in times[3:]] == [None, None]
    assert p["time"]["boundSeconds"] is None
    assert (p["time"]["knownSeconds"], p["time"]["knownSteps"], p["time"]["unknownSteps"]) == (660, 2, 3)


def test_a_fully_probed_rollout_has_a_total(tmp_path: Path) -> None:
    def only_router(doc: dict[str, Any]) -> None:
        clique(doc, "router")["spec"]["podSpec"]["containers"][0]["image"] = "ghcr.io/example/llm-router:9"

    p = only(plan_json(example(tmp_path, "base", probes), example(tmp_path, "head", probes, only_router)))
    assert [s["time"]["boundSeconds"] for s in p["steps"]] == [330, 330]
    assert p["time"]["boundSeconds"] == 660
    scaled_out = only(plan_json(tmp_path / "base", example(tmp_path, "more", probes, lambda d: d["spec"].update(replicas=2))))
    assert scaled_out["steps"] == [] and scaled_out["time"] is None
    out = " ".join(run(str(tmp_path / "base"), str(tmp_path / "head")).stdout.split())
    assert "waits for 1 old pod gone (grace 20 s), then 1 replacement Ready; bound 20 s + 310 s probes = 330 s (5m30s)" in out
    assert "Time: at most 660 s (11m0s) by the probes (2 steps; pulls and scheduling not counted)" in out


def test_no_probe_is_unknown_in_text_and_markdown(tmp_path: Path) -> None:
    base, head = example(tmp_path, "base"), example(tmp_path, "head", bump_images)
    out = " ".join(run(str(base), str(head)).stdout.split())
    assert "then 1 replacement Ready; no probe: unknown" in out
    assert "Time: unknown: no probe in any of the 5 steps" in out

    from grove_gitops.plan.compute import build_plan
    from grove_gitops.plan.formats import markdown_blocks
    from grove_gitops.reviewsides import load_sides

    b, h, _ = load_sides(str(base), str(head), False, None, None, (None, None))
    md = "".join(x.text for x in markdown_blocks(build_plan(b, h)))
    assert "bound (grace + probes)" not in md  # no column of "unknown" in every row
    assert "Each step waits for its old pods to be gone, then for its replacements to be Ready" in md
    assert "**Time:** unknown: no probe in any of the 5 steps." in md


def test_the_plan_json_matches_the_schema(tmp_path: Path) -> None:
    schema = json.loads((PROJECT / "docs/schemas/diff-output.schema.json").read_text())
    entry = {"$ref": "#/$defs/planPodCliqueSet", "$defs": schema["$defs"]}
    p = only(plan_json(example(tmp_path, "base", probes), example(tmp_path, "head", probes, bump_images)))
    jsonschema.Draft202012Validator(entry).validate(p)


def test_container_budget_formula_and_defaults() -> None:
    assert container_budget({}) is None
    assert container_budget({"readinessProbe": {}}) == 10  # period 10 × success 1
    assert container_budget({"startupProbe": {}}) == 30  # period 10 × failure 3
    assert container_budget({"startupProbe": {"initialDelaySeconds": 7}, "readinessProbe": {"initialDelaySeconds": 99}}) == 47
    assert pod_budget({"spec": {"containers": [{"readinessProbe": {}}, {"startupProbe": {"failureThreshold": 6}}]}}) == 60
    assert pod_budget({"spec": {"containers": [{}]}}) is None


@given(st.dictionaries(st.sampled_from(["initialDelaySeconds", "periodSeconds", "failureThreshold", "successThreshold"]),
                       st.one_of(st.integers(), st.text(max_size=3), st.none(), st.booleans())))
def test_crafted_probe_numbers_stay_bounded(fields: dict[str, Any]) -> None:
    """A rendered tree is untrusted: negative, huge or non-integer fields fall back or clamp."""
    budget = container_budget({"startupProbe": fields, "readinessProbe": fields})
    assert budget is not None and 0 <= budget <= 3 * (2**31 - 1) ** 2


def test_markdown_gives_each_steps_bound(tmp_path: Path) -> None:
    from grove_gitops.plan.compute import build_plan
    from grove_gitops.plan.formats import markdown_blocks
    from grove_gitops.reviewsides import load_sides

    base, head = example(tmp_path, "base", probes), example(tmp_path, "head", probes, bump_images)
    b, h, _ = load_sides(str(base), str(head), False, None, None, (None, None))
    md = "".join(x.text for x in markdown_blocks(build_plan(b, h)))
    assert "| bound (grace + probes) |" in md
    assert "| 20 s + 310 s = 330 s (5m30s) |" in md and "| no probe: unknown |" in md
    assert "**Time:** unknown: 3 steps have no probe; the 2 with probes take at most 660 s (11m0s)." in md
