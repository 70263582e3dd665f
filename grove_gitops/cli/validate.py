"""``grove-gitops validate``: every check of ``render``, nothing written."""

from __future__ import annotations

from pathlib import Path

import click

from grove_gitops.cli.check import check
from grove_gitops.cli.options import JOBS_OPTION, OUTPUT_OPTION, QUIET_OPTION


@click.command()
@click.argument("source", type=click.Path(path_type=Path))
@QUIET_OPTION
@OUTPUT_OPTION
@JOBS_OPTION
def validate(source: Path, quiet: bool, output: str, jobs: int | None) -> None:
    """Run every check of 'render' on SOURCE; write nothing."""
    check(source, None, quiet, output, jobs)
