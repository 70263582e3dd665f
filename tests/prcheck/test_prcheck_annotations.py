"""Workflow-command escaping and validation problems placed on their source lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from grove_gitops.cli import main
from grove_gitops.cli.prcheck import pr_check
from grove_gitops.prcheck.annotations import annotation
from grove_gitops.prcheck.lines import find_line, parse_path
from grove_gitops.prcheck.workflow import command, escape_data, escape_property

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_escaping_follows_githubs_rules() -> None:
    assert escape_data("100% done\r\nnext") == "100%25 done%0D%0Anext"
    assert escape_data("a: b, c") == "a: b, c"  # ':' and ',' are fine in the message
    assert escape_property("a: b, c%\n") == "a%3A b%2C c%25%0A"
    # '%' first: an already-escaped-looking text stays literal after the runner decodes it
    assert escape_data("%0A") == "%250A"


def test_command_leaves_out_empty_properties_and_escapes_both_parts() -> None:
    assert command("error", "m") == "::error::m"
    line = command("error", "bad\nvalue: 50%", {"file": "dir,x/a:b.yaml", "line": 3, "title": "", "col": None})
    assert line == "::error file=dir%2Cx/a%3Ab.yaml,line=3::bad%0Avalue: 50%25"
    # A message can never end the command or start another one.
    assert "\n" not in command("warning", "a\n::error::injected")


def test_parse_path_keeps_bracketed_keys_whole() -> None:
    segs = [(s.text, s.bracketed) for s in parse_path("metadata.annotations[gitops.grove.io/day2].x[0]")]
    assert segs == [
        ("metadata", False),
        ("annotations", False),
        ("gitops.grove.io/day2", True),
        ("x", False),
        ("0", True),
    ]


DOC = """\
# comment
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata:
  name: a
  labels:
    app.kubernetes.io/name: demo
  annotations:
    gitops.grove.io/day2: "{}"
spec:
  replicas: 1
  template:
    cliques:
    - name: router
      spec:
        replicas: 2
    - name: worker
      spec:
        replicas: -1
---
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata:
  name: b
spec:
  template:
    podCliqueScalingGroups:
    - name: sg
      minAvailable: 9
