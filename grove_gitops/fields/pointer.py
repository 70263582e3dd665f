"""JSON Pointers (RFC 6901) into Kubernetes objects: the paths a PodGang's pod binding names.

Why pointers and not the dotted field paths of error messages: the fields a scheduler binds a
pod with are label and annotation keys (``kai.scheduler/subgroup-name``), which hold dots and
slashes. A pointer escapes ``~`` and ``/`` and nothing else, so every key round-trips, and a
reader in any language can resolve one.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

#: A binding names a field a few levels down (``/metadata/labels/<key>``, ``/spec/<field>``);
#: a deeper pointer is no render's, and is refused before it is walked.
MAX_DEPTH = 8

#: What :func:`resolve` returns for a field that is not there (None is a value).
MISSING: Any = object()


@functools.lru_cache(maxsize=1024)
def encode(*parts: str) -> str:
    """The pointer of the field at ``parts`` (``encode("metadata", "labels", "a/b")`` is
    ``/metadata/labels/a~1b``). Memoised: a render encodes the same few backend fields for
    every podgroup of every PodGang."""
    return "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in parts)


def decode(pointer: str) -> tuple[str, ...] | None:
    """The keys of ``pointer``, or None when it is not a pointer of at most :data:`MAX_DEPTH`
    object keys (the empty pointer, the whole document, is not a field)."""
    if not pointer.startswith("/") or pointer.count("/") > MAX_DEPTH:
        return None
    parts = pointer[1:].split("/")
    for part in parts:
        # "~" must be followed by "0" or "1" (RFC 6901 §3).
        if part.replace("~0", "").replace("~1", "").count("~"):
            return None
    return tuple(p.replace("~1", "/").replace("~0", "~") for p in parts)


def resolve(obj: Any, parts: tuple[str, ...]) -> Any:
    """The value at ``parts`` in ``obj``, or :data:`MISSING` when a key is absent or a step
    is not a mapping."""
    value = obj
    for part in parts:
        if not isinstance(value, Mapping):
            return MISSING
        value = value.get(part, MISSING)
        if value is MISSING:
            return MISSING
    return value

