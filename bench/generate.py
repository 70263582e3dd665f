"""Synthetic source repositories of N PodCliqueSets in realistic inference shapes.

Shapes rotate deterministically (seeded by the index): disaggregated prefill/decode with
scaling groups and a router, aggregated multi-node leader/worker groups, and single-node
replicas; 8 to 64 pods each; KAI (with topology constraints), Volcano and the default
scheduler; two ClusterTopologyBindings. The same N always gives the same bytes.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

import yaml

OPERATOR_CONFIG = {
    "apiVersion": "operator.config.grove.io/v1alpha1",
    "kind": "OperatorConfiguration",
    "topologyAwareScheduling": {"enabled": True},
    "scheduler": {
        "defaultProfileName": "default-scheduler",
        "profiles": [{"name": "default-scheduler"}, {"name": "kai-scheduler"}, {"name": "volcano"}],
    },
}
RENDER_CONFIG = {"apiVersion": "gitops.grove.io/v1alpha1", "kind": "RenderConfiguration", "kubernetesVersion": "1.36"}
BINDINGS = [
    {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "ClusterTopologyBinding",
        "metadata": {"name": name},
        "spec": {
            "levels": [
                {"domain": "zone", "key": "topology.kubernetes.io/zone"},
                {"domain": "block", "key": f"{name}.example.com/block"},
                {"domain": "rack", "key": f"{name}.example.com/rack"},
                {"domain": "host", "key": "kubernetes.io/hostname"},
            ]
        },
    }
    for name in ("fabric-a", "fabric-b")
]


def _container(name: str, gpus: int, rng: random.Random) -> dict[str, Any]:
    return {
        "name": name,
        "image": f"ghcr.io/example/vllm:0.9.{rng.randint(0, 4)}",
        "args": [f"--role={name}", f"--tensor-parallel-size={gpus}", "--port=8000"],
        "env": [{"name": "MODEL", "value": "meta-llama/Llama-3.1-70B"}, {"name": "LOG_LEVEL", "value": "info"}],
        "ports": [{"containerPort": 8000, "name": "http"}],
        "resources": {"limits": {"nvidia.com/gpu": str(gpus)}, "requests": {"cpu": "8", "memory": "64Gi"}},
        "readinessProbe": {"httpGet": {"path": "/health", "port": 8000}, "periodSeconds": 10},
    }


def _clique(name: str, replicas: int, gpus: int, rng: random.Random, after: list[str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "roleName": name,
        "replicas": replicas,
        "podSpec": {"containers": [_container(name, gpus, rng)], "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]},
    }
    if after:
        spec["startsAfter"] = after
    return {"name": name, "labels": {"role": name}, "spec": spec}


def podcliqueset(i: int) -> dict[str, Any]:
    rng = random.Random(i)
    shape = i % 3
    backend = ["kai-scheduler", "volcano", "default-scheduler"][(i // 3) % 3]
    name = f"w{i:05d}"
    labels = {"app": name, "team": f"team-{i % 7}"}
    template: dict[str, Any] = {"cliqueStartupType": "CliqueStartupTypeExplicit", "priorityClassName": "inference"}
    if shape == 0:  # disaggregated: router + prefill group + decode group (8..64 pods)
        workers = rng.randint(1, 7)
        prefill_replicas = rng.randint(1, 4)
        template["cliques"] = [
            _clique("router", 2, 0, rng, ["pleader"]),
            _clique("pleader", 1, 8, rng),
            _clique("pworker", workers, 8, rng, ["pleader"]),
            _clique("dleader", 1, 8, rng),
            _clique("dworker", workers, 8, rng, ["dleader"]),
        ]
        template["podCliqueScalingGroups"] = [
            {"name": "prefill", "cliqueNames": ["pleader", "pworker"], "replicas": prefill_replicas, "minAvailable": 1},
            {"name": "decode", "cliqueNames": ["dleader", "dworker"], "replicas": rng.randint(1, 3), "minAvailable": 1},
        ]
    elif shape == 1:  # aggregated multi-node
        template["cliques"] = [_clique("leader", 1, 8, rng), _clique("worker", rng.randint(3, 15), 8, rng, ["leader"])]
        template["podCliqueScalingGroups"] = [
            {"name": "model", "cliqueNames": ["leader", "worker"], "replicas": rng.randint(2, 4), "minAvailable": 1}
        ]
    else:  # single-node replicas behind a frontend
        template["cliques"] = [_clique("frontend", 2, 0, rng), _clique("engine", rng.randint(6, 30), 1, rng)]
    for clique in template["cliques"]:
        if backend != "default-scheduler":
            clique["spec"]["podSpec"]["schedulerName"] = backend
    if backend == "kai-scheduler":
        labels["kai.scheduler/queue"] = f"queue-{i % 5}"
        template["topologyConstraint"] = {"topologyName": f"fabric-{'ab'[i % 2]}", "pack": {"required": "zone"}}
        for group in template.get("podCliqueScalingGroups", []):
            group["topologyConstraint"] = {"pack": {"required": "rack", "preferred": "host"}}
    meta: dict[str, Any] = {"name": name, "namespace": f"ns-{i % 20:02d}", "labels": labels}
    return {"apiVersion": "grove.io/v1alpha1", "kind": "PodCliqueSet", "metadata": meta, "spec": {"replicas": 1, "template": template}}


def generate(root: Path, count: int) -> Path:
    """Write a source tree with ``count`` PodCliqueSets (one file each) under ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "config").mkdir(exist_ok=True)
    dump = lambda data: yaml.dump(data, Dumper=yaml.CSafeDumper, sort_keys=False)  # noqa: E731
    (root / "config" / "operator.yaml").write_text(dump(OPERATOR_CONFIG))
    (root / "config" / "render.yaml").write_text(dump(RENDER_CONFIG))
    (root / "config" / "topology.yaml").write_text(yaml.dump_all(BINDINGS, Dumper=yaml.CSafeDumper, sort_keys=False))
    for i in range(count):
        pcs = podcliqueset(i)
        folder = root / "workloads" / pcs["metadata"]["namespace"]
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{pcs['metadata']['name']}.yaml").write_text(dump(pcs))
    return root


