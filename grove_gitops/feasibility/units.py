"""Resource amounts as integers (thousandths of a unit), and how to print them."""

from __future__ import annotations

from decimal import ROUND_CEILING, Decimal

from grove_gitops.fields.quantity import parse_quantity

GPU = "nvidia.com/gpu"
#: The resources of the capacity table (always tracked, so the table shows the nodes' amounts).
REPORTED = (GPU, "cpu", "memory")
#: Resources whose absence from a node's allocatable means "not tracked", not zero.
UNTRACKED_WHEN_ABSENT = frozenset({"pods", "ephemeral-storage"})
#: Effectively unlimited (a resource the node does not track).
UNLIMITED = 10**30
_BYTES = frozenset({"memory", "ephemeral-storage"})


def milli(value: object) -> int:
    """``"500m"`` → 500, ``"2"`` → 2000, rounded up; an invalid quantity counts as 0 (validation
    has refused it already)."""
    parsed = parse_quantity(value)
    if parsed is None:
        return 0
    return int((parsed * 1000).to_integral_value(rounding=ROUND_CEILING))


def fmt(resource: str, amount: int) -> str:
    """An amount in the unit people use for it: cores, GiB of memory, whole GPUs."""
    if amount >= UNLIMITED:
        return "unlimited"
    if resource in _BYTES:
        value = Decimal(amount) / 1000
        for suffix, size in (("Ti", 1024**4), ("Gi", 1024**3), ("Mi", 1024**2), ("Ki", 1024)):
            if value >= size:
                shown = (value / size).quantize(Decimal("0.1")).normalize()
                return f"{shown:f}{suffix}"
        return f"{value.normalize():f}"
    if amount % 1000 == 0:
        return str(amount // 1000)
    return f"{amount}m" if resource == "cpu" else f"{(Decimal(amount) / 1000).normalize():f}"


def order_key(resource: str) -> tuple[int, str]:
    """GPUs and other extended resources first (they are what gangs are short of), then cpu, memory."""
    if resource == GPU:
        return (0, resource)
    if "/" in resource:
        return (1, resource)
    return ({"cpu": 2, "memory": 3}.get(resource, 4), resource)
