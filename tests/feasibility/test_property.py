"""Property: a gang on an inventory built with a node of exactly each needed pod's size fits.

First-fit decreasing over pod sizes cannot strand a pod when every pod has a node of its own
size; smaller decoy racks around it must not confuse the search either.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.feasibility.helpers import clique, feasibility, inventory, pack, pcs, pool, source

CLIQUE = st.tuples(
    st.integers(1, 4),  # replicas
    st.integers(0, 8),  # GPUs per pod
    st.integers(1, 16),  # cpus per pod
    st.booleans(),  # minAvailable below replicas
    st.booleans(),  # preferred host
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cliques=st.lists(CLIQUE, min_size=1, max_size=3), gang_rack=st.booleans(), decoys=st.integers(0, 2))
def test_exact_inventory_always_fits(cliques: list[tuple[int, int, int, bool, bool]], gang_rack: bool, decoys: int) -> None:
    specs: list[dict[str, Any]] = []
    pools: list[dict[str, Any]] = []
    for i, (replicas, gpus, cpus, below, host) in enumerate(cliques):
        need = max(1, replicas - 1) if below else replicas
        specs.append(
            clique(
                f"c{i}",
                replicas,
                gpus,
                cpu=str(cpus),
                min_available=need if below else None,
                topology=pack(preferred="host") if host else None,
            )
        )
        for j in range(need):
            pools.append(pool(f"p{i}-{j}", 1, gpus, rack="main", cpu=str(cpus)))
    for d in range(decoys):
        pools.append(pool(f"decoy{d}", 1, 1, rack=f"decoy{d}", cpu="1"))
    for p in pools:
        p["allocatable"]["memory"] = "1Gi"
    workload = pcs("llm", specs, topology=pack("rack") if gang_rack else None)
    with tempfile.TemporaryDirectory() as tmp:
        code, answer = feasibility(source(Path(tmp), [workload], inventory(*pools)))
    assert code == 0, answer
