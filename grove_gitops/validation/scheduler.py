"""Scheduler selection rules (``validateSchedulerNames`` and the backend hand-off).

There is no PCS-level scheduler field: every clique's ``podSpec.schedulerName`` must resolve
to the same enabled profile, an empty name meaning the OperatorConfiguration's default
(``spec/grove-backends.md`` §1.4).
"""

from __future__ import annotations

from collections.abc import Collection

from grove_gitops.api.podcliqueset import PodCliqueSet
from grove_gitops.validation.fielderrors import FieldError, invalid

PATH = "spec.template.cliques.spec.podSpec.schedulerName"


def clique_scheduler_names(pcs: PodCliqueSet, default: str) -> list[str]:
    out = []
    for clique in pcs.cliques:
        name = clique.spec.podSpec.get("schedulerName") or ""
        out.append(name if isinstance(name, str) and name else default)
    return out


def validate_scheduler_names(pcs: PodCliqueSet, default: str, enabled: Collection[str]) -> list[FieldError]:
    names = clique_scheduler_names(pcs, default)
    if not names:
        return []  # "at least one PodClique must be defined" is reported elsewhere
    errs: list[FieldError] = []
    for i, clique in enumerate(pcs.cliques):
        raw = clique.spec.podSpec.get("schedulerName")
        if raw is not None and not isinstance(raw, str):
            errs.append(
                invalid(f"spec.template.cliques[{i}].spec.podSpec.schedulerName", raw, "must be of type string")
            )
    unique = list(dict.fromkeys(names))
    if len(unique) > 1:
        errs.append(invalid(PATH, ", ".join(unique), "the schedulerName for all pods have to be the same"))
    if unique[0] not in enabled:
        errs.append(
            invalid(
                PATH,
                unique[0],
                "schedulerName must be an enabled scheduler backend; this scheduler is not enabled in "
                "OperatorConfiguration",
            )
        )
    return errs


def selected_scheduler(pcs: PodCliqueSet, default: str) -> str:
    """The backend Grove picks: first non-empty clique schedulerName, else the default."""
    for name in clique_scheduler_names(pcs, ""):
        if name:
            return name
    return default
