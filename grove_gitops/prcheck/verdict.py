"""``fail-on``: which findings fail the check — a list, set by the workflow.

``fail-on`` is a set of gates, given comma-separated, repeated, or both
(``error,outage,infeasible,warning``); the check fails when any of them does:

* ``error`` (default; every other gate includes it): head's source tree has validation errors
  (it does not render) — or the check could not establish that it is valid: head did not
  render in the diff (``head-invalid``, even when ``validate`` said nothing), the check
  failed, or the status is not one the check writes;
* ``infeasible``: a gang does not fit the node inventory, the feasibility check failed, a
  topology change strands a running gang (:mod:`grove_gitops.plan.stranded`), or head drops the
  node inventory its merge base has. Whatever the source tree's ``feasibility`` mode says:
  ``warn`` (the default) and ``enforce`` only decide what ``validate`` and ``render`` do, and
  the tree is the pull request's to change, so the gate is the workflow's;
* ``outage``: the rollout of a PodCliqueSet leaves one of its roles (a standalone PodClique or a
  scaling group) with no available pod in the whole PodCliqueSet (:mod:`grove_gitops.plan.risk`),
  or the rollout plan could not be computed;
* ``warning``: head's source tree has validation warnings;
* ``never`` (alone): the check reports and comments but always passes.

A pass has to be earned: only a status that says head rendered (``diff`` ``ok``, or
``base-invalid``: the PR is not to blame for its base) with no validation error passes
``error``. The feasibility answer counts only when it could be asked: a pinned grove-gitops
without the ``feasibility`` command, or a source tree without a node inventory (at head and
at the merge base), cannot make ``infeasible`` fail.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from grove_gitops.prcheck.compose import Status

FAIL_ON = ("error", "infeasible", "outage", "warning", "never")
#: ``Status.diff`` values that say head rendered.
HEAD_RENDERED = ("ok", "base-invalid")


def parse_fail_on(values: str | Iterable[str]) -> tuple[str, ...]:
    """The gates of ``error,outage`` or ``["error", "outage,infeasible"]``, in :data:`FAIL_ON`
    order without repeats; ``ValueError`` names a value that is none, or ``never`` with others."""
    items = [values] if isinstance(values, str) else list(values)
    # commas, or the spaces and newlines of a multi-line Action input
    words = [w for item in items for w in re.split(r"[,\s]+", item) if w]
    if not words:
        raise ValueError(f"fail-on: empty: expected a comma-separated list of {', '.join(FAIL_ON)}")
    for word in words:
        if word not in FAIL_ON:
            raise ValueError(f"fail-on: {word!r}: expected a comma-separated list of {', '.join(FAIL_ON)}")
    gates = tuple(g for g in FAIL_ON if g in words)
    if "never" in gates and len(gates) > 1:
        raise ValueError(f"fail-on: 'never' cannot be combined with {', '.join(g for g in gates if g != 'never')}")
    return gates


def failures(status: Status, fail_on: str | Iterable[str]) -> list[str]:
    """Why the check fails under the gates ``fail_on`` (empty: it passes)."""
    gates = parse_fail_on(fail_on)
    if gates == ("never",):
        return []
    reasons = []
    if status.errors:
        reasons.append(f"head's source tree has {status.errors} validation error(s)")
    if status.diff == "head-invalid":
        reasons.append("head's source tree does not render")
    elif status.diff == "failed":
        reasons.append("the check could not run on head (see the job log)")
    elif status.diff not in HEAD_RENDERED:
        reasons.append(f"the check did not establish that head renders (status {status.diff!r})")
    if "infeasible" in gates:
        if status.feasibility == "checked" and status.infeasible:
            reasons.append("a gang does not fit the node inventory")
        elif status.feasibility == "failed":
            reasons.append("the gang feasibility check failed on head (see the job log)")
        elif status.feasibility == "no-inventory" and status.base_inventory:
            reasons.append("head's source tree drops the node inventory its merge base has (nothing was checked)")
        reasons += [f"stranded gang: {s}" for s in status.stranded]
    if "outage" in gates:
        reasons += [f"rollout outage: {o}" for o in status.outages]
        if status.diff in HEAD_RENDERED and status.plan != "ok":
            reasons.append(f"the rollout plan could not be computed (plan status {status.plan!r})")
    if "warning" in gates and status.warnings:
        reasons.append(f"head's source tree has {status.warnings} validation warning(s)")
    return reasons
