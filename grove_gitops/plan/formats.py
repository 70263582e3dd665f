"""The plan laid out for a terminal (text), a PR comment (Markdown) and tools (JSON).

Every format prints the same facts from one :class:`~grove_gitops.plan.model.Plan`: per
PodCliqueSet the strategy, the steps in execution order, the most slots down at once, the
fields forcing the restart, and the scale-out / scale-in slots (which are not steps).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from grove_gitops.diff.autoscaling import agent_owned, git_owned
from grove_gitops.diff.markdown import code
from grove_gitops.diff.mdescape import md_text
from grove_gitops.diff.split import Block, shrink_lines
from grove_gitops.output.gitopsmeta import RECREATED
from grove_gitops.plan.groveorder import GROVE_BOUND
from grove_gitops.plan.model import Plan, PodCliqueSetPlan
from grove_gitops.plan.risk import KIND_WORDS, RoleCapacity
from grove_gitops.plan.timing import StepTime, duration

PLAN_HEADING = "### Rollout plan"
#: Groups the plan's blocks, so a comment part that opens inside the plan says where it is.
PLAN_SECTION = "rollout plan"
PLAN_CONTINUATION = f"{PLAN_HEADING} (continued)\n\n"
#: Above this many steps a PodCliqueSet's step table is collapsed in the Markdown.
COLLAPSE_STEPS = 10
ADDED_NOTE = "scale-out; released as their gang allows"
REMOVED_NOTE = "scale-in; deleted by the agent after its grace period"
TO_CLUSTER_NOTE = "floor lowered; the agent keeps them while the live count covers them"
FROM_CLUSTER_NOTE = "floor raised; the agent may have created them already"
AUTOSCALED_NOTE = (
    "this plan covers the replicas Git holds (below each floor); the agent rolls the replicas it created "
    "(from the floor up to the live count, which is not in Git) the same way, with the same template"
)
LEFT_NOTE = (
    "left: the available pods of the role a step rolls, in its PodCliqueSet replica and in the whole "
    "PodCliqueSet, while the step's pods are down (a scaling-group replica counts as down whole, as Grove "
    "recreates all its cliques together); every other role keeps all its pods"
)
TIME_NOTE = (
    "bound per step = the old pods' terminationGracePeriodSeconds + the replacements' probe budget, "
    "startupProbe initialDelaySeconds + periodSeconds × failureThreshold plus readinessProbe "
    "periodSeconds × successThreshold; see docs/diff.md"
)
#: Scale targets listed per PodCliqueSet (a workload may have one per PCS replica and unit).
MAX_UNITS = 10
INTRO = (
    "The order in which the in-cluster agent replaces pods after the merge: one step at a time, "
    "the next when the step's replacements are Ready (every replica assumed healthy)."
)
#: The intro under RenderConfiguration ``mode: review`` (plan.groveorder).
REVIEW_INTRO = (
    "Review-only mode (RenderConfiguration `mode: review`): Grove's operator reconciles these PodCliqueSets "
    "and no grove-gitops agent is expected. The order below is Grove's: one PodCliqueSet replica at a time; "
    "inside it every role (standalone PodClique, scaling group) rolls at the same time, one unit each, so the "
    "steps of one round are down together (every replica assumed healthy, pods oldest = lowest index)."
)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def order_note(p: PodCliqueSetPlan) -> str:
    """Under Grove's order: how it differs from what grove-gitops' agent would do, and
    Grove's availability bound. Empty under the agent's order or without steps."""
    if p.order != "grove" or not p.steps:
        return ""
    if p.concurrent:
        grove = (
            f"Grove's operator rolls the roles of a replica side by side: {_plural(len(p.steps), 'step')} in "
            f"{_plural(p.round_count, 'round')}, at most {p.max_unavailable} pods down at once"
        )
    else:
        grove = f"one role changes per replica, so Grove rolls it one unit at a time, at most {p.max_unavailable} down"
    agent = (
        f"grove-gitops' agent would take the same {_plural(p.agent_steps, 'step')} one at a time, "
        f"at most {p.agent_max_unavailable} down at once"
    )
    return f"{grove}; {agent}. {GROVE_BOUND}"


def summary(p: PodCliqueSetPlan, wrap: Callable[[str], str] = str) -> str:
    """``RollingRecreate; 12 pods replaced in 7 steps; at most 4 unavailable at once``."""
    parts = [p.strategy]
    if p.order == "grove":
        parts.append("Grove's order")
    if p.change != "modified":
        parts.append(f"PodCliqueSet {p.change}")
    if p.changed:
        replaced = f"{_plural(len(p.changed), 'pod')} replaced"
        if p.steps and p.rounds:
            replaced += (
                f" in {_plural(len(p.steps), 'step')} ({_plural(p.round_count, 'round')}); "
                f"at most {p.max_unavailable} unavailable at once"
            )
        elif p.steps:
            replaced += f" in {_plural(len(p.steps), 'step')}; at most {p.max_unavailable} unavailable at once"
        parts.append(replaced)
    if added(p):
        parts.append(f"{len(added(p))} added")
    if removed(p):
        parts.append(f"{len(removed(p))} removed")
    if p.from_cluster:
        parts.append(f"{len(p.from_cluster)} into Git from the agent")
    if p.to_cluster:
        parts.append(f"{len(p.to_cluster)} handed to the agent")
    if p.outages:
        parts.append("OUTAGE of " + ", ".join(wrap(o.role.name) for o in p.outages))
    if p.stranded:
        parts.append("STRANDED gang " + ", ".join(wrap(g.gang) for g in p.stranded))
    return "; ".join(parts)


def step_capacity(p: PodCliqueSetPlan, i: int) -> str:
    """What step ``i`` (0-based) leaves the roles it touches, ``OUTAGE`` marked."""
    if i >= len(p.risks):
        return ""
    replica = p.steps[i].replica
    return "; ".join(c.text(replica) + (" (OUTAGE)" if c.outage else "") for c in p.risks[i].capacities)


def capacity_json(c: RoleCapacity) -> dict[str, Any]:
    return {
        "role": c.role.name,
        "kind": c.role.kind,
        "replica": {"available": c.replica_available, "total": c.replica_total},
        "podCliqueSet": {"available": c.pcs_available, "total": c.pcs_total},
        "outage": c.outage,
        "autoscaled": c.autoscaled,
    }


def time_json(t: StepTime) -> dict[str, Any]:
    return {
        "waitsFor": t.waits_for,
        "graceSeconds": t.grace,
        "probeSeconds": t.probes,
        "boundSeconds": t.bound,
    }


def added(p: PodCliqueSetPlan) -> tuple[str, ...]:
    """Added slots, without those the agent held before (a raised floor)."""
    return tuple(h for h in p.added if h not in set(p.from_cluster))


def removed(p: PodCliqueSetPlan) -> tuple[str, ...]:
    """Removed slots, without those the agent takes over (a lowered floor)."""
    return tuple(h for h in p.removed if h not in set(p.to_cluster))


def unit_lines(p: PodCliqueSetPlan, wrap: Callable[[str], str]) -> list[str]:
    """One line per scale target: which replicas Git holds and which the agent creates."""
    lines = [
        f"{wrap(name)} ({b.kind}): Git holds {git_owned(b)}; the agent creates {agent_owned(b)}"
        for name, b in p.autoscaled[:MAX_UNITS]
    ]
    if len(p.autoscaled) > MAX_UNITS:
        lines.append(f"and {len(p.autoscaled) - MAX_UNITS} more scale targets")
    return lines


def grouped_fields(p: PodCliqueSetPlan) -> list[tuple[tuple[str, ...], list[str]]]:
    """PodCliques sharing the same restart fields, so 12 cliques with one image bump read as one line."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for clique, paths in p.restart_fields.items():
        groups.setdefault(paths, []).append(clique)
    return sorted(groups.items())


