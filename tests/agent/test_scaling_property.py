"""The property of issue 23: Git's objects plus the agent's, at every live count, are the render.

For workloads hypothesis draws (scaling group or standalone clique autoscaled, floor and
maximum, one or two PodCliqueSet replicas, each gang backend), a real agent runs against the
fake API server with Git's objects applied. For every count N from the floor to the maximum
and back down, written through ``/scale`` with the official client, the namespace must hold
exactly what the render at N holds, applied to a second, fresh server: same objects, and the
same bytes once the fields the API server (uid, resourceVersion, ownerReferences, ...) and
the day-2 loop (scheduling gates) own are removed.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grove_gitops.expand.scaling import PCLQ_KIND, PCSG_KIND
from tests.agent.scaling_env import normalised, render_at, scaling_env, start_server, wait_until
from tests.support import write_source

NS = "llm"
#: Gang backends by scheduler profile name; the PodCliqueSet uses the default profile.
BACKENDS = ("kai-scheduler", "volcano", "default-scheduler", "scheduler-plugins-scheduler", "koord-scheduler")


def _clique(name: str, replicas: int, min_available: int | None = None, **extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "replicas": replicas,
        "podSpec": {"containers": [{"name": "main", "image": "busybox:1.36", "resources": {"requests": {"cpu": "1"}}}]},
        **extra,
    }
    if min_available is not None:
        spec["minAvailable"] = min_available
    spec["roleName"] = name
    return {"name": name, "spec": spec}


def source(tmp: Path, *, backend: str, group: bool, floor: int, top: int, pcs_replicas: int) -> Path:
    """A PodCliqueSet with a router clique and a leader/worker scaling group, one of them autoscaled."""
    scaling = {"minReplicas": floor, "maxReplicas": top}
    router = _clique("router", floor if not group else 2, 1, **({} if group else {"autoScalingConfig": scaling}))
    group_cfg: dict[str, Any] = {"name": "prefill", "cliqueNames": ["leader", "worker"], "replicas": floor if group else 1,
                                 "minAvailable": 1}
    if group:
        group_cfg["scaleConfig"] = scaling
    pcs = {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueSet",
        "metadata": {"name": "disagg", "namespace": NS, "labels": {"kai.scheduler/queue": "default"}},
        "spec": {
            "replicas": pcs_replicas,
            "template": {
                "cliques": [router, _clique("leader", 1), _clique("worker", 2, 2)],
                "podCliqueScalingGroups": [group_cfg],
            },
        },
    }
    opcfg = {
        "apiVersion": "operator.config.grove.io/v1alpha1",
        "kind": "OperatorConfiguration",
        "scheduler": {"defaultProfileName": backend, "profiles": [{"name": b} for b in BACKENDS]},
    }
    docs = [pcs, opcfg]
    if backend == "volcano":
        docs.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "default"},
                     "spec": {"weight": 1}})
    return write_source(tmp / "src", {"src.yaml": yaml.safe_dump_all(docs, sort_keys=False)})


def _kinds(objects: list[dict[str, Any]]) -> set[tuple[str, str]]:
    return {(o["apiVersion"], o["kind"]) for o in objects if (o.get("metadata") or {}).get("namespace")}


def _reference(tmp: Path, objects: list[dict[str, Any]]) -> dict[tuple[str, str], str]:
    """The render at N applied to a fresh server, read back normalised."""
    from tests.agent.scaling_env import ScalingEnv

    env = ScalingEnv.__new__(ScalingEnv)
    env.server = start_server(tmp)
    try:
        from grove_gitops.agent.kube import Kube

        env.kube = Kube(env.server.api_client())
        env.namespace = NS
        env.kube.raw("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
        env.apply(objects)
        return {k: normalised(o) for k, o in env.objects(_kinds(objects)).items()}
    finally:
        env.server.stop()


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    backend=st.sampled_from(BACKENDS),
    group=st.booleans(),
    floor=st.integers(1, 2),
    span=st.integers(1, 3),
    pcs_replicas=st.integers(1, 2),
)
def test_git_plus_agent_is_the_render_at_every_count(
    backend: str, group: bool, floor: int, span: int, pcs_replicas: int
) -> None:
    top = floor + span
    with tempfile.TemporaryDirectory() as raw:
        tmp = Path(raw)
        src = source(tmp, backend=backend, group=group, floor=floor, top=top, pcs_replicas=pcs_replicas)
        git = render_at(src)
        kind, unit = (PCSG_KIND, "prefill") if group else (PCLQ_KIND, "router")
        kinds = _kinds(render_at(src, {(i, unit): top for i in range(pcs_replicas)}))
        with scaling_env(tmp / "live", NS) as env:
            env.apply(git)
            env.start_agent()
            for n in [*range(floor, top + 1), *range(top - 1, floor - 1, -1)]:
                counts = {(i, unit): n for i in range(pcs_replicas)}
                expected = _reference(tmp / f"ref-{n}", render_at(src, counts))
                for i in range(pcs_replicas):
                    assert wait_until(lambda i=i: env.target(f"disagg-{i}-{unit}", kind) is not None)
                    env.scale(f"disagg-{i}-{unit}", n, kind)

                def converged(expected: dict[tuple[str, str], str] = expected) -> bool:
                    live = {k: normalised(o) for k, o in env.objects(kinds).items()}
                    return live == expected

                ok = wait_until(converged, timeout=30)
                if not ok:
                    live = {k: normalised(o) for k, o in env.objects(kinds).items()}
                    missing = sorted(set(expected) - set(live))
                    extra = sorted(set(live) - set(expected))
                    differ = sorted(k for k in set(live) & set(expected) if live[k] != expected[k])
                    raise AssertionError(f"N={n}: missing {missing}, extra {extra}, differ {differ[:3]}: "
                                         f"{[(live[k], expected[k]) for k in differ[:1]]}")
