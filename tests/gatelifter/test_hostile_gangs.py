"""What one PodGang may cost the agent (issue 21 item 2, docs/day2.md "Limits").

20 hostile PodGangs with 100,000 references to pods that do not exist slowed gang releases
in every namespace from 0.2-0.35 s to 2-10 s: every pass re-decided every waiting gang of
the cluster, and each decision read every reference. Now a PodGang beyond what a render
writes is malformed after a bounded check (list lengths only), and a gang that waits for pods
is decided again only when its own workload changes.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from grove_gitops.agent.kube import Kube
from grove_gitops.readmodel import gangs as G
from grove_gitops.readmodel.snapshot import MAX_PROBLEMS_PER_GANG, build, parse_day2
from tests.fakeserver import FakeApiServer
from tests.gatelifter.support import apply, gated, rendered_objects, running_lifter
from tests.support import write_source

MANAGED = {"app.kubernetes.io/managed-by": "grove-gitops"}


class Untouchable(list[Any]):
    """A list whose length may be read but whose entries may not: a bounded check passes it
    by, a reader of every reference trips over it."""

    def __iter__(self) -> Iterator[Any]:
        raise AssertionError("a reference was read")

    def __getitem__(self, index: Any) -> Any:
        raise AssertionError("a reference was read")


def gang(name: str, refs: Any, namespace: str = "evil", annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "scheduler.grove.io/v1alpha1",
        "kind": "PodGang",
        "metadata": {"name": name, "namespace": namespace, "labels": {**MANAGED, "app.kubernetes.io/part-of": name},
                     "annotations": annotations or {}},
        "spec": {"podgroups": [{"name": "g", "minReplicas": 1, "podReferences": refs}]},
    }


def ghosts(prefix: str, n: int) -> list[dict[str, str]]:
    return [{"name": f"{prefix}-{k}-x", "namespace": "evil"} for k in range(n)]


# --------------------------------------------------------------------------- bounded checks


def test_an_oversize_podgang_is_malformed_before_any_reference_is_read() -> None:
    too_many = gang("g", Untouchable([{}] * (G.MAX_GANG_PODS + 1)))
    with pytest.raises(G.MalformedPodGang, match="more than 20000 podReferences"):
        G.referenced_pods(too_many)
    groups = gang("g", [])
    groups["spec"]["podgroups"] = Untouchable([{}] * (G.MAX_GANG_PODS + 1))
    with pytest.raises(G.MalformedPodGang, match="podgroups, more than a render writes"):
        G.referenced_pods(groups)
    # spread over many podgroups: the running total stops at the limit
    spread = gang("g", [])
    spread["spec"]["podgroups"] = [{"name": f"g{i}", "podReferences": Untouchable([{}] * 7_000)} for i in range(3)]
    with pytest.raises(G.MalformedPodGang):
        G.referenced_pods(spread)


@pytest.mark.parametrize(
    "change",
    [
        lambda g: g["metadata"].update(name="n" * 254),
        lambda g: g["metadata"].update(namespace="n" * 64),
        lambda g: g["spec"]["podgroups"][0].update(name="g" * 254),
        lambda g: g["spec"]["podgroups"][0]["podReferences"].append({"name": "p" * 254}),
        lambda g: g["spec"]["podgroups"][0]["podReferences"].append({"name": "p", "namespace": "n" * 64}),
        lambda g: g["spec"]["podgroups"][0]["podReferences"].append({"name": "p", "namespace": ["x"]}),
        lambda g: g["metadata"]["annotations"].update({G.GANG_OBJECTS: "[" + " " * G.MAX_ANNOTATION + "]"}),
    ],
)
def test_names_and_annotations_beyond_kubernetes_limits_are_malformed(change: Any) -> None:
    obj = gang("g", ghosts("p", 2))
    change(obj)
    with pytest.raises(G.MalformedPodGang):
        G.referenced_pods(obj)
        G.gang_objects(obj)


@pytest.mark.parametrize(
    "day2",
    [
        '{"podCliqueSet": "a", "replicaIndex": 0, "scalingGroups": '
        '[{"name": "a-0-g", "minAvailable": 1, "replicas": 1000000000000, "cliques": ["c"]}]}',
        '{"podCliqueSet": "a", "replicaIndex": 0, "scalingGroups": '
        '[{"name": "a-0-g", "minAvailable": 1, "replicas": 20000, "cliques": ["c", "d"]}]}',
        '{"podCliqueSet": "a", "replicaIndex": 100000000, "cliques": []}',
        '{"podCliqueSet": "a", "replicaIndex": 0, "cliques": [{"name": "a-0-c", "minAvailable": 1, "replicas": 10000000}]}',
        '{"podCliqueSet": "' + "a" * 300 + '", "replicaIndex": 0}',
        '{"podCliqueSet": "a", "replicaIndex": 0, "cliques": "abc"}',
    ],
)
def test_day2_counts_beyond_a_render_are_malformed(day2: str) -> None:
    """The healing rules loop over a scaling group's replicas: ``replicas: 1e12`` read from a
    PodGang must not hang the agent."""
    with pytest.raises(G.MalformedPodGang):
        parse_day2(gang("g", [], annotations={"gitops.grove.io/day2": day2}))


def test_a_gang_waiting_for_backend_objects_asks_for_one_per_decision() -> None:
    objects = [{"apiVersion": "v1", "kind": "ConfigMap", "name": f"o{i}"} for i in range(50)]
    import json

    obj = gang("g", [], annotations={G.GANG_OBJECTS: json.dumps(objects)})
    asked: list[G.ObjectRef] = []
    decision = G.decide(obj, {}, lambda ref: asked.append(ref) is not None, {})
    assert not decision.complete and decision.poll and len(asked) == 1
    assert decision.waiting_for == ["ConfigMap o0 (v1)"]


def test_a_gang_waiting_for_thousands_of_pods_names_ten_and_counts_the_rest() -> None:
    decision = G.decide(gang("g", ghosts("p", 5_000)), {}, lambda ref: True, {})
    assert not decision.complete and not decision.poll
    assert decision.waiting_for[:2] == ["pod evil/p-0-x", "pod evil/p-1-x"]
    assert decision.waiting_for[-1] == "4990 more pods" and len(decision.waiting_for) == G.MAX_WAITING_NAMED + 1


def test_the_bad_references_of_one_gang_are_reported_a_few_at_a_time() -> None:
    # 5,000 references that all map to one slot ("p-<k>" -> hostname "p"): 4,999 conflicts
    refs = [{"name": f"p-{k}", "namespace": "evil"} for k in range(5_000)]
    snap = build({}, {("evil", "g"): gang("g", refs)})
    assert len(snap.problems) == MAX_PROBLEMS_PER_GANG + 1
    assert "4994 more references" in snap.problems[-1][1]


# --------------------------------------------------------------------------- the agent, over HTTP

APP = """
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata: {name: app, namespace: team}
spec:
  replicas: 1
  template:
    cliques:
    - {name: w, spec: {roleName: w, replicas: 2, podSpec: {containers: [{name: c, image: x}]}}}
