"""The same image bump under OnDelete: nothing moves until a pod is deleted (issue 13, Tests)."""

from __future__ import annotations

import time
from collections.abc import Callable

from tests.day2.harness import Day2Env, describe
from tests.day2.rest import Raw


def _on_delete(pcs: Raw) -> None:
    pcs["spec"]["updateStrategy"] = {"type": "OnDelete"}


def test_on_delete_replaces_exactly_the_deleted_slot(day2: Callable[..., Day2Env]) -> None:
    env = day2(edit=_on_delete)
    env.wait_until(env.converged, timeout=10, what="the first deploy")
    old = env.desired_pods()
    mark = env.observer.mark()
    env.bump_image()
    new = env.desired_pods()
    # GitOps creates the new pods (gated); the agent retires nothing and releases nothing.
    env.wait_until(lambda: {v.name for v in env.views()} >= set(new.values()), what="the new pods created")
    time.sleep(1.0)
    env.settle()
    assert [m.pod for m in env.observer.since(mark) if m.event == "DELETED"] == []
    views = {v.name: v for v in env.views()}
    assert all(views[name].available for name in old.values())
    assert all(views[name].gated for name in new.values())

    slot = ("inference", "llama-disagg-0-router-0")
    env.rest.request("DELETE", f"/api/v1/namespaces/inference/pods/{old[slot]}")
    env.wait_until(
        lambda: any(v.name == new[slot] and v.available for v in env.views()),
        timeout=10,
        what="router-0's new pod Ready",
    )
    time.sleep(0.5)
    env.settle()
    views = {v.name: v for v in env.views()}
    assert old[slot] not in views
    assert all(views[old[s]].available for s in old if s != slot)  # every other slot untouched
    assert all(views[new[s]].gated for s in new if s != slot)
    conflicts = env.observer.hostname_conflicts(mark)
    assert conflicts == [], describe(conflicts[0][0])
    deleted = [m.pod for m in env.observer.since(mark) if m.event == "DELETED"]
    assert deleted == [old[slot]]
    env.assert_invariants()
