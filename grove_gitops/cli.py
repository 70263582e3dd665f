"""The ``grove-gitops`` command line.

Exit codes (DESIGN contract): 0 ok, 1 invalid input or a failed operation (a clear message,
never a traceback), 2 usage. Warnings go to stderr and never change the exit code.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from grove_gitops import __version__
from grove_gitops.errors import GroveGitopsError, InvalidInputError
from grove_gitops.output.layout import build_tree
from grove_gitops.output.writer import write_tree
from grove_gitops.render import RenderResult, render_source


def _report(exc: GroveGitopsError) -> None:
    if isinstance(exc, InvalidInputError):
        for problem in exc.problems:
            click.echo(f"error: {problem}", err=True)
        n = len(exc.problems)
        click.echo(f"{n} error{'s' if n != 1 else ''}; nothing was written", err=True)
    else:
        click.echo(f"error: {exc}", err=True)


def _warn(result: RenderResult) -> None:
    for warning in result.warnings:
        click.echo(f"warning: {warning}", err=True)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="grove-gitops")
def main() -> None:
    """Render Grove PodCliqueSets into GitOps manifests."""


@main.command()
@click.argument("source", type=click.Path(path_type=Path))
@click.option(
    "--out", "out", required=True, type=click.Path(path_type=Path), help="Output directory (replaced atomically)."
)
@click.option("-q", "--quiet", is_flag=True, help="Print nothing on success.")
def render(source: Path, out: Path, quiet: bool) -> None:
    """Render SOURCE (a directory of YAML files) into OUT."""
    try:
        result = render_source(source)
        tree = build_tree(result)
        write_tree(tree, out)
    except GroveGitopsError as exc:
        _report(exc)
        sys.exit(1)
    _warn(result)
    if not quiet:
        click.echo(
            f"rendered {len(result.podcliquesets)} PodCliqueSet(s) into {len(result.objects)} objects, "
            f"{len(tree.files)} files in {out}"
        )


@main.command()
@click.argument("source", type=click.Path(path_type=Path))
def validate(source: Path) -> None:
    """Run every check of ``render`` on SOURCE; write nothing."""
    try:
        result = render_source(source)
        build_tree(result)
    except GroveGitopsError as exc:
        _report(exc)
        sys.exit(1)
    _warn(result)
    click.echo(f"{len(result.podcliquesets)} PodCliqueSet(s) valid")
if __name__ == "__main__":
    main()
