"""The terminal view: the same information as the Markdown, as plain text.

No HTML, no tables, no size limit (a terminal or a pager has none); the per-object diffs
are ordinary unified diffs, so the output can be piped into ``less -R``, ``colordiff`` or
``delta``.
"""

from __future__ import annotations

from collections.abc import Sequence

from grove_gitops.diff.report import Report
from grove_gitops.diff.semantic import ShardSummary
from grove_gitops.diff.views import (
    AUTOSCALING_HEADER,
    MAX_FIELD_ROWS,
    SETTINGS_LEGEND,
    autoscaling_notes,
    autoscaling_rows,
    change_words,
    counts_text,
    gang_counts,
    scheduler_text,
    settings_text,
    shard_title,
    summary_bullets,
    whole_objects_text,
)


def _shard(s: ShardSummary) -> list[str]:
    title = shard_title(s.shard)
    lines = [title, "=" * len(title)]
    lines += [f"  {b}" for b in summary_bullets(s)]
    changed = s.changed_fields
    if changed:
        lines.append("  Gang settings:")
        for f in changed[:MAX_FIELD_ROWS]:
            old = f.old if f.old is not None else "(none)"
            new = f.new if f.new is not None else "(none)"
            lines.append(f"    {f.key.kind_label} {f.key.object_label}: {f.path}: {old} -> {new}")
        if len(changed) > MAX_FIELD_ROWS:
            lines.append(f"    ... {len(changed) - MAX_FIELD_ROWS} more changed settings (see the diffs)")
    if s.whole_objects():
        lines.append(f"  Gang settings of added / removed objects (in their diffs): {whole_objects_text(s)}")
    if s.autoscaling is not None:
        lines.append("  Autoscaling:")
        for row in autoscaling_rows(s.autoscaling):
            lines.append("    " + "; ".join(f"{h}: {v}" for h, v in zip(AUTOSCALING_HEADER, row, strict=True)))
        lines += [f"    {note}" for note in autoscaling_notes(s.autoscaling)]
    lines.append("")
    for d in s.diffs:
        lines.append("### " + " | ".join(change_words(d.change, d.added, d.removed, d.paths)))
        lines += list(d.lines)
        lines.append("")
    return lines


def render_text(
    report: Report, title: str = "grove-gitops render diff", risks: Sequence[str] = (), plan: str = ""
) -> str:
    """The terminal view; ``risks`` (the rollout plan's OUTAGE and STRANDED lines) follow the
    overview, where a reader of a long diff cannot miss them; ``plan`` (the rollout plan as
    ``plan`` prints it) closes the report, as the plan section closes the Markdown."""
    lines = [f"{title}: base {report.base.label} -> head {report.head.label}", ""]
    if report.identical:
        lines.append(f"No changes: the rendered output is identical ({report.head.object_count} objects).")
        return "\n".join(lines) + "\n"
    all_shards = report.all_shards
    lines.append(
        f"Shards changed: {len(report.shards)} of {len(all_shards)}; objects: {counts_text(report.totals())};"
        f" diff +{report.lines_added} -{report.lines_removed} lines"
    )
    lines.append(f"(+ added, − removed, ~ modified, ⇄ replaced: a pod recreated under a new name; {SETTINGS_LEGEND})")
    lines.append("")
    for s in report.shards:
        lines.append(
            f"  {s.shard}: scheduler {scheduler_text(s)}; PodGangs {counts_text(gang_counts(s))};"
            f" gang objects {counts_text(s.gang_objects)}; settings {settings_text(s)};"
            f" Pods {counts_text(s.pods)}; other {counts_text(s.others)}"
        )
    if risks:
        lines += ["", "Rollout risks (see grove-gitops plan):"] + [f"  - {r}" for r in risks]
    new_warnings, acked = report.new_warnings()
    if new_warnings:
        lines += ["", "New render warnings in head:"] + [f"  - {w}" for w in new_warnings]
    if acked:
        lines += ["", "Acknowledged warnings in head:"] + [f"  - acknowledged: {w}" for w in acked]
    lines.append("")
    for s in report.shards:
        lines += _shard(s)
    if plan:
        lines += ["", *plan.rstrip("\n").split("\n")]
    return "\n".join(lines).rstrip("\n") + "\n"
