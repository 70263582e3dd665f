"""``grove-gitops migrate plan|apply``: move a PodCliqueSet from Grove's operator to
grove-gitops as a rolling update (docs/migration.md §3).

Both render SOURCE, read the live ``grove.io`` PodCliqueSet NAME in NAMESPACE and its children
with the caller's kubeconfig, and compare them (grove_gitops/migrate/compare.py). ``plan``
prints the steps the agent will take and the capacity each leaves per role; ``apply`` also
hands the running pods over (grove_gitops/migrate/handover.py). Both refuse, exit 1 and
change nothing when the live workload does not match the render. Exit 0: planned / handed
over; 1: refused, invalid SOURCE, or a failed API call; 2: usage.

This module only exposes :data:`migrate`; :mod:`grove_gitops.cli.main` registers it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from grove_gitops.agent.kube import Kube
from grove_gitops.agent.service import _api_client
from grove_gitops.cli.options import output_option
from grove_gitops.errors import GroveGitopsError, InvalidInputError
from grove_gitops.migrate import live as live_state
from grove_gitops.migrate.compare import Comparison, compare
from grove_gitops.migrate.handover import hand_over
from grove_gitops.migrate.report import render as render_report
from grove_gitops.migrate.steps import plan_steps
from grove_gitops.problems import Problem, from_input_problem, json_document
from grove_gitops.render import render_source

FIELD_MANAGER = "grove-gitops-migrate"


def _options(func: Callable[..., None]) -> Callable[..., None]:
    options: list[Callable[[Callable[..., None]], Callable[..., None]]] = [
        click.argument("source", type=click.Path(exists=True, file_okay=False, path_type=Path)),
        click.option("-n", "--namespace", required=True, help="Namespace of the PodCliqueSet."),
        click.option("--podcliqueset", "name", required=True, help="Name of the grove.io PodCliqueSet to migrate."),
        click.option("--kubeconfig", default=None, help="Default: KUBECONFIG, then ~/.kube/config (your credentials)."),
        output_option(', with json, {"migration": {...}} too (docs/schemas/migrate-output.schema.json)'),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _fail(output: str, problems: list[Problem]) -> None:
    if output == "json":
        click.echo(json_document(False, problems))
    else:
        for p in problems:
            click.echo(f"error: {p.file + ': ' if p.file else ''}{p.message}", err=True)
    sys.exit(1)


def _prepare(source: Path, namespace: str, name: str, kubeconfig: str | None,
             output: str) -> tuple[Kube, live_state.Live, Comparison, list[dict[str, Any]]]:
    try:
        result = render_source(source)
    except InvalidInputError as exc:
        _fail(output, [from_input_problem(p) for p in exc.problems])
        raise AssertionError("unreachable") from None
    except GroveGitopsError as exc:
        _fail(output, [Problem("", "", str(exc), "error")])
        raise AssertionError("unreachable") from None
    shard = f"{namespace}/{name}"
    rendered = [o.obj for o in result.objects if o.shard == shard]
    strategy = result.update_strategies.get((namespace, name), "RollingRecreate")
    try:
        kube = Kube(_api_client(kubeconfig), field_manager=FIELD_MANAGER)
        found = live_state.read(kube, namespace, name)
    except GroveGitopsError as exc:
        _fail(output, [Problem("", "", str(exc), "error")])
        raise AssertionError("unreachable") from None
    return kube, found, compare(found, rendered, strategy), rendered


@click.group("migrate")
def migrate() -> None:
    """Move a PodCliqueSet that Grove's operator runs to grove-gitops, one unit down at a time
    (docs/migration.md)."""


@migrate.command("plan")
@_options
def plan(source: Path, namespace: str, name: str, kubeconfig: str | None, output: str) -> None:
    """Compare the live grove.io PodCliqueSet with its render and print the steps the agent
    will take and the capacity each leaves per role; exit 1 (nothing to do) when they do not
    match."""
    _, _, comparison, _ = _prepare(source, namespace, name, kubeconfig, output)
    click.echo(render_report(comparison, plan_steps(comparison), output), nl=False)
    if not comparison.ok:
        sys.exit(1)


@migrate.command("apply")
@_options
@click.option("--grove-operator-stopped", is_flag=True,
              help="Confirm that Grove's operator is stopped (scaled to 0) while this runs; required.")
def apply(source: Path, namespace: str, name: str, kubeconfig: str | None, output: str,
          grove_operator_stopped: bool) -> None:
    """Check as `migrate plan` does, then hand the running pods over to grove-gitops: label
    and mark each as adoptable by its slot, orphan them, hand over the PodGangs, Services and
    RBAC of the same names, and delete the grove.io objects with orphan propagation. Then let
    the GitOps tool apply the render: the agent replaces the pods step by step."""
    kube, found, comparison, rendered = _prepare(source, namespace, name, kubeconfig, output)
    steps = plan_steps(comparison)
    if not comparison.ok:
        click.echo(render_report(comparison, steps, output), nl=False)
        sys.exit(1)
    if not grove_operator_stopped:
        _fail(output, [Problem("", "", "Grove's operator must be stopped while the pods are handed over (it would "
                               "re-create them): scale its Deployment to 0, then pass --grove-operator-stopped; "
                               "nothing was changed", "error")])
    names = {(str(o.get("kind")), str((o.get("metadata") or {}).get("name"))) for o in rendered}
    try:
        writes = hand_over(kube, found, comparison, names, lambda line: click.echo(line, err=True))
    except GroveGitopsError as exc:
        _fail(output, [Problem("", "", str(exc), "error")])
    click.echo(render_report(comparison, steps, output), nl=False)
    click.echo(f"handed over with {writes} writes; now let Argo CD / Flux apply the render of {namespace}/{name}: "
               "the agent replaces the pods in the order above", err=True)