"""


def test_hostile_podgangs_in_one_namespace_cost_nothing_in_anothers_passes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """20 hostile PodGangs in namespace ``evil`` (scaled down from 100,000 references each:
    the limit is lowered to 1,000 for the test): 10 beyond the limit, 10 within it, waiting for
    pods that never come. They are read once (the oversize ones never), and a gang in namespace
    ``team`` is released without one more reference of theirs being read."""
    limit = 1_000
    monkeypatch.setattr(G, "MAX_GANG_PODS", limit)
    read: Counter[str] = Counter()  # references read, by PodGang namespace/name
    lock = threading.Lock()
    real = G.referenced_pods

    def counting(podgang: Any) -> list[tuple[str, str, str]]:
        refs = real(podgang)
        meta = podgang.get("metadata") or {}
        with lock:
            read[f"{meta.get('namespace')}/{meta.get('name')}"] += len(refs)
        return refs

    monkeypatch.setattr(G, "referenced_pods", counting)
    oversize = [f"evil/big-{i}" for i in range(10)]
    waiting = [f"evil/wait-{i}" for i in range(10)]
    with FakeApiServer() as server:
        for ns in ("evil", "team"):
            server.put_object({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        with running_lifter(server, recheck=0.05, resync=3600.0) as agent:
            assert server.wait_for(agent.ready, timeout=10)
            for i in range(10):
                server.put_object(gang(f"big-{i}", ghosts(f"big{i}", limit + 1)))
                server.put_object(gang(f"wait-{i}", ghosts(f"wait{i}", limit)))
            assert server.wait_for(lambda: {f"{k[0]}/{k[1]}" for k in agent._waiting} == set(oversize + waiting),
                                   timeout=30)
            assert server.wait_for(lambda: {f"{k[0]}/{k[1]}" for k in agent._bad} == set(oversize), timeout=10)
            assert all(read[k] == 0 for k in oversize)  # refused by the bounded check alone
            # Only the malformed gangs are asked again (when their backoff ends); the waiting
            # ones wait for an event of their own workload.
            assert {f"{k[0]}/{k[1]}" for k in agent._poll} == set(oversize)
            with lock:
                before = sum(read[k] for k in waiting)
            passes = agent.passes
            apply(Kube(server.api_client()), rendered_objects(write_source(tmp_path / "src", {"app.yaml": APP})))
            assert server.wait_for(lambda: not gated(server, "team"), timeout=20)
            assert server.wait_for(lambda: agent.passes > passes + 1, timeout=5)
            with lock:
                assert sum(read[k] for k in waiting) == before  # not one reference more
                assert all(read[k] == 0 for k in oversize)
                assert read["team/app-0"] > 0
            assert not gated(server, "evil")


def test_the_podgangs_of_one_workload_past_what_a_render_writes_are_malformed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(G, "MAX_GANG_PODS", 1_000)
    monkeypatch.setattr(G, "MAX_WORKLOAD_PODS", 2_500)
    objs = {}
    for i in range(4):
        obj = gang(f"g{i}", ghosts(f"g{i}", 1_000))
        obj["metadata"]["labels"]["app.kubernetes.io/part-of"] = "one"
        objs[("evil", f"g{i}")] = obj
    snap = build({}, objs)
    assert sorted(k[1] for k in snap.gangs) == ["g0", "g1"]
    assert sorted(k[1] for k in snap.malformed) == ["g2", "g3"]
    assert "more than 2500 pods together" in snap.malformed[("evil", "g2")]
    assert len(snap.workloads[("evil", "one")].slots) == 2_000


def test_a_pass_takes_the_small_workloads_first_and_one_large_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pass planner: a small workload's event never waits behind every large workload."""
    from grove_gitops.agent import loop
    from grove_gitops.agent.loop import Agent, AgentConfig
    from grove_gitops.metrics import Registry

    monkeypatch.setattr(loop, "PASS_SLICE", 100)
    with FakeApiServer() as server:
        agent = Agent(Kube(server.api_client()), AgentConfig(), Registry())
        try:
            big = [gang(f"big-{i}", ghosts(f"b{i}", 500)) for i in range(3)]
            small = [gang(f"small-{i}", ghosts(f"s{i}", 5)) for i in range(2)]
            agent.cache.replace("podgangs", big + small)
            agent.cache.dirty.clear()
            wl = {o["metadata"]["name"]: ("evil", o["metadata"]["name"]) for o in big + small}
            first = agent._this_pass({wl[n] for n in wl})
            assert first == {wl["small-0"], wl["small-1"], wl["big-0"]}
            assert agent._this_pass({wl["small-0"]}) == {wl["small-0"], wl["big-1"]}
            assert agent._this_pass(set()) == {wl["big-2"]}
            assert agent._this_pass(set()) == set()
        finally:
            agent._pool.shutdown()


