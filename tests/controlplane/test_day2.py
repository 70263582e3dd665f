"""Day-2 scenarios on the real control plane (issue 32, "What to build" 5): the agent as its own
process under its overlay's ServiceAccount token, the real kube-scheduler binding what it
releases, the applier of tests/day2 applying as Argo CD does (waves, a delay between them,
holds that stall objects) or as Flux does (one batch, pods before their PodGangs), the in-process
kubelet withholding, crashing and failing pods on command, and two PodCliqueSets in the
namespace (the example's llama-disagg and the bystander, which nothing may touch).

Every scenario ends with the harness's invariants over every moment the observer's watch saw
(no partial gang released or left waiting, no wanted slot emptied before its replacement
existed, the bystander undisturbed) and with "no pod bound outside a released gang"; the
rollouts also with Grove's availability bound at every moment.

The scenarios of the Argo CD world share one world (one namespace, agent and first deploy for
the module, the costly part) and run in file order, each from the state the previous one left:
rolling update, failed pod, gang termination (a scaling-group replica, then a whole PodCliqueSet
replica), scale-in, then OnDelete (which leaves new pods
gated, so it comes last). Pods applied before their PodGangs (Flux) are in
test_day2_gitops_order.py: a world of its own, whose agent may run only once this module's has
stopped (one agent holds the overlay's lease at a time).
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from grove_gitops.cli import main
from tests.controlplane.day2world import PlaneWorld, assert_day2_invariants, plane_world
from tests.controlplane.plane import Plane
from tests.day2.observer import Moment, Slot
from tests.day2.rest import Raw

ARGO_NS = "day2-argocd"
WAVE_DELAY = 1.0  # between Argo CD's sync waves (its default is 2 s)
GRACE = 2.0  # the agent's --grace
APPLIER_WITHHOLD = 4.0  # seconds the applier keeps one re-created pod of a terminated gang back
QUIET = 3.0  # seconds in which the agent must do nothing (three of its resync periods)


def _first(moments: list[Moment], name: str, event: str) -> Moment | None:
    return next((m for m in moments if m.pod == name and m.event == event), None)


def _retired(moments: list[Moment], names: set[str]) -> list[str]:
    """``names`` in the order they began terminating (or went)."""
    order: list[str] = []
    for m in moments:
        if m.pod in names and m.pod not in order and (m.event == "DELETED" or (m.after is not None and m.after.terminating)):
            order.append(m.pod)
    return order


def _deleted(world: PlaneWorld, since: int) -> list[str]:
    return sorted(m.pod for m in world.observer.since(since) if m.event == "DELETED")


def _plan_steps(base: Path, head: Path, pcs: str) -> list[list[str]]:
    """``grove-gitops plan BASE HEAD --output json``: the hostnames of each step of ``pcs``."""
    result = CliRunner().invoke(main, ["plan", str(base), str(head), "--output", "json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    (entry,) = [p for p in json.loads(result.stdout)["podcliquesets"] if p["name"] == pcs]
    return [list(step["pods"]) for step in entry["steps"]]


@pytest.fixture(scope="module")
def argo(installed: Plane, agent_kubeconfig: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[PlaneWorld]:
    """The Argo CD world (waves 1 s apart), first deployed; shared by the module's scenarios."""
    with plane_world(installed, agent_kubeconfig, tmp_path_factory.mktemp("day2-argocd"), ARGO_NS,
                     wave_delay=WAVE_DELAY, agent_config={"grace": GRACE}) as world:
        world.wait_until(world.converged, timeout=90, what="the first deploy")
        world.settle(timeout=20)
        assert_day2_invariants(world)
        yield world


def test_rolling_recreate_retires_units_in_the_plans_order(argo: PlaneWorld, tmp_path: Path) -> None:
    world = argo
    base = tmp_path / "base"
    shutil.copytree(world.source, base)
    old = world.desired_pods()
    mark = world.observer.mark()
    world.bump_image()
    new = world.desired_pods()
    assert set(new) == set(old) and all(new[s] != old[s] for s in new)
    steps = _plan_steps(base, world.source, world.primary)
    assert sorted(h for step in steps for h in step) == sorted(h for _, h in old)
    world.wait_until(world.converged, timeout=120, what="every slot Ready with its new pod")
    world.settle(timeout=20)
    moments = world.observer.since(mark)

    # The agent retired the old pods step by step in the plan's order: each step's pods before
    # any pod of a later step, and every step at all.
    step_of = {host: i for i, step in enumerate(steps) for host in step}
    host_of = {name: host for (_, host), name in old.items()}
    order = [step_of[host_of[name]] for name in _retired(moments, set(old.values()))]
    assert order == sorted(order) and sorted(set(order)) == list(range(len(steps))), (order, steps)
    assert set(_deleted(world, mark)) == set(old.values())  # the agent retired each old pod, GitOps pruned none

    violation = world.observer.rolling_bound_violation(new, since=mark, strict=True)
    assert violation is None, f"{violation[1]}\n{violation[0].describe()}"
    assert world.observer.hostname_conflicts(mark) == []
    world.wait_for_event("RollingUpdateStarted", "llama-disagg-0")
    world.wait_for_event("RollingUpdateComplete", "llama-disagg-0")
    assert_day2_invariants(world, mark)


