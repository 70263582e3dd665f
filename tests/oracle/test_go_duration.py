"""grove_gitops' Go durations (``metav1.Duration`` in the OperatorConfiguration) against Go's
own ``time.ParseDuration`` and ``Duration.String``, through the oracle process."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grove_gitops.validation.goduration import DurationError, format_go_duration, parse_go_duration
from tests.oracle.client import Oracle

HAND = ["15s", "1h", "1.5h", "-1s", "+0", "0", "1h2m3.5s", "100ms", "1us", "1µs", "1μs", ".5s", "5.s", "1ns",
        "2562047h47m16.854775807s", "2562047h47m16.854775808s", "-2562047h47m16.854775808s", "", "-", "15", "1x",
        ".s", "1 s", "s", "1e3s", "0x10s", "1.000000000000000000001s", "99999999999999999999s"]


def _both(oracle: Oracle, text: str) -> None:
    go = oracle.ask("duration", document=text)
    try:
        ns = parse_go_duration(text)
    except DurationError as err:
        assert "decodeError" in go, f"{text!r}: Go reads {go.get('duration')}, grove-gitops refuses: {err}"
        assert str(err) == go["decodeError"], f"{text!r}: Go {go['decodeError']!r} | grove-gitops {str(err)!r}"
        return
    assert "duration" in go, f"{text!r}: Go refuses ({go.get('decodeError')}), grove-gitops reads {ns}"
    assert ns == go["duration"]["nanoseconds"], f"{text!r}: Go {go['duration']} | grove-gitops {ns}"
    assert format_go_duration(ns) == go["duration"]["string"], f"{text!r}: Go {go['duration']} | grove-gitops {format_go_duration(ns)}"


@pytest.mark.parametrize("text", HAND)
def test_hand_list(oracle: Oracle, text: str) -> None:
    _both(oracle, text)


_PIECE = st.tuples(
    st.sampled_from(["", "0", "1", "15", "007", "123456789"]),
    st.sampled_from(["", ".", ".5", ".25", ".000001"]),
    st.sampled_from(["ns", "us", "µs", "ms", "s", "m", "h", "", "x", "S"]),
).map("".join)


@settings(max_examples=200, deadline=None)
@given(sign=st.sampled_from(["", "-", "+"]), pieces=st.lists(_PIECE, min_size=0, max_size=4))
def test_fuzz_parse_and_print_as_go_does(oracle: Oracle, sign: str, pieces: list[str]) -> None:
    _both(oracle, sign + "".join(pieces))


@settings(max_examples=200, deadline=None)
@given(ns=st.integers(-(1 << 63), (1 << 63) - 1))
def test_fuzz_any_duration_prints_as_go_does(oracle: Oracle, ns: int) -> None:
    text = f"{ns}ns"
    _both(oracle, text)
