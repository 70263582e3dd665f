"""Gang termination re-releases the re-created pods as a whole gang (issue 22, defect 2).

A unit breach held past ``terminationDelay`` (2 s here) terminates the gang in Grove's scope:
one scaling-group replica, or the whole PodCliqueSet replica. The agent resets the
PodGangs' ``Initialized`` condition, so the pods GitOps re-creates must be released together
again. To make a partial release visible, the applier withholds the re-creation of one pod
of a ``minReplicas: 3`` podgroup for a few seconds: until it exists, none of the others may
be released (invariant "no partial gang release", :func:`~tests.day2.observer.partial_releases`),
and ``Initialized`` goes ``False`` with the termination and ``True`` only once every pod the
PodGang lists is a re-created, released pod.

The API server is slow to delete (each pod DELETE takes ``DELETE_LATENCY``): the agent's
deletes are in flight while it decides what to release, as on a busy cluster. A pod whose
DELETE is under way never counts towards its gang's completeness.

In the PodCliqueSet scope the kubelet also withholds the re-created prefill leader of the
base gang (it is released but not bound) for a while: the scaling-group replica's scaled
PodGang must wait until that base podgroup is scheduled again (Grove's base-gang rule).

The defect (old agent): in the pass that terminated the gang it judged completeness from a
cache in which the pods it was deleting did not look terminating yet, wrote
``Initialized=True`` straight back, and released the re-created pods one by one as they
arrived.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from tests.day2.harness import Day2Env, describe
from tests.day2.observer import Moment
from tests.day2.rest import Raw

NS = "inference"
WITHHOLD = 4.0  # seconds the applier keeps one re-created pod from the cluster
KUBELET_WITHHOLD = 1.0  # seconds the kubelet keeps a re-created, released pod from being bound
DELETE_LATENCY = 0.5  # seconds each pod DELETE takes on the API server


def _delay(value: str) -> Callable[[Raw], None]:
    def change(pcs: Raw) -> None:
        pcs["spec"]["template"]["terminationDelay"] = value

    return change


@dataclass(frozen=True)
class Scope:
    crash: tuple[str, ...]  # hostnames whose pods crash (the breach)
    prefix: str  # hostnames of the terminated scope start with this
    gangs: tuple[str, ...]  # the PodGangs whose Initialized is reset
    withheld: str  # hostname whose re-created pod the applier withholds
    unbound: str | None = None  # hostname whose re-created pod the kubelet withholds
    scaled_gang: str | None = None  # a scaled PodGang that must wait for ``unbound`` to be bound


SCOPES = {
    # pworker minAvailable is its 3 replicas: one crashed pworker breaches its PodClique; the
    # prefill group still has replica 0, so only scaling-group replica 1 is terminated.
    "scaling-group-replica": Scope(
        crash=("llama-disagg-0-prefill-1-pworker-0",),
        prefix="llama-disagg-0-prefill-1-",
        gangs=("llama-disagg-0-prefill-0",),
        withheld="llama-disagg-0-prefill-1-pworker-1",
    ),
    # router minAvailable 1: both routers down breaches a standalone PodClique, so the whole
    # PodCliqueSet replica goes.
    "podcliqueset-replica": Scope(
        crash=("llama-disagg-0-router-0", "llama-disagg-0-router-1"),
        prefix="llama-disagg-0-",
        gangs=("llama-disagg-0", "llama-disagg-0-prefill-0"),
        withheld="llama-disagg-0-prefill-0-pworker-1",
        unbound="llama-disagg-0-prefill-0-pleader-0",
        scaled_gang="llama-disagg-0-prefill-0",
    ),
}


def _moment_at(moments: list[Moment], resource_version: int) -> Moment:
    """The last pod moment at or before ``resource_version`` (one counter for every kind)."""
    i = bisect.bisect_right([m.resource_version for m in moments], resource_version)
    assert i > 0, f"no pod moment before resourceVersion {resource_version}"
    return moments[i - 1]


@pytest.mark.parametrize("scope_name", sorted(SCOPES))
def test_terminated_gang_is_released_again_only_as_a_whole(day2: Callable[..., Day2Env], scope_name: str) -> None:
    scope = SCOPES[scope_name]
    env = day2(edit=_delay("2s"))
    env.wait_until(env.converged, timeout=15, what="the first deploy")
    desired = env.desired_pods()
    scope_names = {name for (_, host), name in desired.items() if host.startswith(scope.prefix)}
    before = {v.name: v.uid for v in env.views(env.primary) if v.name in scope_names}
    assert set(before) == scope_names
    env.exempt("the gang termination this test provokes", before.values())
    withheld = desired[(NS, scope.withheld)]
    hold = env.applier.hold(lambda o: o["kind"] == "Pod" and o["metadata"]["name"] == withheld, WITHHOLD,
                            "one re-created pod")
    unbound = desired[(NS, scope.unbound)] if scope.unbound else None
    kept = None
    if unbound is not None:
        kept = env.kubelet.withhold(
            lambda p: p["metadata"]["name"] == unbound and p["metadata"]["uid"] not in before.values(),
            "the re-created base prefill leader",
        )
    env.server.faults.delay(DELETE_LATENCY, verb="delete", resource="pods")
    mark = env.observer.mark()
    for host in scope.crash:
        env.kubelet.crash(NS, desired[(NS, host)])

    # The withheld pod arrives last; the kubelet's hold ends a moment after it (the scaled
    # gang's pods have been waiting for it all along).
    env.wait_until(lambda: any(v.name == withheld and v.uid != before[withheld] for v in env.views()),
                   timeout=40, what=f"the withheld pod {withheld} re-created")
    if kept is not None:
        time.sleep(KUBELET_WITHHOLD)
        kept.release()
    env.wait_until(
        lambda: all(v.uid != before.get(v.name) for v in env.views(env.primary)) and env.converged(),
        timeout=40,
        what="the terminated scope re-created, released and Ready",
    )
    env.settle()
    moments = env.observer.since(mark)

    # Exactly the scope was deleted, each pod once.
    deleted = sorted(m.pod for m in moments if m.event == "DELETED")
    assert deleted == sorted(scope_names), deleted
    assert hold.held == {("v1", "Pod", NS, withheld)}  # the applier did withhold it
    if kept is not None:
        assert kept.seen, "the kubelet never withheld the re-created pleader"

    # No pod was released from an incomplete podgroup (the withheld pod's), nothing else broken.
    env.assert_invariants()

    # Initialized: False with the termination, True only once the whole gang is re-released.
    gangs = env.observer.gang_history()
    for name in scope.gangs:
        events = [e for e in gangs.of(NS, name) if e.resource_version > moments[0].resource_version and e.gang]
        statuses = [(e.gang.initialized, e.gang.initialized_reason, e.resource_version) for e in events if e.gang]
        reset = next((i for i, s in enumerate(statuses) if s[0] == "False"), None)
        assert reset is not None, f"PodGang {name}: Initialized never went False after the termination: {statuses}"
        again = next((s for s in statuses[reset:] if s[0] == "True"), None)
        assert again is not None, f"PodGang {name}: Initialized never went True again: {statuses}"
        at = _moment_at(moments, again[2])
        gang = gangs.at(NS, name, again[2])
        assert gang is not None
        listed = {pod for refs in gang.refs.values() for pod in refs}
        views = {p.name: p for p in at.pods}
        unreleased = sorted(n for n in listed if n not in views or views[n].uid == before.get(n) or views[n].gated)
        assert not unreleased, (f"PodGang {name} was marked Initialized=True while {unreleased} were not "
                                f"re-created and released\n{describe(at)}")

    # The scaled gang waited for its base podgroup to be scheduled again.
    if unbound is not None and scope.scaled_gang is not None:
        bound = next(m.index for m in moments if m.after is not None and m.after.name == unbound
                     and m.after.uid != before[unbound] and m.after.node)
        early = [m for m in moments if m.index < bound and m.after is not None and m.before is not None
                 and m.before.gated and not m.after.gated and m.after.podgang == scope.scaled_gang]
        assert not early, f"{early[0].pod} released before the base gang's {unbound} was scheduled\n{describe(early[0])}"