def test_a_failed_pod_is_replaced_and_the_event_is_on_the_server(argo: PlaneWorld) -> None:
    world = argo
    slot: Slot = (ARGO_NS, "llama-disagg-0-prefill-1-pworker-2")
    name = world.desired_pods()[slot]
    (old,) = [v for v in world.views() if v.name == name]
    mark = world.observer.mark()
    world.kubelet.fail(ARGO_NS, name)
    world.wait_until(lambda: any(v.name == name and v.uid != old.uid and v.available for v in world.views()),
                     timeout=60, what=f"{name} re-created and Ready")
    world.wait_until(world.converged, timeout=30, what="every slot Ready")
    world.settle(timeout=20)
    assert _deleted(world, mark) == [name]  # the failed pod only
    others = [s for s in world.desired_pods() if s != slot]
    worst, at = world.observer.max_unavailable(others, since=mark)
    assert worst == 0, at.describe() if at else ""
    world.wait_for_event("FailedPodDeleted", name)
    assert_day2_invariants(world, mark)


def _termination_delay(value: str) -> Any:
    def change(pcs: Raw) -> None:
        pcs["spec"]["template"]["terminationDelay"] = value

    return change


@dataclass(frozen=True)
class Scope:
    crash: tuple[str, ...]  # hostnames whose pods crash (the breach)
    prefix: str  # the hostnames of Grove's termination scope start with this
    gangs: tuple[str, ...]  # the PodGangs whose Initialized is reset
    withheld: str  # the hostname whose re-created pod the applier withholds
    leader: str  # the hostname whose re-created pod the kubelet does not start for a while


SCOPES = {
    # One crashed pworker breaches its PodClique (minAvailable = its 3 replicas); the prefill
    # group keeps replica 0, so only scaling-group replica prefill-1 (the scaled gang) goes.
    "scaling-group-replica": Scope(("llama-disagg-0-prefill-1-pworker-0",), "llama-disagg-0-prefill-1-",
                                   ("llama-disagg-0-prefill-0",), "llama-disagg-0-prefill-1-pworker-1",
                                   "llama-disagg-0-prefill-1-pleader-0"),
    # Both routers down breaches a standalone PodClique (minAvailable 1): the whole PodCliqueSet
    # replica goes, base gang and scaled gang.
    "podcliqueset-replica": Scope(("llama-disagg-0-router-0", "llama-disagg-0-router-1"), "llama-disagg-0-",
                                  ("llama-disagg-0", "llama-disagg-0-prefill-0"), "llama-disagg-0-prefill-0-pworker-1",
                                  "llama-disagg-0-prefill-0-pleader-0"),
}


@pytest.mark.parametrize("scope_name", sorted(SCOPES, reverse=True))
def test_a_terminated_gang_is_re_released_only_whole(argo: PlaneWorld, scope_name: str) -> None:
    """A breach held past a 2 s terminationDelay: the agent terminates Grove's scope (a
    scaling-group replica, or the whole PodCliqueSet replica) and the re-created pods are
    released as whole gangs again. The applier withholds one re-created pod for 4 s and the
    kubelet does not start a re-created leader until the test lets it: no re-created pod of
    the scope may be released before the withheld one exists."""
    world, scope = argo, SCOPES[scope_name]
    world.edit_pcs(_termination_delay("2s"))  # PodGang annotations only: no pod changes

    def delay_applied() -> bool:
        gang = world.podgang("llama-disagg-0-prefill-0") or {}
        return '"terminationDelaySeconds":2,' in str((gang.get("metadata") or {}).get("annotations"))

    world.wait_until(delay_applied, timeout=30, what="the 2 s terminationDelay applied")
    world.wait_until(world.converged, timeout=30, what="a converged start")
    desired = world.desired_pods()
    names = {name for (_, host), name in desired.items() if host.startswith(scope.prefix)}
    before = {v.name: v.uid for v in world.views(world.primary) if v.name in names}
    assert set(before) == names
    world.exempt("the gang termination this test provokes", before.values())
    withheld, leader = desired[(ARGO_NS, scope.withheld)], desired[(ARGO_NS, scope.leader)]
    hold = world.applier.hold(lambda o: o["kind"] == "Pod" and o["metadata"]["name"] == withheld,
                              APPLIER_WITHHOLD, "one re-created pod")
    kept = world.kubelet.withhold(lambda p: p["metadata"]["name"] == leader and p["metadata"]["uid"] != before[leader],
                                  "the re-created leader")
    mark = world.observer.mark()
    for host in scope.crash:
        world.kubelet.crash(ARGO_NS, desired[(ARGO_NS, host)])
    world.wait_until(lambda: any(v.name == withheld and v.uid != before[withheld] for v in world.views()),
                     timeout=60, what=f"the withheld pod {withheld} re-created")
    world.wait_until(lambda: any(v.name == leader and v.uid != before[leader] and not v.gated for v in world.views()),
                     timeout=60, what=f"the re-created {leader} released")
    world.wait_until(lambda: bool(kept.seen), timeout=10, what="the kubelet withholding the re-created leader")
    assert not any(v.name == leader and v.uid != before[leader] and v.available for v in world.views())
    kept.release()
    world.wait_until(lambda: all(v.uid != before.get(v.name) for v in world.views(world.primary)) and world.converged(),
                     timeout=60, what="the terminated scope re-created, released and Ready")
    world.settle(timeout=20)
    moments = world.observer.since(mark)

    assert _deleted(world, mark) == sorted(names)  # exactly the scope, each pod once
    assert hold.held, "the applier withheld a re-created pod"
    arrived = _first(moments, withheld, event="ADDED")
    assert arrived is not None
    for name in names:
        released = next(m for m in moments if m.pod == name and m.before is not None and m.after is not None
                        and m.after.uid != before[name] and m.before.gated and not m.after.gated)
        assert released.index > arrived.index, f"{name} released before {withheld} was re-created\n{released.describe()}"
    history = world.observer.gang_history()
    for name in scope.gangs:
        gang = [e.gang for e in history.of(ARGO_NS, name)
                if e.gang is not None and e.resource_version >= moments[0].resource_version]
        assert any(g.initialized == "False" and g.initialized_reason == "GangTerminated" for g in gang), (name, gang[-1:])
        assert gang[-1].initialized == "True", name
    world.wait_for_event("GangTerminated", desired[(ARGO_NS, scope.withheld)])
    assert_day2_invariants(world, mark)
    world.edit_pcs(_termination_delay("30m"))


