"""Issue 31, points 2 and 6: the agent's limits are its own, its work per pass is bounded, and
it renders each workload once per change of inputs or counts.

- A record that carries a RenderConfiguration raising ``maxPodsPerPodCliqueSet`` to 200,000,
  with an autoscaled group starting at its maximum, is refused by the agent's default limits
  (``Ready=False``, an ``InvalidWorkload`` Event) and nothing is created for it.
- A large scale-out proceeds in steps of at most the agent's budget per pass, and another
  workload's scale-out is served meanwhile.
- 40 records are rendered 40 times, however many passes go over them.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from grove_gitops.agent.scaling.expansion import Expander
from grove_gitops.agent.scaling.limits import ScalingLimits, with_limits
from grove_gitops.agent.scaling.workload import parse
from grove_gitops.expand.scaling import PCSG_KIND
from tests.agent.scaling_env import ScalingEnv, render_at, scaling_env, wait_until
from tests.agent.test_scaling_property import BACKENDS, _clique
from tests.support import write_source

NS = "llm"


def _pcs(name: str, *, group: dict[str, Any] | None = None, router: dict[str, Any] | None = None) -> dict[str, Any]:
    """A PodCliqueSet: a router clique and a leader/worker scaling group (3 pods a replica)."""
    group_cfg: dict[str, Any] = {"name": "prefill", "cliqueNames": ["leader", "worker"], "replicas": 1,
                                 "minAvailable": 1, **(group or {})}
    return {
        "apiVersion": "grove.io/v1alpha1", "kind": "PodCliqueSet",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"replicas": 1, "template": {
            "cliques": [_clique("router", **(router or {"replicas": 1, "min_available": 1})), _clique("leader", 1),
                        _clique("worker", 2, 2)],
            "podCliqueScalingGroups": [group_cfg]}},
    }


def _source(tmp: Path, *pcs: dict[str, Any], render_config: dict[str, Any] | None = None) -> Path:
    opcfg = {"apiVersion": "operator.config.grove.io/v1alpha1", "kind": "OperatorConfiguration",
             "scheduler": {"defaultProfileName": "default-scheduler", "profiles": [{"name": b} for b in BACKENDS]}}
    docs = [*pcs, opcfg, *([render_config] if render_config else [])]
    return write_source(tmp / "src", {"src.yaml": yaml.safe_dump_all(docs, sort_keys=False)})


def _pods(env: ScalingEnv, part_of: str | None = None, owned: bool | None = None) -> list[dict[str, Any]]:
    out = []
    for pod in env.server.store.list_objects("pods", NS):
        meta = pod["metadata"]
        if meta.get("deletionTimestamp") or (part_of and meta["labels"].get("app.kubernetes.io/part-of") != part_of):
            continue
        if owned is not None and bool(meta.get("ownerReferences")) != owned:
            continue
        out.append(pod)
    return out


def _condition(obj: dict[str, Any] | None, kind: str) -> dict[str, Any]:
    return next((c for c in ((obj or {}).get("status") or {}).get("conditions") or [] if c["type"] == kind), {})


# ------------------------------------------------------------------------------ 31.2: the limits
def test_a_record_that_raises_its_own_limits_is_refused_and_nothing_is_created(tmp_path: Path) -> None:
    """The issue's attack: the record's RenderConfiguration allows 200,000 pods and its group
    of 3-pod replicas starts at 8,000 (24,000 pods); the agent's default is 20,000."""
    attack = _pcs("attack", group={"replicas": 8000, "scaleConfig": {"minReplicas": 1, "maxReplicas": 8000}})
    raised = {"apiVersion": "gitops.grove.io/v1alpha1", "kind": "RenderConfiguration",
              "limits": {"maxPodsPerPodCliqueSet": 200_000, "maxPodsPerRender": 200_000}}
    src = _source(tmp_path, attack, render_config=raised)
    git = render_at(src)  # Git holds the floor (one replica): what Argo CD applies
    with scaling_env(tmp_path / "live", NS) as env:
        env.apply(git)
        git_pods = {p["metadata"]["name"] for p in _pods(env)}
        env.start_agent()

        def refused() -> bool:
            record = env.server.get_object("podcliquesets.gitops.grove.io", NS, "attack")
            return _condition(record, "Ready").get("reason") == "InvalidWorkload"

        assert wait_until(refused, timeout=60)
        record = env.server.get_object("podcliquesets.gitops.grove.io", NS, "attack")
        ready = _condition(record, "Ready")
        assert ready["status"] == "False"
        assert "24001 pods, above the limit of 20000" in ready["message"], ready
        assert "the agent renders with its own limits, not the record's (--max-pods-per-podcliqueset 20000" in (
            ready["message"])
        events = env.server.store.list_objects("events.events.k8s.io", NS)
        assert any(e.get("reason") == "InvalidWorkload" and e["regarding"]["name"] == "attack" for e in events)
        assert env.target("attack-0-prefill", PCSG_KIND) is None
        assert {p["metadata"]["name"] for p in _pods(env)} == git_pods  # not one pod of the agent's
        assert env.agent.scaler is not None and env.agent.healthy()


