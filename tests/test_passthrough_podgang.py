"""Issue 21 §4, second finding: a pass-through object of kind ``PodGang`` outside
``scheduler.grove.io`` (or one without ``spec``) crashed ``validate`` and ``render`` with
``KeyError: 'spec'``, because the output summary read every kind ``PodGang`` as Grove's.

A PodGang of another API group is an ordinary pass-through object; Grove's own PodGang is
checked against Grove's type, strictly, before anything reads it."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from grove_gitops.cli import main
from tests.support import plain, write_source

META = "metadata: {name: g, namespace: ml}\n"
GROVE = "apiVersion: scheduler.grove.io/v1alpha1\nkind: PodGang\n" + META
INT32 = "must be a 32-bit integer (-2147483648 to 2147483647), the type Grove declares"


def _run(src: Path, out: Path) -> list[tuple[int, str]]:
    runner = CliRunner()
    results = [
        runner.invoke(main, ["validate", str(src)]),
        runner.invoke(main, ["render", str(src), "--out", str(out)]),
        runner.invoke(main, ["feasibility", str(src)]),
    ]
    for result in results:
        assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
        assert "Traceback" not in result.output
    return [(r.exit_code, plain(r.output)) for r in results]


@pytest.mark.parametrize(
    "text",
    [
        "apiVersion: example.com/v1\nkind: PodGang\n" + META,
        "apiVersion: example.com/v1\nkind: PodGang\n" + META + "spec: 3\n",
        "apiVersion: example.com/v1\nkind: PodGang\n" + META + "spec: {podgroups: [{name: 1}]}\n",
    ],
    ids=["no-spec", "scalar-spec", "other-shape"],
)
def test_a_podgang_of_another_api_group_passes_through(text: str, tmp_path: Path) -> None:
    src = write_source(tmp_path / "src", {"pg.yaml": text})
    out = tmp_path / "out"
    for code, output in _run(src, out):
        assert code == 0, output
    assert (out / "ml" / "_resources" / "20-podgang.example.com--g.yaml").is_file()


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("", ["pg.yaml: spec: Required value"]),
        ("spec: [1]\n", ["pg.yaml: spec: Required value"]),
        ("spec: {}\n", ["pg.yaml: spec.podgroups: Required value"]),
        ("spec: {podgroups: 5}\n", ["pg.yaml: spec.podgroups: Invalid value: 5: must be of type array"]),
        (
            "spec: {podgroups: [{name: a, minReplicas: '1'}]}\n",
            ['pg.yaml: spec.podgroups[0].minReplicas: Invalid value: "1": must be of type integer'],
        ),
        (
            "spec: {podgroups: [{name: a, minReplicas: 4294967296}]}\n",
            [f"pg.yaml: spec.podgroups[0].minReplicas: Invalid value: 4294967296: {INT32}"],
        ),
        (
            "spec: {podgroups: [{name: a, minReplicas: 1, podReferences: [5, {name: p}]}]}\n",
            [
                "pg.yaml: spec.podgroups[0].podReferences[0]: Invalid value: 5: must be of type object",
                "pg.yaml: spec.podgroups[0].podReferences[1].namespace: Required value",
            ],
        ),
        (
            "spec: {podgroups: [{name: a, minReplicas: 1}], topologyConstraint: 7, priorityClassName: 4}\n",
            [
                "pg.yaml: spec.topologyConstraint: Invalid value: 7: must be of type object",
                'pg.yaml: spec.priorityClassName: Invalid value: 4: must be of type string; quote it (the text you meant, in quotes): '
                "unquoted, YAML reads it as the number 4, which drops how it was written (1.10 reads as 1.1)",
            ],
        ),
        ("spec: {podgroups: [], extra: 1}\n", ["pg.yaml: spec.extra: field not declared in schema"]),
    ],
)
def test_grove_podgang_is_checked_against_its_type(spec: str, expected: list[str], tmp_path: Path) -> None:
    src = write_source(tmp_path / "src", {"pg.yaml": GROVE + spec})
    for code, output in _run(src, tmp_path / "out"):
        assert code == 1
        assert sorted(line.removeprefix("error: ") for line in output.splitlines() if line.startswith("error:")) == sorted(
            expected
        )
    assert not (tmp_path / "out").exists()


def test_a_valid_grove_podgang_still_passes_through(tmp_path: Path) -> None:
    spec = "spec: {podgroups: [{name: a, minReplicas: 1, podReferences: [{name: p, namespace: ml}]}]}\n"
    src = write_source(tmp_path / "src", {"pg.yaml": GROVE + spec})
    for code, output in _run(src, tmp_path / "out"):
        assert code == 0, output
    assert (tmp_path / "out" / "ml" / "_resources" / "20-podgang.scheduler.grove.io--g.yaml").is_file()
