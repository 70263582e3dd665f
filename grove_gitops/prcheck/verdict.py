"""``fail-on``: which findings fail the check.

* ``error`` (default): head's source tree has validation errors (it does not render) — or
  the check could not establish that it is valid: head did not render in the diff
  (``head-invalid``, even when ``validate`` said nothing), the check failed, or the status
  is not one the check writes;
* ``infeasible``: that, or a gang does not fit the node inventory, or the feasibility check
  failed;
* ``outage``: that (``error``), or the rollout of a PodCliqueSet leaves one of its roles (a
  standalone PodClique or a scaling group) with no available pod in the whole PodCliqueSet
  (:mod:`grove_gitops.plan.risk`), or the rollout plan could not be computed;
* ``never``: the check reports and comments but always passes.

A pass has to be earned: only a status that says head rendered (``diff`` ``ok``, or
``base-invalid``: the PR is not to blame for its base) with no validation error passes
``error``. The feasibility answer counts only when it could be asked: a pinned grove-gitops
without the ``feasibility`` command, or a source tree without a node inventory, cannot make
``fail-on: infeasible`` fail.
"""

from __future__ import annotations

from grove_gitops.prcheck.compose import Status

FAIL_ON = ("error", "infeasible", "outage", "never")
#: ``Status.diff`` values that say head rendered.
HEAD_RENDERED = ("ok", "base-invalid")


def failures(status: Status, fail_on: str) -> list[str]:
    """Why the check fails under ``fail_on`` (empty: it passes)."""
    if fail_on not in FAIL_ON:
        raise ValueError(f"fail-on: {fail_on!r}: expected one of {', '.join(FAIL_ON)}")
    if fail_on == "never":
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
    if fail_on == "infeasible":
        if status.feasibility == "checked" and status.infeasible:
            reasons.append("a gang does not fit the node inventory")
        elif status.feasibility == "failed":
            reasons.append("the gang feasibility check failed on head (see the job log)")
    if fail_on == "outage":
        reasons += [f"rollout outage: {o}" for o in status.outages]
        if status.diff in HEAD_RENDERED and status.plan != "ok":
            reasons.append(f"the rollout plan could not be computed (plan status {status.plan!r})")
    return reasons
