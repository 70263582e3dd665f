"""``grove-gitops watch``: re-render on every change of the source tree (local authoring)."""

from __future__ import annotations

from pathlib import Path

import click

from grove_gitops.cli.options import NO_FSYNC_OPTION, QUIET_OPTION, Count


@click.command()
@click.argument("source", type=click.Path(path_type=Path, exists=True))
@click.option(
    "--out",
    "out",
    required=True,
    type=click.Path(path_type=Path),
    help="Output directory, replaced atomically after each valid render (an invalid edit keeps the last one).",
)
@click.option(
    "--debounce", default=300, show_default=True, type=Count(0, 60_000), help="Milliseconds to wait for more changes."
)
@QUIET_OPTION
@NO_FSYNC_OPTION
def watch(source: Path, out: Path, debounce: int, quiet: bool, no_fsync: bool) -> None:
    """Re-render SOURCE into OUT whenever a YAML file changes (Ctrl-C to stop)."""
    from grove_gitops.gitops.watch import watch as run_watch

    run_watch(
        source, out, lambda line: click.echo(line, err=True), debounce_ms=debounce, quiet=quiet, fsync=not no_fsync
    )
