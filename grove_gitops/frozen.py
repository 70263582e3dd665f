"""Subtrees shared, unchanged, by many rendered objects (issue 10, "stamp repeated pods").

The pods of one PodClique replica differ only in their name, hostname and pod-index label;
their containers, volumes, tolerations and the rest are equal. Expansion builds those parts
once per clique and lets every pod point at the same :class:`SharedList` / :class:`SharedDict`
instead of deep-copying them per pod. The emitter recognises the two types and writes each
one's YAML once per indentation, then reuses the text for every pod that holds it.

They are read-only by convention: nothing may change a shared subtree after expansion
(a pod that needs its own variant, e.g. one with per-pod ResourceClaims, gets a plain copy).
Both behave as ``list`` / ``dict`` everywhere else (JSON, hashing, pickling to ``--jobs``
workers), and pickle without their cached text.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


class SharedList(list[Any]):
    """A list held by several objects; ``texts`` caches its emitted YAML by layout."""

    __slots__ = ("texts",)

    def __init__(self, items: Iterable[Any] = ()) -> None:
        super().__init__(items)
        self.texts: dict[tuple[int, bool], str] = {}

    def __reduce__(self) -> tuple[Any, ...]:
        return (SharedList, (list(self),))


class SharedDict(dict[str, Any]):
    """A mapping held by several objects; ``texts`` caches its emitted YAML by layout."""

    __slots__ = ("texts",)

    def __init__(self, items: Mapping[str, Any] | None = None) -> None:
        super().__init__(items or {})
        self.texts: dict[tuple[int, bool], str] = {}

    def __reduce__(self) -> tuple[Any, ...]:
        return (SharedDict, (dict(self),))


def share_values(mapping: dict[str, Any]) -> dict[str, Any]:
    """A shallow copy of ``mapping`` whose non-empty list and dict values are shared subtrees."""
    out: dict[str, Any] = {}
    for key, value in mapping.items():
        if type(value) is list and value:
            value = SharedList(value)
        elif type(value) is dict and value:
            value = SharedDict(value)
        out[key] = value
    return out