def _router_replicas(n: int) -> Any:
    def change(pcs: Raw) -> None:
        (spec,) = [c["spec"] for c in pcs["spec"]["template"]["cliques"] if c["name"] == "router"]
        spec["replicas"] = n

    return change


def test_scale_in_removes_the_pod_after_the_grace_period(argo: PlaneWorld) -> None:
    world = argo
    world.wait_until(world.converged, timeout=30, what="a converged start")
    before = world.desired_pods()
    mark = world.observer.mark()
    world.edit_pcs(_router_replicas(1))
    after = world.desired_pods()
    (gone,) = set(before.values()) - set(after.values())
    assert {s: before[s] for s in after} == after  # every other pod keeps its name
    unwanted = time.monotonic()  # Git's render no longer wants it from now (the sync follows)
    world.wait_until(world.converged, timeout=60, what=f"{gone} removed")
    world.settle(timeout=20)
    moments = world.observer.since(mark)
    retired = _retired(moments, {gone})
    assert retired == [gone] and _deleted(world, mark) == [gone]
    went = next(m for m in moments if m.pod == gone and (m.event == "DELETED" or (m.after and m.after.terminating)))
    assert went.time - unwanted >= GRACE, f"deleted {went.time - unwanted:.1f} s after it became unwanted"
    assert world.observer.max_unavailable(after, since=mark)[0] == 0
    world.wait_for_event("UnwantedPodDeleted", gone)
    assert_day2_invariants(world, mark)


def _on_delete(pcs: Raw) -> None:
    pcs["spec"]["updateStrategy"] = {"type": "OnDelete"}


def test_on_delete_rolls_nothing_until_a_pod_is_deleted(argo: PlaneWorld) -> None:
    world = argo
    world.wait_until(world.converged, timeout=30, what="a converged start")
    old = world.desired_pods()
    mark = world.observer.mark()
    world.edit_pcs(_on_delete)
    world.bump_image()
    new = world.desired_pods()
    world.wait_until(lambda: {v.name for v in world.views()} >= set(new.values()), timeout=30, what="the new pods created")
    time.sleep(QUIET)  # what must not happen can only be watched for a while
    world.settle(timeout=20)
    assert _deleted(world, mark) == []
    views = {v.name: v for v in world.views()}
    assert all(views[n].available for n in old.values()) and all(views[n].gated for n in new.values())

    slot: Slot = (ARGO_NS, "llama-disagg-0-router-0")
    world.delete_pod(old[slot])
    world.wait_until(lambda: any(v.name == new[slot] and v.available for v in world.views()),
                     timeout=60, what="router-0's new pod Ready")
    time.sleep(QUIET)
    world.settle(timeout=20)
    views = {v.name: v for v in world.views()}
    assert old[slot] not in views
    assert all(image.endswith("-bump2") for image in views[new[slot]].images)  # back at the new spec
    assert all(views[old[s]].available for s in old if s != slot)  # every other slot untouched
    assert all(views[new[s]].gated for s in new if s != slot)
    assert _deleted(world, mark) == [old[slot]]
    assert world.observer.hostname_conflicts(mark) == []
    assert_day2_invariants(world, mark)
