"""Issue 25, "Writing": every mistake of a file in one run, with a suggestion, and
scheduler-name errors on the clique at fault."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from grove_gitops.cli import main
from grove_gitops.errors import InputProblem, InvalidInputError
from grove_gitops.render import render_source
from tests.support import PROJECT

PCS_FILE = "workloads/llm-inference/llama-disagg.yaml"


def example(tmp_path: Path, *edits: tuple[str, str]) -> Path:
    """The project's example source tree with ``(old, new)`` text edits to its PodCliqueSet."""
    src = tmp_path / "src"
    shutil.copytree(PROJECT / "examples", src)
    path = src / PCS_FILE
    text = path.read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new, 1)
    path.write_text(text)
    return src


def problems(src: Path) -> list[InputProblem]:
    with pytest.raises(InvalidInputError) as info:
        render_source(src)
    return info.value.problems


def fields(found: list[InputProblem]) -> list[str]:
    return [p.field for p in found]


#: The worked example of the issue: a misspelt field and a misspelt topology domain.
TWO_MISTAKES = (("spec:\n  replicas: 1", "spec:\n  replcias: 3"), ("required: rack", "required: regoin"))
SCALING_REQUIRED = "spec.template.podCliqueScalingGroups[0].topologyConstraint.pack.required"


def test_unknown_field_and_topology_typo_are_reported_in_one_run(tmp_path: Path) -> None:
    found = problems(example(tmp_path, *TWO_MISTAKES))
    assert fields(found) == ["spec.replcias", SCALING_REQUIRED]
    assert found[0].message == "field not declared in schema; did you mean replicas?"
    assert found[1].message.startswith("Invalid value: \"regoin\": topology domain 'regoin' does not exist")


def test_unknown_field_is_checked_as_the_field_it_misspells(tmp_path: Path) -> None:
    """``replcias: 1`` read as ``replicas: 1`` makes the clique's ``minAvailable: 2`` too large:
    the error the user gets once the typo is fixed, reported now."""
    src = example(
        tmp_path,
        (
            "          roleName: router\n          replicas: 2\n          minAvailable: 1",
            "          roleName: router\n          replcias: 1\n          minAvailable: 2",
        ),
    )
    found = problems(src)
    assert fields(found) == ["spec.template.cliques[0].spec.replcias", "spec.template.cliques[0].spec.minAvailable"]
    assert "did you mean replicas?" in found[0].message
    assert "minAvailable must not be greater than replicas" in found[1].message


def test_an_unknown_field_without_a_close_name_hides_the_checks_of_its_mapping(tmp_path: Path) -> None:
    """Dropping ``count`` leaves the clique without ``replicas``: its errors could be the drop's
    doing, so only the checks of other parts are reported beside it."""
    src = example(
        tmp_path,
        ("          roleName: router\n          replicas: 2\n", "          roleName: router\n          count: 2\n"),
        ("required: rack", "required: regoin"),
    )
    found = problems(src)
    assert fields(found) == ["spec.template.cliques[0].spec.count", SCALING_REQUIRED]
    assert found[0].message == "field not declared in schema"


def test_a_wrong_type_stops_the_checks_that_need_the_parsed_object(tmp_path: Path) -> None:
    """A value of the wrong type cannot be guessed; the schema errors alone are reported."""
    found = problems(example(tmp_path, ("spec:\n  replicas: 1", 'spec:\n  replicas: "3"'), TWO_MISTAKES[1]))
    assert fields(found) == ["spec.replicas"]


def test_nested_unknown_field_suggests_the_declared_name(tmp_path: Path) -> None:
    found = problems(
        example(tmp_path, ("        cliqueNames: [pleader, pworker]", "        cliqueName: [pleader, pworker]"))
    )
    assert [(p.field, p.message) for p in found] == [
        (
            "spec.template.podCliqueScalingGroups[0].cliqueName",
            "field not declared in schema; did you mean cliqueNames?",
        )
    ]


