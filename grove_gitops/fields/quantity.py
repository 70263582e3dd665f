"""Kubernetes' quantity grammar (``500m``, ``1Gi``, ``2e3``), as ``k8s.io/apimachinery`` parses it.

Owns turning a quantity into a number: the pod-spec checks (``validation.podspec``), the node
inventory's models (``api.inventory``) and the feasibility check's units all read quantities
here. Standard library only, so the API models (below ``validation``) can use it.
"""

from __future__ import annotations

import re
from decimal import Decimal

# --------------------------------------------------------------------------------------------------
# Quantity grammar (k8s.io/apimachinery/pkg/api/resource/quantity.go):
#   <quantity> ::= <signedNumber><suffix>
#   <number>   ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
#   <suffix>   ::= <binarySI> | <decimalExponent> | <decimalSI>
#   binarySI Ki Mi Gi Ti Pi Ei; decimalSI n u m "" k M G T P E; decimalExponent e/E <signedNumber>
# --------------------------------------------------------------------------------------------------

_QUANTITY = re.compile(
    r"(?P<sign>[+-]?)(?P<number>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
    r"(?:[eE](?P<exponent>[+-]?[0-9]+)|(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]))?"
)
_MULTIPLIERS: dict[str, Decimal] = {
    "": Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
    **{s: Decimal(1024) ** (i + 1) for i, s in enumerate(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"))},
}
QUANTITY_HELP = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$' "
    "(a number with an optional suffix: Ki Mi Gi Ti Pi Ei, n u m k M G T P E, or an exponent e3)"
)
# An exponent this large is no real resource amount; refusing it keeps Decimal arithmetic cheap.
_MAX_EXPONENT = 30


def parse_quantity(value: object) -> Decimal | None:
    """The value of a Kubernetes quantity (``"500m"`` -> 0.5, ``"1Gi"`` -> 1073741824), ``None`` if
    it does not follow the grammar.  YAML numbers (``memory: 512``) are quantities too."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        return Decimal(repr(value)) if value == value and abs(value) != float("inf") else None
    if not isinstance(value, str):
        return None
    match = _QUANTITY.fullmatch(value)
    if match is None:
        return None
    number = Decimal(match["number"])
    if match["sign"] == "-":
        number = -number
    if match["exponent"] is not None:
        exponent = int(match["exponent"])
        if abs(exponent) > _MAX_EXPONENT:
            return None
        return number.scaleb(exponent)
    return number * _MULTIPLIERS[match["suffix"] or ""]
