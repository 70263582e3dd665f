"""Chaos: seeded random interleavings of what a cluster does to the agent (issue 37).

The soak that found the wedged rollout ran a random churn for 31 minutes; this runs one in a
few tens of seconds per seed, on the fake API server with the GitOps applier, the kubelet
simulator and the agent of ``tests/day2/harness.py``. The example's ``llama-disagg`` gets an
autoscaled router clique (a standalone clique target, floor 2) beside its autoscaled prefill
group (floor 1), and a seeded random sequence of:

- ``/scale`` writes on both targets (the router's count moving 2..6 while it rolls: the soak's
  trigger), image bumps (all cliques or the router only) mid-rollout;
- pods marked Failed and pods deleted, Git's and the agent's (above the floors);
- a stalled applier (Pods of the primary not written for a few seconds);
- pod DELETEs answered late (the watch's DELETED can come first);
- the agent stopped and a new one started (its memory gone, the cluster's state kept).

Checked while it runs and at the end:

- at every observed moment: no gang released partially, no wanted slot emptied before its
  replacement existed, the bystander untouched (:meth:`Day2Env.assert_invariants`; in an
  Initialized gang a pod the chaos failed or deleted counts as present, as Grove releases
  replacements there one by one, and a slot a count re-adds is wanted once a scale-in decided
  on the lower count can no longer land, :data:`SCALE_RACE`), and
  Grove's availability bound (one PodCliqueSet replica, one pod per standalone PodClique and
  one replica per scaling group unavailable at a time) over the slots no chaos touched;
- progress: a retirement a freshly started agent would make (its decision from a fresh list,
  with a fresh memory) is made by the running agent within :data:`STEP_BOUND` seconds; a
  rollout wedged by anything only the agent's memory holds fails here;
- the end: every owned slot filled within :data:`CONVERGE_BOUND` seconds after the churn
  stops (Git's pods and the agent's at the last counts, each Ready and released, exactly the
  PodGangs of that render), and a freshly started agent changes nothing of it.

A failure names its seed; replay it with ``GROVE_CHAOS_SEED=<seed>`` (and ``GROVE_CHAOS_OPS``
for a longer run).
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import cast

import pytest

from grove_gitops.agent import decide, rollout
from grove_gitops.agent.actions import DeletePod, Memories
from grove_gitops.expand.scaling import PCLQ_KIND, PCSG_KIND
from grove_gitops.readmodel.snapshot import build
from tests.day2 import scaling as S
from tests.day2.harness import Day2Env
from tests.day2.observer import PodView, Slot, Unit, rolling_bound_problem
from tests.day2.rest import Raw

# The seeds CI runs (about 40 s each at 30 operations; the file takes about 2 minutes). Seed 12
# reaches its former failure within 30 operations (operations 27-28: the router 4 -> 2 -> 3 while
# a DELETE answers late). Record (2026-11-29, integ after the merge of issues 31 and 37, 2 busy
# cores): GROVE_CHAOS_OPS=40 over seeds 1..20, twice each, found two failures, both the test's
# own notions, none the agent's: seed 12 (a scale-in the agent decided on count 2 landed as the
# test marked count 3: :data:`SCALE_RACE`) and seed 5 (a replacement released alone in an
# Initialized gang while the chaos had taken two more pods of its podgroup, which Grove does
# too: the partial-release check now counts the test's losses there). Seed 12's earlier report (a
# Ready router pod deleted right after 2 -> 3) is that race; seed 7's (a partial release in
# ``llama-disagg-0-prefill-1``, before the merge) did not recur in three runs at 40 operations.
# After these fixes seeds 1..20 passed at 40 operations (5 and 12 twice). The interleavings
# depend on timing too: a seed replays the same operations, not always the same cluster history.
SEEDS = [int(os.environ["GROVE_CHAOS_SEED"])] if os.environ.get("GROVE_CHAOS_SEED") else [7, 12, 2026]
OPS = int(os.environ.get("GROVE_CHAOS_OPS", "30"))
STEP_BOUND = 20.0  # seconds a retirement a fresh agent would make may wait for the running one
CONVERGE_BOUND = 90.0  # seconds after the churn stops until every owned slot holds its pod
SCALE_RACE = 2.0  # seconds after a count rises during which a scale-in decided on the lower count may land
ROUTER, ROUTER_TARGET = "router", "llama-disagg-0-router"
ROUTER_FLOOR, ROUTER_MAX = 2, 6
PREFILL_MAX = 4


def router_autoscaled(pcs: Raw) -> None:
    """The router clique becomes a standalone scale target (floor 2, at most 6)."""
    (clique,) = [c for c in pcs["spec"]["template"]["cliques"] if c["name"] == ROUTER]
    clique["spec"]["autoScalingConfig"] = {"minReplicas": ROUTER_FLOOR, "maxReplicas": ROUTER_MAX}


@dataclass
class Chaos:
    env: Day2Env
    rng: random.Random
    counts: dict[tuple[int, str], int] = field(default_factory=lambda: {(0, S.PREFILL): 1, (0, ROUTER): ROUTER_FLOOR})
    trail: list[str] = field(default_factory=list)
    # Rolling units (a standalone pod, a scaling-group replica) a failure or deletion hit: their
    # unavailability is the chaos's, not a rollout's (an unavailable scaling-group replica is
    # retired whole, Grove's rule), so the bound check leaves them out
    touched: set[Unit] = field(default_factory=set)
    agent_started: float = field(default_factory=time.monotonic)
    # Every count written, per unit, with when (monotonic): which slots the invariants call
    # wanted follows from it (:meth:`wanted_counts`)
    written: dict[tuple[int, str], list[tuple[float, int]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.written = {unit: [(float("-inf"), n)] for unit, n in self.counts.items()}

    # -- the operations ------------------------------------------------------------------
    def scale(self, unit: str) -> None:
        high = PREFILL_MAX if unit == S.PREFILL else ROUTER_MAX
        low = 1 if unit == S.PREFILL else ROUTER_FLOOR
        n = self.rng.randint(low, high)
        self.counts[(0, unit)] = n
        self.written[(0, unit)].append((time.monotonic(), n))
        self.publish()
        if unit == S.PREFILL:
            S.custom(self.env).patch_namespaced_custom_object_scale(
                S.GROUP, S.VERSION, self.env.namespace, S.PLURALS[PCSG_KIND], S.PREFILL_TARGET,
                {"spec": {"replicas": n}})
        else:
            S.scale(self.env, n, ROUTER_TARGET, PCLQ_KIND, accepted=False)
        self.note(f"scale {unit} -> {n}")

    def wanted_counts(self, now: float) -> dict[tuple[int, str], int]:
        """The counts whose slots the invariants call wanted at ``now``: per unit the lowest count
        in effect during the last :data:`SCALE_RACE` seconds. A count that falls is thus taken at
        once (its slots' pods may go from the write on), one that rises only after that while: a
        scale-in the agent decided on the lower count, right before the write, may still land
        (seed 12 at 40 ops: the DELETE of ``router-2`` was carried out 40 ms *before* the write
        of 2 -> 3 reached the server, and its watch event was observed after the test had
        marked the slot wanted). A slot wanted for longer is held to every invariant."""
        out = dict(self.counts)
        for unit, writes in self.written.items():
            older = [n for t, n in writes if t <= now - SCALE_RACE]
            out[unit] = min([n for t, n in writes if t > now - SCALE_RACE] + older[-1:])
        return out

    def publish(self) -> None:
        """Tell the invariants the counts of :meth:`wanted_counts` (when they changed)."""
        counts = self.wanted_counts(time.monotonic())
        if counts != self.env.counts:
            self.env.set_counts(counts)

    def bump(self) -> None:
        cliques = (ROUTER,) if self.rng.random() < 0.5 else None
        self.env.bump_image(cliques)
        self.note(f"bump {'router' if cliques else 'all'}")

    def _victim(self, agents: bool) -> PodView | None:
        mine = [v for v in self.env.views(self.env.primary) if v.live and not v.gated]
        floor_hosts = {h for (_, h) in self.env.desired_pods()}  # (Git's and the agent's: every wanted slot)
        picked = [v for v in mine if v.hostname in floor_hosts and (self._above_floor(v) == agents)]
        return self.rng.choice(sorted(picked, key=lambda v: v.name)) if picked else None

    @staticmethod
    def _above_floor(v: PodView) -> bool:
        """An agent-made pod: a router above index 1 or a prefill replica above 0."""
        if v.podclique.endswith(f"-{ROUTER}"):
            return int(v.hostname.rsplit("-", 1)[1]) >= ROUTER_FLOOR
        if f"-{S.PREFILL}-" in v.hostname:
            return S.replica_of(v.hostname) >= 1
        return False

    def fail(self, agents: bool) -> None:
        victim = self._victim(agents)
        if victim is None:
            return
        self.touched.add(victim.unit)
        self.env.kubelet.fail(self.env.namespace, victim.name)
        self.note(f"fail {victim.name}")

    def delete(self, agents: bool) -> None:
        victim = self._victim(agents)
        if victim is None:
            return
        self.touched.add(victim.unit)
        try:
            self.env.delete_pod(victim.name)
        except Exception as exc:  # gone meanwhile: nothing to delete
            self.note(f"delete {victim.name}: {exc.__class__.__name__}")
            return
        self.note(f"delete {victim.name}")

    def stall(self) -> None:
        seconds = self.rng.uniform(1.0, 4.0)
        primary = self.env.primary
        self.env.applier.hold(lambda o: o.get("kind") == "Pod" and
                              (o.get("metadata", {}).get("labels") or {}).get("app.kubernetes.io/part-of") == primary,
                              seconds, "chaos stall")
        self.note(f"stall the applier {seconds:.1f}s")

    def slow_answers(self) -> None:
        """The next few pod DELETEs are carried out at once and answered late (a loaded server):
        the kubelet may finish the pod, and the watch say DELETED, before the agent reads the
        answer (the soak's wedge)."""
        seconds, times = self.rng.uniform(0.3, 1.0), self.rng.randint(1, 4)
        self.env.server.faults.delay(seconds, verb="delete", resource="pods", times=times, late_answer=True)
        self.note(f"answer the next {times} pod DELETEs {seconds:.1f}s late")

    def restart(self) -> None:
        self.env.stop_agent()
        time.sleep(self.rng.uniform(0.0, 1.0))
        self.env.start_agent()
        self.agent_started = time.monotonic()
        self.note("restart the agent")

    def step(self) -> None:
        ops: list[tuple[float, Callable[[], None]]] = [
            (4, lambda: self.scale(ROUTER)), (3, lambda: self.scale(S.PREFILL)), (2, self.bump),
            (1.5, lambda: self.fail(False)), (1.5, lambda: self.fail(True)),
            (1, lambda: self.delete(False)), (1, lambda: self.delete(True)),
            (1, self.stall), (1, self.restart), (2, self.slow_answers),
        ]
        (op,) = self.rng.choices([o for _, o in ops], weights=[w for w, _ in ops])
        op()

    def note(self, what: str) -> None:
        """One operation for the replay message, with its wall-clock time (to match the agent's log)."""
        now = time.time()
        self.trail.append(f"{time.strftime('%H:%M:%S', time.localtime(now))}.{int(now % 1 * 10)} {what}")

    def describe(self, seed: int) -> str:
        return f"replay with GROVE_CHAOS_SEED={seed}; operations: " + "; ".join(self.trail)


class ProgressWatch:
    """Retirements a freshly started agent would make now, and since when each is due."""

    def __init__(self, env: Day2Env) -> None:
        self.env = env
        self.due: dict[str, tuple[float, str]] = {}  # uid -> (first seen due, pod)
        self.wedged: list[str] = []

    def sample(self, agent_since: float) -> None:
        pods = {(p["metadata"]["namespace"], p["metadata"]["name"]): p for p in self.env.pods()}
        listed = self.env.rest.request("GET", f"/apis/scheduler.grove.io/v1alpha1/namespaces/{self.env.namespace}/podgangs")
        gangs = {(g["metadata"]["namespace"], g["metadata"]["name"]): g for g in listed.get("items") or []}
        actions, _ = decide.day2_actions(build(pods, gangs), Memories(), time.time(), grace=1.0)
        now = time.monotonic()
        due = {a.uid: a.name for a in actions if isinstance(a, DeletePod) and a.reason == rollout.RETIRED}
        self.due = {uid: self.due.get(uid, (max(now, agent_since), name)) for uid, name in due.items()}
        for _uid, (since, name) in self.due.items():
            if now - since > STEP_BOUND:
                self.wedged.append(f"retiring {name} was due for {now - since:.0f}s and the agent did not; "
                                   f"{self.diagnose(pods, name)}")

    def diagnose(self, pods: dict[tuple[str, str], Raw], name: str) -> str:
        """What the running agent holds about the pod and its workload (to tell which memory held it)."""
        agent = self.env.agent.impl if self.env.agent is not None else None
        if agent is None:
            return "no agent running"
        key = (self.env.namespace, name)
        live = pods.get(key) or {}
        with agent.cache.lock:
            cached = agent.cache.pods.get(key) or {}
        wl = (self.env.namespace, self.env.primary)
        snap = agent._snapshot(wl)
        memory = agent.memory.of(wl)
        _, progress = rollout.rollout(snap.workloads[wl], memory, time.time(), breached=set(), grace=1.0)
        meta, cmeta = live.get("metadata") or {}, cached.get("metadata") or {}
        return (f"server uid/rv {meta.get('uid')}/{meta.get('resourceVersion')}, cache uid/rv "
                f"{cmeta.get('uid')}/{cmeta.get('resourceVersion')} terminating={bool(cmeta.get('deletionTimestamp'))}; "
                f"in flight {key in agent._inflight}, deleting {key in agent._deleting}, uid deleted "
                f"{meta.get('uid') in agent._deleted_uids}, workload held {agent._holding.get(wl)}, "
                f"gang queues {len(agent._gang_queues)}; the agent's rollout: replica {progress.replica} "
                f"waiting {progress.waiting[:3]}")


def bound_problems(env: Day2Env, touched: set[Unit]) -> list[str]:
    """Grove's availability bound at every moment, over the wanted slots of units no chaos touched that
    held an available pod before (a slot the scale-out just added is not yet "down")."""
    seen: set[Slot] = set()
    out: list[str] = []
    for moment in env.observer.since(0):
        slots = moment.slots()
        down = []
        for slot in list(seen):
            if not env.wants(moment, slot):
                seen.discard(slot)  # scaled in: when it comes back, it starts as new
        for slot, pods in slots.items():
            if any(p.available for p in pods):
                if env.wants(moment, slot):
                    seen.add(slot)
            elif slot in seen and pods[0].unit not in touched:
                down.append(pods[0].unit)
        problem = rolling_bound_problem(down)
        if problem is not None:
            out.append(f"{problem}\n{moment.describe()}")
    return out


@pytest.mark.parametrize("seed", SEEDS)
def test_chaos(day2: Callable[..., Day2Env], seed: int) -> None:
    rng = random.Random(seed)
    env = day2(edit=S.both(S.prefill_floor(1), router_autoscaled), ready_delay=0.05, termination_delay=0.1)
    chaos = Chaos(env, rng)
    env.set_counts(chaos.counts)
    env.wait_until(lambda: S.target(env) is not None and S.target(env, ROUTER_TARGET, PCLQ_KIND) is not None,
                   timeout=20, what="the agent's scale targets")
    S.wait_matches(env, "the first deploy at the floors")
    watch = ProgressWatch(env)
    try:
        for _ in range(OPS):
            chaos.step()
            for _ in range(rng.randint(1, 3)):
                time.sleep(rng.uniform(0.2, 0.6))
                chaos.publish()
                watch.sample(chaos.agent_started)
            assert not watch.wedged, watch.wedged[0]
        for hold in env.applier.holds:
            hold.release()
        time.sleep(SCALE_RACE)  # then every slot of the last counts is wanted
        chaos.publish()
        assert env.counts == chaos.counts
        deadline = time.monotonic() + CONVERGE_BOUND
        while not S.matches(env) and time.monotonic() < deadline:
            time.sleep(0.5)
            watch.sample(chaos.agent_started)
            assert not watch.wedged, watch.wedged[0]
        S.wait_matches(env, f"every owned slot filled after the churn (counts {chaos.counts})", timeout=5)
        # A freshly started agent changes nothing of the end state.
        env.stop_agent()
        mark = env.observer.mark()
        env.start_agent()
        time.sleep(2.0)
        env.settle()
        changed = [f"{m.event} {m.pod}" for m in env.observer.since(mark) if m.event in ("ADDED", "DELETED")]
        assert changed == [], f"a fresh agent changed the converged state: {changed}"
        assert S.matches(env)
        env.assert_invariants()
        problems = bound_problems(env, chaos.touched)
        assert not problems, f"{len(problems)} moments beyond Grove's availability bound; the first: {problems[0]}"
    except AssertionError as exc:
        raise AssertionError(f"chaos seed {seed} failed: {exc}\n{chaos.describe(seed)}") from None


def test_router_scaled_while_it_rolls_with_late_delete_answers(day2: Callable[..., Day2Env]) -> None:
    """The soak's wedge, directed: the router clique's count goes 4 -> 6 -> 2 while replica 0
    rolls, with image bumps piling up, and every pod DELETE is answered after the kubelet has
    finished the pod (the watch says DELETED first). Before the fix the answer put the pod back
    into the agent's cache, terminating, for good: the rollout waited on it until a restart."""
    env = day2(edit=S.both(S.prefill_floor(1), router_autoscaled), ready_delay=0.05, termination_delay=0.1)
    counts = {(0, S.PREFILL): 1, (0, ROUTER): 4}
    env.set_counts(counts)
    env.wait_until(lambda: S.target(env, ROUTER_TARGET, PCLQ_KIND) is not None, timeout=20, what="the router target")
    S.scale(env, 4, ROUTER_TARGET, PCLQ_KIND, accepted=False)
    S.wait_matches(env, "the router at 4")
    env.server.faults.delay(0.5, verb="delete", resource="pods", times=None, late_answer=True)
    watch = ProgressWatch(env)
    for n in (6, 2):
        env.bump_image((ROUTER,))
        env.wait_until(lambda: any(v.podclique.endswith(f"-{ROUTER}") and v.terminating for v in env.views(env.primary)),
                       timeout=20, what="the router's rollout under way")
        counts[(0, ROUTER)] = n
        env.set_counts(counts)
        S.scale(env, n, ROUTER_TARGET, PCLQ_KIND, accepted=False)
    env.bump_image((ROUTER,))
    deadline = time.monotonic() + 60
    while not S.matches(env) and time.monotonic() < deadline:
        time.sleep(0.5)
        watch.sample(0.0)
        assert not watch.wedged, watch.wedged[0]
    S.wait_matches(env, "the router at 2, rolled to the last image", timeout=5)
    env.assert_invariants()


def test_a_risen_count_is_wanted_after_the_scale_race_only() -> None:
    """The invariants' notion of a wanted slot (:meth:`Chaos.wanted_counts`): a fall at once, a
    rise only once a scale-in decided on the lower count can no longer land."""
    chaos = Chaos(cast(Day2Env, None), random.Random(0))
    router = (0, ROUTER)
    chaos.counts[router] = 4
    chaos.written[router].append((100.0, 4))  # 2 -> 4
    assert chaos.wanted_counts(100.0)[router] == ROUTER_FLOOR
    assert chaos.wanted_counts(100.0 + SCALE_RACE - 0.1)[router] == ROUTER_FLOOR
    assert chaos.wanted_counts(100.0 + SCALE_RACE + 0.1)[router] == 4
    chaos.counts[router] = 3
    chaos.written[router].append((200.0, 3))  # 4 -> 3: slot 3 unwanted from the write on
    assert chaos.wanted_counts(200.0)[router] == 3
    chaos.counts[router] = 5
    chaos.written[router].append((201.0, 5))  # 3 -> 5 within the race of the fall: still 3
    assert chaos.wanted_counts(201.0 + SCALE_RACE - 0.1)[router] == 3
    assert chaos.wanted_counts(201.0 + SCALE_RACE + 0.1)[router] == 5
    assert chaos.wanted_counts(201.0)[(0, S.PREFILL)] == 1  # the other unit untouched
