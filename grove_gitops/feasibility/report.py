"""The answer for people (text) and for tools (``--output json``).

JSON, a contract other tools rely on: ``{"heuristic": str, "inventory": bool, "fits": bool,
"gangs": [{"podCliqueSet", "namespace", "name", "kind": "base"|"scaled", "fits", "reason",
"pods", "extraPods", "extraPodsUnplaced", "placedIn"}], "domains": [{"level", "key", "domain",
"nodes", "requested": {...}, "allocatable": {...}}]}``; amounts are Kubernetes quantities.
"""

from __future__ import annotations

import json
from typing import Any

from grove_gitops.feasibility import HEURISTIC
from grove_gitops.feasibility.check import Feasibility
from grove_gitops.feasibility.placement import GangResult
from grove_gitops.feasibility.units import GPU, fmt

#: The resources of the capacity table.
TABLE_RESOURCES = (GPU, "cpu", "memory")
#: A level with more domains than this is summarised in the text table (hosts, mostly).
MAX_TEXT_DOMAINS = 40


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


def domain_rows(result: Feasibility) -> list[dict[str, Any]]:
    placer = result.placer
    rows = []
    for key in placer.keys:
        level = result.inventory.level_name(key)
        for dom, members in placer.domain_nodes[key].items():
            alloc, free = placer.domain_alloc[key][dom], placer.domain_free[key][dom]
            requested, allocatable = {}, {}
            for name in TABLE_RESOURCES:
                r = placer.index.get(name)
                requested[name] = fmt(name, alloc[r] - free[r]) if r is not None else "0"
                allocatable[name] = fmt(name, alloc[r]) if r is not None else "0"
            rows.append(
                {
                    "level": level,
                    "key": key,
                    "domain": "/".join(dom),
                    "nodes": len(members),
                    "requested": requested,
                    "allocatable": allocatable,
                }
            )
    return rows


def to_json(result: Feasibility | None) -> str:
    if result is None:
        data: dict[str, Any] = {"heuristic": HEURISTIC, "inventory": False, "fits": True, "gangs": [], "domains": []}
    else:
        data = {
            "heuristic": HEURISTIC,
            "inventory": True,
            "fits": result.fits,
            "nodes": len(result.inventory.nodes),
            "gangs": [_gang_dict(r) for r in result.results],
            "domains": domain_rows(result),
        }
    return json.dumps(data, indent=2)


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
        f"{fitting} of {len(result.results)} gang(s) fit on {len(result.inventory.nodes)} node(s)."
    )
    lines.append(f"Note: {HEURISTIC}.")
    rows = domain_rows(result)
    if rows:
        lines += ["", "Capacity per topology domain (requested / allocatable):", ""]
        table = [["level", "domain", "nodes", "nvidia.com/gpu", "cpu", "memory"]]
        by_level: dict[str, list[dict[str, Any]]] = {}
        for row in rows:
            by_level.setdefault(row["key"], []).append(row)
        for level_rows in by_level.values():
            if len(level_rows) > MAX_TEXT_DOMAINS:
                table.append([level_rows[0]["level"], f"({len(level_rows)} domains: see --output json)", "", "", "", ""])
                continue
            for row in level_rows:
                table.append(
                    [row["level"], row["domain"], str(row["nodes"])]
                    + [f"{row['requested'][n]} / {row['allocatable'][n]}" for n in TABLE_RESOURCES]
                )
        lines += _table(table)
    return "\n".join(lines) + "\n"
