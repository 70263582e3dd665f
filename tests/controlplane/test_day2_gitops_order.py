"""Pods applied before their PodGangs on the real control plane (issue 32, "What to build" 5):
Flux applies one batch, in no particular order, so a pod can reach the real server long before
the PodGang it belongs to (here every pod lands first and the PodGangs six seconds later, three
of the agent's grace periods). The agent, as its own process under its overlay's token, must
delete none of them for it, and the real kube-scheduler must see none of them before its gang
exists and is released. A module of its own: its world's agent may run only once
test_day2.py's has stopped (one agent holds the overlay's lease at a time)."""

from __future__ import annotations

from pathlib import Path

from tests.controlplane.day2world import assert_day2_invariants, plane_world
from tests.controlplane.plane import Plane
from tests.day2.applier import Hold

FLUX_NS = "day2-flux"
GRACE = 2.0  # the agent's --grace
GANG_STALL = 6.0  # seconds the PodGangs come after the pods (longer than GRACE, three times)


def test_pods_applied_before_their_podgangs_are_bound_only_once_the_gang_is_released(
    installed: Plane, agent_kubeconfig: Path, tmp_path: Path
) -> None:
    """Flux applies one batch: here every pod lands before any PodGang, and the PodGangs come
    6 s later (three of the agent's grace periods). No pod may be deleted for it, nor bound
    before its PodGang exists and lists it; then the first deploy completes."""
    hold = Hold(lambda o: bool(o["kind"] == "PodGang"), GANG_STALL, "the PodGangs")
    with plane_world(installed, agent_kubeconfig, tmp_path, FLUX_NS, mode="flux", pods_first=True,
                     holds=[hold], agent_config={"grace": GRACE}) as world:
        names = set(world.all_desired_pods().values())
        world.wait_until(world.converged, timeout=60 + GANG_STALL, what="the first deploy, once the PodGangs arrived")
        world.settle(timeout=20)
        moments = world.observer.since(0)
        assert hold.held and set(hold.applied) == hold.held  # every PodGang came late, then came
        first_gang = min(hold.applied.values())
        added: dict[str, float] = {}
        for m in moments:
            if m.event == "ADDED":
                added.setdefault(m.pod, m.time)
        assert max(added[n] for n in names) < first_gang  # every pod was there before any PodGang
        assert [m.pod for m in moments if m.event == "DELETED"] == []
        assert_day2_invariants(world)
