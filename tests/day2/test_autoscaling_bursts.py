"""Issue 31, point 5: bursts of scale writes never release a partial gang.

A harness wrote 3 -> 8 -> 3 -> 6 within a second: the agent created the pods of count 8 when
the count was back at 3, and released 3 pods of a 4-pod gang whose 4th was being deleted by
the scale-in. Now a gang is released only while every member exists, is not terminating and
is still wanted at the latest count (re-checked at the moment of release), the autoscaling
loop deletes no pod while a release of it is under way, and it never creates a gang for a
count already superseded.

The property: for bursts hypothesis draws (counts within the bounds, pauses from none to a
few agent passes), interleaved with the agent's passes as they come, no pod is ever released
from a podgroup short of its ``minReplicas`` live pods, at any moment the observer saw
(:func:`tests.day2.observer.partial_releases`, every watch event), none stays partially
released, and the world ends at the last count. (The harness's "slot emptied" check is left
out here: it judges deletes against the count the test wrote last, and within a burst a
scale-in under way for the count before is not a fault.) Gate patches are slowed down (a fault delay) to widen the window in which a
scale-in can overtake a release.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from grove_gitops.agent.release import ReleaseGuard
from tests.day2 import observer as O
from tests.day2 import scaling as S
from tests.day2.harness import LINGER_SECONDS, day2_env

PAUSES = (0.0, 0.005, 0.02, 0.1, 0.3)


# No shrinking: a failure depends on timing, and its example is printed as drawn.
@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck),
          phases=(Phase.explicit, Phase.reuse, Phase.generate))
# The burst that released 3 pods of a 4-pod gang on the code before the fix.
@example(bursts=[[(3, 0.02), (4, 0.02), (1, 0.005), (3, 0.0)], [(4, 0.0), (1, 0.1), (4, 0.0)]])
@given(
    bursts=st.lists(st.lists(st.tuples(st.integers(1, 4), st.sampled_from(PAUSES)), min_size=2, max_size=5),
                    min_size=1, max_size=2),
)
def test_bursts_of_scale_writes_never_release_a_partial_gang(bursts: list[list[tuple[int, float]]]) -> None:
    with tempfile.TemporaryDirectory() as raw, day2_env(Path(raw), edit=S.prefill_floor(1), sync_interval=1.0,
                                                        bystander=False) as env:
        env.set_counts(S.counts(1))
        S.wait_matches(env, "the first deploy at the floor (1)")
        env.wait_until(lambda: S.target(env) is not None, timeout=10, what="the agent's scale target")
        # Gate patches take a while, as under a loaded API server: a scale-in can overtake them.
        env.server.faults.delay(0.03, verb="patch", resource="pods")
        for burst in bursts:
            for count, pause in burst:
                S.scale(env, count)
                time.sleep(pause)
            S.wait_matches(env, f"the pods and PodGangs of count {burst[-1][0]} after the burst {burst}", timeout=60)
        env.settle(timeout=10)
        moments, gangs = env.observer.since(0), env.observer.gang_history()
        # Every gate removal, at the moment of it (every watch event is a moment).
        partial = O.partial_releases(moments, gangs) + O.lingering_partial_releases(
            moments, gangs, LINGER_SECONDS, time.monotonic())
        assert not partial, f"{len(partial)} partial release(s); the first: {partial[0][1]}\n{partial[0][0].describe()}"


def test_a_release_waits_for_no_retired_pod_and_a_retire_waits_for_the_release_under_way() -> None:
    """The guard alone: deterministic orders of a release and a scale-in's delete."""
    import threading

    guard = ReleaseGuard()
    a, b = {"metadata": {"uid": "a"}}, {"metadata": {"uid": "b"}}
    assert guard.begin([a, b])  # a release of the gang {a, b} is under way
    retired = threading.Event()

    def scale_in() -> None:
        guard.retire(["b"])
        retired.set()

    worker = threading.Thread(target=scale_in)
    worker.start()
    assert not retired.wait(0.2), "the delete went ahead while the gang was being released"
    assert not guard.begin([a, b]), "a second release of a gang being retired began"
    guard.end([a, b])
    assert retired.wait(5)
    worker.join()
    assert guard.retiring("b")
    assert not guard.begin([b])  # retired: never released again
    guard.forget({"a"})  # b is gone from the cache
    assert guard.begin([b])
    guard.wanted = lambda pod: pod["metadata"]["uid"] != "a"  # the latest count no longer wants a
    assert not guard.begin([a, b])
