"""Issue 21 §2, third finding: a YAML integer of 4,301 or more digits crashed every command
with Python's integer-conversion ``ValueError``, anywhere in any document. Integers are now
checked before conversion and refused outside 64 bits; explicitly tagged scalars that are not
what their tag says (``!!int abc``, ``!!bool maybe``) crashed too and are now problems with
their line."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from grove_gitops.cli import main
from grove_gitops.yamlfiles.yamlio import INT64_MAX, INT64_MIN, parse_documents
from tests.support import write_source

HEAD = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: default}\ndata:\n  k: v\nx: "
OUT_OF_RANGE = "is out of range (Kubernetes integers are 64-bit; quote it if it is text)"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("9" * 4301, f"integer of 4301 characters {OUT_OF_RANGE}"),
        ("-" + "1" * 5000, f"integer of 5001 characters {OUT_OF_RANGE}"),
        ("0x" + "f" * 200_000, f"integer of 200002 characters {OUT_OF_RANGE}"),
        ("1:" * 50_000 + "1", f"integer of 100001 characters {OUT_OF_RANGE}"),
        (str(INT64_MAX + 1), f"integer {INT64_MAX + 1} {OUT_OF_RANGE}"),
        (str(INT64_MIN - 1), f"integer {INT64_MIN - 1} {OUT_OF_RANGE}"),
        ("1" + "0" * 30, f"integer {10**30} {OUT_OF_RANGE}"),
        ("!!int abc", "'abc' is not a valid integer (!!int)"),
        ('!!int ""', "'' is not a valid integer (!!int)"),
        ("!!int 0x", "'0x' is not a valid integer (!!int)"),
        ("!!float abc", "'abc' is not a valid number (!!float)"),
        ("!!bool maybe", "'maybe' is not a valid boolean (!!bool)"),
        ("!!timestamp x", "'x' is not a valid timestamp (!!timestamp)"),
    ],
    ids=lambda v: v[:24],
)
def test_bad_integers_and_tagged_scalars_are_problems_with_their_line(value: str, message: str) -> None:
    docs, problems = parse_documents(f"{HEAD}{value}\n", "cm.yaml")
    assert docs == []
    assert [str(p) for p in problems] == [f"cm.yaml: invalid YAML: line 6: {message}"]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (str(INT64_MAX), INT64_MAX),
        (str(INT64_MIN), INT64_MIN),
        ("0x7fffffffffffffff", INT64_MAX),
        ("1_000", 1000),
        ("0o17", "0o17"),  # YAML 1.1: not an integer, a string
        ("017", 15),
        ("1:30", 90),
        ("!!int 42", 42),
        ("!!float 1.5", 1.5),
        ("!!bool yes", True),
        ("1.0e+400", float("inf")),  # refused later as not a JSON number
        ("1e400", "1e400"),  # YAML 1.1: no dot, so a string
    ],
)
def test_integers_kubernetes_can_hold_still_load(value: str, expected: object) -> None:
    docs, problems = parse_documents(f"x: {value}\n", "f.yaml")
    if expected == float("inf"):
        assert [str(p) for p in problems] == ["f.yaml: x: document 1: inf is not a JSON number"]
        return
    assert problems == []
    assert docs[0].data == {"x": expected}


def test_a_huge_integer_as_a_mapping_key_is_refused_too() -> None:
    _, problems = parse_documents("? " + "7" * 5000 + "\n: v\n", "k.yaml")
    assert [str(p) for p in problems] == [f"k.yaml: invalid YAML: line 1: integer of 5000 characters {OUT_OF_RANGE}"]


@pytest.mark.parametrize("command", ["validate", "render", "feasibility"])
def test_every_command_reports_it_as_a_file_error(command: str, tmp_path: Path) -> None:
    src = write_source(tmp_path / "src", {"cm.yaml": f"{HEAD}{'9' * 4301}\n"})
    args = [command, str(src)] + (["--out", str(tmp_path / "out")] if command == "render" else [])
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert f"error: cm.yaml: invalid YAML: line 6: integer of 4301 characters {OUT_OF_RANGE}" in result.output
    assert not (tmp_path / "out").exists()


class _Reference(yaml.CSafeLoader):
    """PyYAML's own resolution with the loader's implicit resolvers (no memo, path calls kept)."""


SCALARS = [
    "1", "-7", "0x1F", "0o17", "017", "1_000", "1:30", "1.5", "-.5", "6.02e+23", "1e3", "true", "True", "yes", "No",
    "on", "off", "y", "n", "null", "~", "", "2024-01-01", "2001-12-14t21:59:43.10-05:00", "abc", "8Gi",
    "'quoted 1'", '"2"', "!!str 3", "a" * 65, "1." + "1" * 64,
]


def test_memoised_tags_resolve_as_pyyaml_does() -> None:
    """Issue 35.4: a plain scalar's tag is memoised by its text. Cold and warm, every scalar
    loads as PyYAML's own resolution (with the same implicit resolvers) loads it, whichever
    scalar came first, and the memo stays bounded."""
    from grove_gitops.yamlfiles import yamlio

    _Reference.yaml_implicit_resolvers = yamlio._Loader.yaml_implicit_resolvers
    text = "".join(f"k{i}: {s}\n" for i, s in enumerate(SCALARS))
    text += "list: [" + ", ".join(SCALARS[:20]) + "]\nabc: x\n8Gi: y\nmerged: {<<: {a: 1}, b: 2}\n"
    expected = yaml.load(text, Loader=_Reference)
    yamlio._PLAIN_TAGS.clear()
    for _ in range(2):  # cold, then every tag from the memo
        docs, problems = parse_documents(text, "f.yaml")
        assert problems == [] and [d.data for d in docs] == [expected]
    assert "a" * 65 not in yamlio._PLAIN_TAGS and "1" in yamlio._PLAIN_TAGS
    many = "".join(f"k{i}: v{i}\n" for i in range(yamlio._TAG_MEMO_MAX + 10))
    assert parse_documents(many, "g.yaml")[0][0].data["k7"] == "v7"
    assert len(yamlio._PLAIN_TAGS) <= yamlio._TAG_MEMO_MAX
    assert not yamlio._Loader.yaml_path_resolvers  # what makes the no-op path calls right
