"""The scenario invariants of ``tests/day2/observer.py`` on hand-made histories: each finds the
defect it is for and passes the correct behaviour that looks like it (issue 22)."""

from __future__ import annotations

from dataclasses import replace

from tests.day2.observer import (
    GangEvent,
    GangHistory,
    GangView,
    Moment,
    PodView,
    Unit,
    bound_outside_a_gang,
    disturbed,
    emptied_slots,
    lingering_partial_releases,
    partial_releases,
)

NS = "ns"
GANG = "p-0"
GROUP = "p-0-w"  # a podgroup of minReplicas 3


def pod(name: str, hostname: str, *, gated: bool = True, ready: bool = False, terminating: bool = False,
        phase: str = "Pending", uid: str | None = None, pcs: str = "p", group: str = GROUP) -> PodView:
    return PodView(
        namespace=NS, name=name, uid=uid or f"uid-{name}", hostname=hostname, gated=gated, ready=ready,
        terminating=terminating, phase=phase, node="" if gated else "n", template_hash="", images=(),
        resource_version="0", unit=Unit(pcs, "0", group, hostname), podgang=GANG, podclique=group,
    )


def running(p: PodView) -> PodView:
    return replace(p, gated=False, ready=True, phase="Running", node="n")


class History:
    """Builds moments the way the observer records them: one event each, in order."""

    def __init__(self) -> None:
        self.pods: dict[str, PodView] = {}
        self.moments: list[Moment] = [Moment(0, 0.0, 1, "SYNC", "", ())]
        self.rv = 1

    def event(self, kind: str, view: PodView, at: float | None = None) -> Moment:
        self.rv += 1
        before = self.pods.get(view.name)
        if kind == "DELETED":
            self.pods.pop(view.name)
        else:
            self.pods[view.name] = view
        moment = Moment(len(self.moments), float(len(self.moments)) if at is None else at, self.rv, kind, view.name,
                        tuple(self.pods.values()), before, None if kind == "DELETED" else view)
        self.moments.append(moment)
        return moment

    def add(self, view: PodView) -> Moment:
        return self.event("ADDED", view)

    def set(self, view: PodView, at: float | None = None) -> Moment:
        return self.event("MODIFIED", view, at)


def gangs(min_replicas: int = 3) -> GangHistory:
    view = GangView(NS, GANG, 1, {GROUP: min_replicas}, {GROUP: ("w0", "w1", "w2")}, "", "")
    return GangHistory([GangEvent(0.0, 1, "ADDED", NS, GANG, view)])


def workers(h: History, n: int = 3) -> list[PodView]:
    out = [pod(f"w{i}", f"h-w{i}") for i in range(n)]
    for p in out:
        h.add(p)
    return out


# ------------------------------------------------------------------------ partial releases
def test_a_whole_gang_released_one_patch_at_a_time_passes() -> None:
    h = History()
    for p in workers(h):
        h.set(replace(p, gated=False))
    assert partial_releases(h.moments, gangs()) == []


def test_a_release_from_a_podgroup_short_of_a_pod_is_found() -> None:
    h = History()
    w = workers(h, 2)  # the third is withheld
    h.set(replace(w[0], gated=False))
    (problem,) = partial_releases(h.moments, gangs())
    assert "w0 released while podgroup p-0-w of PodGang p-0 had 2 live pods" in problem[1]


def test_terminating_and_failed_pods_do_not_count() -> None:
    h = History()
    w = workers(h)
    h.set(replace(w[1], terminating=True))  # a pod being deleted (a gang termination)
    h.set(replace(w[2], phase="Failed"))
    h.set(replace(w[0], gated=False))
    assert len(partial_releases(h.moments, gangs())) == 1


def initialized(min_replicas: int = 3) -> GangHistory:
    view = GangView(NS, GANG, 1, {GROUP: min_replicas}, {GROUP: ("h-w0-a", "h-w1-a", "h-w2-a")}, "True",
                    "PodGangPodsCreated")
    return GangHistory([GangEvent(0.0, 1, "ADDED", NS, GANG, view)])