def test_unknown_field_of_a_configuration_suggests_the_declared_name(tmp_path: Path) -> None:
    src = example(tmp_path)
    path = src / "config/render-configuration.yaml"
    path.write_text(path.read_text().replace("defaultNamespace:", "defaultNamepsace:"))
    found = problems(src)
    assert [(p.field, p.message) for p in found] == [
        ("defaultNamepsace", "field not declared in schema; did you mean defaultNamespace?")
    ]


SCHEDULER_TYPO = (
    "          startsAfter: [pleader]\n          podSpec:\n",
    "          startsAfter: [pleader]\n          podSpec:\n            schedulerName: kai-schedular\n",
)


def test_scheduler_typo_names_the_clique_and_the_enabled_profiles(tmp_path: Path) -> None:
    found = problems(example(tmp_path, SCHEDULER_TYPO))
    assert [(p.field, p.message) for p in found] == [
        (
            "spec.template.cliques[2].spec.podSpec.schedulerName",
            'Invalid value: "kai-schedular": schedulerName must be an enabled scheduler backend; this scheduler '
            "is not enabled in OperatorConfiguration (enabled profiles: default-scheduler, kai-scheduler); "
            "did you mean kai-scheduler?",
        )
    ]


def test_scheduler_typo_in_the_first_clique_is_one_error(tmp_path: Path) -> None:
    """Grove's webhook reports both "have to be the same" and "not enabled" for this one typo."""
    typo = (
        "          podSpec:\n            containers:\n              - name: router",
        "          podSpec:\n            schedulerName: kai-schedular\n            containers:\n              - name: router",
    )
    found = problems(example(tmp_path, typo))
    assert fields(found) == ["spec.template.cliques[0].spec.podSpec.schedulerName"]


def test_two_enabled_schedulers_are_one_error_on_the_first_clique_that_differs(tmp_path: Path) -> None:
    other = (
        "          startsAfter: [pleader]\n          podSpec:\n",
        "          startsAfter: [pleader]\n          podSpec:\n            schedulerName: default-scheduler\n",
    )
    found = problems(example(tmp_path, other))
    assert [(p.field, p.message) for p in found] == [
        (
            "spec.template.cliques[2].spec.podSpec.schedulerName",
            'Invalid value: "kai-scheduler, default-scheduler": the schedulerName for all pods have to be the same; '
            "router, pleader, dleader, dworker use kai-scheduler (no schedulerName: the OperatorConfiguration's "
            "default); pworker uses default-scheduler",
        )
    ]


def test_cli_prints_both_mistakes(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["validate", str(example(tmp_path, *TWO_MISTAKES))])
    assert result.exit_code == 1
    assert "2 errors; nothing was written" in result.output
    assert "did you mean replicas?" in result.output
    assert '"regoin"' in result.output


# --- positions ------------------------------------------------------------------------------


def test_text_output_places_each_problem_at_its_line_and_column(tmp_path: Path) -> None:
    src = example(tmp_path, *TWO_MISTAKES)
    lines = (src / PCS_FILE).read_text().splitlines()
    result = CliRunner().invoke(main, ["validate", str(src)])
    errors = [line for line in result.output.splitlines() if line.startswith("error: ")]
    assert errors[0] == f"error: {PCS_FILE}:13:3: spec.replcias: field not declared in schema; did you mean replicas?"
    assert errors[1].startswith(f"error: {PCS_FILE}:115:13: {SCALING_REQUIRED}: ")
    assert lines[12][2:].startswith("replcias:") and lines[114][12:].startswith("required: regoin")


def test_json_output_carries_line_and_column(tmp_path: Path) -> None:
    import json

    result = CliRunner().invoke(main, ["validate", "--output", "json", str(example(tmp_path, *TWO_MISTAKES))])
    assert result.exit_code == 1
    problems = json.loads(result.stdout)["problems"]
    assert [(p["field"], p["line"], p["column"]) for p in problems] == [
        ("spec.replcias", 13, 3),
        (SCALING_REQUIRED, 115, 13),
    ]


