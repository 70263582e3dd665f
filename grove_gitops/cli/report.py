"""How a command reports a user-facing error: every input problem on stderr (or in the
JSON document of ``--output json``) and exit 1, never a traceback."""

from __future__ import annotations

import sys
from typing import NoReturn

import click

from grove_gitops.errors import GroveGitopsError, InvalidInputError
from grove_gitops.problems import Problem, from_input_problem, json_document, unlisted


def report(exc: GroveGitopsError) -> None:
    if isinstance(exc, InvalidInputError):
        for problem in exc.problems:
            click.echo(f"error: {problem}", err=True)
        more = [unlisted(p) for p in exc.problems]
        listed = sum(1 for m in more if not m)
        n = listed + sum(more)
        shown = f" ({listed} listed)" if n != listed else ""
        click.echo(f"{n} error{'s' if n != 1 else ''}{shown}; nothing was written", err=True)
    else:
        click.echo(f"error: {exc}", err=True)


def error_problems(exc: GroveGitopsError) -> list[Problem]:
    """The JSON form of a failed run: every input problem, or the one error as a message."""
    if isinstance(exc, InvalidInputError):
        return [from_input_problem(p) for p in exc.problems]
    return [Problem("", "", str(exc), "error")]


def fail(exc: GroveGitopsError, as_json: bool, markdown_title: str | None = None) -> NoReturn:
    """Report a user-facing error (as the JSON document under ``--output json``, as a
    Markdown list on stdout under ``--output markdown`` when ``markdown_title`` is given) and
    exit 1."""
    if as_json:
        click.echo(json_document(False, error_problems(exc)))
    elif markdown_title is not None:
        from grove_gitops.cli.mdreport import problems_markdown

        problems = error_problems(exc)
        n = len(problems)
        click.echo(problems_markdown(markdown_title, f"❌ {n} error{'s' if n != 1 else ''}", problems), nl=False)
        report(exc)
    else:
        report(exc)
    sys.exit(1)
