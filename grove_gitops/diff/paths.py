"""Field paths of Kubernetes objects, written the way Kubernetes writes them.

``spec.containers[w].image``, ``metadata.labels['grove.io/podgang']``: list items that are
mappings with a unique ``name`` are addressed by it, so inserting or reordering items does
not shift every path after them, and the path still reads like the object's YAML.
"""

from __future__ import annotations

from typing import Any


def _map_segment(key: str) -> str:
    return f"['{key}']" if any(c in key for c in "./[] ") else f".{key}"


def join(prefix: str, key: str) -> str:
    seg = _map_segment(key)
    if not prefix:
        return seg[1:] if seg.startswith(".") else seg
    return prefix + seg


def item_names(items: list[Any]) -> list[str] | None:
    """Names to address list items by, when every item is a mapping with a unique ``name``."""
    names = [i.get("name") for i in items if isinstance(i, dict)]
    if len(names) != len(items) or not all(isinstance(n, str) and n for n in names):
        return None
    if len(set(names)) != len(names):
        return None
    return [str(n) for n in names]


def changed_paths(old: Any, new: Any, prefix: str = "") -> list[str]:
    """The shallowest paths where ``old`` and ``new`` differ.

    An added or removed list item is reported as its list (``spec.containers[w].env``),
    not as every leaf of the item: a header should read "env changed", not twelve lines.
    """
    if isinstance(old, dict) and isinstance(new, dict):
        paths: list[str] = []
        for k in list(old) + [k for k in new if k not in old]:
            sub = join(prefix, str(k))
            if k not in old or k not in new:
                paths.append(sub)
            else:
                paths += changed_paths(old[k], new[k], sub)
        return paths
    if isinstance(old, list) and isinstance(new, list):
        on, nn = item_names(old), item_names(new)
        if on is not None and nn is not None:
            if set(on) != set(nn):
                return [prefix]
            by_name = dict(zip(nn, new, strict=True))
            paths = []
            for name, item in zip(on, old, strict=True):
                paths += changed_paths(item, by_name[name], f"{prefix}[{name}]")
            return paths if paths or on == nn else [prefix]
        if len(old) != len(new):
            return [prefix]
        paths = []
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            paths += changed_paths(a, b, f"{prefix}[{i}]")
        return paths
    return [] if old == new and type(old) is type(new) else [prefix]