def test_the_records_limits_are_replaced_by_the_agents_in_every_render_configuration() -> None:
    limits = ScalingLimits(max_pods_per_pcs=7, max_pods_per_render=9)
    record_rc = {"apiVersion": "gitops.grove.io/v1alpha1", "kind": "RenderConfiguration", "gitops": "flux",
                 "limits": {"maxPodsPerPodCliqueSet": 200_000, "maxPodsPerRender": 200_000}}
    pcs = {"apiVersion": "grove.io/v1alpha1", "kind": "PodCliqueSet"}
    out = with_limits([pcs, record_rc], limits)
    assert out == [pcs, {**record_rc, "limits": {"maxPodsPerPodCliqueSet": 7, "maxPodsPerRender": 9}}]
    assert record_rc["limits"]["maxPodsPerPodCliqueSet"] == 200_000  # the record itself is not changed
    # Inputs without a RenderConfiguration get one with the agent's limits and nothing else.
    assert with_limits([pcs], limits)[1] == {"apiVersion": "gitops.grove.io/v1alpha1", "kind": "RenderConfiguration",
                                             "limits": {"maxPodsPerPodCliqueSet": 7, "maxPodsPerRender": 9}}
    with pytest.raises(ValueError, match="writes_per_pass"):
        ScalingLimits(writes_per_pass=0)


def test_the_agent_limits_are_options_with_environment_variables() -> None:
    from grove_gitops.cli import main

    result = CliRunner().invoke(main, ["agent", "--help"])
    assert result.exit_code == 0
    for variable in ("GROVE_GITOPS_AGENT_MAX_PODS_PER_PODCLIQUESET", "GROVE_GITOPS_AGENT_MAX_PODS_PER_RENDER",
                     "GROVE_GITOPS_AGENT_MAX_WRITES_PER_PASS"):
        assert variable in result.output.replace("\n", "").replace(" ", "")
    refused = CliRunner().invoke(main, ["agent", "--max-pods-per-podcliqueset", "200001"])
    assert refused.exit_code == 2 and "200001" in refused.output
    refused = CliRunner().invoke(main, ["agent"], env={"GROVE_GITOPS_AGENT_MAX_WRITES_PER_PASS": "0"})
    assert refused.exit_code == 2 and "max-writes-per-pass" in refused.output