# -- text -------------------------------------------------------------------------------


def _pcs_text(p: PodCliqueSetPlan) -> list[str]:
    lines = [f"{p.title}: {summary(p)}"]
    lines += [f"  {o.sentence()}" for o in p.outages]
    lines += [f"  {g.sentence()}" for g in p.stranded]
    if p.restart_fields:
        lines.append("  Restart forced by:")
        for paths, cliques in grouped_fields(p):
            lines.append(f"    {', '.join(paths)}  (PodCliques: {', '.join(cliques)})")
    if p.steps:
        lines.append(f"  Steps ({LEFT_NOTE}):")
        width = len(str(len(p.steps)))
        for i, s in enumerate(p.steps, start=1):
            at = f"round {p.rounds[i - 1]}, " if i - 1 < len(p.rounds) else ""
            lines.append(f"    {i:>{width}}. {at}replica {s.replica}, {s.unit}: {', '.join(s.hostnames)}")
            left = step_capacity(p, i - 1)
            if left:
                lines.append(f"    {'':>{width}}  left: {left}")
            if i - 1 < len(p.times):
                lines.append(f"    {'':>{width}}  {p.times[i - 1].text()}")
        if p.times:
            lines.append(f"  Time: {p.total_time.text()} ({TIME_NOTE})")
    if added(p):
        lines.append(f"  Added ({ADDED_NOTE}): {', '.join(added(p))}")
    if removed(p):
        lines.append(f"  Removed ({REMOVED_NOTE}): {', '.join(removed(p))}")
    if p.from_cluster:
        lines.append(f"  Into Git ({FROM_CLUSTER_NOTE}): {', '.join(p.from_cluster)}")
    if p.to_cluster:
        lines.append(f"  Leaving Git ({TO_CLUSTER_NOTE}): {', '.join(p.to_cluster)}")
    if p.message:
        lines.append(f"  Note: {p.message}")
    if order_note(p):
        lines.append(f"  Grove's order: {order_note(p)}.")
    if p.autoscaled:
        lines.append(f"  Autoscaled: {AUTOSCALED_NOTE}.")
        lines += [f"    {line}" for line in unit_lines(p, str)]
    return lines


