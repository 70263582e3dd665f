"""``resource.Quantity`` for the fake's quota: parse ``500m``/``2Gi``/``1e3``, add, compare, print canonically.

Rules kept from apimachinery's ``pkg/api/resource``: a number with an optional binary suffix
(``Ki Mi Gi Ti Pi Ei``), decimal suffix (``n u m "" k M G T P E``) or exponent (``e3``/``E3``);
values are exact (fractions); a sum keeps the format of its first non-zero term; ``String()`` is
canonical: binary values that are whole multiples of 1024 print with the largest binary suffix
(values below 1024 or with a fraction print in decimal), decimal values print with the largest
power-of-1000 suffix that leaves an integer mantissa (``1500m``, ``1k``, ``1500``). Values are
rounded up to nano units, as the apiserver does. Only the quota code uses it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

BINARY = "BinarySI"
DECIMAL = "DecimalSI"
EXPONENT = "DecimalExponent"

_BINARY_SUFFIXES = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_BY_EXP = {v: k for k, v in _DECIMAL_SUFFIXES.items()}
_BINARY_BY_EXP = {v: k for k, v in _BINARY_SUFFIXES.items()}
_PATTERN = re.compile(r"^([+-]?)(\d+(?:\.\d*)?|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d{1,3})?$")
_MAX_TEXT = 64


class QuantityError(ValueError):
    """Text that is not a Kubernetes quantity."""


@dataclass(frozen=True)
class Quantity:
    """An exact amount and the format it prints in."""

    value: Fraction
    format: str = DECIMAL

    @classmethod
    def parse(cls, text: object) -> Quantity:
        """Parse a quantity string (or a JSON number, which the apiserver accepts too)."""
        if isinstance(text, bool) or not isinstance(text, str | int | float):
            raise QuantityError(f"quantities must match the regular expression: {text!r}")
        raw = str(text).strip() if not isinstance(text, str) else text
        match = _PATTERN.match(raw) if len(raw) <= _MAX_TEXT else None
        if match is None:
            raise QuantityError(
                "quantities must match the regular expression "
                "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
            )
        sign, number, suffix = match.group(1), match.group(2), match.group(3) or ""
        amount = Fraction(number)
        if suffix in _BINARY_SUFFIXES:
            amount *= 1024 ** _BINARY_SUFFIXES[suffix]
            fmt = BINARY
        elif suffix[:1] in ("e", "E"):
            amount *= Fraction(10) ** int(suffix[1:])
            fmt = EXPONENT
        else:
            amount *= Fraction(10) ** _DECIMAL_SUFFIXES[suffix]
            fmt = DECIMAL
        if sign == "-":
            amount = -amount
        nanos = amount * 10**9
        if nanos.denominator != 1:  # round up to the nearest nano, away from zero as upstream
            rounded = -((-nanos.numerator) // nanos.denominator) if amount > 0 else nanos.numerator // nanos.denominator
            amount = Fraction(rounded, 10**9)
        return cls(amount, fmt)

    @classmethod
    def zero(cls) -> Quantity:
        return cls(Fraction(0), DECIMAL)

    def __add__(self, other: Quantity) -> Quantity:
        fmt = other.format if self.value == 0 else self.format
        return Quantity(self.value + other.value, fmt)

    def __lt__(self, other: Quantity) -> bool:
        return self.value < other.value

    def __le__(self, other: Quantity) -> bool:
        return self.value <= other.value

    def __str__(self) -> str:
        value = self.value
        if value == 0:
            return "0"
        fmt = self.format
        if fmt == BINARY and (-1024 < value < 1024 or value.denominator != 1):
            fmt = DECIMAL
        sign = "-" if value < 0 else ""
        magnitude = abs(value)
        if fmt == BINARY:
            exponent = 0
            number = int(magnitude)
            while exponent < 6 and number % 1024 == 0:
                number //= 1024
                exponent += 1
            return f"{sign}{number}{_BINARY_BY_EXP.get(exponent, '')}"
        exponent = -9
        scaled = magnitude * 10**9  # an integer: values are kept to nano precision
        mantissa = int(scaled)
        while exponent < 18 and mantissa % 1000 == 0:
            mantissa //= 1000
            exponent += 3
        if fmt == EXPONENT:
            return f"{sign}{mantissa}" + (f"e{exponent}" if exponent else "")
        return f"{sign}{mantissa}{_DECIMAL_BY_EXP[exponent]}"