def three_running(h: History) -> list[PodView]:
    out = [running(pod(f"h-w{i}-a", f"h-w{i}")) for i in range(3)]
    for p in out:
        h.add(p)
    return out


def test_a_replacement_in_an_initialized_gang_whose_other_pod_the_test_took_passes() -> None:
    """Chaos fails one pod and deletes another of a podgroup; the first one's replacement is
    released on its own while the other is still missing (Grove's rule for an Initialized gang)."""
    h = History()
    w = three_running(h)
    taken = {w[0].uid, w[1].uid}
    h.set(replace(w[0], phase="Failed", ready=False))  # the test fails it
    h.event("DELETED", w[0])  # the agent deletes the Failed pod
    h.set(replace(w[1], terminating=True))  # the test deletes it
    h.add(pod("h-w0-a", "h-w0", uid="new-w0"))  # the replacement, gated
    h.set(replace(h.pods["h-w0-a"], gated=False))  # released while w1's slot is empty

    def by_test(_m: Moment, p: PodView) -> bool:
        return p.uid in taken

    assert partial_releases(h.moments, initialized(), by_test) == []
    assert len(partial_releases(h.moments, initialized())) == 1  # without the test's losses: found
    assert len(partial_releases(h.moments, initialized(), _never_exempt)) == 1


def test_a_slot_the_agent_emptied_still_counts_missing_in_an_initialized_gang() -> None:
    """The test's loss is excused; a later loss in the same slot that was not the test's is not
    (issue 31: a scale-in deleted pods of a gang and its re-created pods were released one by one)."""
    h = History()
    w = three_running(h)
    h.set(replace(w[1], terminating=True))  # the test deletes w1 ...
    h.event("DELETED", replace(w[1], terminating=True))
    again = pod("h-w1-a", "h-w1", uid="new-w1")
    h.add(again)  # ... it comes back ...
    h.set(replace(again, terminating=True))  # ... and the agent deletes it
    h.set(replace(w[0], phase="Failed", ready=False))
    h.event("DELETED", w[0])
    h.add(pod("h-w0-a", "h-w0", uid="new-w0"))
    h.set(replace(h.pods["h-w0-a"], gated=False))

    def by_test(_m: Moment, p: PodView) -> bool:
        return p.uid in {w[0].uid, w[1].uid}

    (problem,) = partial_releases(h.moments, initialized(), by_test)
    assert "h-w0-a released while podgroup p-0-w" in problem[1]


def test_the_tests_losses_are_not_excused_in_a_gang_released_whole() -> None:
    h = History()
    w = workers(h)
    h.set(replace(w[2], terminating=True))  # the test deletes a member before the whole-gang release
    h.set(replace(w[0], gated=False))
    assert len(partial_releases(h.moments, gangs(), lambda _m, p: p.uid == w[2].uid)) == 1


def test_a_release_without_its_podgang_is_found() -> None:
    h = History()
    (w,) = workers(h, 1)
    h.set(replace(w, gated=False))
    (problem,) = partial_releases(h.moments, GangHistory([]))
    assert "did not exist" in problem[1]


def test_a_partial_release_left_waiting_is_found_after_the_bound_only() -> None:
    h = History()
    w = workers(h)
    h.set(replace(w[0], gated=False), at=10.0)
    h.set(replace(w[1], gated=False), at=11.0)
    h.set(replace(w[2], gated=False), at=30.0)  # 20 s later: the agent sat on a releasable pod
    (problem,) = lingering_partial_releases(h.moments, gangs(), seconds=10.0)
    assert problem[0].index == h.moments[-3].index and "stayed partially released" in problem[1]
    assert lingering_partial_releases(h.moments, gangs(), seconds=25.0) == []


