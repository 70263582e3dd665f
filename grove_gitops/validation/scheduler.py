"""Scheduler selection rules (``validateSchedulerNames`` and the backend hand-off).

There is no PCS-level scheduler field: every clique's ``podSpec.schedulerName`` must resolve
to the same enabled profile, an empty name meaning the OperatorConfiguration's default
(``spec/grove-backends.md`` §1.4).

Grove's webhook reports both rules under ``spec.template.cliques.spec.podSpec.schedulerName``
(no index), and one misspelt name in one clique trips both ("have to be the same" and "not
enabled"). Here each problem names the clique at fault, a name that is not enabled is reported
once, on the clique that holds it, with the profiles that are, and "have to be the same" is
left for cliques that disagree on enabled profiles. Grove's wording is kept.
"""

from __future__ import annotations

from collections.abc import Collection

from grove_gitops.api.podcliqueset import PodCliqueSet
from grove_gitops.fields.fielderrors import FieldError, invalid
from grove_gitops.fields.suggest import MAX_LISTED, did_you_mean

NOT_ENABLED = (
    "schedulerName must be an enabled scheduler backend; this scheduler is not enabled in OperatorConfiguration"
)
NOT_SAME = "the schedulerName for all pods have to be the same"


def clique_path(index: int) -> str:
    """The schedulerName of clique ``index``: where the user edits it."""
    return f"spec.template.cliques[{index}].spec.podSpec.schedulerName"


def clique_scheduler_names(pcs: PodCliqueSet, default: str) -> list[str]:
    out = []
    for clique in pcs.cliques:
        name = clique.spec.podSpec.get("schedulerName") or ""
        out.append(name if isinstance(name, str) and name else default)
    return out


def _enabled_detail(name: str, enabled: Collection[str]) -> str:
    names = sorted(enabled)
    if not names:
        return " (no scheduler profile is enabled)"
    return f" (enabled profiles: {', '.join(names)}){did_you_mean(name, names)}"


def validate_scheduler_names(pcs: PodCliqueSet, default: str, enabled: Collection[str]) -> list[FieldError]:
    """Grove's two rules, one error per mistake, each on the clique that holds it."""
    names = clique_scheduler_names(pcs, default)
    if not names:
        return []  # "at least one PodClique must be defined" is reported elsewhere
    errs: list[FieldError] = []
    typed: list[tuple[int, str]] = []  # (clique index, resolved name) of names of the right type
    for i, clique in enumerate(pcs.cliques):
        raw = clique.spec.podSpec.get("schedulerName")
        if raw is not None and not isinstance(raw, str):
            errs.append(invalid(clique_path(i), raw, "must be of type string"))
        else:
            typed.append((i, names[i]))
    for i, name in typed:
        if name not in enabled:
            errs.append(invalid(clique_path(i), name, NOT_ENABLED + _enabled_detail(name, enabled)))
    usable = [(i, name) for i, name in typed if name in enabled]
    unique = list(dict.fromkeys(name for _, name in usable))
    if len(unique) > 1:
        first = next(i for i, name in usable if name != unique[0])
        errs.append(invalid(clique_path(first), ", ".join(unique), NOT_SAME + _who_uses(pcs, usable)))
    return errs


def _who_uses(pcs: PodCliqueSet, usable: list[tuple[int, str]]) -> str:
    """``; router uses default-scheduler; pleader, dleader use kai-scheduler (no schedulerName:
    the OperatorConfiguration's default)``: which cliques disagree, so the reader knows which ones to change."""
    by_name: dict[str, list[int]] = {}
    for i, name in usable:
        by_name.setdefault(name, []).append(i)
    parts = []
    for name, indexes in by_name.items():
        cliques = [pcs.cliques[i].name for i in indexes]
        shown = ", ".join(cliques[:MAX_LISTED]) + (f" and {len(cliques) - MAX_LISTED} more" if len(cliques) > MAX_LISTED else "")
        unset = all(not pcs.cliques[i].spec.podSpec.get("schedulerName") for i in indexes)
        how = " (no schedulerName: the OperatorConfiguration's default)" if unset else ""
        parts.append(f"{shown} {'uses' if len(cliques) == 1 else 'use'} {name}{how}")
    return "; " + "; ".join(parts)


def selected_scheduler(pcs: PodCliqueSet, default: str) -> str:
    """The backend Grove picks: first non-empty clique schedulerName, else the default."""
    for name in clique_scheduler_names(pcs, ""):
        if name:
            return name
    return default
