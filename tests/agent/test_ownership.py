"""Only pods a render made are ever deleted (issue 21 item 5, docs/day2.md "Which pods the
agent deletes").

A tenant pod with the ``app.kubernetes.io/managed-by: grove-gitops`` label copied onto it (and
one with the label *and* a rendered pod's ``gitops.grove.io/rendered-by`` annotation copied,
under another name) survives every deleting path: scale-in, removal, Failed-pod healing, gang
termination, rollout retirement and superseded-pod cleanup. Rendered pods still go.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from grove_gitops.agent import healing, intent, rollout, scalein
from grove_gitops.agent.actions import Action, DeletePod, Memory
from grove_gitops.expand import ownership
from tests.agent.builders import NS, T0, Clique, World, apply, pod, set_state, world

GRACE = 30.0
ROLLING = {"type": "RollingUpdate", "status": "True", "reason": "RollingReplica", "message": "step 0 of 1"}


def deletes(actions: list[Action]) -> list[str]:
    return sorted(a.name for a in actions if isinstance(a, DeletePod))


def tenant(w: World, hostname: str, **state: Any) -> dict[str, Any]:
    """A tenant's pod carrying every label a rendered pod has, copied, but no proof."""
    return w.add(pod(hostname, template_hash="tt", rendered=False, **state))


def copycat(w: World, source: dict[str, Any], name: str, hostname: str, **state: Any) -> dict[str, Any]:
    """A tenant's pod with a rendered pod's labels *and* annotations copied, under another name."""
    obj = copy.deepcopy(source)
    obj["metadata"]["name"] = name
    obj["metadata"]["uid"] = f"uid-{name}"
    obj["spec"]["hostname"] = hostname
    set_state(obj, **state)
    return w.add(obj)


def unwanted_deletes(w: World, memory: Memory, now: float) -> list[str]:
    snap = w.snap()
    out: list[Action] = []
    for wl in snap.workloads.values():
        intent.observe(wl, memory, now)
        out += scalein.unwanted_pods(wl, memory, now, GRACE, snap)
    return deletes(out)


# --------------------------------------------------------------------------- the proof itself


def test_a_rendered_pod_verifies_and_copies_do_not() -> None:
    w = world(cliques=(Clique("router", 1, 1),))
    rendered = w.new("p-0-router-0")
    assert ownership.verify(rendered)
    assert not ownership.verify(tenant(w, "p-0-router-5"))
    assert not ownership.verify(copycat(w, rendered, "p-0-router-0-other", "p-0-router-0"))
    relabelled = copy.deepcopy(rendered)
    relabelled["metadata"]["labels"]["grove.io/podgang"] = "p-1"
    assert not ownership.verify(relabelled)
    moved = copy.deepcopy(rendered)
    moved["metadata"]["namespace"] = "elsewhere"
    assert not ownership.verify(moved)


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=80),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
                    max_leaves=20))
def test_any_hostile_metadata_is_simply_not_a_proof(value: Any) -> None:
    for meta in (value, {"name": "n", "namespace": NS, "labels": value, "annotations": {ownership.RENDERED_BY: value}},
                 {"name": value, "annotations": value}):
        assert ownership.verify({"metadata": meta}) is False


def test_a_huge_label_is_refused_before_hashing() -> None:
    w = world(cliques=(Clique("router", 1, 1),))
    big = copy.deepcopy(w.new("p-0-router-0"))
    big["metadata"]["labels"]["grove.io/podgang"] = "x" * 10_000_000
    assert ownership.proof(NS, "n", big["metadata"]["labels"]) is None
    assert not ownership.verify(big)


# --------------------------------------------------------------------------- scale-in and removal


def test_scale_in_deletes_the_rendered_pod_and_never_a_tenant_pod() -> None:
    w = world(cliques=(Clique("router", 3, 1),))
    for gang in w.gangs.values():  # the render dropped router-2
        for group in gang["spec"]["podgroups"]:
            group["podReferences"] = [r for r in group["podReferences"] if r["name"] != "p-0-router-2-h1"]
    tenant(w, "p-0-router-7")
    copycat(w, w.new("p-0-router-0"), "p-0-router-8-cc", "p-0-router-8")
    memory = Memory()
    assert unwanted_deletes(w, memory, T0) == []
    assert unwanted_deletes(w, memory, T0 + GRACE) == ["p-0-router-2-h1"]
    assert unwanted_deletes(w, memory, T0 + 100 * GRACE) == ["p-0-router-2-h1"]  # never the tenants'
    problems = " ".join(p for _, p in w.snap().problems)
    assert "p-0-router-7-tt" in problems and "p-0-router-8-cc" in problems and ownership.RENDERED_BY in problems


