"""``fail-on``: which findings fail the check.

* ``error`` (default): head's source tree has validation errors (it does not render).
* ``infeasible``: that, or a gang does not fit the node inventory.
* ``never``: the check reports and comments but always passes.

The feasibility answer counts only when it was actually checked: a pinned grove-gitops
without the ``feasibility`` command, or a source tree without a node inventory, cannot make
``fail-on: infeasible`` fail.
"""

from __future__ import annotations

from grove_gitops.prcheck.compose import Status

FAIL_ON = ("error", "infeasible", "never")


def failures(status: Status, fail_on: str) -> list[str]:
    """Why the check fails under ``fail_on`` (empty: it passes)."""
    if fail_on not in FAIL_ON:
        raise ValueError(f"fail-on: {fail_on!r}: expected one of {', '.join(FAIL_ON)}")
    if fail_on == "never":
        return []
    reasons = []
    if status.errors:
        reasons.append(f"head's source tree has {status.errors} validation error(s)")
    if fail_on == "infeasible" and status.feasibility == "checked" and status.infeasible:
        reasons.append("a gang does not fit the node inventory")
    return reasons