# ------------------------------------------------------------------------------ 31.2: the budget
def test_a_large_scale_out_goes_in_bounded_steps_and_another_workload_is_served_meanwhile(tmp_path: Path) -> None:
    big = _pcs("big", router={"replicas": 240, "min_available": 1, "autoScalingConfig": {"minReplicas": 1,
                                                                                         "maxReplicas": 240}})
    small = _pcs("small", group={"scaleConfig": {"minReplicas": 1, "maxReplicas": 4}})
    src = _source(tmp_path, big, small)
    budget = 12
    with scaling_env(tmp_path / "live", NS, scaling_limits=ScalingLimits(writes_per_pass=budget)) as env:
        scaler = env.agent.scaler
        assert scaler is not None
        created: list[int] = []  # pods created by each pass over "big" (passes run one at a time)
        counter = [0]
        lock = threading.Lock()
        real_sync, real_create = scaler.sync, scaler._create

        def sync(key: tuple[str, str]) -> None:
            with lock:
                counter[0] = 0
            real_sync(key)
            if key == (NS, "big"):
                created.append(counter[0])

        def create(obj: dict[str, Any], owner: Any, memory: Any) -> Any:
            if obj["kind"] == "Pod":
                with lock:
                    counter[0] += 1
            return real_create(obj, owner, memory)

        scaler.sync, scaler._create = sync, create  # type: ignore[method-assign]
        env.apply(render_at(src))
        env.start_agent()
        assert wait_until(lambda: env.target("small-0-prefill") is not None and len(_pods(env, "big", True)) > 0)
        env.scale("small-0-prefill", 3)
        # The small workload's two new replicas (3 pods each) come while "big" is still far
        # from its 239 pods: its events are served between big's steps.
        assert wait_until(lambda: len(_pods(env, "small", True)) == 6, timeout=60)
        assert len(_pods(env, "big", True)) < 200
        assert wait_until(lambda: len(_pods(env, "big", True)) == 239, timeout=120)
        # Its base gang (240 pods with the group's first replica) got its PodGang once whole.
        assert wait_until(lambda: env.server.get_object("podgangs.scheduler.grove.io", NS, "big-0") is not None)
        assert max(created) <= budget, created
        assert sum(1 for n in created if n) >= 239 // budget
        assert env.agent.healthy()


# ------------------------------------------------------------------------------ 31.6: the render cache
def test_forty_records_are_rendered_forty_times_however_many_passes(tmp_path: Path) -> None:
    names = [f"w{i}" for i in range(40)]
    src = _source(tmp_path, *(_pcs(n, group={"scaleConfig": {"minReplicas": 1, "maxReplicas": 3}}) for n in names))
    records = [o for o in render_at(src) if o["kind"] == "PodCliqueSet" and o["apiVersion"] == "gitops.grove.io/v1alpha1"]
    assert len(records) == 40
    workloads = []
    for n, record in enumerate(records):
        record["metadata"].update(uid=f"uid-{n}", generation=1)
        workloads.append(parse(record))
    expander = Expander()
    for _ in range(3):  # three passes over every workload at unchanged counts
        for workload in workloads:
            assert expander.desired(workload, {(0, "prefill"): 2}).units["w" + workload.name[1:] + "-0-prefill"]
    assert expander.renders == 40
    assert len(expander) == 40
    # A count that changes re-renders that workload only, and keeps one entry for it.
    expander.desired(workloads[0], {(0, "prefill"): 3})
    assert expander.renders == 41 and len(expander) == 40


def test_the_kept_renders_stay_within_the_memory_budget(tmp_path: Path) -> None:
    names = [f"m{i}" for i in range(4)]
    src = _source(tmp_path, *(_pcs(n, group={"scaleConfig": {"minReplicas": 1, "maxReplicas": 3}}) for n in names))
    records = [o for o in render_at(src) if o["kind"] == "PodCliqueSet" and o["apiVersion"] == "gitops.grove.io/v1alpha1"]
    workloads = []
    for n, record in enumerate(records):
        record["metadata"].update(uid=f"uid-{n}", generation=1)
        workloads.append(parse(record))
    one = Expander()
    one.desired(workloads[0], {(0, "prefill"): 2})
    size = one.bytes
    assert size > 0
    expander = Expander(ScalingLimits(cache_bytes=2 * size + size // 2))  # room for two
    for workload in workloads:
        expander.desired(workload, {(0, "prefill"): 2})
    assert len(expander) == 2 and expander.bytes <= expander.limits.cache_bytes
    expander.desired(workloads[3], {(0, "prefill"): 2})  # the most recent is kept
    assert expander.renders == 4
    expander.desired(workloads[0], {(0, "prefill"): 2})  # the oldest was dropped
    assert expander.renders == 5
