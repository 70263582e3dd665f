"""The CLI as its help and docs/cli.md describe it (issue 34.14): every option of
``pr-check run|verdict`` described, ``feasibility --repo`` like ``diff`` and ``plan``, one
table of exit codes and environment variables that matches what the code uses, workflow
commands only where a CI reads them, the deprecated ``gate-lifter`` hidden."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from grove_gitops.cli import main
from grove_gitops.cli.envvars import ENV_PREFIX
from tests.prcheck.prhelpers import break_replicas, git, make_repo
from tests.support import PROJECT

CLI_MD = PROJECT / "docs" / "cli.md"
CODE = [*sorted((PROJECT / "grove_gitops").rglob("*.py")), *sorted((PROJECT / "backends").rglob("*.py"))]
_NAME = re.compile(r"^[A-Z][A-Z0-9_]{2,}$")


def _table(heading: str) -> list[str]:
    """The first cells of the table under ``## heading`` of docs/cli.md, backticks dropped."""
    text = CLI_MD.read_text(encoding="utf-8")
    section = text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| ---")]
    return [row.split("|")[1].strip().strip("`") for row in rows[1:]]


def _env_names() -> set[str]:
    """Every environment variable the code reads or writes by name: the string argument of
    ``os.environ[...]``, ``os.environ.get``, ``os.getenv``, ``env.get``, ``_append`` (the
    runner's files), and the value of every ``*_ENV`` constant."""
    found: set[str] = set()
    for path in CODE:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id.endswith("_ENV") for t in node.targets
            ):
                found |= {c.value for c in ast.walk(node.value) if isinstance(c, ast.Constant) and isinstance(c.value, str)}
            elif isinstance(node, ast.Subscript) and ast.unparse(node.value).endswith("environ"):
                if isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
                    found.add(node.slice.value)
            elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
                callee = ast.unparse(node.func)
                if callee.endswith(("environ.get", "getenv", "env.get", "_append")) and isinstance(node.args[0].value, str):
                    found.add(node.args[0].value)
    return {n for n in found if _NAME.match(n)}


def _exit_codes() -> set[int]:
    """Every exit code the CLI uses: ``sys.exit(N)`` / ``SystemExit(N)`` anywhere, the returns
    of the long-running commands' ``run_*`` functions (passed to ``sys.exit``), and click's 2."""
    codes = {2}
    for path in CODE:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and ast.unparse(node.func) in ("sys.exit", "SystemExit") and node.args:
                arg = node.args[0]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, int):
                    codes.add(arg.value)
            if isinstance(node, ast.FunctionDef) and node.name in ("run_agent", "run_controller"):
                for ret in ast.walk(node):
                    if isinstance(ret, ast.Return) and ret.value is not None:
                        codes |= {c.value for c in ast.walk(ret.value) if isinstance(c, ast.Constant) and isinstance(c.value, int)}
    return codes


def test_the_code_reads_what_the_scan_finds() -> None:
    """The scan is not empty-handed: it finds the variables this test was written against."""
    names = _env_names()
    assert {"GITHUB_TOKEN", "GITLAB_CI", "GITHUB_ACTIONS", "GROVE_GITOPS_GIT_TOKEN", "GITHUB_OUTPUT", "KUBECONFIG"} <= names
    assert {0, 1, 2, 3} <= _exit_codes()


def test_docs_cli_lists_every_environment_variable_the_code_reads() -> None:
    listed = set(_table("Environment variables"))
    per_option = re.compile(rf"^{ENV_PREFIX}_<COMMAND>_<OPTION>$")
    documented = {n for n in listed if not per_option.match(n)}
    assert _env_names() == documented, (
        f"missing from docs/cli.md: {sorted(_env_names() - documented)}; "
        f"listed but never read: {sorted(documented - _env_names())}"
    )


def test_docs_cli_lists_every_exit_code() -> None:
    assert {int(c) for c in _table("Exit codes")} == _exit_codes()


def _options(path: tuple[str, ...]) -> list[click.Option]:
    ctx = click.Context(main)
    command: click.Command | None = main
    for name in path:
        assert isinstance(command, click.Group)
        command = command.get_command(ctx, name)
    assert command is not None
    return [p for p in command.params if isinstance(p, click.Option) and not p.hidden]


