"""When the loop starts a pass over waiting events (issue 35.2).

A scale-out's own writes and the kubelet's answers arrive as a stream of pod events; a
pass started as soon as the last one ended made the agent re-derive the workload once per
handful of events (252 passes for one 2 -> 50 scale-out). :func:`batch_pause` keeps the
starts of passes at least one batch window apart while busy, and leaves the idle case
(wait one window so a burst is taken whole) as it was. Pure arithmetic: no clock, no sleep.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from grove_gitops.agent.loop import batch_pause

WINDOW = 0.02


def test_idle_loop_waits_one_window_for_the_burst() -> None:
    # The last pass ended long ago: the first event of a burst waits a whole window.
    assert batch_pause(now=10.0, started=1.0, ended=1.5, window=WINDOW) == WINDOW


def test_busy_loop_starts_the_next_pass_one_window_after_the_last_start() -> None:
    # The last pass started at 10.000 and ended at 10.008: events that came meanwhile wait
    # until 10.020, not until 10.028 (a window after its end) and not 0 (at once, as before).
    pause = batch_pause(now=10.008, started=10.0, ended=10.008, window=WINDOW)
    assert abs(pause - 0.012) < 1e-9


def test_a_pass_longer_than_the_window_is_followed_at_once() -> None:
    assert batch_pause(now=10.05, started=10.0, ended=10.05, window=WINDOW) == 0.0


def test_no_window_no_pause() -> None:
    assert batch_pause(now=10.008, started=10.0, ended=10.008, window=0.0) == 0.0
    assert batch_pause(now=99.0, started=1.0, ended=2.0, window=0.0) == 0.0


@given(
    started=st.floats(0, 1_000, allow_nan=False),
    took=st.floats(0, 1, allow_nan=False),
    later=st.floats(0, 1, allow_nan=False),
    window=st.floats(0.001, 0.5, allow_nan=False),
)
def test_passes_start_a_window_apart_and_never_wait_longer_than_one(
    started: float, took: float, later: float, window: float
) -> None:
    ended = started + took
    now = ended + later
    pause = batch_pause(now, started, ended, window)
    assert 0.0 <= pause <= window
    assert now + pause >= started + window - 1e-9  # never two starts within one window
