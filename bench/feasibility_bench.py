"""Feasibility benchmark: N PodCliqueSets (``bench.generate``) on M nodes in 4 topology levels.

    python -m bench.feasibility_bench --size 1000 --nodes 2000 [--scales 0.25,0.5,1]

For each scale s, ``s*N`` PodCliqueSets against ``s*M`` nodes: the time of what
``grove-gitops feasibility`` does, split into load + validate (``plan_source``), expansion of
every PodCliqueSet in memory (one at a time) into gangs, and the placement itself. One JSON
line on stdout, with the peak RSS of the process.

The nodes: 8 per rack, 25 racks per block, blocks of 200 nodes, two zones; each node has
8 GPUs, 128 CPUs and 2 TiB, and carries the labels of both generated topologies.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from bench.generate import generate

NODES_PER_RACK = 8
RACKS_PER_BLOCK = 25


def node_inventory(nodes: int, gpus: int = 8) -> dict[str, Any]:
    """``nodes`` nodes (rounded up to whole racks) as one NodeInventory, a pool per rack."""
    racks = max(1, -(-nodes // NODES_PER_RACK))
    blocks = max(1, -(-racks // RACKS_PER_BLOCK))
    pools = []
    for r in range(racks):
        block = r // RACKS_PER_BLOCK
        zone = f"zone-{block * 2 // blocks}"
        labels = {"topology.kubernetes.io/zone": zone}
        for fabric in ("fabric-a", "fabric-b"):
            labels[f"{fabric}.example.com/block"] = f"block-{block}"
            labels[f"{fabric}.example.com/rack"] = f"rack-{r}"
        pools.append(
            {
                "name": f"rack-{r}",
                "count": NODES_PER_RACK,
                "labels": labels,
                "allocatable": {"cpu": "128", "memory": "2Ti", "nvidia.com/gpu": str(gpus), "pods": "110"},
            }
        )
    return {"apiVersion": "gitops.grove.io/v1alpha1", "kind": "NodeInventory", "metadata": {"name": "bench"}, "pools": pools}


def measure(size: int, nodes: int, tmp: Path, gpus: int = 8) -> dict[str, Any]:
    from grove_gitops.feasibility.check import place_gangs
    from grove_gitops.planfeasibility import plan_gangs
    from grove_gitops.render import plan_source

    root = generate(tmp / f"source-{size}", size)
    (root / "inventory.yaml").write_text(yaml.safe_dump(node_inventory(nodes, gpus), sort_keys=False))
    c0, t0 = time.process_time(), time.perf_counter()
    plan = plan_source(root)
    c1, t1 = time.process_time(), time.perf_counter()
    gangs = plan_gangs(plan)
    c2, t2 = time.process_time(), time.perf_counter()
    result = place_gangs(gangs, plan.inputs.source, plan.inputs.bindings)
    c3, t3 = time.process_time(), time.perf_counter()
    pods = sum(g.scope.pods() + g.scope.extra_pods() for g in gangs)
    return {
        "podcliquesets": len(plan.items),
        "nodes": result.inventory.node_count,
        "gangs": len(result.results),
        "fitting_gangs": sum(r.fits for r in result.results),
        "pods": pods,
        "load_validate_s": t1 - t0,
        "expand_s": t2 - t1,
        "placement_s": t3 - t2,
        "total_s": t3 - t0,
        # CPU time of this process: on a shared machine the wall clock includes waiting for a core.
        "load_validate_cpu_s": c1 - c0,
        "expand_cpu_s": c2 - c1,
        "placement_cpu_s": c3 - c2,
        "total_cpu_s": c3 - c0,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.feasibility_bench", description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1000)
    parser.add_argument("--nodes", type=int, default=2000)
    parser.add_argument("--scales", default="0.25,0.5,1", help="fractions of --size and --nodes to measure")
    parser.add_argument(
        "--gpus", type=int, default=8, help="GPUs per node (the generated workload needs about 80 per node to fit)"
    )
    args = parser.parse_args(argv)
    scales = [float(s) for s in args.scales.split(",") if s.strip()]
    runs = []
    with tempfile.TemporaryDirectory(prefix="grove-feas-bench-") as tmp:
        for scale in scales:
            size, nodes = max(1, round(args.size * scale)), max(1, round(args.nodes * scale))
            run = measure(size, nodes, Path(tmp), args.gpus)
            runs.append(run)
            print(f"[feasibility] {size} PCS / {nodes} nodes: {run['total_s']:.2f} s", file=sys.stderr, flush=True)
    print(json.dumps({"size": args.size, "nodes": args.nodes, "runs": runs}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
