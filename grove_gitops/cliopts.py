"""Command-line options shared by ``cli`` and ``diffcli`` (kept apart so neither imports the other)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

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
