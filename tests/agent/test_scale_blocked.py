"""A refused create of a gang's objects (issue 32.2) says so on the scale target and the workload.

Under the OwnerReferencesPermissionEnforcement admission plugin (on by default in OpenShift) an
agent that may not update ``podcliquesets/finalizers`` is refused every object it creates with
``blockOwnerDeletion``; a count quota on PodGangs refuses the PodGang after the gang's pods were
made. Before the fix the PodGang's 403 failed the whole pass: the gang's pods stayed (holding
quota, in no PodGang) and the target kept ``ScaleBlocked=False`` with "every gang of the count was
created". The fake server answers the PodGang create with the real plugin's 403.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.agent.scaling_env import render_at, scaling_env, wait_until
from tests.agent.test_scale_targets import TARGET, _condition, _gangs, _pods, _started
from tests.agent.test_scaling_property import NS, source

#: kube-apiserver 1.35's answer (plugin/pkg/admission/gc), as the real plane returned it.
REFUSAL = ('podgangs.scheduler.grove.io "disagg-0-prefill-0" is forbidden: cannot set blockOwnerDeletion if an '
           "ownerReference refers to a resource you can't set finalizers on: , <nil>")


def test_a_refused_podgang_blocks_the_scale_with_the_servers_message_and_leaves_no_pods(tmp_path: Path) -> None:
    _, (manager, env) = _started(tmp_path)
    try:
        assert wait_until(lambda: len(_pods(env)) == 5)  # router 2 + one prefill replica
        fault = env.server.faults.add(verb="create", resource="podgangs.scheduler.grove.io", status=403,
                                      times=None, message=REFUSAL)
        env.scale(TARGET, 2)

        def blocked() -> dict[str, Any]:
            return _condition(env.target(TARGET), "ScaleBlocked")

        assert wait_until(lambda: blocked().get("status") == "True", timeout=20), blocked()
        cond = blocked()
        assert cond["reason"] == "CreateRefused", cond
        assert "cannot set blockOwnerDeletion" in cond["message"] and "gang disagg-0-prefill-0 was not created" in cond["message"], cond
        # The workload's record is written by its own status pass, after the target's: wait for it
        # (read at once, it failed at load 8 with the earlier GangsCreated still there).
        def recorded() -> dict[str, Any]:
            return _condition(env.server.get_object("podcliquesets.gitops.grove.io", env.namespace, "disagg"), "ScaleBlocked")

        assert wait_until(lambda: recorded().get("reason") == "CreateRefused", timeout=20), recorded()
        # Nothing of the refused gang stays: its three pods were deleted again.
        assert wait_until(lambda: len(_pods(env)) == 5), [p["metadata"]["name"] for p in _pods(env)]
        assert _gangs(env) == ["disagg-0"]
        # The refusal lifted: the gang is created whole and the condition clears.
        env.server.faults.remove(fault)
        assert wait_until(lambda: len(_pods(env)) == 8 and len(_gangs(env)) == 2, timeout=90)
        assert wait_until(lambda: blocked().get("status") == "False", timeout=20), blocked()
        assert blocked()["reason"] == "GangsCreated"
    finally:
        manager.__exit__(None, None, None)


def test_a_refused_scale_target_is_said_on_the_workload(tmp_path: Path) -> None:
    """The scale target's own create refused (the same plugin, before the finalizers rule): the
    workload record says ScaleBlocked=True (CreateRefused, the server's message) instead of nothing
    (before: the pass failed with the 403 before any status was written)."""
    src = source(tmp_path, backend="kai-scheduler", group=True, floor=1, top=4, pcs_replicas=1)
    with scaling_env(tmp_path / "live", NS) as env:
        message = ('podcliquescalinggroups.gitops.grove.io "disagg-0-prefill" is forbidden: cannot set '
                   "blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on: , <nil>")
        fault = env.server.faults.add(verb="create", resource="podcliquescalinggroups.gitops.grove.io", status=403,
                                      times=None, message=message)
        env.apply(render_at(src))
        env.start_agent()

        def blocked() -> dict[str, Any]:
            return _condition(env.server.get_object("podcliquesets.gitops.grove.io", NS, "disagg"), "ScaleBlocked")

        assert wait_until(lambda: blocked().get("status") == "True", timeout=20), blocked()
        assert blocked()["reason"] == "CreateRefused"
        assert blocked()["message"].startswith(f"scale target PodCliqueScalingGroup {NS}/disagg-0-prefill was not created: ")
        assert "cannot set blockOwnerDeletion" in blocked()["message"]
        assert env.target(TARGET) is None
        env.server.faults.remove(fault)
        assert wait_until(lambda: env.target(TARGET) is not None, timeout=20)
        assert wait_until(lambda: blocked().get("status") == "False", timeout=20), blocked()
