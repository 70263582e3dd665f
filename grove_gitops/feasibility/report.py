"""The answer for people (text) and for tools (``--output json``).

JSON, a contract other tools rely on: ``{"heuristic": str, "inventory": bool, "fits": bool,
"gangs": [{"podCliqueSet", "namespace", "name", "kind": "base"|"scaled", "fits", "reason",
"pods", "extraPods", "extraPodsUnplaced", "placedIn"}], "fitsAtMaximum": bool|null,
"autoscaling": [{"podCliqueSet", "namespace", "file", "units": [{"name", "kind", "minReplicas",
"maxReplicas"}], "fitsAtFloor", "fitsAtMaximum": bool|null, "maximumNotChecked": str|null,
"scaledGangsAtMaximum", "scaledGangsPlacedAtMaximum", "extraPodsUnplacedAtMaximum", "verdict",
"gangsAtMaximum": [gang]}], "domains": [{"level", "key", "domain", "nodes", "requested": {...},
"allocatable": {...}}]}``; amounts are Kubernetes quantities. ``gangs``, ``fits`` and
``domains`` are every autoscaled count at its floor; ``autoscaling`` adds the maximum.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from grove_gitops.feasibility import HEURISTIC
from grove_gitops.feasibility.check import Feasibility
from grove_gitops.feasibility.placement import GangResult
from grove_gitops.feasibility.scaled import Verdict
from grove_gitops.feasibility.units import REPORTED, fmt
from grove_gitops.problems import SCHEMA_VERSION, Problem

#: The resources of the capacity table.
TABLE_RESOURCES = REPORTED
#: A level with more domains than this is summarised in the text table (hosts, mostly).
MAX_TEXT_DOMAINS = 40
#: Gangs that do not fit at the maximum, listed per workload in the text answer.
MAX_TEXT_REASONS = 10


def _gang_dict(r: GangResult) -> dict[str, Any]:
    g = r.gang
    return {
        "podCliqueSet": g.pcs,
        "namespace": g.namespace,
        "name": g.name,
        "kind": g.kind,
        "fits": r.fits,
        "reason": r.reason,
        "pods": g.scope.pods(),
        "extraPods": g.scope.extra_pods(),
        "extraPodsUnplaced": r.extra_unplaced,
        "placedIn": dict(sorted(r.placed_in.items())),
    }


def _verdict_dict(v: Verdict, result: Feasibility) -> dict[str, Any]:
    at_max = result.maximum.results if result.maximum is not None and v.max_fits is not None else []
    return {
        "podCliqueSet": v.name,
        "namespace": v.namespace,
        "file": v.file,
        "units": [{"name": u.name, "kind": u.kind, "minReplicas": u.floor, "maxReplicas": u.maximum} for u in v.units],
        "fitsAtFloor": v.floor_fits,
        "fitsAtMaximum": v.max_fits,
        "maximumNotChecked": v.skipped or None,
        "scaledGangsAtMaximum": v.scaled_total,
        "scaledGangsPlacedAtMaximum": v.scaled_placed,
        "extraPodsUnplacedAtMaximum": v.extra_unplaced,
        "verdict": v.text(),
        "gangsAtMaximum": [_gang_dict(r) for r in at_max if (r.gang.namespace, r.gang.pcs) == (v.namespace, v.name)],
    }


def _amounts(result: Feasibility, alloc: list[int], free: list[int]) -> tuple[dict[str, str], dict[str, str]]:
    requested, allocatable = {}, {}
    for name in TABLE_RESOURCES:
        r = result.placer.index.get(name)
        requested[name] = fmt(name, alloc[r] - free[r]) if r is not None else "0"
        allocatable[name] = fmt(name, alloc[r]) if r is not None else "0"
    return requested, allocatable


def _level_rows(result: Feasibility, key: str) -> Iterator[dict[str, Any]]:
    """The rows of one level, by domain path."""
    level = result.inventory.level_name(key)
    for dom, nodes, alloc, free in result.placer.cap.domain_rows(key):
        requested, allocatable = _amounts(result, alloc, free)
        yield {
            "level": level,
            "key": key,
            "domain": "/".join(dom),
            "nodes": nodes,
            "requested": requested,
            "allocatable": allocatable,
        }


def domain_rows(result: Feasibility) -> list[dict[str, Any]]:
    return [row for key in result.placer.keys for row in _level_rows(result, key)]


def _domain_texts(result: Feasibility) -> Iterator[str]:
    """Each row of ``domains`` as ``json.dumps(..., indent=2)`` writes it inside the document.
    A level of hosts may list 100,000 rows, most alike but for the path: a row is formatted
    once per amounts (hosts of a pool share theirs) and only its ``domain`` line per row."""
    cache: dict[tuple[Any, ...], list[str]] = {}
    for key in result.placer.keys:
        level = result.inventory.level_name(key)
        for dom, nodes, alloc, free in result.placer.cap.domain_rows(key):
            signature = (key, nodes, id(alloc), id(free))  # the rows of alike hosts are one list
            lines = cache.get(signature)
            if lines is None:
                requested, allocatable = _amounts(result, alloc, free)
                row = {"level": level, "key": key, "domain": "", "nodes": nodes}
                row |= {"requested": requested, "allocatable": allocatable}
                lines = cache[signature] = ["    " + line for line in json.dumps(row, indent=2).split("\n")]
            lines[3] = f'      "domain": {json.dumps("/".join(dom))},'  # the third key, one line
            yield "\n".join(lines)


def to_json(result: Feasibility | None, warnings: Sequence[Problem] = ()) -> str:
    """The document; ``ok``, ``schemaVersion`` and ``problems`` (the render's warnings, with
    their positions) first, as in every command's JSON (docs/schemas/feasibility-output.schema.json)."""
    head: dict[str, Any] = {"ok": True, "schemaVersion": SCHEMA_VERSION, "problems": [w.as_dict() for w in warnings]}
    if result is None:
        data: dict[str, Any] = {**head, "heuristic": HEURISTIC, "inventory": False, "fits": True, "gangs": [], "domains": []}
        return json.dumps(data, indent=2)
    data = {
        **head,
        "heuristic": HEURISTIC,
        "inventory": True,
        "fits": result.fits,
        "nodes": result.inventory.node_count,
        "gangs": [_gang_dict(r) for r in result.results],
        "fitsAtMaximum": result.fits_at_maximum,
        "autoscaling": [_verdict_dict(v, result) for v in result.verdicts],
        "domains": [],
    }
    text = json.dumps(data, indent=2)
    rows = ",\n".join(_domain_texts(result))
    if not rows:
        return text
    assert text.endswith("[]\n}")
    return text[: -len("[]\n}")] + "[\n" + rows + "\n  ]\n}"


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]