def test_position_is_looked_up_in_the_document_that_holds_the_path(tmp_path: Path) -> None:
    from grove_gitops.yamlfiles.positions import locate

    text = "a: 1\n---\nspec:\n  template:\n    cliques:\n    - name: x\n      spec: {replicas: -1}\n"
    found = locate([InputProblem("f.yaml", "spec.template.cliques[0].spec.replicas", "bad")], {"f.yaml": text.encode()})
    assert (found[0].line, found[0].column) == (7, 14)
    assert str(found[0]) == "f.yaml:7:14: spec.template.cliques[0].spec.replicas: bad"


def test_a_missing_field_is_placed_on_the_mapping_that_lacks_it(tmp_path: Path) -> None:
    found = problems(example(tmp_path, ("        cliqueNames: [pleader, pworker]\n", "")))
    assert [(p.field, p.line, p.column) for p in found] == [
        ("spec.template.podCliqueScalingGroups[0].cliqueNames", 91, 9)
    ]


def test_a_yaml_error_moves_its_position_to_the_front(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "w.yaml").write_text("a: 1\nb: [1, 2\n")
    found = problems(src)
    assert [str(p) for p in found] == ["w.yaml:3:1: malformed YAML: did not find expected ',' or ']'"]


def test_a_problem_of_a_file_outside_the_source_gets_no_position(tmp_path: Path) -> None:
    from grove_gitops.yamlfiles.positions import locate

    found = locate([InputProblem("../etc/passwd", "spec", "bad")], {"w.yaml": b"spec: 1\n"})
    assert found[0].line is None and str(found[0]) == "../etc/passwd: spec: bad"


def test_positions_come_from_a_git_tree_held_in_memory_too(tmp_path: Path) -> None:
    from grove_gitops.load.memory import MemorySource

    src = example(tmp_path, *TWO_MISTAKES)
    files = {str(p.relative_to(src)): p.read_bytes() for p in src.rglob("*.yaml")}
    with pytest.raises(InvalidInputError) as info:
        from grove_gitops.render import plan_source

        plan_source(MemorySource("head", files))
    assert [(p.line, p.column) for p in info.value.problems] == [(13, 3), (115, 13)]


# --- namespaces ------------------------------------------------------------------------------

RENDER_CONFIG = "config/render-configuration.yaml"
NAMESPACE_FILE = "workloads/llm-inference/namespace.yaml"


def _warnings(src: Path) -> list[str]:
    return [w for w in render_source(src).warnings if ": metadata.namespace: " in w]


def _edit(src: Path, rel: str, old: str, new: str) -> None:
    path = src / rel
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))


def test_the_example_renders_without_warnings(tmp_path: Path) -> None:
    assert render_source(example(tmp_path)).warnings == []
    result = CliRunner().invoke(main, ["validate", str(PROJECT / "examples")])
    assert result.exit_code == 0 and "warning" not in result.output


def test_a_podcliqueset_without_namespace_or_default_namespace_is_warned_about(tmp_path: Path) -> None:
    src = example(tmp_path, ("  namespace: inference\n", ""))
    _edit(src, RENDER_CONFIG, "defaultNamespace: default\n", "")
    assert _warnings(src) == [
        f"{PCS_FILE}: metadata.namespace: not set, and RenderConfiguration sets no defaultNamespace: the "
        'PodCliqueSet renders into namespace "default"; set one of them'
    ]
    # Saying so is enough: defaultNamespace: default is a choice, not an accident.
    _edit(src, RENDER_CONFIG, "kind: RenderConfiguration\n", "kind: RenderConfiguration\ndefaultNamespace: default\n")
    assert _warnings(src) == []


