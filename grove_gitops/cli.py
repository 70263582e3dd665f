"""The ``grove-gitops`` command line.

Exit codes (DESIGN contract): 0 ok, 1 invalid input or a failed operation (a clear message,
never a traceback), 2 usage. Warnings go to stderr, each distinct one once per run, and never
change the exit code; ``--output json`` puts every problem in one JSON document on stdout
instead (see :mod:`grove_gitops.problems`). Help texts are plain text: click prints
docstrings verbatim, so command docstrings hold no RST markup.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, NoReturn

import click

from grove_gitops import __version__
from grove_gitops.cache import RenderCache
from grove_gitops.cliopts import cache_options, open_cache, output_option
from grove_gitops.diffcli import diff_command
from grove_gitops.errors import GroveGitopsError, InvalidInputError
from grove_gitops.fleet.output import render_source_tree
from grove_gitops.output.parallel import default_jobs
from grove_gitops.output.writer import render_to
from grove_gitops.plancli import plan_command
from grove_gitops.problems import Problem, WarningSink, from_input_problem, from_warning, json_document
from grove_gitops.render import plan_source


def _report(exc: GroveGitopsError) -> None:
    if isinstance(exc, InvalidInputError):
        for problem in exc.problems:
            click.echo(f"error: {problem}", err=True)
        n = len(exc.problems)
        click.echo(f"{n} error{'s' if n != 1 else ''}; nothing was written", err=True)
    else:
        click.echo(f"error: {exc}", err=True)


def _error_problems(exc: GroveGitopsError) -> list[Problem]:
    """The JSON form of a failed run: every input problem, or the one error as a message."""
    if isinstance(exc, InvalidInputError):
        return [from_input_problem(p) for p in exc.problems]
    return [Problem("", "", str(exc), "error")]


OUTPUT_OPTION = output_option()
JOBS_OPTION = click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=1),
    default=None,
    help="Worker processes expanding and serialising PodCliqueSets (default: the number of CPUs). "
    "The output is the same for every value; small renders run in one process.",
)
NO_FSYNC_OPTION = click.option(
    "--no-fsync",
    "no_fsync",
    is_flag=True,
    help="Do not fsync the new output before swapping it in (tmpfs, CI: faster, not durable across a power loss).",
)
QUIET_OPTION = click.option(
    "-q",
    "--quiet",
    is_flag=True,
    help="Print no success line, and no warning listed in RenderConfiguration's acknowledgedWarnings.",
)


def _host_port(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """``host:port`` (host may be empty = all interfaces; empty value = disabled) or a usage error.

    Checked here so a typo is exit 2 with the option named, not a traceback from the server.
    """
    if not value:
        return value
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535 or ":" in host:
        raise click.BadParameter(f"{value!r} is not host:port (e.g. 0.0.0.0:8080)")
    return value


class _Group(click.Group):
    """Imports ``pr-check`` (GitHub's HTTP client and the comment logic) only when it runs
    or help lists it: every other command, ``diff`` from a CI job first of all, starts
    without it."""

    _LAZY: ClassVar[dict[str, tuple[str, str]]] = {"pr-check": ("grove_gitops.prcheck.cli", "pr_check")}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *self._LAZY])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self._LAZY and cmd_name not in self.commands:
            import importlib

            module, attr = self._LAZY[cmd_name]
            self.add_command(getattr(importlib.import_module(module), attr), cmd_name)
        return super().get_command(ctx, cmd_name)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="grove-gitops")
def main() -> None:
    """Render Grove PodCliqueSets into GitOps manifests."""


def _fail(exc: GroveGitopsError, as_json: bool) -> NoReturn:
    """Report a user-facing error (as the JSON document under ``--output json``) and exit 1."""
    if as_json:
        click.echo(json_document(False, _error_problems(exc)))
    else:
        _report(exc)
    sys.exit(1)


def _check(
    source: Path,
    out: Path | None,
    quiet: bool,
    output: str,
    jobs: int | None,
    *,
    fsync: bool = True,
    cache: RenderCache | None = None,
) -> None:
    """What render and validate share: run every check, write OUT when given, report."""
    as_json = output == "json"
    n_jobs = default_jobs() if jobs is None else jobs
    if cache is not None:
        cache.start()
    try:
        outcome = render_source_tree(
            source,
            out,
            n_jobs,
            cache,
            single=lambda plan: render_to(plan, out, n_jobs, fsync=fsync, cache=cache),
            feasibility=True,
            fsync=fsync,
        )
    except GroveGitopsError as exc:
        _fail(exc, as_json)
    finally:
        if cache is not None:
            cache.finish()
    sink = WarningSink(quiet=quiet)
    tree, acks, n_pcs = outcome.tree, outcome.acknowledged, outcome.podcliquesets
    tree.warnings = tree.warnings + outcome.feasibility_warnings  # reported, never in the output's README
    fleet = f" for {len(outcome.clusters)} cluster(s) ({', '.join(c.name for c in outcome.clusters)})" if outcome.clusters else ""
    if as_json:
        shown = sink.select(tree.warnings, acks)
        summary: dict[str, Any] = {"podCliqueSets": n_pcs, "objects": tree.objects, "files": len(tree.files)}
        if outcome.clusters:
            summary["clusters"] = {c.name: {"podCliqueSets": len(c.plan.items), "objects": c.tree.objects} for c in outcome.clusters}
        click.echo(json_document(True, [from_warning(w) for w in shown], **summary))
        return
    sink.emit(tree.warnings, lambda line: click.echo(line, err=True), acks)
    if quiet:
        return
    if out is not None:
        click.echo(f"rendered {n_pcs} PodCliqueSet(s){fleet} into {tree.objects} objects, {len(tree.files)} files in {out}")
    else:
        click.echo(f"{n_pcs} PodCliqueSet(s) valid{fleet}")


@main.command()
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
    _check(source, out, quiet, output, jobs, fsync=not no_fsync, cache=cache)


@main.command()
@click.argument("source", type=click.Path(path_type=Path))
@QUIET_OPTION
@OUTPUT_OPTION
@JOBS_OPTION
def validate(source: Path, quiet: bool, output: str, jobs: int | None) -> None:
    """Run every check of 'render' on SOURCE; write nothing."""
    _check(source, None, quiet, output, jobs)


@main.command()
@click.argument("source", type=click.Path(path_type=Path, exists=True))
@click.option(
    "--out",
    "out",
    required=True,
    type=click.Path(path_type=Path),
    help="Output directory, replaced atomically after each valid render (an invalid edit keeps the last one).",
)
@click.option("--debounce", default=300, show_default=True, help="Milliseconds to wait for more changes.")
@QUIET_OPTION
@NO_FSYNC_OPTION
def watch(source: Path, out: Path, debounce: int, quiet: bool, no_fsync: bool) -> None:
    """Re-render SOURCE into OUT whenever a YAML file changes (Ctrl-C to stop)."""
    from grove_gitops.gitops.watch import watch as run_watch

    run_watch(
        source, out, lambda line: click.echo(line, err=True), debounce_ms=debounce, quiet=quiet, fsync=not no_fsync
    )


@main.command()
@click.option(
    "--repo", required=True, help="Repository URL or local path (credentials: GROVE_GITOPS_GIT_TOKEN or git's helpers)."
)
@click.option("--source-branch", default="main", show_default=True)
@click.option("--source-path", default="", help="Directory of the source tree inside the repository (default: root).")
@click.option("--output-branch", default="rendered", show_default=True, help="Same as --source-branch for folder mode.")
@click.option(
    "--output-path", default="", help="Directory of the output inside the output branch (required in folder mode)."
)
@click.option("--workdir", type=click.Path(path_type=Path), default=None, help="Private clone (default: ~/.cache).")
@click.option("--once", is_flag=True, help="One iteration; exit 1 if a source commit failed to render.")
@click.option("--interval", default=30.0, show_default=True, help="Seconds between iterations.")
@click.option(
    "--metrics-address",
    default="",
    callback=_host_port,
    help="host:port serving /healthz and /metrics (e.g. 0.0.0.0:8080).",
)
@click.option("--author", default="grove-gitops <grove-gitops@users.noreply.local>", show_default=True)
@click.option(
    "--hydrator-files",
    is_flag=True,
    help="Also write Argo CD Source Hydrator files (hydrator.metadata, README.md, .gitattributes) per shard.",
)
@click.option(
    "--cache-max-mb",
    type=click.IntRange(min=1),
    default=1024,
    show_default=True,
    help="Size bound of the render cache kept in the work directory (least recently used entries go first).",
)
@JOBS_OPTION
def controller(
    repo: str,
    source_branch: str,
    source_path: str,
    output_branch: str,
    output_path: str,
    workdir: Path | None,
    once: bool,
    interval: float,
    metrics_address: str,
    author: str,
    hydrator_files: bool,
    cache_max_mb: int,
    jobs: int | None,
) -> None:
    """Render every new source commit of REPO and push the output for Argo CD / Flux."""
    from grove_gitops.gitops.service import run_controller

    sys.exit(
        run_controller(
            repo=repo,
            source_branch=source_branch,
            source_path=source_path,
            output_branch=output_branch,
            output_path=output_path,
            workdir=workdir,
            once=once,
            interval=interval,
            metrics_address=metrics_address,
            author=author,
            jobs=default_jobs() if jobs is None else jobs,
            hydrator=hydrator_files,
            cache_max_mb=cache_max_mb,
        )
    )


def _agent_options(func: Callable[..., None]) -> Callable[..., None]:
    """The options of ``agent`` and of its deprecated alias ``gate-lifter``."""
    options = [
        click.option("--namespace", default=None, help="Only this namespace (default: all namespaces)."),
        click.option("--lease-namespace", default="grove-gitops", show_default=True),
        # The Lease keeps the gate-lifter's name so an upgrade never runs two leaders.
        click.option("--lease-name", default="grove-gitops-gate-lifter", show_default=True),
        click.option("--identity", default=None, help="Leader-election identity (default: $POD_NAME or host-pid)."),
        click.option(
            "--metrics-address",
            default="0.0.0.0:8080",
            show_default=True,
            callback=_host_port,
            help="Serves /healthz, /readyz, /metrics.",
        ),
        click.option("--kubeconfig", default=None, help="Default: in-cluster config, then ~/.kube/config."),
        click.option("--concurrency", default=16, show_default=True, help="Parallel pod writes."),
        click.option("--drift-interval", default=60.0, show_default=True, help="Seconds between topology drift checks."),
        click.option(
            "--grace",
            default=60.0,
            show_default=True,
            type=click.FloatRange(min=0),
            help="Seconds a pod is kept after its workload's PodGangs stopped wanting it (scale-in, removed "
            "from Git, a gated pod superseded by a newer target) before the agent deletes it. A gated pod "
            "applied before its PodGang is never deleted on this timer (see --unordered-grace).",
        ),
        click.option(
            "--unordered-grace",
            default=1800.0,
            show_default=True,
            type=click.FloatRange(min=0),
            help="Seconds a gated pod no PodGang lists is kept when the agent cannot tell whether it was applied "
            "before its PodGang or left behind (it was there before the agent started, and its workload's "
            "PodGangs have not changed since). Default: three times the shipped Flux interval (10m).",
        ),
        click.option(
            "--resync",
            default=2.0,
            show_default=True,
            type=click.FloatRange(min=0.05),
            help="Seconds between re-derivations of every workload without an event (grace periods and "
            "terminationDelay expire silently).",
        ),
        click.option(
            "--day2/--no-day2",
            default=True,
            show_default=True,
            help="Rolling updates, failed-pod replacement, gang termination and scale-in; "
            "--no-day2 only releases gates.",
        ),
        click.option(
            "--autoscaling/--no-autoscaling",
            default=True,
            show_default=True,
            help="Create the gitops.grove.io scale targets of autoscaled cliques and scaling groups and the "
            "replicas above the floor Git renders (docs/autoscaling.md; needs overlays/crds installed).",
        ),
        click.option("--lease-duration", default=15.0, show_default=True, help="Seconds a Lease is valid without renewal."),
        click.option(
            "--renew-deadline", default=10.0, show_default=True, help="Seconds the leader may fail to renew before it stops."
        ),
        click.option("--retry-period", default=2.0, show_default=True, help="Seconds between Lease attempts."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _run_agent(**kwargs: Any) -> None:
    from grove_gitops.agent.service import ServiceOptions, default_identity, run_agent

    kwargs["identity"] = kwargs["identity"] or default_identity()
    sys.exit(run_agent(ServiceOptions(**kwargs)))


@main.command("agent")
@_agent_options
def agent(**kwargs: Any) -> None:
    """Run the in-cluster agent: release gangs and carry Grove's day-2 behaviour.

    It removes the scheduling gate from a gang's pods once the gang is complete, rolls
    updates in Grove's order (RollingRecreate) or waits for deletes (OnDelete), replaces
    failed pods, terminates gangs whose minAvailable stays breached past terminationDelay,
    and deletes pods no PodGang wants any more. See docs/day2.md. It also creates the scale
    targets of autoscaled cliques and scaling groups and the replicas above the floor Git
    renders, at the count scalers write (docs/autoscaling.md).
    """
    _run_agent(**kwargs)


@main.command("gate-lifter")
@_agent_options
def gate_lifter(**kwargs: Any) -> None:
    """Deprecated alias of `agent` (same options, same behaviour)."""
    click.echo("warning: `grove-gitops gate-lifter` is deprecated; use `grove-gitops agent`", err=True)
    _run_agent(**kwargs)


@main.command("feasibility")
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
        _fail(exc, as_json)
    if as_json:
        click.echo(to_json(result))
    elif result is None:
        click.echo(f"no NodeInventory or v1 Node list in {source}: nothing to check")
    else:
        WarningSink().emit(plan.warnings, lambda line: click.echo(line, err=True), plan.config.acknowledgedWarnings)
        click.echo(to_text(result), nl=False)
    if result is not None and not result.fits:
        sys.exit(3)


main.add_command(diff_command)
main.add_command(plan_command)


if __name__ == "__main__":
    main()
