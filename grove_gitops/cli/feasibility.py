"""``grove-gitops feasibility``: does every gang of SOURCE fit its node inventory?

SOURCE is a source tree, or with ``--repo`` a git ref of that repository read from its object
database (the work tree untouched), as ``diff`` and ``plan`` name a side.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from grove_gitops.cli.options import output_file_option, output_option, write_output_file
from grove_gitops.cli.report import fail
from grove_gitops.errors import GroveGitopsError
from grove_gitops.load.memory import MemorySource
from grove_gitops.problems import WarningSink, locate_warnings
from grove_gitops.render import RenderPlan, plan_source


def _plan(source: str, repo: Path | None, source_path: str | None) -> RenderPlan:
    """SOURCE planned: a folder, or the tree at ref SOURCE of ``--repo``."""
    if source_path is not None and repo is None:
        raise click.UsageError("--source-path needs --repo")
    if repo is None:
        return plan_source(Path(source))
    from grove_gitops.diff.gitrefs import extract, open_repo

    git_repo = open_repo(repo)
    try:
        tree: MemorySource = extract(git_repo, source, source_path or ".").source
    finally:
        git_repo.close()
    return plan_source(tree)


@click.command("feasibility")
@click.argument("source")
@click.option(
    "--repo",
    type=click.Path(path_type=Path, file_okay=False),
    help="SOURCE is a git ref of this repository: its source tree is read from the object database.",
)
@click.option(
    "--source-path",
    help="With --repo: the source tree's path inside the repository; '.', './' and '' are the repository "
    "root (the default).",
)
@output_option("; with json, the gangs, the domains and whether they fit (docs/schemas/feasibility-output.schema.json)")
@output_file_option("the report")
def feasibility(source: str, repo: Path | None, source_path: str | None, output: str, output_file: Path | None) -> None:
    """Place every PodGang of SOURCE on its node inventory: does each gang fit?

    SOURCE is a source tree, or with --repo a git ref (feasibility --repo . main). The
    inventory is a gitops.grove.io/v1alpha1 NodeInventory or a v1 List of Nodes (kubectl get
    nodes -o yaml) in SOURCE. Exit 0 when every gang fits (or there is no inventory), 1 on
    invalid input, 3 when some gang does not fit. The placement is a heuristic: see
    docs/feasibility.md.
    """
    from grove_gitops.feasibility.report import to_json, to_text

    as_json = output == "json"
    try:
        plan = _plan(source, repo, source_path)
        from grove_gitops.planfeasibility import check_plan

        result = check_plan(plan)
    except GroveGitopsError as exc:
        fail(exc, as_json, "grove-gitops feasibility" if output == "markdown" else None)
    sink = WarningSink()
    shown = sink.select(plan.warnings, plan.config.acknowledgedWarnings, plan.acknowledged_codes)
    if output != "text":
        files = plan.inputs.source.files
        warnings = locate_warnings(shown, files) + locate_warnings(sink.acknowledged, files, acknowledged=True)
        document = to_json(result, warnings)
        if as_json:
            text = document + "\n"
        else:
            from grove_gitops.cli.mdreport import feasibility_markdown

            text = feasibility_markdown(document, warnings)
    elif result is None:
        text = f"no NodeInventory or v1 Node list in {source}: nothing to check\n"
    else:
        WarningSink().emit(
            plan.warnings,
            lambda line: click.echo(line, err=True),
            plan.config.acknowledgedWarnings,
            codes=plan.acknowledged_codes,
        )
        text = to_text(result)
    if output_file is not None:
        write_output_file(output_file, text)
    else:
        click.echo(text, nl=False)
    if result is not None and not result.fits:
        sys.exit(3)
