"""One shape per output (issue 34.5): every command that prints a report takes the same
``--output text|markdown|json``, the old spellings still work with a warning, and every JSON
document a command prints validates against its versioned schema in docs/schemas/ — checked
here against the real output of the bundled examples."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import click
import jsonschema
import pytest
from click.testing import CliRunner, Result

from grove_gitops.cli import main
from tests.support import PROJECT, write_source
from tests.test_plan import EXAMPLES, bump_images, example

SCHEMAS = PROJECT / "docs" / "schemas"
REPORT_COMMANDS = ("validate", "render", "diff", "plan", "feasibility")


def schema(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((SCHEMAS / f"{name}.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(loaded)
    return loaded


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def document(result: Result) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(result.stdout)
    return data


@pytest.mark.parametrize("name", REPORT_COMMANDS)
def test_every_report_command_has_the_same_output_option(name: str) -> None:
    command = main.get_command(click.Context(main), name)
    assert command is not None
    [option] = [p for p in command.params if isinstance(p, click.Option) and "--output" in p.opts]
    assert isinstance(option.type, click.Choice)
    assert list(option.type.choices) == ["text", "markdown", "json"]
    assert "--format" not in command.get_help(click.Context(command))


def test_diff_output_text_is_text_with_the_rollout_plan(tmp_path: Path) -> None:
    base, head = example(tmp_path, "base"), example(tmp_path, "head", bump_images)
    result = run("diff", str(base), str(head), "--output", "text")
    assert result.exit_code == 0, result.output
    assert "<!--" not in result.stdout and "<details>" not in result.stdout  # not Markdown
    assert "grove-gitops rollout plan: base" in result.stdout  # the plan, as `plan` prints it
    plan = run("plan", str(base), str(head)).stdout
    assert plan.rstrip("\n") in result.stdout
    markdown = run("diff", str(base), str(head), "--output", "markdown").stdout
    assert markdown.startswith("<!--") and "Rollout plan" in markdown


def test_the_old_spellings_still_work_with_a_warning(tmp_path: Path) -> None:
    base, head = example(tmp_path, "base"), example(tmp_path, "head", bump_images)
    new = run("diff", str(base), str(head), "--output", "text")
    old = run("diff", str(base), str(head), "--format", "text")
    assert old.exit_code == 0 and old.stdout == new.stdout
    assert "--format text` is deprecated; use `--output text`" in old.stderr
    # old workflows passed --format markdown --output text: Markdown, as before
    both = run("diff", str(base), str(head), "--format", "markdown", "--output", "text")
    assert both.stdout == run("diff", str(base), str(head)).stdout
    out = tmp_path / "d.md"
    old_out = run("diff", str(base), str(head), "--out", str(out))
    assert old_out.exit_code == 0 and out.read_text().startswith("<!--")
    assert "`diff --out` is deprecated; use `--output-file`" in old_out.stderr


def test_plan_prints_markdown_and_writes_a_file(tmp_path: Path) -> None:
    base, head = example(tmp_path, "base"), example(tmp_path, "head", bump_images)
    markdown = run("plan", str(base), str(head), "--output", "markdown")
    assert markdown.exit_code == 0, markdown.output
    assert markdown.stdout.startswith("## grove-gitops rollout plan: base")
    assert "| step |" in markdown.stdout.lower() or "|" in markdown.stdout
    target = tmp_path / "plan.md"
    written = run("plan", str(base), str(head), "--output", "markdown", "--output-file", str(target))
    assert written.exit_code == 0 and written.stdout == ""
    assert target.read_text() == markdown.stdout


def test_validate_and_feasibility_print_markdown(tmp_path: Path) -> None:
    validate = run("validate", str(EXAMPLES), "--output", "markdown")
    assert validate.exit_code == 0 and validate.stdout.startswith("## grove-gitops validate\n\n✅ 1 PodCliqueSet(s) valid")
    feasibility = run("feasibility", str(EXAMPLES), "--output", "markdown")
    assert feasibility.exit_code == 0 and feasibility.stdout.startswith("### Gang feasibility")
    bad = write_source(tmp_path / "bad", {"a.yaml": "apiVersion: grove.io/v1alpha1\nkind: PodCliqueSet\nmetadata: {name: x}\nspec: 3\n"})
    failed = run("validate", str(bad), "--output", "markdown")
    assert failed.exit_code == 1 and "### Errors" in failed.stdout and "`a.yaml" in failed.stdout


def test_every_json_document_matches_its_schema(tmp_path: Path) -> None:
    """The real output of the bundled examples, one document per command."""
    base, head = example(tmp_path, "base"), example(tmp_path, "head", bump_images)
    docs = {
        "validate-output": run("validate", str(EXAMPLES), "--output", "json"),
        "render-output": run("render", str(EXAMPLES), "--out", str(tmp_path / "out"), "--output", "json"),
        "diff-output": run("diff", str(base), str(head), "--output", "json"),
        "plan-output": run("plan", str(base), str(head), "--output", "json"),
        "feasibility-output": run("feasibility", str(EXAMPLES), "--output", "json"),
    }
    for name, result in docs.items():
        assert result.exit_code == 0, (name, result.output)
        data = document(result)
        jsonschema.validate(data, schema(name))
        assert list(data)[:3] == ["ok", "schemaVersion", "problems"], name
    assert document(docs["plan-output"])["podcliquesets"], "the bump rolls something out"
    bad = write_source(tmp_path / "bad", {"a.yaml": "apiVersion: grove.io/v1alpha1\nkind: PodCliqueSet\nmetadata: {name: x}\nspec: 3\n"})
    for args in (["validate", str(bad)], ["feasibility", str(bad)], ["plan", str(base), str(bad)], ["diff", str(base), str(bad)]):
        failed = run(*args, "--output", "json")
        assert failed.exit_code == 1, args
        jsonschema.validate(document(failed), schema("errors-output"))


def test_a_schema_refuses_what_the_command_never_prints() -> None:
    """The schemas check something: a problem without its severity, or an unknown key, fails."""
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"ok": True, "schemaVersion": 1, "problems": [{"file": "a", "field": "", "message": "m"}],
                             "podCliqueSets": 1, "objects": 1, "files": 1}, schema("validate-output"))
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"ok": True, "schemaVersion": 1, "problems": [], "podcliquesets": [], "extra": 1},
                            schema("plan-output"))


def test_warnings_in_every_json_document_carry_their_position(tmp_path: Path) -> None:
    """A warning is placed in its file as an error is: line and column, in diff, plan and
    feasibility as in validate."""
    base = example(tmp_path, "base")
    head = example(tmp_path, "head", bump_images)
    pcs = next(head.rglob("llama-disagg.yaml"))
    text = pcs.read_text()
    assert "\n  namespace: inference\n" in text
    # warns: a namespace the source does not create
    pcs.write_text(text.replace("\n  namespace: inference\n", "\n  namespace: elsewhere\n", 1))
    for args in (["diff", str(base), str(head)], ["plan", str(base), str(head)], ["feasibility", str(head)]):
        result = run(*args, "--output", "json")
        warnings = [p for p in document(result)["problems"] if "metadata.namespace" in p["field"]]
        assert warnings, (args, result.stdout[:2000])
        assert all(isinstance(w.get("line"), int) and isinstance(w.get("column"), int) for w in warnings), warnings


def test_pr_check_status_matches_its_schema(tmp_path: Path) -> None:
    from grove_gitops.prcheck.compose import Status, write_results

    status = Status(errors=1, feasibility="checked", diff="ok", parts=1, full_parts=1, plan="ok", outages=["x"])
    write_results(tmp_path, ["part"], status)
    jsonschema.validate(json.loads((tmp_path / "status.json").read_text()), schema("pr-check-status"))


def test_a_fleet_validates_against_the_schema_and_places_its_warnings(tmp_path: Path) -> None:
    fleet = tmp_path / "fleet"
    shutil.copytree(PROJECT / "examples-fleet", fleet)
    result = run("validate", str(fleet), "--output", "json")
    assert result.exit_code == 0, result.output
    jsonschema.validate(document(result), schema("validate-output"))
    assert set(document(result)["clusters"]) == {"prod-kai", "staging-volcano"}
    # a ConfigMap in a namespace the source does not create: warned, at its line
    (fleet / "workloads" / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: elsewhere\ndata: {}\n"
    )
    warned = document(run("validate", str(fleet), "--output", "json"))
    placed = [p for p in warned["problems"] if p["file"] == "workloads/cm.yaml"]
    assert placed and all(p["severity"] == "warning" and p.get("line") == 5 for p in placed), warned["problems"]


def test_output_file_holds_the_report_in_the_format_asked(tmp_path: Path) -> None:
    base, head = example(tmp_path, "base"), example(tmp_path, "head", bump_images)
    for fmt in ("json", "text", "markdown"):
        target = tmp_path / f"diff.{fmt}"
        result = run("diff", str(base), str(head), "--output", fmt, "--output-file", str(target))
        assert result.exit_code == 0 and result.stdout == "", result.output
        written = target.read_text()
        if fmt == "json":
            jsonschema.validate(json.loads(written), schema("diff-output"))
        else:
            assert written == run("diff", str(base), str(head), "--output", fmt).stdout
