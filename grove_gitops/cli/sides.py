"""Command-line helpers ``diff`` and ``plan`` share: the usage rules of the side options,
the render cache they name, and how an invalid side is reported."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from grove_gitops.cache import RenderCache
from grove_gitops.cli.options import open_cache
from grove_gitops.diff.errors import SideInvalidError


def report_invalid(errors: list[SideInvalidError]) -> None:
    """Every problem of every invalid side, ``error: <side>: file: field: message``."""
    for err in errors:
        for problem in err.error.problems:
            click.echo(f"error: {err.side}: {problem}", err=True)
    for err in errors:
        n = len(err.error.problems)
        click.echo(f"{n} error{'s' if n != 1 else ''} in {err.side} ({err.label}); nothing was compared", err=True)


def side_cache(
    cache_dir: Path | None, cache_max_mb: int, base: str, head: str, rendered: bool, repo: Path | None
) -> RenderCache | None:
    """The cache ``--cache-dir`` names for ``diff`` and ``plan`` (never inside a source)."""
    if cache_dir is None or rendered:
        return None
    sources = [repo] if repo is not None else [Path(base), Path(head)]
    return open_cache(cache_dir, cache_max_mb, not_inside=sources)


def check_modes(rendered: bool, repo: Path | None, source_path: str | None) -> None:
    """The usage rules of the side options, shared by ``diff`` and ``plan`` (exit 2)."""
    if rendered and repo is not None:
        raise click.UsageError("--rendered and --repo exclude each other")
    if source_path is not None and repo is None:
        raise click.UsageError("--source-path needs --repo")


def side_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """BASE, HEAD and the options that say what they name (source trees, rendered trees, or
    git refs of ``--repo``), defined once for ``diff`` and ``plan``."""
    decorators = [
        click.argument("base"),
        click.argument("head"),
        click.option("--rendered", is_flag=True, help="BASE and HEAD are rendered output trees, not source trees."),
        click.option(
            "--repo",
            type=click.Path(path_type=Path, file_okay=False),
            help="Read the source trees at the git refs BASE and HEAD of this repository.",
        ),
        click.option(
            "--source-path",
            help="With --repo: the source tree's path inside the repository; '.', './' and '' are the repository "
            "root (the default).",
        ),
    ]
    for decorator in reversed(decorators):
        func = decorator(func)
    return func
