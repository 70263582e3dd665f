"""Grove's checks on the OperatorConfiguration fields a render does not read.

A render reads only the scheduler profiles, topology-aware scheduling and MNNVL, but the same
file configures a real Grove operator beside us (its Helm values), which refuses to start on a
leader-election duration it cannot parse, a negative ``burst`` or a ``concurrentSyncs`` below 1.
A file grove-gitops accepts must therefore be one Grove's operator accepts: these are Grove's
decode errors and ``ValidateOperatorConfiguration`` rules (spec/grove-backends.md §7), after
Grove's defaults (``defaults.go``: a zero duration is the default, an absent ``concurrentSyncs``
is 10 or 5), with Grove's field paths (``clientConnection.burst``, not the JSON key
``runtimeClientConnection``) and messages. tests/oracle checks them against Grove's own code.
"""

from __future__ import annotations

import dataclasses

from grove_gitops.api.operatorconfig import ControllerConfiguration, LeaderElectionConfiguration, OperatorConfiguration
from grove_gitops.fields.fielderrors import FieldError, invalid
from grove_gitops.validation.goduration import DurationError, format_go_duration, parse_go_duration

#: ``SetDefaults_LeaderElectionConfiguration``: the value a zero duration becomes.
_DEFAULT_DURATIONS = {"leaseDuration": 15_000_000_000, "renewDeadline": 10_000_000_000, "retryPeriod": 2_000_000_000}
#: Grove's order of the controllers' checks (``validateControllerConfiguration``).
_CONTROLLERS = ("podCliqueSet", "podCliqueScalingGroup", "podClique", "podGang")


def _durations(le: LeaderElectionConfiguration, errs: list[FieldError]) -> dict[str, int] | None:
    """Each duration in nanoseconds after Grove's defaults, or None when one cannot be decoded
    (``metav1.Duration`` fails on null and on the empty string too: Go calls its decoder)."""
    out: dict[str, int] = {}
    for name, default in _DEFAULT_DURATIONS.items():
        text = getattr(le, name)
        if text is None and name not in le.model_fields_set:
            out[name] = default
            continue
        path = f"leaderElection.{name}"
        try:
            ns = parse_go_duration(text if text is not None else "")
        except DurationError as err:
            errs.append(invalid(path, text, f"Grove's operator cannot decode it ({err}); write a Go duration such as 15s"))
            continue
        out[name] = ns or default
    return out if len(out) == len(_DEFAULT_DURATIONS) else None


def _leader_election(le: LeaderElectionConfiguration | None) -> list[FieldError]:
    if le is None:
        return []
    errs: list[FieldError] = []
    durations = _durations(le, errs)
    if durations is None or not le.enabled:
        return errs
    for name in _DEFAULT_DURATIONS:
        if durations[name] <= 0:
            errs.append(invalid(f"leaderElection.{name}", format_go_duration(durations[name]), "must be greater than 0"))
    if durations["leaseDuration"] <= durations["renewDeadline"]:
        errs.append(
            invalid(
                "leaderElection.leaseDuration",
                format_go_duration(durations["renewDeadline"]),
                "LeaseDuration must be greater than RenewDeadline",
            )
        )
    # resourceLock / resourceName: an empty one is defaulted, so Grove's "required" cannot fire
    return errs


def _controllers(controllers: ControllerConfiguration | None) -> list[FieldError]:
    errs: list[FieldError] = []
    for name in _CONTROLLERS:
        syncs = getattr(controllers, name, None) if controllers is not None else None
        value = syncs.concurrentSyncs if syncs is not None else None
        if value is not None and value <= 0:  # absent or null: Grove's default (10 or 5)
            errs.append(invalid(f"controllers.{name}.concurrentSyncs", value, "must be greater than 0"))
    return errs


def operator_runtime_errors(cfg: OperatorConfiguration) -> list[FieldError]:
    """Grove's errors for the leader-election, client-connection and controller fields."""
    errs = _leader_election(cfg.leaderElection)
    burst = cfg.runtimeClientConnection.burst if cfg.runtimeClientConnection is not None else None
    if burst is not None and burst < 0:
        err = invalid("clientConnection.burst", burst, "must be non-negative")
        errs.append(dataclasses.replace(err, located_at="runtimeClientConnection.burst"))
    return errs + _controllers(cfg.controllers)
