"""A deep copy for JSON-shaped data (dicts, lists, scalars), several times faster than
``copy.deepcopy``, which pays for memo bookkeeping and arbitrary-object support that
Kubernetes objects never need. Rendering thousands of pods copies their specs a lot."""

from __future__ import annotations

from typing import Any, TypeVar

T = TypeVar("T")


def json_copy(value: T) -> T:
    return _copy(value)  # type: ignore[no-any-return]


#: Values returned as they are without a call: most of a spec's values are such leaves, and a
#: call per leaf was most of the copy's time (issue 35.4: every PodClique copies its spec).
_LEAVES = frozenset({str, int, float, bool, type(None)})


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: v if type(v) in _LEAVES else _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [v if type(v) in _LEAVES else _copy(v) for v in value]
    return value