def _commands(group: click.Group, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    ctx = click.Context(group)
    found: list[tuple[str, ...]] = []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if isinstance(command, click.Group):
            found += _commands(command, (*path, name))
        elif command is not None:
            found.append((*path, name))
    return found


@pytest.mark.parametrize("path", [("pr-check", "run"), ("pr-check", "verdict")])
def test_every_pr_check_option_is_described(path: tuple[str, ...]) -> None:
    undescribed = [p.opts[0] for p in _options(path) if not (p.help or "").strip()]
    assert not undescribed, undescribed


def test_every_option_of_every_command_is_described() -> None:
    commands = _commands(main)
    assert ("pr-check", "verdict") in commands and ("agent",) in commands
    undescribed = [(path, p.opts[0]) for path in commands for p in _options(path) if not (p.help or "").strip()]
    assert not undescribed, undescribed


def test_gate_lifter_is_hidden_from_help_but_still_runs() -> None:
    help_text = CliRunner().invoke(main, ["--help"]).output
    assert "gate-lifter" not in help_text and "  agent" in help_text
    result = CliRunner().invoke(main, ["gate-lifter", "--help"])
    assert result.exit_code == 0 and "Deprecated alias of `agent`" in result.output


def test_feasibility_reads_a_git_ref_like_diff_and_plan(tmp_path: Path) -> None:
    repo, base, head = make_repo(tmp_path, break_replicas)
    git(repo, "checkout", "-q", base)  # the work tree holds base: head is read from git only
    result = CliRunner().invoke(main, ["feasibility", "--repo", str(repo), base, "--source-path", "deploy", "--output", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["gangs"]
    broken = CliRunner().invoke(main, ["feasibility", "--repo", str(repo), head, "--source-path", "deploy"])
    assert broken.exit_code == 1 and "replicas" in broken.output and "Traceback" not in broken.output
    unknown = CliRunner().invoke(main, ["feasibility", "--repo", str(repo), "no-such-ref"])
    assert unknown.exit_code == 1 and "no-such-ref: not a commit" in unknown.output
    usage = CliRunner().invoke(main, ["feasibility", str(repo), "--source-path", "deploy"])
    assert usage.exit_code == 2 and "--source-path needs --repo" in usage.output


@pytest.mark.parametrize("ci", [None, "true"])
def test_pr_check_run_prints_workflow_commands_only_in_github_actions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ci: str | None
) -> None:
    from grove_gitops.cli.prcheck import pr_check

    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.delenv("GITHUB_OUTPUT", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    if ci is not None:
        monkeypatch.setenv("GITHUB_ACTIONS", ci)
    repo, base, head = make_repo(tmp_path, break_replicas)
    args = ["run", "--repo", str(repo), "--base", base, "--head", head, "--source-path", "deploy"]
    result = CliRunner().invoke(pr_check, [*args, "--out-dir", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    if ci == "true":
        assert result.stdout.startswith("::error file=deploy/workloads/llm-inference/llama-disagg.yaml,line=")
    else:
        assert "::" not in result.stdout
        assert result.stdout.startswith("error: deploy/workloads/llm-inference/llama-disagg.yaml:")
        # the Action's old spelling still runs, with a warning
        old = CliRunner().invoke(pr_check, [*args, "--format", "text", "--out-dir", str(tmp_path / "old")])
        assert old.exit_code == 0, old.output
        assert "`pr-check run --format text` is deprecated; use `--output text`" in old.stderr


def test_every_command_with_output_is_in_the_reports_table_with_its_schema() -> None:
    """A command that prints a report (``--output``) has a row in docs/cli.md's table, naming its
    JSON schema when it prints JSON (issue 33.3 added ``migrate plan`` and ``migrate apply``)."""
    rows = _table("Reports: one option, three formats")
    for path in _commands(main):
        option = next((p for p in _options(path) if "--output" in p.opts), None)
        if option is None or not isinstance(option.type, click.Choice) or "json" not in option.type.choices:
            continue
        words = " ".join(path)
        cells = [part.strip() for row in rows for part in row.replace("`", "").split(" / ")]
        assert any(cell.startswith(words) for cell in cells), f"{words} is not in the Reports table of docs/cli.md"
    text = CLI_MD.read_text(encoding="utf-8")
    assert "grove-gitops migrate plan|apply" in text and "schemas/migrate-output.schema.json" in text
    assert (PROJECT / "docs" / "schemas" / "migrate-output.schema.json").is_file()
