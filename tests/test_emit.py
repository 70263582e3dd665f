"""The own YAML emitter (issue 10): every object reads back the same with a YAML 1.1 reader
(PyYAML, what we and kubectl's older tooling use) and a YAML 1.2 reader (ruamel.yaml, the
version Argo CD, Flux and kustomize's Go yaml.v3 implement), and ``kubectl kustomize`` reads
a rendered tree back to the same objects."""

from __future__ import annotations

import io
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from ruamel.yaml import YAML

from bench.generate import generate
from grove_gitops.output import emit as emit_module
from grove_gitops.output.emit import emit
from grove_gitops.output.layout import build_tree_from_plan
from grove_gitops.output.writer import write_tree
from grove_gitops.render import plan_source, render_source
from tests.support import PROJECT, SAMPLES

_YAML12 = YAML(typ="safe", pure=True)  # YAML 1.2 is ruamel's default version


def load11(text: str) -> Any:
    return yaml.load(text, Loader=yaml.CSafeLoader)


def load12(text: str) -> Any:
    return _YAML12.load(io.StringIO(text))


def assert_round_trip(obj: Any) -> str:
    text = emit(obj)
    assert load11(text) == obj, text
    assert load12(text) == obj, text
    return text


#: Strings some YAML version reads as another type, or that break a plain scalar.
HAZARDS = [
    "yes", "no", "on", "off", "y", "n", "Y", "N", "Yes", "NO", "On", "OFF",
    "true", "false", "True", "FALSE", "null", "Null", "NULL", "~", "",
    "0x1", "0o7", "0b101", "0777", "1e3", "1E3", "1e-3", "-1e+3", "1_000", "+1", "-0", "1.", ".5", "1.5",
    "12:30", "190:20:30", "-12:30", "1:20.5", "2001-12-14", "2001-12-14t21:59:43.10-05:00", "2001-1-2", "2001-1-2 3:4:5",
    ".inf", "-.inf", "+.INF", ".nan", ".NaN", "-", "--", "---", "...", "--- a", "... b", "=", "<<",
    " a", "a ", " ", "a: b", "a:", "a #b", "#a", "a#b", "-a", "- a", "?a", "? a", ":a", ",a", "[a", "]", "{a}",
    "&a", "*a", "!a", "|a", ">a", "'a", '"a', "%a", "@a", "`a", "a'b", 'a"b', "a\\b",
    "\t", "a\tb", "\0", "\x07", "\x1b", "\x7f", "\x85", "\xa0", "\u2028", "\u2029", "\ufeff", "\ufffe",
    "a\nb", "a\nb\n", "a\n\n", "\na", " a\nb", "a \nb", "a\n b", "a\r\nb", "line1\n\nline3\n", "\n", "\n\n",
    "é", "日本語", "emoji 🎉", "a\u0301", "\U0001f600\n\U0001f600",
    "10Gi", "500m", "--role=prefill", "metadata.labels['x']", "a,b", "a[0]", "{{ .Values }}", "http://x:80/a",
]

_hazard = st.sampled_from(HAZARDS)
_any_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
_strings = st.one_of(
    _hazard,
    _any_text,
    st.tuples(_hazard, _any_text, _hazard).map("".join),
    st.lists(st.one_of(_hazard, _any_text), max_size=4).map("\n".join),
)
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
    _strings,
)
_json = st.recursive(
    _scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_strings, inner, max_size=4)),
    max_leaves=25,
)


@given(_json)
def test_any_json_like_object_round_trips(obj: Any) -> None:
    assert_round_trip(obj)


@given(st.dictionaries(_strings, _json, min_size=1, max_size=6))
def test_any_json_like_mapping_round_trips(obj: dict[str, Any]) -> None:
    assert_round_trip(obj)


@pytest.mark.parametrize("s", HAZARDS)
def test_each_hazard_round_trips_as_value_key_and_item(s: str) -> None:
    assert_round_trip({"k": s, s: [s, {s: s}], "l": [[s], {"x": s}]})


def test_style_is_kubectl_block_yaml() -> None:
    obj = {
        "spec": {"containers": [{"name": "c", "args": ["-x", "yes"], "env": []}], "n": 3, "f": 1.5, "none": None},
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {"labels": {"a": "0"}, "annotations": {}},
    }
    assert emit(obj) == (
        "apiVersion: v1\n"
        "kind: Pod\n"
        "metadata:\n"
        "  annotations: {}\n"
        "  labels:\n"
        "    a: '0'\n"
        "spec:\n"
        "  containers:\n"
        "  - args:\n"
        "    - -x\n"
        "    - 'yes'\n"
        "    env: []\n"
        "    name: c\n"
        "  f: 1.5\n"
        "  'n': 3\n"  # YAML 1.1 reads a plain n as false
        "  none: null\n"
    )


