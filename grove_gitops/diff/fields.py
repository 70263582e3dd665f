"""Changed fields of an object with their old and new values, bounded for machine output.

:func:`grove_gitops.diff.paths.changed_paths` names where two objects differ (for headers);
a CI script gating on a diff needs the values too. This walk returns the same shallowest
paths with both values, and two refinements:

* an annotation whose value is a JSON object on both sides (Grove-gitops' one-line
  ``gitops.grove.io/day2``, about 400 characters) is compared field by field inside, so a
  replica change reads ``metadata.annotations['gitops.grove.io/day2'].scalingGroups[...].replicas:
  1 → 2`` instead of two 400-character lines;
* every value is bounded (:func:`bounded`): a structure or string longer than
  :data:`MAX_VALUE_CHARS` in JSON is cut, and the field says so (``oldTruncated``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from grove_gitops.diff.paths import item_names, join

#: The longest value (its compact JSON) kept whole in machine output.
MAX_VALUE_CHARS = 1000
#: Fields listed per object; the rest are counted (``fieldsOmitted``).
MAX_FIELDS = 100
#: Annotation values longer than this are not parsed as JSON (a render never writes one).
MAX_JSON_ANNOTATION_CHARS = 100_000
#: Nesting walked before a difference is reported at the level reached (untrusted trees).
MAX_DEPTH = 64
TRUNCATION_MARK = "…[truncated]"


class _Missing:
    """The side where a field does not exist (distinct from an explicit ``null``)."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING = _Missing()


@dataclass(frozen=True)
class FieldValueChange:
    path: str
    old: Any  # MISSING when the field is absent on the base side
    new: Any  # MISSING when absent on the head side


def _json_object(value: Any) -> dict[str, Any] | None:
    if not isinstance(value, str) or not value.startswith("{") or len(value) > MAX_JSON_ANNOTATION_CHARS:
        return None
    try:
        parsed = json.loads(value)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def changed_fields(old: Any, new: Any, prefix: str = "", depth: int = 0) -> list[FieldValueChange]:
    """Every shallowest differing path with both values (see the module doc)."""
    if depth >= MAX_DEPTH:
        return [] if old == new else [FieldValueChange(prefix, old, new)]
    if isinstance(old, dict) and isinstance(new, dict):
        out: list[FieldValueChange] = []
        for k in list(old) + [k for k in new if k not in old]:
            sub = join(prefix, str(k))
            if k not in old:
                out.append(FieldValueChange(sub, MISSING, new[k]))
            elif k not in new:
                out.append(FieldValueChange(sub, old[k], MISSING))
            elif prefix == "metadata.annotations" and old[k] != new[k]:
                a, b = _json_object(old[k]), _json_object(new[k])
                inner = changed_fields(a, b, sub, depth + 1) if a is not None and b is not None else None
                out += inner if inner else [FieldValueChange(sub, old[k], new[k])]
            else:
                out += changed_fields(old[k], new[k], sub, depth + 1)
        return out
    if isinstance(old, list) and isinstance(new, list):
        on, nn = item_names(old), item_names(new)
        if on is not None and nn is not None and set(on) == set(nn):
            by_name = dict(zip(nn, new, strict=True))
            found: list[FieldValueChange] = []
            for name, item in zip(on, old, strict=True):
                found += changed_fields(item, by_name[name], f"{prefix}[{name}]", depth + 1)
            return found if found or on == nn else [FieldValueChange(prefix, old, new)]
        if on is None and nn is None and len(old) == len(new):
            found = []
            for i, (a, b) in enumerate(zip(old, new, strict=True)):
                found += changed_fields(a, b, f"{prefix}[{i}]", depth + 1)
            return found
        return [] if old == new else [FieldValueChange(prefix, old, new)]
    return [] if old == new and type(old) is type(new) else [FieldValueChange(prefix, old, new)]


def bounded(value: Any) -> tuple[Any, bool]:
    """``(value, False)`` when its compact JSON is at most :data:`MAX_VALUE_CHARS`, else the
    start of that JSON (a string ending in :data:`TRUNCATION_MARK`) and ``True``."""
    text = json.dumps(value, separators=(",", ":"), sort_keys=True, default=str)
    if len(text) <= MAX_VALUE_CHARS:
        return value, False
    return text[: MAX_VALUE_CHARS - len(TRUNCATION_MARK)] + TRUNCATION_MARK, True


def field_dicts(changes: list[FieldValueChange], skip: frozenset[str] = frozenset()) -> tuple[list[dict[str, Any]], int]:
    """The first :data:`MAX_FIELDS` changes as ``{"path", "old", "new"}`` (a side where the
    field is absent has no key; a cut value has ``oldTruncated`` / ``newTruncated``), and how
    many more there were."""
    kept = [c for c in changes if c.path not in skip]
    out = []
    for c in kept[:MAX_FIELDS]:
        entry: dict[str, Any] = {"path": c.path}
        for side, value in (("old", c.old), ("new", c.new)):
            if value is MISSING:
                continue
            entry[side], cut = bounded(value)
            if cut:
                entry[f"{side}Truncated"] = True
        out.append(entry)
    return out, max(len(kept) - MAX_FIELDS, 0)
