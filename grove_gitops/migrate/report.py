"""``migrate plan`` as text, Markdown or JSON (the project's ``--output`` values).

The JSON document is ``{"ok", "schemaVersion", "problems", "migration"}`` like every report
(docs/schemas/migrate-output.schema.json); a refusal is ``ok: false`` with one problem per
reason, so a script reads the same keys whichever way it went.
"""

from __future__ import annotations

from typing import Any

from grove_gitops.diff.markdown import code
from grove_gitops.migrate.compare import ADOPTED, GROVE, REPLACED, Comparison
from grove_gitops.migrate.steps import MigrationStep, RoleLeft
from grove_gitops.problems import Problem, json_document

ON_DELETE = "OnDelete"
BOUND = ("at most one unit down at a time (a pod of a standalone PodClique, or a whole scaling-group replica), "
         "the next step only when the last one's new pods are Ready, as in a rolling update")


def _counts(c: Comparison) -> dict[str, int]:
    return {state: sum(1 for s in c.slots if s.state == state) for state in (GROVE, ADOPTED, REPLACED)}


def _strategy_note(c: Comparison) -> str:
    if c.strategy == ON_DELETE:
        return ("updateStrategy OnDelete: the agent replaces a Grove pod only once someone deletes it "
                "(kubectl delete pod), in any order; the steps below are the RollingRecreate order")
    return "updateStrategy RollingRecreate: the agent replaces the pods in this order"


def _left_text(left: tuple[RoleLeft, ...]) -> str:
    return "; ".join(f"{r.role} {r.replica_left}/{r.replica_total} in replica · {r.pcs_left}/{r.pcs_total} in all"
                     for r in left)


def text(c: Comparison, steps: list[MigrationStep]) -> str:
    lines = [f"migration of PodCliqueSet {c.namespace}/{c.name}: {len(c.slots)} slots, {len(steps)} steps"]
    if not c.ok:
        lines.append("REFUSED (nothing changed):")
        lines += [f"  - {r}" for r in c.refusals]
        return "\n".join(lines) + "\n"
    n = _counts(c)
    lines.append(f"  {n[GROVE]} Grove pods to hand over, {n[ADOPTED]} handed over, {n[REPLACED]} replaced already")
    lines.append(f"  {_strategy_note(c)}; {BOUND}")
    for i, step in enumerate(steps, 1):
        pods = ", ".join(f"{old} -> {new}" for old, new in step.replaces)
        lines.append(f"  {i}. replica {step.replica}, {step.unit}: {pods}")
        lines.append(f"     left: {_left_text(step.left)}")
    return "\n".join(lines) + "\n"


def markdown(c: Comparison, steps: list[MigrationStep]) -> str:
    lines = [f"### Migration of {code(f'{c.namespace}/{c.name}')}", ""]
    if not c.ok:
        lines += ["**Refused** (nothing changed):", ""] + [f"- {r}" for r in c.refusals]
        return "\n".join(lines) + "\n"
    n = _counts(c)
    lines += [f"{len(c.slots)} slots: {n[GROVE]} Grove pods to hand over, {n[ADOPTED]} handed over, "
              f"{n[REPLACED]} replaced already. {_strategy_note(c)}; {BOUND}.", ""]
    if steps:
        lines += ["| # | replica | unit | replaces | capacity left |", "| --- | --- | --- | --- | --- |"]
        for i, step in enumerate(steps, 1):
            pods = "<br>".join(f"{code(old)} → {code(new)}" for old, new in step.replaces)
            lines.append(f"| {i} | {step.replica} | {step.unit} | {pods} | {_left_text(step.left)} |")
    return "\n".join(lines) + "\n"


def as_dict(c: Comparison, steps: list[MigrationStep]) -> dict[str, Any]:
    return {
        "namespace": c.namespace,
        "podCliqueSet": c.name,
        "strategy": c.strategy,
        "started": c.started,
        "slots": [{"hostname": s.hostname, "podClique": s.podclique, "index": s.index, "replica": s.replica,
                   "role": s.role, "state": s.state, "pod": s.live, "rendered": s.rendered, "ready": s.ready}
                  for s in c.slots],
        "steps": [{"replica": s.replica, "unit": s.unit,
                   "replaces": [{"pod": old, "rendered": new} for old, new in s.replaces],
                   "capacity": [{"role": r.role, "replicaLeft": r.replica_left, "replicaTotal": r.replica_total,
                                 "left": r.pcs_left, "total": r.pcs_total} for r in s.left]}
                  for s in steps],
        "maxUnitsDown": 1,
    }


def json_text(c: Comparison, steps: list[MigrationStep]) -> str:
    problems = [Problem("", "", r, "error") for r in c.refusals]
    return json_document(c.ok, problems, migration=as_dict(c, steps)) + "\n"


def render(c: Comparison, steps: list[MigrationStep], output: str) -> str:
    if output == "json":
        return json_text(c, steps)
    return markdown(c, steps) if output == "markdown" else text(c, steps)
