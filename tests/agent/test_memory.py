"""The agent's memory stays bounded: what belongs to objects gone from the cluster is forgotten."""

from __future__ import annotations

from grove_gitops.agent.actions import Memory


def _memory() -> Memory:
    memory = Memory()
    for pcs in ("kept", "removed"):
        memory.breach_since[f"ns/{pcs}/PodClique/{pcs}-0-a"] = 1.0
        memory.ever_healthy.add(f"ns/{pcs}/PodCliqueScalingGroup/{pcs}-0-sg")
        memory.rollout_total[f"ns/{pcs}/0"] = 7
        memory.unwanted_since[("ns", f"{pcs}-0-a-0-abc")] = 2.0
        memory.resumed.add(("ns", f"{pcs}-0"))
    memory.warned.add("a problem")
    return memory


def test_retain_forgets_a_removed_podcliqueset_and_keeps_the_rest() -> None:
    memory = _memory()
    memory.retain({("ns", "kept")}, pods={("ns", "kept-0-a-0-abc")}, gangs={("ns", "kept-0")})
    assert memory.breach_since == {"ns/kept/PodClique/kept-0-a": 1.0}
    assert memory.ever_healthy == {"ns/kept/PodCliqueScalingGroup/kept-0-sg"}
    assert memory.rollout_total == {"ns/kept/0": 7}
    assert memory.unwanted_since == {("ns", "kept-0-a-0-abc"): 2.0}
    assert memory.resumed == {("ns", "kept-0")}
    assert memory.warned == {"a problem"}  # logged once per process: kept


def test_retain_matches_whole_names_not_prefixes() -> None:
    """``ns/kept`` must not keep ``ns/kept-2``'s entries, nor another namespace's."""
    memory = Memory()
    memory.breach_since = {"ns/kept-2/PodClique/x": 1.0, "other/kept/PodClique/x": 1.0, "ns/kept/PodClique/x": 1.0}
    memory.retain({("ns", "kept")}, pods=set(), gangs=set())
    assert memory.breach_since == {"ns/kept/PodClique/x": 1.0}
