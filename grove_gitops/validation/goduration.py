"""Go's ``time.ParseDuration`` and ``Duration.String``, for ``metav1.Duration`` fields.

Grove's OperatorConfiguration holds leader-election durations as ``metav1.Duration``: the
operator refuses to start on a value Go cannot parse (``15 s``, ``15``, ``""``, ``null``), and its
messages print a duration the way Go does (``1m0s``, ``-1.5s``, ``100ms``). Both are reproduced
here so the file is accepted and refused exactly as Grove's operator does (checked against
Grove's own code by tests/oracle).
"""

from __future__ import annotations

_UNITS = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,  # U+00B5 micro sign
    "μs": 1_000,  # U+03BC Greek mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_MAX = (1 << 63) - 1
#: Longer input is not a duration anyone wrote; the loop below is linear in it anyway.
_MAX_LEN = 256


class DurationError(ValueError):
    """The text is not a Go duration; the message is Go's (``time: invalid duration "x"``)."""


def _quote(text: str) -> str:
    """Go's ``time.quote``: a control or non-ASCII character as its UTF-8 bytes in ``\\xNN``."""
    out = []
    for ch in text:
        if ch < " " or ord(ch) >= 0x80:
            out += [f"\\x{b:02x}" for b in ch.encode("utf-8", "surrogatepass")]
        else:
            out.append("\\" + ch if ch in '"\\' else ch)
    return '"' + "".join(out) + '"'


def _digits(s: str, i: int) -> int:
    while i < len(s) and "0" <= s[i] <= "9":
        i += 1
    return i


def parse_go_duration(text: str) -> int:
    """Nanoseconds of a Go duration string, as ``time.ParseDuration`` reads it."""
    if len(text) > _MAX_LEN:
        raise DurationError(f"time: invalid duration {_quote(text[:40])}...")
    quoted = _quote(text)
    s, neg = text, False
    if s[:1] in ("-", "+"):
        neg, s = s[0] == "-", s[1:]
    if s == "0":
        return 0
    if not s:
        raise DurationError(f"time: invalid duration {quoted}")
    total = 0
    i = 0
    while i < len(s):
        if not (s[i] == "." or "0" <= s[i] <= "9"):
            raise DurationError(f"time: invalid duration {quoted}")
        j = _digits(s, i)
        whole = s[i:j]
        frac = ""
        if j < len(s) and s[j] == ".":
            k = _digits(s, j + 1)
            frac, j = s[j + 1 : k], k
        if not whole and not frac:
            raise DurationError(f"time: invalid duration {quoted}")
        k = j
        while k < len(s) and s[k] != "." and not ("0" <= s[k] <= "9"):
            k += 1
        unit = s[j:k]
        if not unit:
            raise DurationError(f"time: missing unit in duration {quoted}")
        if unit not in _UNITS:
            raise DurationError(f"time: unknown unit {_quote(unit)} in duration {quoted}")
        scale = _UNITS[unit]
        v = int(whole or "0")
        if v > (1 << 63) // scale:
            raise DurationError(f"time: invalid duration {quoted}")
        v *= scale
        if frac:
            # Go: float64(fraction) * (float64(unit) / 10^digits), truncated
            f, fscale, overflow = 0, 1, False
            for ch in frac:
                if overflow or f > _MAX // 10:
                    overflow = True
                    continue
                f, fscale = f * 10 + int(ch), fscale * 10
            v += int(float(f) * (float(scale) / fscale))
        total += v
        if total > 1 << 63:
            raise DurationError(f"time: invalid duration {quoted}")
        i = k
    if neg:
        return -total
    if total > _MAX:
        raise DurationError(f"time: invalid duration {quoted}")
    return total


def _frac(u: int, prec: int) -> tuple[str, int]:
    digits: list[str] = []
    printed = False
    for _ in range(prec):
        d = u % 10
        printed = printed or d != 0
        if printed:
            digits.append(str(d))
        u //= 10
    return ("." + "".join(reversed(digits)) if printed else ""), u


def format_go_duration(ns: int) -> str:
    """``time.Duration.String``: ``1h0m0s``, ``1.5s``, ``100ms``, ``0s``."""
    u, neg = abs(ns), ns < 0
    if u == 0:
        return "0s"
    if u < 1_000_000_000:
        prec, unit = (0, "ns") if u < 1_000 else (3, "µs") if u < 1_000_000 else (6, "ms")
        frac, u = _frac(u, prec)
        out = f"{u}{frac}{unit}"
    else:
        frac, u = _frac(u, 9)
        out = f"{u % 60}{frac}s"
        u //= 60
        if u:
            out = f"{u % 60}m{out}"
            u //= 60
            if u:
                out = f"{u}h{out}"
    return "-" + out if neg else out
