"""The strict YAML checks' shortcut for alias-free documents (issue 35.4): a stack walk that
counts nodes instead of memoising sizes per node. It must accept exactly what the full check
(:func:`_check_node`) accepts; whatever it refuses goes to the full check, whose message is
reported, so errors are unchanged."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from grove_gitops.yamlfiles import yamlio
from grove_gitops.yamlfiles.yamlio import _check_node, _may_alias, _plain_tree_ok, parse_documents

_keys = st.sampled_from(["a", "b", "c", "<<", "d"])
_scalar = st.sampled_from(["1", "x", "''", "null", "[]", "{}"])


def _text(value: object, indent: int = 0) -> str:
    """Block YAML of a tree whose mappings are lists of pairs (so keys may repeat)."""
    pad = " " * indent
    if isinstance(value, list) and value and isinstance(value[0], tuple):
        return "".join(f"{pad}{k}:\n{_text(v, indent + 2)}" for k, v in value)
    if isinstance(value, list):
        return "".join(f"{pad}-\n{_text(v, indent + 2)}" for v in value) or f"{pad}[]\n"
    return f"{pad}{value}\n"


_trees = st.recursive(
    _scalar,
    lambda inner: st.lists(st.tuples(_keys, inner), min_size=1, max_size=4) | st.lists(inner, min_size=1, max_size=4),
    max_leaves=25,
)


def _full_check_ok(node: yaml.Node) -> bool:
    try:
        _check_node(node)
    except yamlio._YamlCheckError:
        return False
    return True


@given(_trees, st.integers(min_value=1, max_value=40))
def test_the_shortcut_accepts_what_the_full_check_accepts(tree: object, limit: int) -> None:
    text = _text(tree)
    assert not _may_alias(text)
    try:
        node = yaml.compose(text, Loader=yaml.CSafeLoader)
    except yaml.YAMLError:
        return  # a merge key on a non-mapping and the like: not this check's concern
    if node is None:
        return
    with pytest.MonkeyPatch.context() as m:  # (a fixture would outlive hypothesis's examples)
        m.setattr(yamlio, "MAX_EXPANDED_NODES", limit)
        assert _plain_tree_ok(node) == _full_check_ok(node)


def test_duplicate_keys_and_size_report_the_full_checks_message(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "a:\n  b: 1\n  b: 2\nc: 1\nc: 2\n"
    _, problems = parse_documents(text, "w.yaml")
    assert [p.message for p in problems] == ['invalid YAML: line 3: duplicate key "b"']
    monkeypatch.setattr(yamlio, "MAX_EXPANDED_NODES", 4)
    _, problems = parse_documents("a:\n- 1\n- 2\n- 3\n", "w.yaml")
    assert [p.message for p in problems] == ["invalid YAML: line 1: document expands to more than 4 nodes (alias bomb?)"]


def test_a_text_with_anchors_and_aliases_takes_the_full_check() -> None:
    assert _may_alias("a: &x [1]\nb: *x\n")
    assert not _may_alias("a: '*.example.com'\n")
    assert not _may_alias("a: 'x&y'\n")
    _, problems = parse_documents("a: &a [*a]\n", "w.yaml")
    assert [p.message for p in problems] == ["invalid YAML: line 1: recursive alias is not allowed"]
