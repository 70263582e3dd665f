"""Tenant pods that copy grove-gitops' label survive the agent (issue 21 item 5).

The agent, over HTTP against the fake API server, deletes only pods whose
``gitops.grove.io/rendered-by`` proof verifies: a tenant pod with the managed-by label (and
one with a rendered pod's labels *and* annotations, under another name) outlives the grace
period, a scale-in and the removal of the PodCliqueSet from Git, while every rendered pod of
the removed slots is deleted. Run alone and beside a second PodCliqueSet (issue 22: its passes
must not reset this one's grace periods).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from typing import Any

import pytest

from grove_gitops.expand import ownership
from tests.day2.harness import EXAMPLE_PCS, Day2Env

NS = "inference"


def _tenant(env: Day2Env, hostname: str, name: str, *, annotations: bool) -> dict[str, Any]:
    """A copy of the rendered pod of ``hostname`` under another name and hostname."""
    source = next(p for p in env.pods() if p["spec"].get("hostname") == hostname)
    meta: dict[str, Any] = {"name": name, "namespace": NS, "labels": dict(source["metadata"]["labels"])}
    if annotations:
        meta["annotations"] = dict(source["metadata"]["annotations"])
        assert ownership.RENDERED_BY in meta["annotations"]
    spec = copy.deepcopy(source["spec"])
    spec.pop("schedulingGates", None)
    spec.pop("nodeName", None)
    spec["hostname"] = name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def _names(env: Day2Env) -> set[str]:
    """The pods labelled as the primary PodCliqueSet's (the tenants copy its labels)."""
    return {v.name for v in env.views(env.primary)}


@pytest.mark.parametrize("bystander", [False, True], ids=["alone", "beside-another-pcs"])
def test_tenant_pods_with_the_copied_label_survive_scale_in_and_removal(
    day2: Callable[..., Day2Env], bystander: bool
) -> None:
    env = day2(bystander=bystander)
    env.wait_until(env.converged, timeout=10, what="the first deploy")
    tenants = {"tenant-label-only", "tenant-label-and-proof"}
    for name in tenants:
        pod = _tenant(env, "llama-disagg-0-router-0", name, annotations=name.endswith("proof"))
        env.rest.request("POST", f"/api/v1/namespaces/{NS}/pods", pod)
    rendered = set(env.desired_pods().values())
    assert rendered and all(ownership.verify(p) for p in env.pods() if p["metadata"]["name"] in rendered)

    # scale-in: router 2 -> 1 (the rendered router-1 pod goes after the grace period)
    def one_router(pcs: dict[str, Any]) -> None:
        (spec,) = [c["spec"] for c in pcs["spec"]["template"]["cliques"] if c["name"] == "router"]
        spec["replicas"], spec["minAvailable"] = 1, 1

    env.edit_pcs(one_router)
    dropped = rendered - set(env.desired_pods().values())
    assert len(dropped) == 1
    env.wait_until(lambda: not dropped & _names(env), timeout=30, what="the scaled-in router pod deleted")

    # removal from Git: every rendered pod goes, the tenants' stay
    (env.source / EXAMPLE_PCS.relative_to(EXAMPLE_PCS.parents[2])).unlink()
    env.render()
    env.wait_until(lambda: _names(env) == tenants, timeout=30, what="every rendered pod deleted")
    time.sleep(2.5)  # more than the grace period (1 s in the harness) and several resyncs
    assert _names(env) == tenants
    assert env.agent is not None
    executor = env.agent.impl.executor
    assert executor.deletes == len(rendered)  # not even a refused DELETE was sent for a tenant
    env.assert_invariants()