def render_text(plan: Plan, base_label: str, head_label: str) -> str:
    lines = [f"grove-gitops rollout plan: base {base_label} -> head {head_label}", ""]
    if plan.review:
        lines += [REVIEW_INTRO.replace("`", ""), ""]
    if not plan.podcliquesets:
        lines.append("No PodCliqueSet changes: nothing to roll out.")
    for p in plan.podcliquesets:
        lines += _pcs_text(p)
        lines.append("")
    if plan.recreated:
        lines += [f"{RECREATED}: Argo CD / Flux delete and re-create these on sync (not an update in place):"]
        lines += [f"  {_object_name(o)}" for o in plan.recreated]
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


# -- JSON -------------------------------------------------------------------------------


def pcs_dict(p: PodCliqueSetPlan) -> dict[str, Any]:
    """One entry of ``{"podcliquesets": [...]}``: the issue's keys first, then the details."""
    return {
        "namespace": p.namespace,
        "name": p.name,
        "strategy": p.strategy,
        "steps": [
            {
                "replica": s.replica,
                "pods": list(s.hostnames),
                "capacity": [capacity_json(c) for c in (p.risks[i].capacities if i < len(p.risks) else ())],
                "time": time_json(p.times[i]) if i < len(p.times) else None,
                **({"round": p.rounds[i]} if i < len(p.rounds) else {}),
            }
            for i, s in enumerate(p.steps)
        ],
        # None without steps: a new PodCliqueSet, scale-out only or OnDelete waits on no step
        "time": {
            "boundSeconds": p.total_time.bound,
            "knownSeconds": p.total_time.known_seconds,
            "knownSteps": p.total_time.known_steps,
            "unknownSteps": p.total_time.unknown_steps,
            "text": p.total_time.text(),
        }
        if p.steps
        else None,
        "change": p.change,
        "maxUnavailable": p.max_unavailable,
        "restartFields": {clique: list(paths) for clique, paths in p.restart_fields.items()},
        "changed": list(p.changed),
        "added": list(p.added),
        "removed": list(p.removed),
        "message": p.message,
        "autoscaled": [
            {
                "name": name,
                "kind": b.kind,
                "minReplicas": b.floor,
                "maxReplicas": b.maximum,
                "gitOwned": git_owned(b),
                "clusterOwned": agent_owned(b),
            }
            for name, b in p.autoscaled
        ],
        "toCluster": list(p.to_cluster),
        "fromCluster": list(p.from_cluster),
        "roles": [{"role": r.name, "kind": r.kind, "pods": n} for r, n in p.roles],
        "outages": [
            {
                "role": o.role.name,
                "kind": o.role.kind,
                "steps": list(o.steps),
                "autoscaled": o.autoscaled,
                "message": o.sentence(),
                "fix": o.fix,
                "fixField": o.field,
            }
            for o in p.outages
        ],
        "stranded": [
            {"gang": g.gang, "reason": g.reason, "pods": g.pods, "replaced": g.replaced, "message": g.sentence()}
            for g in p.stranded
        ],
        "order": p.order,
        **(
            {
                "grove": {
                    "rounds": p.round_count,
                    "concurrent": p.concurrent,
                    "agentSteps": p.agent_steps,
                    "agentMaxUnavailable": p.agent_max_unavailable,
                    "note": order_note(p),
                }
            }
            if p.order == "grove" and p.steps
            else {}
        ),
    }