def test_removal_deletes_every_rendered_pod_and_no_tenant_pod() -> None:
    w = world(cliques=(Clique("router", 2, 1),))
    source = w.new("p-0-router-0")
    tenant(w, "p-0-router-7")
    copycat(w, source, "p-0-router-8-cc", "p-0-router-8")
    w.gangs.clear()  # the PodCliqueSet was removed from Git
    memory = Memory()
    unwanted_deletes(w, memory, T0)
    assert unwanted_deletes(w, memory, T0 + GRACE) == ["p-0-router-0-h1", "p-0-router-1-h1"]


# --------------------------------------------------------------------------- healing


def test_failed_tenant_pods_in_a_slot_are_never_deleted() -> None:
    w = world(cliques=(Clique("router", 2, 1),))
    tenant(w, "p-0-router-0", phase="Failed", ready=False)  # an old pod of slot router-0
    copycat(w, w.new("p-0-router-1"), "p-0-router-1-cc", "p-0-router-1", phase="Failed", ready=False)
    assert deletes(healing.failed_pods(w.wl())) == []
    w.add_old("p-0-router-1", template_hash="h0", phase="Failed", ready=False)  # rendered, but two old pods now
    w.pods.pop((NS, "p-0-router-1-cc"))
    assert deletes(healing.failed_pods(w.wl())) == ["p-0-router-1-h0"]


def test_gang_termination_spares_tenant_pods_in_the_slots() -> None:
    w = world(cliques=(Clique("router", 2, 2), Clique("worker", 2, 1)), delay=60.0)
    memory = Memory()
    apply(w, healing.gang_termination(w.wl(), memory, T0, set()), T0)  # seen healthy once
    tenant(w, "p-0-worker-0")  # a Running tenant pod in slot worker-0 (one old pod: not ambiguous)
    copycat(w, w.new("p-0-worker-1"), "p-0-worker-1-cc", "p-0-worker-1")
    w.set("p-0-router-1", ready=False, crashing=True)
    apply(w, healing.gang_termination(w.wl(), memory, T0 + 1, set()), T0 + 1)
    gone = deletes(healing.gang_termination(w.wl(), memory, T0 + 62, set()))
    assert gone == ["p-0-router-0-h1", "p-0-router-1-h1", "p-0-worker-0-h1", "p-0-worker-1-h1"]


# --------------------------------------------------------------------------- rollout


def _rolling(w: World) -> None:
    w.gang("p-0")["status"]["conditions"].append(dict(ROLLING))


def test_rollout_retires_rendered_old_pods_and_never_a_tenant_pod() -> None:
    w = world(cliques=(Clique("router", 2, 1),))
    for h in ("p-0-router-0", "p-0-router-1"):
        w.set(h, gated=True, ready=False, scheduled=False)  # the new target waits for its slot
    w.add_old("p-0-router-0", ready=False)  # rendered old pod, not Ready: retired at once
    tenant(w, "p-0-router-1", ready=False)  # a tenant pod in slot router-1, not Ready either
    _rolling(w)
    actions, progress = rollout.rollout(w.wl(), Memory(), T0, breached=set(), grace=GRACE)
    assert deletes(actions) == ["p-0-router-0-h0"]
    w.pods.pop((NS, "p-0-router-0-h0"))
    w.set("p-0-router-0", gated=False, ready=True, scheduled=True)
    for t in (T0 + 1, T0 + 100):  # Ready tenant pod, any time later: never a rollout step
        w.pods[(NS, "p-0-router-1-tt")]["status"]["conditions"][1]["status"] = "True"
        actions, progress = rollout.rollout(w.wl(), Memory(), t, breached=set(), grace=GRACE)
        assert deletes(actions) == []
    assert any("p-0-router-1-tt" in m and "delete it by hand" in m for m in progress.waiting)


def test_superseded_tenant_pods_are_never_deleted() -> None:
    w = world(cliques=(Clique("router", 2, 1),))
    w.add_old("p-0-router-0", gated=True, ready=False, scheduled=False)  # never ran: superseded
    tenant(w, "p-0-router-1", gated=True, ready=False, scheduled=False)
    copycat(w, w.new("p-0-router-1"), "p-0-router-1-cc", "p-0-router-1", gated=True, ready=False, scheduled=False)
    memory = Memory()
    intent.observe(w.wl(), memory, T0)
    assert deletes(rollout.superseded(w.wl(), memory, T0 + 10 * GRACE, GRACE, 5 * GRACE)) == ["p-0-router-0-h0"]
