"""Command-line options shared by ``cli`` and ``diffcli`` (kept apart so neither imports the other)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from grove_gitops.cache import RenderCache

#: Problems in the JSON document of ``--output json``.
_JSON_PROBLEMS = "json: one JSON document on stdout listing every problem as {file, field, message, severity}"


def output_option(extra: str = "") -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--output text|json``: ``text`` for people, ``json`` for editors and CI annotations.

    ``extra`` names what else a command's JSON document carries (``diff`` adds the diff).
    """
    return click.option(
        "--output",
        "output",
        type=click.Choice(["text", "json"]),
        default="text",
        show_default=True,
        help=f"{_JSON_PROBLEMS}{extra}.",
    )


def cache_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--cache-dir`` and ``--cache-max-mb``: the persistent render cache (issue 14)."""
    func = click.option(
        "--cache-max-mb",
        type=click.IntRange(min=1),
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