def test_a_gated_pod_waiting_for_its_slot_is_no_lingering_partial_release() -> None:
    h = History()
    w = workers(h)
    old = running(pod("w2-old", "h-w2"))
    h.add(replace(old, terminating=True))  # w2's slot is still held by a terminating old pod
    h.set(replace(w[0], gated=False), at=10.0)
    h.set(replace(w[1], gated=False), at=10.0)
    h.event("DELETED", replace(old, terminating=True), at=40.0)
    h.set(replace(w[2], gated=False), at=40.0)
    assert lingering_partial_releases(h.moments, gangs(), seconds=10.0) == []


# ------------------------------------------------------------------------ emptied slots
def _never_exempt(_m: Moment, _p: PodView) -> bool:
    return False


def _always_wanted(_m: Moment, _s: tuple[str, str]) -> bool:
    return True


def test_retiring_a_ready_pod_before_its_replacement_exists_is_found() -> None:
    h = History()
    old = running(pod("r-old", "h-r"))
    h.add(old)
    h.set(replace(old, terminating=True))
    h.add(pod("r-new", "h-r"))
    (problem,) = emptied_slots(h.moments, _always_wanted, _never_exempt)
    assert "Ready pod r-old of wanted slot h-r was made terminating" in problem[1]


def test_retiring_it_once_its_replacement_exists_passes_and_exemptions_hold() -> None:
    h = History()
    old = running(pod("r-old", "h-r"))
    h.add(old)
    h.add(pod("r-new", "h-r"))
    h.set(replace(old, terminating=True))
    assert emptied_slots(h.moments, _always_wanted, _never_exempt) == []
    h2 = History()
    other = running(pod("x", "h-x"))
    h2.add(other)
    h2.event("DELETED", other)  # deleted outright (no finalizer)
    assert len(emptied_slots(h2.moments, _always_wanted, _never_exempt)) == 1
    assert emptied_slots(h2.moments, lambda _m, _s: False, _never_exempt) == []  # scaled in
    assert emptied_slots(h2.moments, _always_wanted, lambda _m, p: p.name == "x") == []  # declared


def test_a_pod_that_failed_before_it_went_is_not_the_agents_doing() -> None:
    h = History()
    p = running(pod("f", "h-f"))
    h.add(p)
    h.set(replace(p, ready=False, phase="Failed"))
    h.event("DELETED", replace(p, ready=False, phase="Failed"))
    assert emptied_slots(h.moments, _always_wanted, _never_exempt) == []


# ------------------------------------------------------------------------ bystanders
def test_a_bystanders_pod_deleted_or_recreated_is_found() -> None:
    h = History()
    b = running(pod("b", "h-b", pcs="other"))
    h.add(b)
    h.set(replace(b, terminating=True))
    h.event("DELETED", replace(b, terminating=True))
    h.add(pod("b", "h-b", pcs="other", uid="uid-b-2"))
    found = [message for _, message in disturbed(h.moments, ["other"])]
    assert [m.split(" was ")[-1].split(" ")[-1] for m in found] == ["terminating", "deleted", "re-created"]
    assert disturbed(h.moments, ["p"]) == []


# ------------------------------------------------------------------------ bindings


def test_a_pod_bound_while_gated_or_before_its_podgang_is_found() -> None:
    h = History()
    (w,) = workers(h, 1)
    h.set(replace(w, node="n"))  # a scheduler that ignored the gate
    (problem,) = bound_outside_a_gang(h.moments, gangs())
    assert "bound while gated" in problem[1]
    h2 = History()
    (w2,) = workers(h2, 1)
    h2.set(replace(w2, gated=False, node=""))
    h2.set(replace(w2, gated=False, node="n"))
    (problem,) = bound_outside_a_gang(h2.moments, GangHistory([]))
    assert "did not exist" in problem[1]


def test_a_released_pod_of_an_existing_gang_bound_once_passes() -> None:
    h = History()
    (w,) = workers(h, 1)
    h.set(replace(w, gated=False, node=""))
    h.set(replace(w, gated=False, node="n"))
    h.set(running(w))  # still bound: not a second binding
    assert bound_outside_a_gang(h.moments, gangs()) == []
