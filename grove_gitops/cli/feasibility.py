"""``grove-gitops feasibility``: does every gang of SOURCE fit its node inventory?"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from grove_gitops.cli.report import fail
from grove_gitops.errors import GroveGitopsError
from grove_gitops.problems import WarningSink
from grove_gitops.render import plan_source


@click.command("feasibility")
@click.argument("source", type=click.Path(path_type=Path))
@click.option(
    "--output",
    "output",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="json: one JSON document on stdout (gangs, domains, fits; see docs/feasibility.md).",
)
def feasibility(source: Path, output: str) -> None:
    """Place every PodGang of SOURCE on its node inventory: does each gang fit?

    The inventory is a gitops.grove.io/v1alpha1 NodeInventory or a v1 List of Nodes
    (kubectl get nodes -o yaml) in SOURCE. Exit 0 when every gang fits (or there is no
    inventory), 1 on invalid input, 3 when some gang does not fit. The placement is a
    heuristic: see docs/feasibility.md.
    """
    from grove_gitops.feasibility.report import to_json, to_text

    as_json = output == "json"
    try:
        plan = plan_source(source)
        from grove_gitops.feasibility.check import check_plan

        result = check_plan(plan)
    except GroveGitopsError as exc:
        fail(exc, as_json)
    if as_json:
        click.echo(to_json(result))
    elif result is None:
        click.echo(f"no NodeInventory or v1 Node list in {source}: nothing to check")
    else:
        WarningSink().emit(
            plan.warnings,
            lambda line: click.echo(line, err=True),
            plan.config.acknowledgedWarnings,
            codes=plan.acknowledged_codes,
        )
        click.echo(to_text(result), nl=False)
    if result is not None and not result.fits:
        sys.exit(3)
