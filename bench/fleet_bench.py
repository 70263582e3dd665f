"""Fleet benchmark: is rendering still incremental per cluster? (issue 12)

    python -m bench.fleet_bench --size N --repeat R

Builds ``bench.generate``'s N-PodCliqueSet source with two Cluster objects that both run every
workload: ``a`` (the generator's configuration, Kubernetes 1.36) and ``b`` (its own copy of the
OperatorConfiguration, Kubernetes 1.37). One long-lived :class:`RenderCache`, as the controller
keeps, renders the fleet in memory (``render_source_tree``, what the controller commits):

* ``cold``: the first render (nothing cached);
* ``unchanged``: the same source again;
* ``operator_config_b``: cluster b's OperatorConfiguration edited (``logLevel`` toggled);
* ``one_workload``: one PodCliqueSet's ``spec.replicas`` edited.

For each, the median seconds and, per cluster, how many PodCliqueSets were expanded again
(cache misses). Expected: an edit of b's configuration re-renders b's N only, a workload edit
one PodCliqueSet per cluster. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from bench.generate import generate
from grove_gitops.cache import RenderCache
from grove_gitops.pipeline import Outcome
from grove_gitops.sourcetree import render_source_tree

CHANGED = "workloads/ns-00/w00000.yaml"


def make_fleet(root: Path, size: int) -> Path:
    generate(root, size)
    (root / "config" / "b").mkdir()
    (root / "config" / "b" / "operator.yaml").write_text((root / "config" / "operator.yaml").read_text())
    render = yaml.safe_load((root / "config" / "render.yaml").read_text())
    render["kubernetesVersion"] = "1.37"
    (root / "config" / "b" / "render.yaml").write_text(yaml.safe_dump(render))
    for name, folder in (("a", "config"), ("b", "config/b")):
        cluster = {
            "apiVersion": "gitops.grove.io/v1alpha1",
            "kind": "Cluster",
            "metadata": {"name": name},
            "spec": {
                "operatorConfiguration": {"path": f"{folder}/operator.yaml"},
                "renderConfiguration": {"path": f"{folder}/render.yaml"},
                "clusterTopologyBindings": [{"path": "config/topology.yaml"}],
                "workloads": {"paths": ["workloads/"]},
            },
        }
        (root / f"cluster-{name}.yaml").write_text(yaml.safe_dump(cluster))
    return root


def _expanded(outcome: Outcome) -> dict[str, int]:
    """PodCliqueSets each cluster had to expand (not taken from the cache)."""
    return {c.name: sum(1 for item in c.plan.items if item.pcs is not None) for c in outcome.clusters}


def _render(root: Path, cache: RenderCache) -> tuple[float, dict[str, int], int]:
    cache.start()
    started = time.perf_counter()
    outcome = render_source_tree(root, cache=cache)
    elapsed = time.perf_counter() - started
    cache.finish()
    return elapsed, _expanded(outcome), outcome.tree.objects


def _toggle(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    path.write_text(text.replace(old, new) if old in text else text.replace(new, old))


def measure(size: int, repeat: int, workroot: Path) -> dict[str, Any]:
    root = make_fleet(workroot / "fleet", size)
    cache = RenderCache()
    cold, cold_counts, objects = _render(root, cache)
    series: dict[str, list[float]] = {"unchanged": [], "operator_config_b": [], "one_workload": []}
    counts: dict[str, dict[str, int]] = {}
    op_b = root / "config" / "b" / "operator.yaml"
    op_b.write_text(op_b.read_text() + "logLevel: info\n")
    _render(root, cache)  # the edit's first version, so every repeat toggles between two cached states
    for _ in range(repeat):
        seconds, counts["unchanged"], _ = _render(root, cache)
        series["unchanged"].append(seconds)
        _toggle(op_b, "logLevel: info", "logLevel: debug")
        seconds, counts["operator_config_b"], _ = _render(root, cache)
        series["operator_config_b"].append(seconds)
        _toggle(root / CHANGED, "replicas: 1\n", "replicas: 2\n")
        seconds, counts["one_workload"], _ = _render(root, cache)
        series["one_workload"].append(seconds)
    return {
        "podcliquesets": size,
        "clusters": 2,
        "objects": objects,
        "cold": {"seconds": round(cold, 4), "expanded": cold_counts},
        **{
            name: {"median_seconds": round(statistics.median(values), 4), "expanded": counts[name]}
            for name, values in series.items()
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="grove-gitops-fleet-bench-") as tmp:
        print(json.dumps(measure(args.size, args.repeat, Path(tmp)), sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