def test_a_resync_is_spread_over_short_passes_and_events_go_between(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 35.1: a resync re-derives every workload; taken whole by one pass, it held every
    event that came meanwhile (the next rollout step) for that long. A pass now takes at most
    ``RESYNC_SLICE`` of it, and a dirty workload goes into the very next pass."""
    from grove_gitops.agent import loop
    from grove_gitops.agent.loop import Agent, AgentConfig
    from grove_gitops.metrics import Registry

    monkeypatch.setattr(loop, "RESYNC_SLICE", 25)
    with FakeApiServer() as server:
        agent = Agent(Kube(server.api_client()), AgentConfig(), Registry())
        try:
            gangs = [gang(f"w-{i}", ghosts(f"p{i}", 9)) for i in range(10)]  # cost 10 each
            agent.cache.replace("podgangs", gangs)
            agent.cache.dirty.clear()
            wl = [("evil", f"w-{i}") for i in range(10)]
            agent._resync.extend(wl)
            first = agent._this_pass(set())
            assert first == set(wl[:3])  # 10 + 10 + 10: the slice is spent after the third
            second = agent._this_pass({wl[9]})
            assert second == {wl[9], *wl[3:6]}  # the event, and the next slice
            taken = first | second
            while agent._resync:
                taken |= agent._this_pass(set())
            assert taken == set(wl)
        finally:
            agent._pool.shutdown()
