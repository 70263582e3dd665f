"""Issue 31.9: every duration and count of every command is finite and in range, or a usage
error (exit 2) naming the option and its environment variable; never accepted to break a loop
later (``nan`` passed every ``FloatRange``, ``inf`` raised OverflowError in a sleeping thread,
``--concurrency 0`` a traceback). The options are enumerated from the CLI itself, so an option
added later is held to the same rule. The agent exits non-zero, with one line and no
traceback, when one of its loops cannot start.
"""

from __future__ import annotations

import math
import socket
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from grove_gitops.cli import main
from grove_gitops.cli.options import MAX_SECONDS, Seconds
from tests.fakeserver import FakeApiServer
from tests.gatelifter.test_leader import kubeconfig
from tests.support import PROJECT
from tests.test_cli_envvars import _commands

EXAMPLES = PROJECT / "examples"
NUMERIC = (click.types.IntParamType, click.types.FloatParamType)
#: What each command needs besides the option under test, so that only the option can fail
#: (and, should it be accepted, the command ends quickly instead of serving forever).
ARGS: dict[tuple[str, ...], list[str]] = {
    ("agent",): ["--kubeconfig", "/nonexistent/kubeconfig"],
    ("gate-lifter",): ["--kubeconfig", "/nonexistent/kubeconfig"],
    ("controller",): ["--repo", "/nonexistent/repo", "--once"],
    ("diff",): [str(EXAMPLES), str(EXAMPLES)],
    ("plan",): [str(EXAMPLES), str(EXAMPLES)],
    ("render",): [str(EXAMPLES), "--out", "/nonexistent/out"],
    ("pr-check", "run"): ["--base", "a", "--head", "b", "--out-dir", "/nonexistent/out"],
    ("pr-check", "post"): ["--out-dir", "/nonexistent/out"],
    ("validate",): [str(EXAMPLES)],
    ("watch",): [str(EXAMPLES), "--out", "/nonexistent/out"],
}


def numeric_options() -> list[tuple[tuple[str, ...], click.Option]]:
    with click.Context(main) as ctx:
        return [
            (path, param)
            for path, command in _commands(main, ctx, ())
            for param in command.params
            if isinstance(param, click.Option) and isinstance(param.type, NUMERIC)
        ]


OPTIONS = numeric_options()


def _id(item: tuple[tuple[str, ...], click.Option]) -> str:
    return f"{' '.join(item[0])} {item[1].opts[-1]}"


def long_name(option: click.Option) -> str:
    return next(o for o in option.opts if o.startswith("--"))


def bad_values(option: click.Option) -> list[str]:
    """nan, inf, -inf, -1 and 1e400 always; 0 where the option's range leaves it out."""
    values = ["nan", "inf", "-inf", "-1", "1e400"]
    low, low_open = getattr(option.type, "min", None), getattr(option.type, "min_open", False)
    if low is not None and (low > 0 or (low == 0 and low_open)):
        values.append("0")
    return values


def test_the_enumeration_finds_the_options_of_the_issue() -> None:
    found = {_id(item) for item in OPTIONS}
    assert {"agent --concurrency", "agent --lease-duration", "agent --retry-period", "controller --interval"} <= found
    assert len(OPTIONS) >= 30


@pytest.mark.parametrize("item", OPTIONS, ids=_id)
def test_every_numeric_option_has_a_finite_range(item: tuple[tuple[str, ...], click.Option]) -> None:
    """Bounded on both sides: a count sizes a pool or a loop, a duration is slept on."""
    _, option = item
    assert isinstance(option.type, click.types._NumberRangeBase), "a bare int/float takes anything"
    assert option.type.min is not None and option.type.max is not None
    assert math.isfinite(option.type.min) and math.isfinite(option.type.max)


@pytest.mark.parametrize("item", OPTIONS, ids=_id)
def test_every_numeric_option_refuses_nan_inf_and_out_of_range_by_flag_and_by_variable(
    item: tuple[tuple[str, ...], click.Option],
) -> None:
    path, option = item
    assert isinstance(option.envvar, str)
    base = [*path, *ARGS.get(path, [])]
    for value in bad_values(option):
        for how, argv, env in (
            ("flag", [*path, f"{long_name(option)}={value}", *ARGS.get(path, [])], {}),
            ("variable", base, {option.envvar: value}),
        ):
            result = CliRunner().invoke(main, argv, env=env)
            assert result.exit_code == 2, (how, value, result.output)
            assert f"'{long_name(option)}'" in result.output and option.envvar in result.output, (how, value, result.output)
            assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--lease-duration", "5", "--renew-deadline", "5"], "--renew-deadline (GROVE_GITOPS_AGENT_RENEW_DEADLINE) must be less than --lease-duration (GROVE_GITOPS_AGENT_LEASE_DURATION)"),
        (["--renew-deadline", "2", "--retry-period", "3"], "--retry-period (GROVE_GITOPS_AGENT_RETRY_PERIOD) must be less than --renew-deadline (GROVE_GITOPS_AGENT_RENEW_DEADLINE)"),
    ],
)
def test_lease_settings_must_keep_clientgos_order(args: list[str], message: str) -> None:
    result = CliRunner().invoke(main, ["agent", *args, "--kubeconfig", "/nonexistent"], terminal_width=400)
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split())


def test_the_default_lease_settings_are_in_order() -> None:
    result = CliRunner().invoke(main, ["agent", "--kubeconfig", "/nonexistent/kubeconfig"])
    assert result.exit_code == 1 and "cannot load kubeconfig" in result.output  # got past the option checks


@given(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12)))
def test_seconds_is_finite_and_in_range_or_refused(value: float | str) -> None:
    kind = Seconds(min=0.5)
    try:
        seconds = kind.convert(value, None, None)
    except click.BadParameter:
        return
    assert math.isfinite(seconds) and 0.5 <= seconds <= MAX_SECONDS


def test_the_agent_exits_1_when_its_metrics_server_cannot_start(tmp_path: Path) -> None:
    """The port is taken: one error line and exit 1, not a traceback while the election loop runs."""
    with FakeApiServer() as server, socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        config = kubeconfig(server, tmp_path / "kubeconfig")
        proc = subprocess.run(
            [sys.executable, "-I", "-m", "grove_gitops", "agent", "--kubeconfig", str(config), "--identity", "solo",
             "--lease-namespace", "default", "--metrics-address", f"127.0.0.1:{port}"],
            cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert "error: cannot start the agent: [Errno 98] Address already in use" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_the_controller_exits_1_when_its_metrics_server_cannot_start(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = subprocess.run(
            [sys.executable, "-I", "-m", "grove_gitops", "controller", "--repo", str(repo), "--output-path", "out",
             "--workdir", str(tmp_path / "work"), "--metrics-address", f"127.0.0.1:{port}", "--status-forge", "off"],
            cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert f"cannot serve --metrics-address 127.0.0.1:{port}: [Errno 98] Address already in use" in proc.stderr
    assert "Traceback" not in proc.stderr