def _object_name(ref: tuple[str, str, str]) -> str:
    kind, namespace, name = ref
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


def recreated_json(plan: Plan) -> list[dict[str, str]]:
    return [{"kind": k, "namespace": ns, "name": n, "note": RECREATED} for k, ns, n in plan.recreated]


def render_json(plan: Plan) -> str:
    return json.dumps(plan_dict(plan), indent=2)


def plan_dict(plan: Plan) -> dict[str, Any]:
    """``{"podcliquesets": [...]}``: ``plan --output json`` and ``diff``'s ``plan`` key (each
    PodCliqueSet lists its ``outages``)."""
    out: dict[str, Any] = {"podcliquesets": [pcs_dict(p) for p in plan.podcliquesets]}
    if plan.review:  # review-only mode: Grove's operator rolls out, no agent is expected
        out["mode"] = "review"
    if plan.recreated:  # replaced on sync, not updated (an immutable field)
        out["recreatedOnSync"] = recreated_json(plan)
    return out


# -- Markdown ---------------------------------------------------------------------------


def _list(names: tuple[str, ...], fmt: Callable[[str], str]) -> str:
    return ", ".join(fmt(n) for n in names)


def _steps_table(p: PodCliqueSetPlan, shown: int | None = None) -> list[str]:
    """The steps as a table, collapsed above :data:`COLLAPSE_STEPS`; ``shown`` keeps only the
    first rows (a plan too long for one comment) and says how many were left out."""
    steps = p.steps if shown is None else p.steps[:shown]
    # no column when no step has a probe: the Time line says so once (hundreds of rows must fit)
    timed = any(t.probes is not None for t in p.times)
    rounds = bool(p.rounds)  # Grove's order: steps of one round are down together
    rows = [
        "| step |" + (" round |" if rounds else "") + " replica | unit | pods retired together | "
        "left (this replica · PodCliqueSet) |" + (" bound (grace + probes) |" if timed else ""),
        "| --- |" + (" --- |" if rounds else "") + " --- | --- | --- | --- |" + (" --- |" if timed else ""),
    ]
    for i, s in enumerate(steps, start=1):
        left = "; ".join(_capacity_cell(c) for c in p.risks[i - 1].capacities) if i - 1 < len(p.risks) else ""
        bound = f" {_time_cell(p, i - 1)} |" if timed else ""
        at = f" {p.rounds[i - 1]} |" if rounds else ""
        rows.append(f"| {i} |{at} {s.replica} | {code(s.unit)} | {_list(s.hostnames, code)} | {left} |{bound}")
    if len(steps) < len(p.steps):
        rows += ["", f"⚠️ {len(p.steps) - len(steps)} more steps not shown: run {code('grove-gitops plan')} for all."]
    if p.times:
        rows += ["", f"**Time:** {p.total_time.text()}."]
    rows += ["", f"<sub>{LEFT_NOTE}. Each step waits for its old pods to be gone, then for its replacements to be Ready; {TIME_NOTE}.</sub>"]
    if len(p.steps) <= COLLAPSE_STEPS:
        return [*rows, ""]
    return [f"<details><summary>{len(p.steps)} steps</summary>", "", *rows, "", "</details>", ""]


