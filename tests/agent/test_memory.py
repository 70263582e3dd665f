"""The agent's memory is one per workload and stays bounded: a workload gone from the
cluster is forgotten, and nothing of one workload is ever dropped by a pass over another."""

from __future__ import annotations

from grove_gitops.agent.actions import Memories


def _memories() -> Memories:
    memories = Memories()
    for pcs in ("kept", "removed"):
        memory = memories.of(("ns", pcs))
        memory.breach_since[f"ns/{pcs}/PodClique/{pcs}-0-a"] = 1.0
        memory.ever_healthy.add(f"ns/{pcs}/PodCliqueScalingGroup/{pcs}-0-sg")
        memory.rollout_steps[f"ns/{pcs}/0"] = (3, 4)
        memory.unwanted_since[("ns", f"{pcs}-0-a-0-abc")] = 2.0
        memory.resumed.add(("ns", f"{pcs}-0"))
        memory.warned.add(f"a problem of {pcs}")
    return memories


def test_retain_forgets_a_removed_podcliqueset_and_keeps_the_rest() -> None:
    memories = _memories()
    memories.retain({("ns", "kept")})
    assert set(memories.workloads) == {("ns", "kept")}
    memory = memories.of(("ns", "kept"))
    assert memory.breach_since == {"ns/kept/PodClique/kept-0-a": 1.0}
    assert memory.ever_healthy == {"ns/kept/PodCliqueScalingGroup/kept-0-sg"}
    assert memory.rollout_steps == {"ns/kept/0": (3, 4)}
    assert memory.unwanted_since == {("ns", "kept-0-a-0-abc"): 2.0}
    assert memory.resumed == {("ns", "kept-0")}
    assert memory.warned == {"a problem of kept"}  # pruned with its workload, not kept for ever


def test_workloads_are_keyed_by_namespace_and_name() -> None:
    """``ns/kept`` must not keep ``ns/kept-2``'s entries, nor another namespace's."""
    memories = Memories()
    for key in (("ns", "kept-2"), ("other", "kept"), ("ns", "kept")):
        memories.of(key).breach_since[f"{key[0]}/{key[1]}/PodClique/x"] = 1.0
    memories.retain({("ns", "kept")})
    assert list(memories.workloads) == [("ns", "kept")]
    assert memories.of(("ns", "kept-2")).breach_since == {}  # comes back empty: starts afresh
