"""bench.report's fake-versus-real section (issue 32): both servers side by side with their ratio,
a failed side said plainly, nothing when the comparison was not asked for (--server none)."""

from __future__ import annotations

from bench.report import server_section

FIGURES = {"release_s": 1.0, "deploy_s": 2.0, "rollout_s": 4.0, "step_s": 0.5, "agent_cpu_ms_per_step": 10.0,
           "agent_pass_ms_per_step": 5.0, "pods": 48, "gangs": 6}


def test_both_servers_are_shown_side_by_side_with_the_ratio() -> None:
    real = {k: (v * 3 if k not in ("pods", "gangs") else v) for k, v in FIGURES.items()}
    lines = server_section(FIGURES, real)
    header = next(line for line in lines if line.startswith("| measure"))
    assert header == "| measure | fake | real | real / fake |"
    rollout = next(line for line in lines if line.startswith("| rollout: image bump"))
    assert rollout.endswith("| 3.0× |") and "4" in rollout and "12" in rollout
    assert any("48 pods in 6 single-gang PodCliqueSets" in line for line in lines)


def test_a_failed_side_is_said_and_the_other_still_shown() -> None:
    lines = server_section(FIGURES, {"error": "control-plane.sh up failed (1): no Go"})
    assert any(line.startswith("real: not measured: control-plane.sh up failed") for line in lines)
    assert next(line for line in lines if line.startswith("| measure")) == "| measure | fake |"


def test_nothing_when_not_asked() -> None:
    assert server_section(None, None) == []
