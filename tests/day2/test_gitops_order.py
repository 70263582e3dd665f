"""The order and pace at which GitOps applies PodGangs and Pods (issue 22, defects 3 and 4).

- **Waves** (Argo CD): the shipped order applies PodGangs in wave 0 and Pods in wave 10, with
  a delay between waves. A rollout's PodGang updates therefore land before its new pods; if
  the pod wave stalls (admission, quota, a stuck sync) they land much later. The agent may
  retire an old pod only once its slot's new pod exists (created, gated): with a stall the
  rollout simply waits, then completes. (Old agent: it retired the old pod as soon as the
  PodGang changed, leaving the slot, or a whole scaling-group replica, empty.)
- **Pods before their PodGangs** (Flux applies one batch; or a PodGang stuck behind an
  admission retry), with the PodGangs stalled for longer than the agent's ``--grace``: a new
  gated pod must never be deleted merely because its PodGang has not arrived yet; once the
  PodGangs arrive the first deploy or rollout completes. (Old agent: it deleted every new
  gated pod after the grace period, and GitOps re-created them.)

The slot invariant (:func:`~tests.day2.observer.emptied_slots`) is checked by
``assert_invariants``; the per-slot order is also asserted here directly, with the moments.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.day2.applier import Hold
from tests.day2.harness import Day2Env, describe
from tests.day2.observer import Moment, Slot
from tests.day2.rest import Raw

WAVE_DELAY = 2.0  # Argo CD's default ARGOCD_SYNC_WAVE_DELAY
GRACE = 2.0  # the agent's --grace in the pods-before-PodGangs scenarios
GANG_STALL = 6.0  # longer than GRACE (and than three of them: no luck in timing)


def _is_pod(obj: Raw) -> bool:
    return bool(obj["kind"] == "Pod")


def _is_podgang(obj: Raw) -> bool:
    return bool(obj["kind"] == "PodGang")


def _first(moments: list[Moment], name: str, what: Callable[[Moment], bool]) -> Moment | None:
    return next((m for m in moments if m.pod == name and what(m)), None)


def _retired_before_replacement(moments: list[Moment], old: dict[Slot, str], new: dict[Slot, str]) -> list[str]:
    """Slots whose old pod began terminating (or went) before the slot's new pod was created."""
    out = []
    for slot, old_name in sorted(old.items()):
        gone = _first(moments, old_name, lambda m: m.event == "DELETED" or bool(m.after and m.after.terminating))
        if gone is None:
            continue
        created = _first(moments, new[slot], lambda m: m.event == "ADDED")
        if created is None or created.index > gone.index:
            out.append(f"{slot[1]}: {old_name} retired at moment {gone.index}, {new[slot]} created at "
                       f"{created.index if created else 'never'}\n{describe(gone)}")
    return out


@pytest.mark.parametrize("stall", [0.0, 8.0], ids=["wave-delay", "pod-wave-stalled"])
def test_rollout_in_waves_retires_no_pod_before_its_replacement_exists(
    day2: Callable[..., Day2Env], stall: float
) -> None:
    env = day2()
    env.wait_until(env.converged, timeout=15, what="the first deploy")
    env.applier.wave_delay = WAVE_DELAY  # from now on (the first deploy needs no delays)
    hold = env.applier.hold(_is_pod, stall, "the pod wave") if stall else None
    old = env.desired_pods()
    mark = env.observer.mark()
    env.bump_image()
    new = env.desired_pods()
    env.wait_until(env.converged, timeout=60 + stall, what="every slot Ready with its new pod")
    env.settle()
    moments = env.observer.since(mark)
    if hold is not None:
        assert {ref[3] for ref in hold.held} == set(new.values())  # the whole pod wave was stalled
    early = _retired_before_replacement(moments, old, new)
    assert not early, early[0]
    assert {m.pod for m in moments if m.event == "DELETED"} == set(old.values())
    violation = env.observer.rolling_bound_violation(new, since=mark, strict=True)
    assert violation is None, f"{violation[1]}\n{describe(violation[0])}"
    env.assert_invariants()


def _new_pods_deleted(env: Day2Env, moments: list[Moment], names: set[str]) -> list[str]:
    """The pods of ``names`` deleted, by the observer's events and by the server's log."""
    seen = sorted({m.pod for m in moments if m.event == "DELETED" and m.pod in names})
    asked = sorted(n for n in names if env.server.requests_count(verb="delete", resource="pods", name=n))
    return sorted(set(seen) | set(asked))


def test_rollout_with_pods_before_their_podgangs_deletes_no_new_pod(day2: Callable[..., Day2Env]) -> None:
    env = day2(mode="flux", pods_first=True, agent_config={"grace": GRACE})
    env.wait_until(env.converged, timeout=15, what="the first deploy")
    hold = env.applier.hold(_is_podgang, GANG_STALL, "the PodGangs")
    old = env.desired_pods()
    mark = env.observer.mark()
    env.bump_image()
    new = env.desired_pods()
    env.wait_until(env.converged, timeout=60 + GANG_STALL, what="the rollout, once the PodGangs arrived")
    env.settle()
    moments = env.observer.since(mark)
    assert hold.held, "the applier never stalled a PodGang"
    deleted = _new_pods_deleted(env, moments, set(new.values()))
    assert deleted == [], f"new gated pods deleted while their PodGangs had not arrived: {deleted}"
    assert {m.pod for m in moments if m.event == "DELETED"} == set(old.values())
    violation = env.observer.rolling_bound_violation(new, since=mark, strict=True)
    assert violation is None, f"{violation[1]}\n{describe(violation[0])}"
    env.assert_invariants()


@pytest.mark.parametrize("bystander", [False, True], ids=["alone", "beside-another-pcs"])
def test_first_deploy_with_pods_before_their_podgangs_deletes_nothing(
    day2: Callable[..., Day2Env], bystander: bool
) -> None:
    hold = Hold(_is_podgang, GANG_STALL, "the PodGangs")
    env = day2(mode="flux", pods_first=True, holds=[hold], agent_config={"grace": GRACE}, bystander=bystander)
    names = set(env.all_desired_pods().values())
    env.wait_until(env.converged, timeout=60 + GANG_STALL, what="the first deploy, once the PodGangs arrived")
    env.settle()
    moments = env.observer.since(0)
    assert hold.held and set(hold.applied) == hold.held  # every PodGang came late, then came
    first_gang = min(hold.applied.values())
    added: dict[str, float] = {}
    for m in moments:
        if m.event == "ADDED":
            added.setdefault(m.pod, m.time)
    assert max(added[n] for n in names) < first_gang  # every pod was there before any PodGang
    deleted = _new_pods_deleted(env, moments, names)
    assert deleted == [], f"gated pods deleted while their PodGangs had not arrived: {deleted}"
    assert env.agent_requests("delete") == 0
    env.assert_invariants()
