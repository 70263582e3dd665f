"""Stable digests: Grove's pod-template hash and the pod-name suffix.

Grove hashes a Go object dump (FNV-64a) and encodes the decimal result with
``rand.SafeEncodeString``; a Go dump cannot be reproduced byte for byte in Python, so the
same construction is applied to canonical JSON (the value is opaque either way).
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping
from typing import Any

_SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_FNV_OFFSET = 0xCBF29CE484222325
_FNV_PRIME = 0x100000001B3
_MASK = (1 << 64) - 1


#: One encoder for every canonical text: ``json.dumps`` with options builds a new encoder per
#: call, a measurable share of hashing thousands of pods (issue 35.4); same options, same text.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode
_KEY = json.JSONEncoder(ensure_ascii=False).encode


def canonical_json(obj: Any) -> bytes:
    return _CANONICAL(obj).encode()


# Canonical JSON by parts (issue 35.4): the pods of a PodClique share every spec member but
# the hostname and every label but the pod index, so the shared members' text is encoded once
# and the pods' texts are joined from it. ``json.dumps(sort_keys=True)`` writes a mapping as
# ``{`` + its members sorted by key, joined by ``,`` + ``}``, each member ``"key":value`` with
# the value encoded alone the same way, so the joined text is byte for byte the text of the
# whole mapping (tests/test_hashing.py).


class CanonicalWithout:
    """The canonical JSON of mappings that are ``shared`` plus one key of their own (``key``),
    ``shared``'s members encoded once: two runs of members, those sorted before ``key`` and
    those after, and the one member of each mapping spliced between them."""

    def __init__(self, shared: Mapping[str, Any], key: str) -> None:
        self.key = key
        below = {k: v for k, v in shared.items() if k < key}
        above = {k: v for k, v in shared.items() if k > key}
        below_text, above_text = _CANONICAL(below)[1:-1], _CANONICAL(above)[1:-1]
        # Everything around the one member, joined once: a mapping's text is its parts joined.
        self._head = "{" + below_text + ("," if below_text else "") + _KEY(key) + ":"
        self._tail = ("," + above_text if above_text else "") + "}"

    def text(self, value: Any) -> str:
        """The canonical JSON of ``shared`` with ``key`` set to ``value``."""
        return self.text_of(_CANONICAL(value))

    def text_of(self, encoded: str) -> str:
        """:meth:`text` of the value whose canonical JSON is ``encoded``."""
        return self._head + encoded + self._tail


def fnv64a(data: bytes) -> int:
    h = _FNV_OFFSET
    for byte in data:
        h ^= byte
        h = (h * _FNV_PRIME) & _MASK
    return h


def safe_encode(text: str) -> str:
    """``k8s.io/apimachinery/pkg/util/rand.SafeEncodeString``: maps by character code."""
    return "".join(_SAFE_ALPHABET[ord(ch) % len(_SAFE_ALPHABET)] for ch in text)


def pod_template_hash(template: Any) -> str:
    return _template_digest(canonical_json(template))


@functools.lru_cache(maxsize=256)
def _template_digest(canonical: bytes) -> str:
    """FNV-64a runs byte by byte in Python (~50 us a template); the PodCliqueSets of one tree
    often share templates (one model served in many namespaces), so equal texts are hashed once."""
    return safe_encode(str(fnv64a(canonical)))


def short_hash(obj: Any, length: int = 8) -> str:
    """A ``length``-character suffix from the SafeEncode alphabet (no vowels, no words)."""
    return short_hash_of(canonical_json(obj), length)


#: Two characters at a time: ``_PAIRS[n]`` is the low digit then the high digit of ``n`` in base
#: 27, so a suffix takes half the divisions (every rendered pod is named: issue 35.4).
_BASE = len(_SAFE_ALPHABET)
_PAIRS = tuple(_SAFE_ALPHABET[n % _BASE] + _SAFE_ALPHABET[n // _BASE] for n in range(_BASE * _BASE))


def short_hash_of(canonical: bytes, length: int = 8) -> str:
    """:func:`short_hash` of an object whose canonical JSON is ``canonical``: the first 8 bytes
    of its SHA-256 as a number, written in base 27 with the SafeEncode alphabet, lowest digit
    first, ``length`` digits."""
    value = int.from_bytes(hashlib.sha256(canonical).digest()[:8], "big")
    out = []
    for _ in range(length // 2):
        value, rem = divmod(value, _BASE * _BASE)
        out.append(_PAIRS[rem])
    if length % 2:
        out.append(_SAFE_ALPHABET[value % _BASE])
    return "".join(out)
