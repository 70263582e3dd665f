"""Command-line options and option checks shared by several commands, defined once so their
names, defaults and help read the same everywhere."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from grove_gitops.cache import RenderCache

#: The longest duration a setting takes (30 days). Longer ones are typos, and past about 292
#: years ``threading.Event.wait`` raises OverflowError in the thread that sleeps.
MAX_SECONDS = 30 * 24 * 3600.0
#: Worker threads or processes at most: more is never faster on one pod, and each costs memory.
MAX_WORKERS = 1024
#: The render cache's size bound at most (1 TiB), in MiB.
MAX_CACHE_MB = 1024 * 1024


class Seconds(click.FloatRange):
    """A duration in seconds: finite and within ``[min, max]`` (``(min, max]`` with
    ``min_open``), or a usage error naming the option and its environment variable.

    ``click.FloatRange`` alone takes ``nan`` (every comparison with it is false, so it is in
    every range) and ``inf`` when it has no upper bound, and each breaks a loop later: a
    ``wait(nan)`` that never waits, a ``wait(inf)`` that raises in its thread.
    """

    name = "seconds"

    def __init__(self, min: float = 0.0, *, min_open: bool = False, max: float = MAX_SECONDS) -> None:
        super().__init__(min=min, max=max, min_open=min_open)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = click.FLOAT.convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number of seconds", param, ctx)
        return super().convert(number, param, ctx)


class Count(click.IntRange):
    """A whole number within ``[min, max]``, both bounds required: a count sizes a pool, a
    cache or a loop, so it is bounded before use."""

    name = "count"

    def __init__(self, min: int, max: int) -> None:
        super().__init__(min=min, max=max)


#: What ``--output`` takes on every command that prints a report (issue 34.5): one option,
#: one set of values, so a script or a workflow spells it the same for every command.
OUTPUTS = ("text", "markdown", "json")

#: Problems in the JSON document of ``--output json``.
_JSON_PROBLEMS = (
    "text: for a terminal; markdown: for a PR comment or a job summary; json: one JSON document on stdout "
    "listing every problem as {file, field, message, severity, line, column}"
)


def output_option(extra: str = "", default: str = "text") -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--output text|markdown|json``: ``text`` for people, ``markdown`` for a PR comment,
    ``json`` for editors and CI annotations (its schema: docs/schemas/<command>-output.schema.json).

    ``extra`` names what else a command's JSON document carries (``diff`` adds the diff).
    """
    return click.option(
        "--output",
        "output",
        type=click.Choice(OUTPUTS),
        default=default,
        show_default=True,
        help=f"{_JSON_PROBLEMS}{extra}.",
    )


def deprecated_format_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """The old ``--format markdown|text`` of ``diff`` and ``pr-check run``, hidden from help:
    still read, with a warning, so workflows written before ``--output`` keep working."""
    return click.option(
        "--format", "fmt", type=click.Choice(["markdown", "text"]), default=None, hidden=True,
        help="Deprecated: use --output markdown|text.",
    )(func)


def resolve_output(output: str, fmt: str | None, command: str) -> str:
    """The format a command prints: ``--output``, or the deprecated ``--format`` when given.

    Old workflows passed ``--format markdown --output text`` (``--output`` then only chose
    between the report and JSON): ``--format`` wins unless ``--output json`` asks for JSON.
    """
    if fmt is None:
        return output
    click.echo(f"warning: `{command} --format {fmt}` is deprecated; use `--output {fmt}`", err=True)
    return "json" if output == "json" else fmt


def output_file_option(what: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--output-file PATH``: the report written to a file instead of stdout."""
    return click.option(
        "--output-file",
        "output_file",
        type=click.Path(path_type=Path, dir_okay=False),
        default=None,
        help=f"Write {what} to this file instead of stdout (the status line still goes to stderr).",
    )


def write_output_file(path: Path, text: str) -> None:
    """Write a report to ``--output-file``, or exit 1 with one line naming the file."""
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        click.echo(f"error: {path}: cannot write the report: {exc.strerror or exc}", err=True)
        raise SystemExit(1) from exc


def cache_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--cache-dir`` and ``--cache-max-mb``: the persistent render cache (issue 14)."""
    func = click.option(
        "--cache-max-mb",
        type=Count(1, MAX_CACHE_MB),
        default=1024,
        show_default=True,
        help="Size bound of --cache-dir; the least recently used entries are deleted beyond it.",
    )(func)
    return click.option(
        "--cache-dir",
        type=click.Path(path_type=Path, file_okay=False),
        default=None,
        help="Keep rendered PodCliqueSets here between runs: a later run re-renders only what changed "
        "(same bytes). Never inside a source tree. Safe to delete at any time.",
    )(func)


def open_cache(cache_dir: Path | None, max_mb: int, *, not_inside: list[Path]) -> RenderCache:
    """A render cache, persistent under ``cache_dir`` when given.

    The directory must not be inside a source tree (the source is untrusted: it must not be
    able to plant entries) nor inside an output directory (the swap would delete it).
    """
    from grove_gitops.cache import RenderCache
    from grove_gitops.cachestore import ShardStore

    if cache_dir is None:
        return RenderCache()
    resolved = cache_dir.resolve()
    for other in not_inside:
        if resolved.is_relative_to(other.resolve()):
            raise click.BadParameter(f"{cache_dir} is inside {other}", param_hint="--cache-dir")
    return RenderCache(store=ShardStore(cache_dir, max_mb * 1024 * 1024))


OUTPUT_OPTION = output_option()
JOBS_OPTION = click.option(
    "--jobs",
    "-j",
    type=Count(1, MAX_WORKERS),
    default=None,
    help="Worker processes expanding and serialising PodCliqueSets (default: the CPUs no other process is busy on). "
    "The output is the same for every value; a worker per 1,000 pods at most, so small renders run in one process.",
)
NO_FSYNC_OPTION = click.option(
    "--no-fsync",
    "no_fsync",
    is_flag=True,
    help="Do not fsync the new output before swapping it in (tmpfs, CI: faster, not durable across a power loss).",
)
QUIET_OPTION = click.option(
    "-q",
    "--quiet",
    is_flag=True,
    help="Print no success line, and no warning listed in RenderConfiguration's acknowledgedWarnings.",
)


def host_port(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """``host:port`` (host may be empty = all interfaces; empty value = disabled) or a usage error.

    Checked here so a typo is exit 2 with the option named, not a traceback from the server.
    """
    if not value:
        return value
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535 or ":" in host:
        raise click.BadParameter(f"{value!r} is not host:port (e.g. 0.0.0.0:8080)")
    return value
