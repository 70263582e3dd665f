"""One-line JSON annotations, expanded one field per line for the unified diff.

Every PodGang carries ``gitops.grove.io/day2``: about 400 characters of JSON on one line (the
agent's day-2 record: replicas, minAvailable, scaling groups, strategy). A replica change
alters a number inside it, and the unified diff showed the whole line removed and added again
on every PodGang. When an annotation's value is a JSON object or array on both sides and
differs, both sides' diff text gets it pretty-printed (sorted keys, one field per line) under
a line saying so, so difflib marks only the fields that changed. The diff stays a review
view: the files Git holds keep the one-line form.

Only the layout the renderer writes is touched (an annotation on one line, four spaces in,
whose YAML value is exactly the annotation); anything else, e.g. a hand-made ``--rendered``
tree, is left as it is.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import yaml

#: Where ``metadata.annotations`` entries start in a rendered file.
INDENT = "    "
EXPANDED_NOTE = "(JSON, one field per line: expanded by grove-gitops diff)"
#: Longer values are left on their line (a render never writes one; the diff stays bounded).
MAX_CHARS = 100_000


def _annotations(obj: Mapping[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    found = meta.get("annotations") if isinstance(meta, dict) else None
    return found if isinstance(found, dict) else {}


def _json(value: Any) -> Any:
    if not isinstance(value, str) or len(value) > MAX_CHARS or not value.startswith(("{", "[")):
        return None
    try:
        parsed = json.loads(value)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict | list) else None


def changed_json_annotations(old: Mapping[str, Any], new: Mapping[str, Any]) -> frozenset[str]:
    """Annotations whose value is JSON on both sides and differs."""
    a, b = _annotations(old), _annotations(new)
    return frozenset(
        k
        for k in a.keys() & b.keys()
        if isinstance(k, str) and a[k] != b[k] and _json(a[k]) is not None and _json(b[k]) is not None
    )


def expand(text: str, obj: Mapping[str, Any], names: frozenset[str]) -> str:
    """``text`` with the annotations ``names`` pretty-printed (see the module doc)."""
    if not names:
        return text
    values = _annotations(obj)
    out: list[str] = []
    for line in text.split("\n"):
        name, sep, _ = line[len(INDENT) :].partition(": ")
        if line.startswith(INDENT) and not line.startswith(INDENT + " ") and sep and name in names:
            value = values.get(name)
            try:
                same = yaml.safe_load(line[len(INDENT) :]) == {name: value}
            except yaml.YAMLError:
                same = False
            data = _json(value)
            if same and data is not None:
                out.append(f"{INDENT}{name}: {EXPANDED_NOTE}")
                pretty = json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False)
                out += [f"{INDENT}  {p}" for p in pretty.split("\n")]
                continue
        out.append(line)
    return "\n".join(out)