def test_a_namespace_the_source_does_not_create_is_warned_about_until_declared(tmp_path: Path) -> None:
    src = example(tmp_path)
    (src / NAMESPACE_FILE).unlink()
    expected = (
        f'{PCS_FILE}: metadata.namespace: namespace "inference" is not created by the source (no v1 Namespace '
        "object) nor listed in RenderConfiguration existingNamespaces or ClusterFacts; applying fails unless the "
        "cluster has it"
    )
    assert _warnings(src) == [expected]
    _edit(
        src,
        RENDER_CONFIG,
        "kind: RenderConfiguration\n",
        "kind: RenderConfiguration\nexistingNamespaces: [inference]\n",
    )
    assert _warnings(src) == []


def test_an_undeclared_default_namespace_and_pass_through_namespace_are_warned_about(tmp_path: Path) -> None:
    src = example(tmp_path, ("  namespace: inference\n", ""))
    _edit(src, RENDER_CONFIG, "defaultNamespace: default", "defaultNamespace: serving")
    (src / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: tools}\n")
    assert [w.split(" is not created")[0] for w in _warnings(src)] == [
        f'{PCS_FILE}: metadata.namespace: namespace "serving" (RenderConfiguration defaultNamespace)',
        'cm.yaml: metadata.namespace: namespace "tools"',
    ]


def test_namespace_warnings_are_acknowledged_like_every_warning(tmp_path: Path) -> None:
    src = example(tmp_path)
    (src / NAMESPACE_FILE).unlink()
    result = CliRunner().invoke(main, ["validate", str(src)])
    assert result.exit_code == 0 and 'namespace "inference" is not created' in result.output
    _edit(
        src,
        RENDER_CONFIG,
        "kind: RenderConfiguration\n",
        'kind: RenderConfiguration\nacknowledgedWarnings: ["namespace \\"inference\\""]\n',
    )
    result = CliRunner().invoke(main, ["validate", "-q", str(src)])
    assert result.exit_code == 0 and "warning" not in result.output


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("[Bad_NS]", 'existingNamespaces[0]: Invalid value: "Bad_NS": Value error, a lowercase RFC 1123 label'),
        (f"[{'n' * 64}]", 'existingNamespaces[0]: Invalid value: "nnnn'),
        ("[1]", "existingNamespaces[0]: Invalid value: 1: must be of type string"),
        ("ml", 'existingNamespaces: Invalid value: "ml": must be of type array'),
        ("[" + ", ".join(f"n{i}" for i in range(10_001)) + "]", "existingNamespaces: Invalid value:"),
    ],
)
def test_existing_namespaces_are_validated(tmp_path: Path, value: str, expected: str) -> None:
    src = example(tmp_path)
    _edit(
        src, RENDER_CONFIG, "kind: RenderConfiguration\n", f"kind: RenderConfiguration\nexistingNamespaces: {value}\n"
    )
    found = problems(src)
    assert len(found) == 1 and f"{found[0].field}: {found[0].message}".startswith(expected), found


def test_unknown_pod_spec_field_suggests_the_declared_name(tmp_path: Path) -> None:
    typo = (
        "                resources:\n                  requests: {cpu",
        "                resource:\n                  requests: {cpu",
    )
    found = problems(example(tmp_path, typo))
    assert [(p.field, p.message) for p in found] == [
        ("spec.template.cliques[0].spec.podSpec.containers[0].resource", "unknown field; did you mean resources?")
    ]


def test_suggestions_are_bounded_per_document(tmp_path: Path) -> None:
    from grove_gitops.fields.suggest import MAX_SUGGESTIONS

    keys = "".join(f"  replicas{i}: 1\n" for i in range(MAX_SUGGESTIONS + 50))
    found = problems(example(tmp_path, ("spec:\n  replicas: 1\n", "spec:\n  replicas: 1\n" + keys)))
    assert len(found) == MAX_SUGGESTIONS + 50
    assert sum("did you mean" in p.message for p in found) == MAX_SUGGESTIONS