"""


@pytest.mark.parametrize(
    ("path", "line"),
    [
        ("spec.replicas", 11),
        ("spec.template.cliques[1].spec.replicas", 19),
        ("spec.template.cliques[worker].spec.replicas", 19),  # a list item by its name
        ("metadata.annotations[gitops.grove.io/day2]", 9),
        ("metadata.labels.app.kubernetes.io/name", 7),  # a dotted key without brackets
        ("spec.template.podCliqueScalingGroups[0].minAvailable", 29),  # second document
        ("spec.template.cliques[7].spec.replicas", 13),  # index out of range: the deepest found
        ("", 2),
    ],
)
def test_find_line(path: str, line: int) -> None:
    assert find_line(DOC, path) == line


def test_find_line_on_yaml_that_does_not_parse_points_at_the_error() -> None:
    assert find_line("a: 1\nb: [\n", "a") == 3
    assert find_line("", "spec") == 1


def test_annotation_names_the_repository_path_and_the_line(tmp_path: Path) -> None:
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "a.yaml").write_text(DOC)
    problem = {
        "file": "w/a.yaml",
        "field": "spec.template.cliques[1].spec.replicas",
        "message": "Invalid value: -1",
        "severity": "error",
    }
    assert annotation(problem, tmp_path, "deploy/grove/") == (
        "::error file=deploy/grove/w/a.yaml,line=19,"
        "title=grove-gitops validate%3A spec.template.cliques[1].spec.replicas"
        "::spec.template.cliques[1].spec.replicas: Invalid value: -1"
    )
    warning = {"file": "", "field": "", "message": "no PodCliqueSet, 100%", "severity": "warning"}
    assert annotation(warning, tmp_path, ".") == "::warning title=grove-gitops validate::no PodCliqueSet, 100%25"
    assert annotation({**problem, "line": 4}, tmp_path, ".").startswith("::error file=w/a.yaml,line=4,")  # given: kept
    assert annotation({**problem, "field": ""}, tmp_path, ".").startswith(
        "::error file=w/a.yaml,line=2,"
    )  # the document's first line


def test_annotate_reads_real_validate_json(tmp_path: Path) -> None:
    """End to end on the example, broken in two places: the lines are the broken ones."""
    src = tmp_path / "src"
    for f in EXAMPLES.rglob("*.yaml"):
        (src / f.relative_to(EXAMPLES)).parent.mkdir(parents=True, exist_ok=True)
        (src / f.relative_to(EXAMPLES)).write_text(f.read_text())
    wl = src / "workloads" / "llm-inference" / "llama-disagg.yaml"
    lines = wl.read_text().split("\n")
    top = next(i for i, x in enumerate(lines) if x == "  replicas: 1")
    lines[top] = "  replicas: -1"
    wl.write_text("\n".join(lines))
    result = CliRunner().invoke(main, ["validate", str(src), "--output", "json"])
    assert result.exit_code == 1
    saved = tmp_path / "v.json"
    saved.write_text(result.output)
    out = CliRunner().invoke(
        pr_check, ["annotate", str(saved), "--source-root", str(src), "--source-path", "clusters/eu"]
    )
    assert out.exit_code == 0, out.output
    first = out.output.splitlines()[0]
    assert first.startswith(f"::error file=clusters/eu/workloads/llm-inference/llama-disagg.yaml,line={top + 1},")
    assert first.endswith("::spec.replicas: Invalid value: -1: must be greater than or equal to 0")
    assert json.loads(result.output)["problems"][0]["field"] == "spec.replicas"


def test_annotate_rejects_a_document_that_is_not_validates(tmp_path: Path) -> None:
    bad = tmp_path / "x.json"
    bad.write_text("[1, 2]")
    out = CliRunner().invoke(pr_check, ["annotate", str(bad), "--source-root", str(tmp_path)])
    assert out.exit_code == 1 and "problems: expected the list" in out.output
    bad.write_text("{")
    out = CliRunner().invoke(pr_check, ["annotate", str(bad), "--source-root", str(tmp_path)])
    assert out.exit_code == 1 and "not JSON" in out.output


def test_python_dash_m_entry_points() -> None:
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "grove_gitops.prcheck", "--help"], capture_output=True, text=True, check=True
    )
    assert "annotate" in out.stdout and "verdict" in out.stdout
    out = subprocess.run(
        [sys.executable, "-m", "grove_gitops", "pr-check", "--help"], capture_output=True, text=True, check=True
    )
    assert "post" in out.stdout


def test_many_problems_in_one_file_parse_it_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """400 problems in one file once took 388 s: the file was re-read and re-parsed per problem."""
    import yaml

    from grove_gitops.prcheck.annotations import to_annotations

    items = "".join(
        f"- name: item-{i}\n  spec:\n    replicas: {i}\n    data: {{k: '{'x' * 200}'}}\n" for i in range(400)
    )
    (tmp_path / "big.yaml").write_text("apiVersion: v1\nkind: List\nitems:\n" + items)
    (tmp_path / "doc.yaml").write_text(DOC)
    parsed: list[str] = []
    real = yaml.compose_all

    def counting(stream: object, Loader: object = None) -> object:
        parsed.append(str(stream)[:20])
        return real(stream, Loader=Loader)  # type: ignore[arg-type]

    monkeypatch.setattr(yaml, "compose_all", counting)
    # interleaved files, as validate may order them
    problems = []
    for i in range(400):
        problems.append({"file": "big.yaml", "field": f"items[{i}].spec.replicas", "message": "m", "severity": "error"})
        if i % 100 == 0:
            problems.append({"file": "doc.yaml", "field": "spec.replicas", "message": "m", "severity": "error"})
    out = to_annotations(problems, tmp_path, "deploy")
    assert len(parsed) == 2  # each file once, not once per problem
    assert len(out) == 404
    # still the right lines: item i's replicas is on line 3 + 4*i + 3
    big = [line for line in out if "big.yaml" in line]
    assert all(f",line={3 + 4 * i + 3}," in line for i, line in enumerate(big))
    assert out[1].startswith("::error file=deploy/doc.yaml,line=11,")


def test_a_file_outside_the_tree_or_over_the_size_limit_is_never_read(tmp_path: Path) -> None:
    from grove_gitops.prcheck.annotations import to_annotations
    from grove_gitops.yamlfiles.yamlio import MAX_FILE_BYTES

    tree = tmp_path / "tree"
    tree.mkdir()
    (tmp_path / "secret.yaml").write_text("a: 1\nb: 2\nspec:\n  replicas: 1\n")
    (tree / "huge.yaml").write_text("spec:\n  replicas: 1\n" + "#" * MAX_FILE_BYTES)
    problems = [
        {"file": "../secret.yaml", "field": "spec.replicas", "message": "m"},
        {"file": str(tmp_path / "secret.yaml"), "field": "spec.replicas", "message": "m"},
        {"file": "huge.yaml", "field": "spec.replicas", "message": "m"},
    ]
    assert all(",line=1," in line for line in to_annotations(problems, tree, "."))