# -- the mid-size tree (issue 35.4): copies of one disaggregated workload -------------------
#: A disaggregated prefill/decode stack like examples/workloads/llm-inference (router, an
#: autoscaled prefill tier of leader + 6 workers, a decode tier), 2 replicas: 53 objects per copy,
#: so 150 copies are the 7,950 objects an outside run measured the render on.
DISAGG_RENDER_CONFIG = {
    "apiVersion": "gitops.grove.io/v1alpha1",
    "kind": "RenderConfiguration",
    "metadata": {"name": "render"},
    "kubernetesVersion": "1.35",
    "defaultNamespace": "default",
    "initContainerImage": "ghcr.io/ai-dynamo/grove/grove-initc:v0.1.0",
    "gitops": "both",
}
DISAGG_OPERATOR_CONFIG = {
    "apiVersion": "operator.config.grove.io/v1alpha1",
    "kind": "OperatorConfiguration",
    "topologyAwareScheduling": {"enabled": True},
    "scheduler": {"defaultProfileName": "kai-scheduler", "profiles": [{"name": "kai-scheduler"}, {"name": "default-scheduler"}]},
}
DISAGG_BINDING = {
    "apiVersion": "grove.io/v1alpha1",
    "kind": "ClusterTopologyBinding",
    "metadata": {"name": "gpu-fabric"},
    "spec": {
        "levels": [
            {"domain": "zone", "key": "topology.kubernetes.io/zone"},
            {"domain": "block", "key": "network.example.com/block"},
            {"domain": "rack", "key": "network.example.com/rack"},
            {"domain": "host", "key": "kubernetes.io/hostname"},
        ]
    },
}


def _disagg_clique(name: str, role: str, replicas: int, args: list[str], after: list[str] | None = None) -> dict[str, Any]:
    container = {
        "name": name,
        "image": "ghcr.io/example/vllm:0.9.1",
        "args": args,
        "resources": {"limits": {"nvidia.com/gpu": "8"}},
    }
    spec: dict[str, Any] = {"roleName": role, "replicas": replicas, "podSpec": {"containers": [container]}}
    if after:
        spec["startsAfter"] = after
    return {"name": name, "spec": spec}


