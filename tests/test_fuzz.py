"""Property-based fuzzing of the CLI (issue 9 §2): no input may crash, hang or make
``validate`` and ``render`` disagree.

Each example takes one seed source tree (a Grove sample, or ``examples/``), replaces a few
random leaves or subtrees of its documents with hazardous values, and runs ``validate`` and
``render`` in process. The rules asserted are the CLI's contract with its user:

- both end with exit 0 or 1, never an uncaught exception or a traceback;
- they agree on the exit code (and on the problems reported);
- on exit 1 every ``error:`` line is ``error: file: ...`` with a source file of the tree;
- on exit 1, OUT (holding an earlier render) is left byte for byte as it was.

The default profile (``tests/conftest.py``) is derandomised and bounded for CI; run
``pytest tests/test_fuzz.py --hypothesis-profile long --timeout 0`` to search further
(the suite-wide 300 s pytest-timeout would stop it).
"""

from __future__ import annotations

import atexit
import copy
import datetime
import shutil
import tempfile
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner
from hypothesis import event, given
from hypothesis import strategies as st

from grove_gitops.cli import main
from tests.support import PROJECT, SAMPLES, plain

Tree = dict[str, list[Any]]  # relative file name -> its YAML documents


def _load_tree(root: Path, files: list[Path]) -> Tree:
    return {str(p.relative_to(root)): [d for d in yaml.safe_load_all(p.read_text()) if d is not None] for p in files}


def _seeds() -> list[Tree]:
    seeds = [_load_tree(p.parent, [p]) for p in sorted(SAMPLES.rglob("*.yaml"))]
    examples = PROJECT / "examples"
    seeds.append(_load_tree(examples, sorted(examples.rglob("*.yaml"))))
    return seeds


SEEDS = _seeds()

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, -1, 2**31, 10**9, 10**30, 1.5, 1e308]),
    st.sampled_from(["", "\x00", "a\x00b", "/etc/passwd", "../../x", ".", "..", "a/b", "x" * 300, "{{ .Values.x }}"]),
    st.text(max_size=8),
    st.binary(max_size=4),  # dumped as !!binary
    st.dates(),  # dumped as !!timestamp
    st.just(datetime.datetime(2024, 1, 1, 12, 0)),
)


def _deep(depth: int) -> Any:
    value: Any = "leaf"
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


_hazards = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.text(max_size=4), inner, max_size=3),
        st.tuples(st.text(max_size=3), inner, st.integers(0, 3), inner).map(lambda t: {t[0]: t[1], t[2]: t[3]}),
        st.frozensets(st.integers(0, 3), max_size=2).map(set),  # dumped as !!set
    ),
    max_leaves=6,
).filter(lambda v: not isinstance(v, set) or len(v) > 0) | st.sampled_from([_deep(60), _deep(300)])


# JSON-compatible values that often pass validation, so the expansion and writer see them too.
_plausible = st.one_of(
    st.text(max_size=20),
    st.integers(0, 10**6),
    st.sampled_from(["\x00", "x" * 300, "../../x", "a/b", "{{ .Values.x }}"]),
    st.dictionaries(st.text(min_size=1, max_size=5), st.text(max_size=5), max_size=2),
)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every position below ``node`` (dict keys and list indexes), in a stable order."""
    out: list[tuple[Any, ...]] = []
    if isinstance(node, dict):
        for k, v in node.items():
            out.append((*prefix, k))
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out.append((*prefix, i))
            out += _paths(v, (*prefix, i))
    return out


@st.composite
def mutated_trees(draw: st.DrawFn) -> Tree:
    tree = copy.deepcopy(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 3))):
        file = draw(st.sampled_from(sorted(tree)))
        docs = tree[file]
        if not docs:
            continue
        d = draw(st.integers(0, len(docs) - 1))
        paths = _paths(docs[d])
        if not paths:
            docs[d] = copy.deepcopy(draw(_hazards))
            continue
        free_form = [p for p in paths if "podSpec" in p[:-1]]  # reaches the renderer more often
        path = draw(st.sampled_from(free_form if free_form and draw(st.booleans()) else paths))
        parent = docs[d]
        for step in path[:-1]:
            parent = parent[step]
        # never share (and later mutate) a drawn value
        value = copy.deepcopy(draw(_plausible if draw(st.integers(0, 2)) == 0 else _hazards))
        if draw(st.booleans()) and isinstance(parent, dict):
            parent[draw(st.sampled_from([1, True, None, "x\x00", path[-1]]))] = value  # a key of another type
        else:
            parent[path[-1]] = value
    return tree


class _Dumper(yaml.SafeDumper):
    """SafeDumper that writes sets (``!!set``) and keeps keys of mixed types unsorted."""


_Dumper.add_representer(set, yaml.SafeDumper.represent_set)


def _write(root: Path, tree: Tree) -> None:
    for rel, docs in tree.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.dump_all(docs, Dumper=_Dumper, sort_keys=False, allow_unicode=False))


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _check_output(result: Any, files: set[str]) -> list[str]:
    assert result.exit_code in (0, 1), (result.exit_code, result.output, result.exception)
    if result.exception is not None:
        assert isinstance(result.exception, SystemExit), repr(result.exception)
    text = result.output
    assert "Traceback" not in text
    for word in ("TypeError", "KeyError", "ValueError", "AttributeError", "RecursionError", "Exception"):
        assert word not in text, text
    errors = [line for line in text.splitlines() if line.startswith("error:")]
    if result.exit_code == 1:
        assert errors, text
        for line in errors:
            assert any(plain(line).startswith(f"error: {f}: ") or line == f"error: {f}" for f in files), line
    return errors


@given(tree=mutated_trees())
def test_cli_survives_mutated_sources(tree: Tree) -> None:
    runner = CliRunner()
    with tempfile.TemporaryDirectory() as tmp:
        src, out = Path(tmp, "src"), Path(tmp, "out")
        try:
            _write(src, tree)
        except (yaml.YAMLError, UnicodeEncodeError, RecursionError):
            event("unwritable")
            return  # PyYAML cannot write this tree; nothing to feed the CLI
        shutil.copytree(_PRIOR_OUT, out)
        before = _snapshot(out)
        validated = runner.invoke(main, ["validate", str(src)])
        rendered = runner.invoke(main, ["render", str(src), "--out", str(out), "-q"])
        files = set(tree) | {"render"}
        v_errors = _check_output(validated, files)
        r_errors = _check_output(rendered, files)
        event(f"exit {rendered.exit_code}")
        assert validated.exit_code == rendered.exit_code, (validated.output, rendered.output)
        assert v_errors == r_errors
        if rendered.exit_code == 1:
            assert _snapshot(out) == before


def _prior_out() -> Path:
    """An earlier render of ``examples/``, copied into OUT before each example."""
    base = Path(tempfile.mkdtemp(prefix="grove-fuzz-prior-"))
    atexit.register(shutil.rmtree, base, True)
    path = base / "out"
    result = CliRunner().invoke(main, ["render", str(PROJECT / "examples"), "--out", str(path), "-q"])
    assert result.exit_code == 0, result.output
    return path


_PRIOR_OUT = _prior_out()