def to_text(result: Feasibility) -> str:
    lines: list[str] = []
    fitting = sum(r.fits for r in result.results)
    for r in result.results:
        g = r.gang
        label = f"{g.namespace}/{g.name} ({g.kind})"
        if r.fits:
            extra = ""
            if r.extra_unplaced:
                extra = f"; {r.extra_unplaced} of {g.scope.extra_pods()} pod(s) beyond minReplicas found no room"
            lines.append(f"fits          {label}: {g.scope.pods()} pod(s){extra}")
        else:
            lines.append(f"DOES NOT FIT  {label}: {g.name}: {r.reason}")
    lines.append("")
    lines.append(
        f"{fitting} of {len(result.results)} gang(s) fit on {result.inventory.node_count} node(s)."
    )
    if result.verdicts:
        lines += ["", "Autoscaled workloads (the gangs above have every autoscaled count at its floor):"]
        for v in result.verdicts:
            lines.append(f"  {v.title}: {v.text()}")
            for reason in v.reasons[:MAX_TEXT_REASONS]:
                lines.append(f"    at the maximum, DOES NOT FIT {reason}")
            if len(v.reasons) > MAX_TEXT_REASONS:
                lines.append(f"    ... {len(v.reasons) - MAX_TEXT_REASONS} more (see --output json)")
        lines.append("Only the floor must fit (exit code, feasibility: enforce); the maximum is a warning.")
    lines.append(f"Note: {HEURISTIC}.")
    table = [["level", "domain", "nodes", "nvidia.com/gpu", "cpu", "memory"]]
    for key in result.placer.keys:
        count = result.placer.cap.domain_count(key)
        if count > MAX_TEXT_DOMAINS:  # counted, not listed: a level of hosts may hold 100,000
            table.append([result.inventory.level_name(key), f"({count} domains: see --output json)", "", "", "", ""])
            continue
        for row in _level_rows(result, key):
            table.append(
                [row["level"], row["domain"], str(row["nodes"])]
                + [f"{row['requested'][n]} / {row['allocatable'][n]}" for n in TABLE_RESOURCES]
            )
    if len(table) > 1:
        lines += ["", "Capacity per topology domain (requested / allocatable):", ""]
        lines += _table(table)
    return "\n".join(lines) + "\n"
