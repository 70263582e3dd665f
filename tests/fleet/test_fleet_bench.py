"""bench.fleet_bench at a tiny size: the per-cluster incremental counts it reports (the
figures themselves are for BENCHMARKS.md, not asserted)."""

from __future__ import annotations

from pathlib import Path

from bench.fleet_bench import measure


def test_fleet_bench_reports_per_cluster_incremental_counts(tmp_path: Path) -> None:
    result = measure(3, 1, tmp_path)
    assert result["cold"]["expanded"] == {"a": 3, "b": 3}
    assert result["unchanged"]["expanded"] == {"a": 0, "b": 0}
    assert result["operator_config_b"]["expanded"] == {"a": 0, "b": 3}
    assert result["one_workload"]["expanded"] == {"a": 1, "b": 1}
