"""bench.rollout_trace splits a slow rollout step into its phases (issue 35.1): each phase is
the gap between two recorded moments of the same step, and the pauses that overlapped it are
counted. Synthetic records, as the two processes write them."""

from __future__ import annotations

from bench.rollout_trace import phases


def test_a_slow_step_is_split_into_its_phases() -> None:
    world = [
        ["commit", 10.00, 500, "MODIFIED", "new-0"],  # the replacement's Ready status
        ["sent", 10.05, 500],  # down the agent's pod watch
        ["request", 10.40, 10.70, "DELETE", "old-1"],
        ["commit", 10.60, 510, "DELETED", "old-1"],
        ["gc", 10.45, 10.55, 0],  # the world's collector, while the DELETE waited
        ["commit", 20.00, 600, "MODIFIED", "new-2"],  # a fast step: not split
        ["commit", 20.01, 601, "DELETED", "old-3"],
    ]
    agent = [
        ["event", 10.10, 500, "MODIFIED", "new-0"],
        ["pass", 10.08, 10.12, 0.04, 3, 3],  # a pass already under way when the event came
        ["pass", 10.20, 10.35, 0.10, 2, 1],  # the one that acts
        ["delete", 10.30, 10.71, "old-1"],
        ["lease", 9.0, 9.5],  # before the step
    ]
    steps = [
        {"from_rv": 500, "to_rv": 510, "pcs": "p", "old": "old-1", "bench_s": 0.7},
        {"from_rv": 600, "to_rv": 601, "pcs": "q", "old": "old-3", "bench_s": 0.02},
    ]
    split = phases(world, agent, steps)
    assert len(split["steps"]) == 1
    row = split["steps"][0]
    assert row["server_s"] == 0.6
    assert (row["a_sent"], row["a2_taken"], row["b_pass_start"], row["c_delete_sent"], row["d_committed"]) == (
        0.05, 0.05, 0.1, 0.1, 0.3)
    assert row["d_request_received"] == 0.1
    assert row["passes_between"] == 1 and row["acting_pass_resync"] == 1
    assert (row["world_gc_s"], row["agent_gc_s"], row["lease_s"]) == (0.1, 0.0, 0.0)
    summary = split["summary"]
    assert summary["slow_steps"] == 1 and summary["phase_largest_in"]["d_committed"] == 1
    assert summary["with_world_gc"] == 1 and summary["with_lease"] == 0