def test_multi_line_text_is_a_literal_block() -> None:
    text = emit({"script": "set -e\n\necho hi\n", "tight": "a\nb", "kept": "a\n\n"})
    assert text == "kept: |+\n  a\n\nscript: |\n  set -e\n\n  echo hi\ntight: |-\n  a\n  b\n"
    assert_round_trip({"script": "set -e\n\necho hi\n", "tight": "a\nb", "kept": "a\n\n"})


def test_unclean_multi_line_text_is_double_quoted() -> None:
    assert emit({"k": " a\nb"}) == 'k: " a\\nb"\n'
    assert emit({"k": "a\tb"}) == 'k: "a\\tb"\n'


def test_numbers_yaml_1_2_would_read_are_quoted() -> None:
    """PyYAML's own dumper wrote ``1e3`` and ``1_000`` plain: numbers for YAML 1.2 readers."""
    assert emit({"a": "1e3", "b": "1_000", "c": "0o7"}) == "a: '1e3'\nb: '1_000'\nc: '0o7'\n"
    # and Go's yaml.v2 (sigs.k8s.io/yaml) reads one-digit-month dates as timestamps
    assert emit({"d": "2001-1-2", "e": "2001-1-2 3:4:5"}) == "d: '2001-1-2'\ne: '2001-1-2 3:4:5'\n"


def test_long_keys_use_the_explicit_form() -> None:
    key = "k" * 1500
    assert_round_trip({key: "v", "a" + key: {"x": [1]}, "b" + key: [1, 2]})


def test_bytes_are_deterministic_and_independent_of_key_order() -> None:
    a = {"b": 1, "a": {"y": [1, {"q": 1, "p": 2}], "x": "s"}}
    b = {"a": {"x": "s", "y": [1, {"p": 2, "q": 1}]}, "b": 1}
    assert emit(a) == emit(b)


def test_non_json_values_are_refused() -> None:
    with pytest.raises(TypeError):
        emit({"a": object()})
    with pytest.raises(TypeError):
        emit({1: "a"})


def _rendered_objects(source: Path) -> list[dict[str, Any]]:
    return [item.obj for item in render_source(source).objects]


@pytest.fixture(scope="module")
def bench_source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return generate(tmp_path_factory.mktemp("bench") / "src", 6)


@pytest.mark.parametrize("which", ["examples", "samples", "bench"])
def test_every_rendered_object_round_trips(which: str, bench_source: Path) -> None:
    source = {"examples": PROJECT / "examples", "samples": SAMPLES, "bench": bench_source}[which]
    objects = _rendered_objects(source)
    assert len(objects) > 20
    for obj in objects:
        assert_round_trip(obj)


def test_every_written_file_reads_the_same_in_yaml_1_1_and_1_2(bench_source: Path) -> None:
    tree = build_tree_from_plan(plan_source(bench_source))
    for path, data in tree.files.items():
        if path.endswith(".yaml"):
            text = data.decode()
            assert load11(text) == load12(text), path


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
@pytest.mark.parametrize("which", ["examples", "samples"])
def test_kubectl_kustomize_reads_the_rendered_tree_back(which: str, tmp_path: Path) -> None:
    source = {"examples": PROJECT / "examples", "samples": SAMPLES}[which]
    out = tmp_path / "out"
    tree = build_tree_from_plan(plan_source(source))
    write_tree(tree, out)
    expected = [load11(data.decode()) for path, data in tree.files.items() if path.endswith(".yaml")]
    expected = [obj for obj in expected if obj.get("kind") != "Kustomization"]
    run = subprocess.run(["kubectl", "kustomize", str(out)], capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stderr
    got = [doc for doc in yaml.load_all(run.stdout, Loader=yaml.CSafeLoader) if doc is not None]

    def key(obj: dict[str, Any]) -> tuple[str, str, str, str]:
        meta = obj["metadata"]
        return obj["apiVersion"], obj["kind"], meta.get("namespace", ""), meta["name"]

    assert sorted(got, key=key) == sorted(expected, key=key)


#: Characters of names plus those of numbers, dates, words and indicators: the shortcut's edges.
_EDGE_TEXT = st.text(alphabet="abefinotxyzgpsuYNTE0189._/-:+ #~", max_size=12)
_EDGE_CASES = [
    "yes",
    "Null",
    "TRUE",
    "y",
    "off",
    "2020-1-1Tpods",
    "2020-01-01",
    "0x1p-2",
    "infinity",
    ".nan",
    "1e5",
    "e5",
    "pod-1",
    "30-pod--x.yaml",
    "llama-0000-0",
    "a:b",
    "p #x",
    "-p",
    "~",
    "<<",
    "=",
    "0o17",
    "1_000",
]


@given(_EDGE_TEXT)
def test_plain_ok_shortcut_agrees_with_its_definition(s: str) -> None:
    assert emit_module._plain_ok(s) == emit_module._plain_ok_slow(s)


@pytest.mark.parametrize("s", _EDGE_CASES)
def test_plain_ok_shortcut_agrees_on_the_edges_and_round_trips(s: str) -> None:
    assert emit_module._plain_ok(s) == emit_module._plain_ok_slow(s)
    assert yaml.safe_load(emit({"k": s})) == {"k": s}
