"""Golden Markdown for the three changes reviewers care most about.

Each case builds a base and a head source tree, runs ``grove-gitops diff`` and compares the
Markdown exactly with ``golden/<case>.md``. Set ``GROVE_GITOPS_UPDATE_GOLDEN=1`` to rewrite
the files after an intended renderer change, then review the golden diff.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.diff.diffhelpers import LPX_PROFILES, TAS_ON, TOPOLOGY, check_golden, clique, pcs, run_diff, source


def _diff(tmp_path: Path, base: dict[str, str], head: dict[str, str]) -> str:
    result = run_diff(
        [
            str(source(tmp_path, "base", base)),
            str(source(tmp_path, "head", head)),
            "--base-label",
            "main",
            "--head-label",
            "pr-42",
        ]
    )
    assert result.exit_code == 0, result.output
    return result.stdout


def test_backend_switch_default_to_lpx(tmp_path: Path) -> None:
    def tree(scheduler: str | None) -> dict[str, str]:
        pod: dict[str, Any] = {"pod": {"schedulerName": scheduler}} if scheduler else {}
        return {
            "config.yaml": LPX_PROFILES,
            "serving.yaml": pcs("serving", [clique("router", 1, **pod), clique("worker", 2, **pod)]),
        }

    text = _diff(tmp_path, tree(None), tree("lpx-scheduler"))
    assert "**Scheduler switch:** `default-scheduler` → `lpx-scheduler`" in text
    assert "**Pods replaced (3), by hostname:**" in text
    check_golden("backend_switch.md", text)


def test_replica_change_adds_scaled_gang(tmp_path: Path) -> None:
    def tree(router: int, prefill: int) -> dict[str, str]:
        return {
            "disagg.yaml": pcs(
                "disagg",
                [clique("router", router), clique("pleader", 1), clique("pworker", 2)],
                podCliqueScalingGroups=[
                    {"name": "prefill", "cliqueNames": ["pleader", "pworker"], "replicas": prefill, "minAvailable": 1}
                ],
            )
        }

    text = _diff(tmp_path, tree(2, 1), tree(3, 2))
    assert "**PodGangs added (1):** `disagg-0-prefill-0`" in text
    assert "| `spec.podgroups[disagg-0-router].minReplicas` | `2` | `3` |" in text
    check_golden("replica_change.md", text)


def test_topology_change_rack_to_zone(tmp_path: Path) -> None:
    def tree(level: str) -> dict[str, str]:
        return {
            "topology.yaml": TOPOLOGY,
            "config.yaml": TAS_ON,
            "training.yaml": pcs(
                "training",
                [clique("trainer", 2)],
                topologyConstraint={"topologyName": "gpu-fabric", "pack": {"required": level}},
            ),
        }

    text = _diff(tmp_path, tree("rack"), tree("zone"))
    assert (
        "`spec.topologyConstraint.packConstraint.required` | `topology.kubernetes.io/rack` | `topology.kubernetes.io/zone`"
        in text
    )
    check_golden("topology_change.md", text)
