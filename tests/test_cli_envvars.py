"""Every option of every command reads ``GROVE_GITOPS_<COMMAND>_<OPTION>`` (issue 24 §2), so
manifests set settings by name, and ``--help`` says so."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from grove_gitops.cli import main

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _commands(group: click.Group, ctx: click.Context, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None
        yield (*path, name), command
        if isinstance(command, click.Group):
            yield from _commands(command, ctx, (*path, name))


def _all() -> list[tuple[tuple[str, ...], click.Command]]:
    with click.Context(main) as ctx:
        return list(_commands(main, ctx, ()))


def test_every_option_of_every_command_has_its_variable_named_after_the_command_and_the_long_option() -> None:
    seen = 0
    for path, command in _all():
        for param in command.params:
            if not isinstance(param, click.Option):
                continue
            long = next(o for o in param.opts if o.startswith("--"))
            if param.envvar in {"GITHUB_TOKEN"}:  # an option with a variable of its own keeps it
                continue
            words = ["GROVE_GITOPS", *path, long[2:]]
            assert param.envvar == "_".join(w.replace("-", "_").upper() for w in words), (path, long)
            assert param.show_envvar, (path, long)
            seen += 1
    assert seen > 60  # render, validate, watch, controller, agent, diff, plan, pr-check run/post/verdict/annotate …


@pytest.mark.parametrize(
    ("argv", "variable"),
    [
        (["agent", "--help"], "GROVE_GITOPS_AGENT_NAMESPACE"),
        (["controller", "--help"], "GROVE_GITOPS_CONTROLLER_SOURCE_BRANCH"),
        (["diff", "--help"], "GROVE_GITOPS_DIFF_OUTPUT"),
        (["pr-check", "run", "--help"], "GROVE_GITOPS_PR_CHECK_RUN_MAX_CHARS"),
    ],
)
def test_help_shows_the_variables(argv: list[str], variable: str) -> None:
    result = CliRunner().invoke(main, argv, terminal_width=200)
    assert result.exit_code == 0, result.output
    assert variable in result.output.replace("\n", "").replace(" ", "")


def test_a_setting_by_variable_renders_where_it_says(tmp_path: Path) -> None:
    out = tmp_path / "out"
    env = {"GROVE_GITOPS_RENDER_OUT": str(out), "GROVE_GITOPS_RENDER_NO_FSYNC": "true", "GROVE_GITOPS_RENDER_JOBS": "1"}
    result = CliRunner().invoke(main, ["render", str(EXAMPLES)], env=env)
    assert result.exit_code == 0, result.output
    assert any(out.rglob("*.yaml"))
    assert f"in {out}" in result.output


def test_an_option_on_the_command_line_beats_its_variable_and_a_bad_value_names_the_option(tmp_path: Path) -> None:
    quiet = CliRunner().invoke(main, ["validate", str(EXAMPLES)], env={"GROVE_GITOPS_VALIDATE_QUIET": "1"})
    assert quiet.exit_code == 0 and quiet.output == ""
    as_json = CliRunner().invoke(
        main, ["validate", "--output", "text", str(EXAMPLES)], env={"GROVE_GITOPS_VALIDATE_OUTPUT": "json"}
    )
    assert as_json.exit_code == 0 and "PodCliqueSet(s) valid" in as_json.output
    assert not as_json.output.lstrip().startswith("{")
    bad = CliRunner().invoke(main, ["validate", str(EXAMPLES)], env={"GROVE_GITOPS_VALIDATE_JOBS": "many"})
    assert bad.exit_code == 2 and "--jobs" in bad.output