def disaggregated_pcs(i: int) -> dict[str, Any]:
    """Copy ``i`` of the disaggregated workload (only its name differs)."""
    name = f"llama-{i:04d}"
    router = {
        "name": "router",
        "labels": {"role": "router"},
        "spec": {
            "roleName": "router",
            "replicas": 2,
            "minAvailable": 1,
            "startsAfter": ["pleader", "dleader"],
            "podSpec": {
                "containers": [
                    {
                        "name": "router",
                        "image": "ghcr.io/example/llm-router:1.4.2",
                        "args": ["--prefill-service=$(GROVE_HEADLESS_SERVICE)"],
                        "ports": [{"containerPort": 8000, "name": "http"}],
                        "resources": {"requests": {"cpu": "2", "memory": "4Gi"}},
                    }
                ]
            },
        },
    }
    pworker = _disagg_clique("pworker", "prefill-worker", 6, ["--role=prefill-worker", "--leader=$(GROVE_PCLQ_NAME)"], ["pleader"])
    pworker["topologyConstraint"] = {"pack": {"preferred": "host"}}
    template: dict[str, Any] = {
        "cliqueStartupType": "CliqueStartupTypeExplicit",
        "priorityClassName": "inference-high",
        "terminationDelay": "30m",
        "topologyConstraint": {"topologyName": "gpu-fabric", "pack": {"required": "zone"}},
        "cliques": [
            router,
            _disagg_clique("pleader", "prefill-leader", 1, ["--role=prefill-leader", "--tensor-parallel-size=8"]),
            pworker,
            _disagg_clique("dleader", "decode-leader", 1, ["--role=decode-leader", "--tensor-parallel-size=8"]),
            _disagg_clique("dworker", "decode-worker", 1, ["--role=decode-worker"], ["dleader"]),
        ],
        "podCliqueScalingGroups": [
            {
                "name": "prefill",
                "cliqueNames": ["pleader", "pworker"],
                "replicas": 2,
                "minAvailable": 1,
                "scaleConfig": {
                    "maxReplicas": 4,
                    "metrics": [
                        {
                            "type": "External",
                            "external": {
                                "metric": {"name": "vllm_prefill_queue_depth", "selector": {"matchLabels": {"model": "llama-3-70b"}}},
                                "target": {"type": "AverageValue", "averageValue": "8"},
                            },
                        }
                    ],
                },
                "topologyConstraint": {"pack": {"required": "rack"}},
            },
            {
                "name": "decode",
                "cliqueNames": ["dleader", "dworker"],
                "replicas": 1,
                "minAvailable": 1,
                "topologyConstraint": {"pack": {"required": "block"}},
            },
        ],
    }
    labels = {"app": name, "team": "serving", "kai.scheduler/queue": "inference"}
    meta = {"name": name, "namespace": "inference", "labels": labels}
    return {"apiVersion": "grove.io/v1alpha1", "kind": "PodCliqueSet", "metadata": meta, "spec": {"replicas": 2, "template": template}}


def generate_disaggregated(root: Path, copies: int) -> Path:
    """Write a source tree of ``copies`` copies of :func:`disaggregated_pcs` (one file each,
    one namespace) under ``root``: the mid-size tree of issue 35.4 at 150 copies."""
    root.mkdir(parents=True, exist_ok=True)
    for folder in ("config", "topology", "workloads"):
        (root / folder).mkdir(exist_ok=True)
    dump = lambda data: yaml.dump(data, Dumper=yaml.CSafeDumper, sort_keys=False)  # noqa: E731
    (root / "config" / "render.yaml").write_text(dump(DISAGG_RENDER_CONFIG))
    (root / "config" / "operator.yaml").write_text(dump(DISAGG_OPERATOR_CONFIG))
    (root / "topology" / "gpu-fabric.yaml").write_text(dump(DISAGG_BINDING))
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "inference"}}
    (root / "workloads" / "namespace.yaml").write_text(dump(namespace))
    for i in range(copies):
        (root / "workloads" / f"llama-{i:04d}.yaml").write_text(dump(disaggregated_pcs(i)))
    return root


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[3] == "--disaggregated":
        generate_disaggregated(Path(sys.argv[1]), int(sys.argv[2]))
    else:
        generate(Path(sys.argv[1]), int(sys.argv[2]))