def _time_cell(p: PodCliqueSetPlan, i: int) -> str:
    """``20 s + 310 s = 330 s`` (grace + probes), or ``no probe: unknown``; what a step waits
    for is said once, under the table (hundreds of rows must still fit a comment)."""
    if i >= len(p.times):
        return ""
    t = p.times[i]
    return "no probe: unknown" if t.probes is None else f"{t.grace} s + {t.probes} s = {duration(t.bound)}"


def _capacity_cell(c: RoleCapacity) -> str:
    cell = f"{code(c.role.name)} {c.replica_available}/{c.replica_total} · {c.pcs_available}/{c.pcs_total}"
    return f"🛑 **{cell} OUTAGE**" if c.outage else cell


def outage_markdown(p: PodCliqueSetPlan) -> list[str]:
    """One bullet per role the rollout takes down (our own words; names in code spans)."""
    out = []
    for o in p.outages:
        steps = ", ".join(str(s) for s in o.steps)
        live = " (counting the replicas Git holds; the live count may be higher)" if o.autoscaled else ""
        fix = o.fix_text(code)
        out.append(
            f"🛑 **OUTAGE of {code(o.role.name)}** ({KIND_WORDS[o.role.kind]}) in {code(p.title)}: "
            f"step{'s' if len(o.steps) != 1 else ''} {steps} leave{'' if len(o.steps) != 1 else 's'} it no available "
            f"pod in the whole PodCliqueSet{live}. **Fix:** {fix}."
        )
    return out


def stranded_markdown(p: PodCliqueSetPlan) -> list[str]:
    """One bullet per gang the change strands (names in code spans, the reason inert)."""
    out = []
    for g in p.stranded:
        head, _, rest = g.sentence(code, md_text).partition(": ")
        out.append(f"⚠️ **{head}** in {code(p.title)}: {rest}.")
    return out


def pcs_markdown(p: PodCliqueSetPlan, shown: int | None = None) -> str:
    """One PodCliqueSet's part of the plan (an indivisible block of the PR comment)."""
    lines = [f"**{code(p.title)}** · {summary(p, code)}", ""]
    lines += [f"- {line}" for line in outage_markdown(p)]
    lines += [f"- {line}" for line in stranded_markdown(p)]
    for paths, cliques in grouped_fields(p):
        lines.append(f"- **Restart forced by** {_list(paths, code)} in {_list(tuple(cliques), code)}")
    if added(p):
        lines.append(f"- **Added** ({ADDED_NOTE}): {_list(added(p), code)}")
    if removed(p):
        lines.append(f"- **Removed** ({REMOVED_NOTE}): {_list(removed(p), code)}")
    if p.from_cluster:
        lines.append(f"- **Into Git** ({FROM_CLUSTER_NOTE}): {_list(p.from_cluster, code)}")
    if p.to_cluster:
        lines.append(f"- **Leaving Git** ({TO_CLUSTER_NOTE}): {_list(p.to_cluster, code)}")
    if p.message:
        lines.append(f"- {p.message}")  # our own words and counts
    if order_note(p):
        lines.append(f"- **Grove's order:** {order_note(p)}.")  # our own words and counts
    if p.autoscaled:
        lines.append(f"- **Autoscaled:** {AUTOSCALED_NOTE}.")
        lines += [f"  - {line}" for line in unit_lines(p, code)]
    if lines[-1]:
        lines.append("")
    if p.steps:
        lines += _steps_table(p, shown)
    return "\n".join(lines) + "\n"


