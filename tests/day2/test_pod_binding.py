"""A pod that lost what binds it to its gang is not released, and neither is its gang.

The bundled example (KAI) and its bystander in the day-2 world: after the first sync, one pod
of the example's base gang loses its ``pod-group-name`` annotation, as a mutating webhook or a
hand edit would do. Lifting its gate would let KAI place it outside its PodGroup. The agent
holds the whole gang (every pod of it stays gated at every observed moment), says why on the
PodGang, and releases everything else; once the annotation is back (a person's fix: the
applier never updates a pod it created), the gang is released whole and the world converges.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from grove_gitops.readmodel.binding import POD_BINDING
from tests.day2.harness import Day2Env

KAI_GROUP = "pod-group-name"


def _gang_of(pod: dict) -> str:
    return str(pod["metadata"]["labels"]["grove.io/podgang"])


def test_a_pod_without_its_group_annotation_holds_its_gang_until_the_applier_restores_it(
        day2: Callable[..., Day2Env]) -> None:
    env = day2(agent=False, background_sync=False, agent_config={"blocked_after": 0.2})
    pods = {p["metadata"]["name"]: p for p in env.pods()}
    # A pod of a base gang (a scaled gang would wait for its base anyway).
    victim = next(p for _, p in sorted(pods.items())
                  if KAI_GROUP in env.pod_annotations(p) and "grove.io/base-podgang" not in p["metadata"]["labels"])
    gang = _gang_of(victim)
    rendered = env.podgang(gang)
    assert rendered is not None and POD_BINDING in rendered["metadata"]["annotations"]
    name = victim["metadata"]["name"]
    env.rest.request("PATCH", f"/api/v1/namespaces/{env.namespace}/pods/{name}",
                     {"metadata": {"annotations": {KAI_GROUP: None}}}, "application/merge-patch+json")
    members = {n for n, p in pods.items() if _gang_of(p) == gang}
    assert len(members) > 1

    env.start_agent()
    # Every other pod but those of gangs scaled on this one (they wait for their base gang).
    others = {n for n, p in pods.items() if n not in members and p["metadata"]["labels"].get("grove.io/base-podgang") != gang}

    def others_released() -> bool:
        live = {p["metadata"]["name"]: p for p in env.pods()}
        return all(not (live[n]["spec"].get("schedulingGates") or []) for n in others)

    env.wait_until(others_released, timeout=30, what="every other gang released")

    def says_why() -> bool:
        conds = ((env.podgang(gang) or {}).get("status") or {}).get("conditions") or []
        return any(c.get("type") == "RolloutBlocked" and c.get("status") == "True"
                   and f"pod {env.namespace}/{name} to be bound to its gang as rendered" in c.get("message", "")
                   and "pod-group-name is missing" in c.get("message", "") for c in conds)

    env.wait_until(says_why, timeout=15, what="the PodGang to say which pod lost its binding")
    time.sleep(1.0)  # passes go on: the gang stays held
    live = {p["metadata"]["name"]: p for p in env.pods()}
    assert all(live[n]["spec"].get("schedulingGates") for n in members), "a pod of the held gang was released"
    # At no observed moment was any pod of the gang released.
    released = [m for m in env.observer.since(0) for v in m.pods if v.name in members and not v.gated]
    assert released == []

    # The applier leaves an existing pod alone (pods are created, never updated: Flux's
    # ssa: IfNotPresent, Argo CD's IgnoreExtraneous); a person puts the annotation back.
    env.sync()
    assert KAI_GROUP not in env.pod_annotations(env.rest.get("v1", "Pod", env.namespace, name) or {})
    env.rest.request("PATCH", f"/api/v1/namespaces/{env.namespace}/pods/{name}",
                     {"metadata": {"annotations": {KAI_GROUP: gang}}}, "application/merge-patch+json")
    env.wait_until(env.converged, timeout=30, what="the gang released once bound again")
    env.settle()
    env.assert_invariants()


def test_a_rollout_takes_no_step_whose_new_pod_lost_its_binding(day2: Callable[..., Day2Env]) -> None:
    """An image bump whose new pods reach the cluster without their PodGroup annotation: the
    rollout retires no old pod for them (each would leave a slot empty for a pod the release
    never lifts), says why, and rolls on once they are bound again."""
    env = day2(background_sync=False, agent_config={"blocked_after": 0.2})
    env.wait_until(env.converged, timeout=15, what="the first deploy")
    old = env.desired_pods()
    mark = env.observer.mark()
    env.stop_agent()  # the new pods are tampered with before the agent sees them
    env.bump_image()
    env.sync()  # the new pods exist, gated
    new = env.desired_pods()
    tampered = sorted(n for s, n in new.items() if n not in old.values())
    for name in tampered:
        env.rest.request("PATCH", f"/api/v1/namespaces/{env.namespace}/pods/{name}",
                         {"metadata": {"annotations": {KAI_GROUP: None}}}, "application/merge-patch+json")
    env.start_agent()

    def says_why() -> bool:
        conds = ((env.podgang("llama-disagg-0") or {}).get("status") or {}).get("conditions") or []
        return any(c.get("type") == "RolloutBlocked" and c.get("reason") == "NewPodUnbound"
                   and "pod-group-name is missing" in c.get("message", "") for c in conds)

    env.wait_until(says_why, timeout=15, what="the rollout to say its new pods are unbound")
    time.sleep(1.0)
    # No old pod was retired, no new pod released, at any observed moment.
    assert not [m for m in env.observer.since(mark) if m.event == "DELETED"]
    assert all(v.gated for m in env.observer.since(mark) for v in m.pods if v.name in tampered)
    for name in tampered:  # a person puts the annotations back
        pod = env.rest.get("v1", "Pod", env.namespace, name) or {}
        env.rest.request("PATCH", f"/api/v1/namespaces/{env.namespace}/pods/{name}",
                         {"metadata": {"annotations": {KAI_GROUP: _gang_of(pod)}}}, "application/merge-patch+json")
    env.wait_until(env.converged, timeout=30, what="the rollout done once the pods are bound")
    env.settle()
    violation = env.observer.rolling_bound_violation(new, since=mark, strict=True)
    assert violation is None, violation[1]
    env.assert_invariants()
