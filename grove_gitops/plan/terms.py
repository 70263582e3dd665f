"""The words every plan module shares: Grove's update strategy names and the plan's error.

Owns nothing else. They sit below the plan's model, pod reader, risk and stranded modules,
which all import them, so the model can import the readers without a circle.
"""

from __future__ import annotations

from grove_gitops.errors import GroveGitopsError

ROLLING_RECREATE = "RollingRecreate"
ON_DELETE = "OnDelete"


class PlanError(GroveGitopsError):
    """A rendered input the plan cannot read (e.g. a malformed ``gitops.grove.io/day2``)."""
