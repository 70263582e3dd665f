"""Canonical JSON by parts (issue 35.4): the pods of a PodClique are hashed from their shared
spec members and labels encoded once; the joined text must be the text of the whole object, or
every pod name would change."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from grove_gitops.expand.hashing import (
    CanonicalWithout,
    canonical_json,
    fnv64a,
    pod_template_hash,
    safe_encode,
    short_hash,
    short_hash_of,
)
from grove_gitops.output.diagram import escape_label

_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=8))
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)


@given(st.dictionaries(st.text(max_size=8), _values, max_size=8), st.text(max_size=8), _values)
def test_a_shared_mapping_plus_one_key_is_its_canonical_json(shared: dict[str, Any], key: str, value: Any) -> None:
    whole = canonical_json({**shared, key: value})
    assert CanonicalWithout(shared, key).text(value).encode() == whole
    assert short_hash_of(whole) == short_hash({**shared, key: value})


@given(
    st.dictionaries(st.text(max_size=8), _values, max_size=6),
    st.text(max_size=8),
    st.dictionaries(st.text(max_size=8), _values, max_size=6),
    st.text(max_size=8),
    _values,
)
def test_a_member_joined_from_its_own_parts_is_its_canonical_json(
    outer: dict[str, Any], key: str, inner: dict[str, Any], inner_key: str, value: Any
) -> None:
    """A pod's metadata: the shared members, and labels that are shared but the pod index."""
    text = CanonicalWithout(outer, key).text_of(CanonicalWithout(inner, inner_key).text(value))
    assert text.encode() == canonical_json({**outer, key: {**inner, inner_key: value}})


def test_parts_keep_unicode_and_order_keys_as_json_does() -> None:
    shared = {"é": "ü", "B": [1, {"z": 1, "a": 2}], "a": None, "": 1.5}
    text = CanonicalWithout(shared, "b").text({"y": "ß", "x": 2})
    whole = {**shared, "b": {"y": "ß", "x": 2}}
    expected = json.dumps(whole, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert text == expected


@given(st.text(max_size=30))
def test_escape_label_is_the_per_character_rule(text: str) -> None:
    safe = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789 ._/:=+-")
    assert escape_label(text) == "".join(ch if ch in safe else f"#{ord(ch)};" for ch in text)


@given(st.lists(st.dictionaries(st.text(max_size=6), _values, max_size=4), min_size=1, max_size=4))
def test_the_template_hash_is_fnv_of_each_templates_own_text(templates: list[dict[str, Any]]) -> None:
    """Equal texts are hashed once (a cache across PodCliqueSets): each template still gets its own."""
    for template in [*templates, *reversed(templates)]:
        assert pod_template_hash(template) == safe_encode(str(fnv64a(canonical_json(template))))


def _digit_by_digit(canonical: bytes, length: int) -> str:
    """The suffix's definition: base-27 digits of the digest's first 8 bytes, lowest first."""
    import hashlib

    value = int.from_bytes(hashlib.sha256(canonical).digest()[:8], "big")
    out = []
    for _ in range(length):
        value, rem = divmod(value, 27)
        out.append("bcdfghjklmnpqrstvwxz2456789"[rem])
    return "".join(out)


@given(st.binary(max_size=64), st.integers(min_value=0, max_value=14))
def test_the_suffix_taken_two_digits_at_a_time_is_the_digit_by_digit_one(canonical: bytes, length: int) -> None:
    assert short_hash_of(canonical, length) == _digit_by_digit(canonical, length)


def test_a_known_pod_suffix_is_unchanged() -> None:
    """Pod names of every render depend on it: one fixed value, computed before the change."""
    assert short_hash_of(b'{"a":1}') == "s2jh7rkl"