def _block(p: PodCliqueSetPlan) -> Block:
    def shrink(budget: int) -> str:
        """The most step rows that fit, the table still closed (never half a ``<details>``)."""
        lo, hi = 0, len(p.steps)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if len(pcs_markdown(p, mid)) <= budget:
                lo = mid
            else:
                hi = mid - 1
        text = pcs_markdown(p, lo)
        return text if len(text) <= budget else shrink_lines(text, budget)

    return Block(pcs_markdown(p), PLAN_SECTION, PLAN_CONTINUATION, shrink)


def markdown_blocks(plan: Plan) -> list[Block]:
    """The plan as blocks of ``diff``'s PR comment: the heading with the intro, then one per
    PodCliqueSet (a long plan may span parts). Empty when no PodCliqueSet changes, so an
    unchanged diff gets no section."""
    if not plan.podcliquesets:
        return []
    head = Block(f"{PLAN_HEADING}\n\n{REVIEW_INTRO if plan.review else INTRO}\n\n", PLAN_SECTION, PLAN_CONTINUATION)
    return [head, *(_block(p) for p in plan.podcliquesets)]


def plan_markdown(plan: Plan, base_label: str, head_label: str) -> str:
    """``plan --output markdown``: the OUTAGE and STRANDED banners and the plan section of
    ``diff``'s PR comment, under a title naming both sides, whole (no part limit)."""
    title = f"## grove-gitops rollout plan: base {md_text(base_label)} → head {md_text(head_label)}\n\n"
    blocks = [*outage_blocks(plan), *stranded_blocks(plan), *markdown_blocks(plan)]
    tail = ""
    if plan.recreated:
        tail = (f"\n**{RECREATED}**: Argo CD / Flux delete and re-create these on sync (not an update in place): "
                + ", ".join(code(_object_name(o)) for o in plan.recreated) + "\n")
    if not blocks:
        return title + "No PodCliqueSet changes: nothing to roll out.\n" + tail
    return (title + "".join(b.text for b in blocks)).rstrip("\n") + "\n" + tail


OUTAGE_HEADING = "### 🛑 Rollout outage"


def outage_blocks(plan: Plan) -> list[Block]:
    """The banner for the top of a PR comment: every role a rollout takes down, with the fix.
    Empty when there is none (then nothing is added)."""
    lines = [line for p in plan.podcliquesets for line in outage_markdown(p)]
    if not lines:
        return []
    intro = (
        f"{OUTAGE_HEADING}\n\nMerging this rolls out a change that leaves a role with no available pod "
        "in its whole PodCliqueSet while its pods are replaced (Grove deletes them before the "
        "replacements are Ready); see the rollout plan below.\n\n"
    )
    return [Block(intro + "".join(f"- {line}\n" for line in lines) + "\n", "outage", f"{OUTAGE_HEADING} (continued)\n\n")]


STRANDED_HEADING = "### ⚠️ Stranded gang"


def stranded_blocks(plan: Plan) -> list[Block]:
    """The banner for the top of a PR comment: every running gang the change leaves
    unschedulable at its next reschedule. Empty when there is none."""
    lines = [line for p in plan.podcliquesets for line in stranded_markdown(p)]
    if not lines:
        return []
    intro = (
        f"{STRANDED_HEADING}\n\nMerging this changes a gang's PodGang into one that does not fit the node "
        "inventory. Nothing fails at merge: its running pods keep running, and the gang cannot be scheduled "
        "again the next time its pods are placed (a node lost, a rollout, a scale-out).\n\n"
    )
    return [Block(intro + "".join(f"- {line}\n" for line in lines) + "\n", "stranded", f"{STRANDED_HEADING} (continued)\n\n")]


def unavailable_block(reason: str) -> Block:
    """What the section says when a side cannot be planned (the diff itself still runs)."""
    # the reason can quote the PR's hostnames and annotations: inert text (diff.mdescape)
    return Block(f"{PLAN_HEADING}\n\n⚠️ No rollout plan: {md_text(reason)}\n\n", PLAN_SECTION, PLAN_CONTINUATION)
