"""Feasibility benchmark: N PodCliqueSets (``bench.generate``) on M nodes in 4 topology levels.

    python -m bench.feasibility_bench --size 1000 --nodes 2000 [--scales 0.25,0.5,1]

For each scale s, ``s*N`` PodCliqueSets against ``s*M`` nodes: the time of what
``grove-gitops feasibility`` does, split into load + validate (``plan_source``), expansion of
every PodCliqueSet in memory, and the placement itself. One JSON line on stdout.

The nodes: 8 per rack, 25 racks per block, blocks of 200 nodes, two zones; each node has
8 GPUs, 128 CPUs and 2 TiB, and carries the labels of both generated topologies.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from bench.generate import generate

NODES_PER_RACK = 8
RACKS_PER_BLOCK = 25


def node_inventory(nodes: int) -> dict[str, Any]:
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
                "allocatable": {"cpu": "128", "memory": "2Ti", "nvidia.com/gpu": "8", "pods": "110"},
            }
        )
    return {"apiVersion": "gitops.grove.io/v1alpha1", "kind": "NodeInventory", "metadata": {"name": "bench"}, "pools": pools}


def measure(size: int, nodes: int, tmp: Path) -> dict[str, Any]:
    from grove_gitops.feasibility.check import check_objects
    from grove_gitops.render import plan_source

    root = generate(tmp / f"source-{size}", size)
    (root / "inventory.yaml").write_text(yaml.safe_dump(node_inventory(nodes), sort_keys=False))
    t0 = time.perf_counter()
    plan = plan_source(root)
    t1 = time.perf_counter()
    objects = [o.obj for item in plan.items for o in plan.expand(item)[0]]
    t2 = time.perf_counter()
    files = {item.key: item.file for item in plan.items}
    result = check_objects(objects, plan.inputs.source, plan.inputs.bindings, files)
    t3 = time.perf_counter()
    pods = sum(1 for o in objects if o.get("kind") == "Pod")
    return {
        "podcliquesets": len(plan.items),
        "nodes": len(result.inventory.nodes),
        "gangs": len(result.results),
        "fitting_gangs": sum(r.fits for r in result.results),
        "pods": pods,
        "load_validate_s": t1 - t0,
        "expand_s": t2 - t1,
        "placement_s": t3 - t2,
        "total_s": t3 - t0,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.feasibility_bench", description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1000)
    parser.add_argument("--nodes", type=int, default=2000)
    parser.add_argument("--scales", default="0.25,0.5,1", help="fractions of --size and --nodes to measure")
    args = parser.parse_args(argv)
    scales = [float(s) for s in args.scales.split(",") if s.strip()]
    runs = []
    with tempfile.TemporaryDirectory(prefix="grove-feas-bench-") as tmp:
        for scale in scales:
            size, nodes = max(1, round(args.size * scale)), max(1, round(args.nodes * scale))
            run = measure(size, nodes, Path(tmp))
            runs.append(run)
            print(f"[feasibility] {size} PCS / {nodes} nodes: {run['total_s']:.2f} s", file=sys.stderr, flush=True)
    print(json.dumps({"size": args.size, "nodes": args.nodes, "runs": runs}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
