"""Deterministic YAML bytes for Kubernetes objects.

Keys are emitted in a fixed order — ``apiVersion, kind, metadata, spec`` first, then the
rest sorted; inside ``metadata`` ``name, namespace, labels, annotations`` first — and every
nested mapping sorted, so the bytes never depend on dict insertion order or on how a user
ordered their source file. PyYAML's C dumper does the writing.
"""

from __future__ import annotations

from typing import Any

import yaml

_TOP = ("apiVersion", "kind", "metadata", "spec")
_META = ("name", "namespace", "labels", "annotations")


def _sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


def _ordered(obj: dict[str, Any], first: tuple[str, ...]) -> dict[str, Any]:
    out = {k: obj[k] for k in first if k in obj}
    out.update({k: obj[k] for k in sorted(obj) if k not in out})
    return out


def canonical(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` re-built in output key order (a new object; the input is not changed)."""
    body = _sorted(obj)
    if isinstance(body.get("metadata"), dict):
        body["metadata"] = _ordered(body["metadata"], _META)
    return _ordered(body, _TOP)


def dump_object(obj: dict[str, Any]) -> str:
    return yaml.dump(
        canonical(obj),
        Dumper=yaml.CSafeDumper,
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=True,
        width=1_000_000,
    )


def dump_plain(data: Any) -> str:
    """YAML for our own small files (kustomization.yaml), keys in the given order."""
    return yaml.dump(data, Dumper=yaml.CSafeDumper, sort_keys=False, default_flow_style=False, width=1_000_000)
