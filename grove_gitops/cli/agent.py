"""``grove-gitops agent`` (and its deprecated alias ``gate-lifter``): the in-cluster agent."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import click

from grove_gitops.agent.scaling.limits import DEFAULT_WRITES_PER_PASS, MAX_WRITES_PER_PASS
from grove_gitops.api.renderconfig import DEFAULT_MAX_PODS_PER_PCS, DEFAULT_MAX_PODS_PER_RENDER, MAX_PODS_CEILING
from grove_gitops.cli.options import MAX_WORKERS, Count, Seconds, host_port


def _agent_options(func: Callable[..., None]) -> Callable[..., None]:
    """The options of ``agent`` and of its deprecated alias ``gate-lifter``."""
    options = [
        click.option("--namespace", default=None, help="Only this namespace (default: all namespaces)."),
        click.option(
            "--lease-namespace",
            default="grove-gitops",
            show_default=True,
            help="Namespace of the leader-election Lease (one agent of several replicas acts).",
        ),
        # The Lease keeps the gate-lifter's name so an upgrade never runs two leaders.
        click.option(
            "--lease-name",
            default="grove-gitops-gate-lifter",
            show_default=True,
            help="Name of the leader-election Lease (the old gate-lifter's, so an upgrade never runs two leaders).",
        ),
        click.option("--identity", default=None, help="Leader-election identity (default: $POD_NAME or host-pid)."),
        click.option(
            "--metrics-address",
            default="0.0.0.0:8080",
            show_default=True,
            callback=host_port,
            help="Serves /healthz, /readyz, /metrics.",
        ),
        click.option("--kubeconfig", default=None, help="Default: in-cluster config, then ~/.kube/config."),
        click.option("--concurrency", default=16, show_default=True, type=Count(1, MAX_WORKERS), help="Parallel pod writes."),
        click.option(
            "--drift-interval",
            default=60.0,
            show_default=True,
            type=Seconds(min=1.0),
            help="Seconds between topology drift checks.",
        ),
        click.option(
            "--grace",
            default=60.0,
            show_default=True,
            type=Seconds(),
            help="Seconds a pod is kept after its workload's PodGangs stopped wanting it (scale-in, removed "
            "from Git, a gated pod superseded by a newer target) before the agent deletes it. A gated pod "
            "applied before its PodGang is never deleted on this timer (see --unordered-grace).",
        ),
        click.option(
            "--unordered-grace",
            default=1800.0,
            show_default=True,
            type=Seconds(),
            help="Seconds a gated pod no PodGang lists is kept when the agent cannot tell whether it was applied "
            "before its PodGang or left behind (it was there before the agent started, and its workload's "
            "PodGangs have not changed since). Default: three times the shipped Flux interval (10m).",
        ),
        click.option(
            "--resync",
            default=2.0,
            show_default=True,
            type=Seconds(min=0.05),
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
        click.option(
            "--blocked-after",
            default=60.0,
            show_default=True,
            type=Seconds(),
            help="Seconds a rolling update or a gang may wait before the agent says why: the RolloutBlocked "
            "condition (PodGang, gitops.grove.io PodCliqueSet), the grove_gitops_rollout_blocked_seconds metric "
            "and a log line per change of reason.",
        ),
        click.option(
            "--lease-duration",
            default=15.0,
            show_default=True,
            type=Seconds(min=0.0, min_open=True),
            help="Seconds a Lease is valid without renewal.",
        ),
        click.option(
            "--renew-deadline",
            default=10.0,
            show_default=True,
            type=Seconds(min=0.0, min_open=True),
            help="Seconds the leader may fail to renew before it stops (less than --lease-duration).",
        ),
        click.option(
            "--retry-period",
            default=2.0,
            show_default=True,
            type=Seconds(min=0.0, min_open=True),
            help="Seconds between Lease attempts (less than --renew-deadline).",
        ),
        # The autoscaling loop's limits: the agent's own, never a record's (docs/autoscaling.md).
        click.option(
            "--max-pods-per-podcliqueset",
            default=DEFAULT_MAX_PODS_PER_PCS,
            show_default=True,
            type=Count(1, MAX_PODS_CEILING),
            help="Most pods one autoscaled workload may have at its autoscaling maximum (render's "
            "limits.maxPodsPerPodCliqueSet, applied by the agent in place of the record's); a record over it is "
            "refused (Ready=False, an InvalidWorkload Event) and nothing is created for it.",
        ),
        click.option(
            "--max-pods-per-render",
            default=DEFAULT_MAX_PODS_PER_RENDER,
            show_default=True,
            type=Count(1, MAX_PODS_CEILING),
            help="Render's limits.maxPodsPerRender, applied by the agent to each workload it renders in place of "
            "the record's.",
        ),
        click.option(
            "--max-writes-per-pass",
            default=DEFAULT_WRITES_PER_PASS,
            show_default=True,
            type=Count(1, MAX_WRITES_PER_PASS),
            help="Objects the autoscaling loop creates, replaces or deletes for one workload in one pass (a gang "
            "is never split); a larger scale step continues in the next passes, after every other workload's.",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _lease_order(lease_duration: float, renew_deadline: float, retry_period: float) -> None:
    """client-go's rule for leader election: a leader must give up (renew deadline) before its
    Lease expires for the others, and must be able to retry within its deadline; otherwise two
    agents can lead at once, or the leader loses a Lease it could have kept."""
    ctx = click.get_current_context()
    names = {
        p.name: f"{p.opts[0]} ({p.envvar})" if isinstance(p, click.Option) else str(p.name) for p in ctx.command.params
    }
    if not renew_deadline < lease_duration:
        raise click.UsageError(f"{names['renew_deadline']} must be less than {names['lease_duration']}", ctx)
    if not retry_period < renew_deadline:
        raise click.UsageError(f"{names['retry_period']} must be less than {names['renew_deadline']}", ctx)


def _run_agent(**kwargs: Any) -> None:
    from grove_gitops.agent.service import ServiceOptions, default_identity, run_agent

    _lease_order(kwargs["lease_duration"], kwargs["renew_deadline"], kwargs["retry_period"])
    kwargs["identity"] = kwargs["identity"] or default_identity()
    sys.exit(run_agent(ServiceOptions(**kwargs)))


@click.command("agent")
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


@click.command("gate-lifter", hidden=True)
@_agent_options
def gate_lifter(**kwargs: Any) -> None:
    """Deprecated alias of `agent` (same options, same behaviour)."""
    click.echo("warning: `grove-gitops gate-lifter` is deprecated; use `grove-gitops agent`", err=True)
    _run_agent(**kwargs)
