"""``grove-gitops render``: SOURCE rendered into OUT, replaced atomically."""

from __future__ import annotations

from pathlib import Path

import click

from grove_gitops.cli.check import check
from grove_gitops.cli.options import (
    JOBS_OPTION,
    NO_FSYNC_OPTION,
    OUTPUT_OPTION,
    QUIET_OPTION,
    cache_options,
    open_cache,
)


@click.command()
@click.argument("source", type=click.Path(path_type=Path))
@click.option(
    "--out", "out", required=True, type=click.Path(path_type=Path), help="Output directory (replaced atomically)."
)
@QUIET_OPTION
@OUTPUT_OPTION
@JOBS_OPTION
@NO_FSYNC_OPTION
@cache_options
def render(
    source: Path,
    out: Path,
    quiet: bool,
    output: str,
    jobs: int | None,
    no_fsync: bool,
    cache_dir: Path | None,
    cache_max_mb: int,
) -> None:
    """Render SOURCE (a directory of YAML files) into OUT."""
    cache = open_cache(cache_dir, cache_max_mb, not_inside=[source, out])
    check(source, out, quiet, output, jobs, fsync=not no_fsync, cache=cache)
