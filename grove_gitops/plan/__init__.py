"""``grove-gitops plan``: the rollout the in-cluster agent will perform after a merge.

Pipeline: the two sides ``diff`` builds (:mod:`grove_gitops.diff.sides`) → the rendered pods
and PodGangs of every PodCliqueSet, grouped into slots (:mod:`.pods`) → per PodCliqueSet the
changed, added and removed slots, the update strategy and the steps, ordered by
:mod:`grove_gitops.readmodel.order` (the same function the agent calls) (:mod:`.compute`), and
the fields that force the restart (:mod:`.restart`) → text, Markdown or JSON
(:mod:`.formats`). ``diff``'s Markdown embeds the same plan.
"""

from __future__ import annotations

from grove_gitops.plan.compute import build_plan
from grove_gitops.plan.model import Plan, PlanError, PodCliqueSetPlan

__all__ = ["Plan", "PlanError", "PodCliqueSetPlan", "build_plan"]
