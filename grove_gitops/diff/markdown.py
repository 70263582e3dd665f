"""The PR-comment view: Markdown for GitHub, split into sticky-comment-sized parts.

Layout (spec/gitops.md §4.5, adapted): every part opens with the hidden marker
:data:`MARKER` and a per-part marker naming the comment key and ``part i/N``, so a CI job
finds its own comments again and updates them in place instead of piling up new ones.
Part 1 carries the overview (totals, one table row per changed shard). Each shard then gets
its semantic summary — scheduler switch, PodGangs added/removed, gang settings old → new,
pods added / removed / replaced — followed by one collapsed ``<details>`` per object with its
unified diff: gang and topology objects first, pods last. Everything is collapsed because
the summary above already states what the gang objects say; the diffs are for checking.

Between a shard's summary and its diffs sits its gang-structure diagram
(:mod:`grove_gitops.output.diagram`): before and after with the changed nodes marked, or
one collapsed diagram when the structure did not change. Diagrams are the first thing
dropped when the comment outgrows its size budget: when the report needs more parts with
them than without, each is replaced by a one-line note saying so.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from grove_gitops.diff.mdescape import html_code_text, md_text
from grove_gitops.diff.report import Report
from grove_gitops.diff.semantic import ShardSummary
from grove_gitops.diff.split import Block, pack, shrink_lines
from grove_gitops.diff.unified import ObjectDiff
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
from grove_gitops.output import diagram

MARKER = "<!-- grove-gitops-diff -->"
#: Between parts when all of them go to one stream (stdout, the ``--out`` file).
PART_SEPARATOR = "<!-- grove-gitops-diff:end-of-part -->"
DEFAULT_TITLE = "grove-gitops render diff"
DEFAULT_KEY = "default"
DEFAULT_MAX_CHARS = 60_000
#: GitHub's hard limit for a comment body (spec/gitops.md §4.4).
GITHUB_COMMENT_LIMIT = 65_536


def part_marker(key: str, i: int, n: int) -> str:
    return f"<!-- grove-gitops-diff key={key} part={i}/{n} -->"


_LINE_BREAK = re.compile(r"\r\n?|\n")


def code(text: str) -> str:
    """An inline code span that survives backticks, line breaks and table pipes inside
    ``text``. Nothing inside a code span is Markdown, a mention or a link, so untrusted text
    is safe there as long as it cannot end the span or the line."""
    text = _LINE_BREAK.sub(" ", text.replace("|", "\\|"))
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _esc(text: str) -> str:
    """Text from the source tree outside code (see :mod:`.mdescape`)."""
    return md_text(text)


def _html_code(text: str) -> str:
    """Code inside raw HTML (a ``<summary>``): HTML-escaped, not a code span (no Markdown
    applies there); one line, so the HTML block cannot end early."""
    return f"<code>{html_code_text(text)}</code>"


def _strong(text: str) -> str:
    return f"**{text}**"


def _overview(report: Report) -> str:
    totals = report.totals()
    all_shards = report.all_shards
    lines = [
        f"**Shards changed: {len(report.shards)} of {len(all_shards)}** · objects: {counts_text(totals)}"
        f" · diff +{report.lines_added} −{report.lines_removed} lines",
        "",
        "| shard | scheduler | PodGangs | gang objects | gang settings | Pods | other objects |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for s in report.shards:
        lines.append(
            f"| {code(s.shard)} | {scheduler_text(s, code)} | {counts_text(gang_counts(s))}"
            f" | {counts_text(s.gang_objects)} | {settings_text(s)} | {counts_text(s.pods)} | {counts_text(s.others)} |"
        )
    lines.append("")
    lines.append(
        f"Legend: + added, − removed, ~ modified, ⇄ replaced (a pod recreated under a new name); {SETTINGS_LEGEND}."
    )
    new_warnings, acked = report.new_warnings()
    if new_warnings:
        lines += ["", f"<details><summary>⚠️ {len(new_warnings)} new render warning(s) in head</summary>", ""]
        lines += [f"- {_esc(w)}" for w in new_warnings]
        lines += ["", "</details>"]
    if acked:
        lines += ["", f"<details><summary>✔️ {len(acked)} acknowledged warning(s) in head</summary>", ""]
        lines += [f"- acknowledged: {_esc(w)}" for w in acked]
        lines += ["", "</details>"]
    return "\n".join(lines) + "\n\n"


def _shard_summary(s: ShardSummary) -> str:
    lines = [f"### {shard_title(s.shard, code)}", ""]
    lines += [f"- {b}" for b in summary_bullets(s, code, _strong)]
    changed = s.changed_fields
    if changed:
        lines += ["", "| object | field | base | head |", "| --- | --- | --- | --- |"]
        for f in changed[:MAX_FIELD_ROWS]:
            old = code(f.old) if f.old is not None else "—"
            new = code(f.new) if f.new is not None else "—"
            lines.append(f"| {code(f.key.kind_label)} {code(f.key.object_label)} | {code(f.path)} | {old} | {new} |")
        if len(changed) > MAX_FIELD_ROWS:
            lines.append(f"| … | {len(changed) - MAX_FIELD_ROWS} more changed settings (see the diffs) | | |")
    if s.whole_objects():
        lines += ["", f"{_strong('Gang settings of added / removed objects')} (in their diffs): {whole_objects_text(s, code)}"]
    if s.autoscaling is not None:
        lines += ["", "**Autoscaling**", ""]
        rows = autoscaling_rows(s.autoscaling, code)
        if rows:
            lines += [f"| {' | '.join(AUTOSCALING_HEADER)} |", "|" + " --- |" * len(AUTOSCALING_HEADER)]
            lines += [f"| {' | '.join(row)} |" for row in rows]
            lines.append("")
        lines += [f"- {note}" for note in autoscaling_notes(s.autoscaling, code)]
    return "\n".join(lines) + "\n\n"


def _fence(lines: Iterable[str]) -> str:
    """A code fence longer than any backtick run in the diff (a ConfigMap may hold Markdown)."""
    longest = max((len(m) for line in lines for m in re.findall(r"`{3,}", line)), default=0)
    return "`" * max(3, longest + 1)


def object_summary(d: ObjectDiff) -> str:
    """``± PodGang.scheduler.grove.io ml/demo-0 · modified · +3 −1 · <changed fields>``."""
    return " · ".join(change_words(d.change, d.added, d.removed, d.paths, _html_code, _esc))


def _details(d: ObjectDiff, lines: tuple[str, ...], note: str = "", fence: str = "") -> str:
    """One object's collapsed diff; ``fence`` is :func:`_fence` of all of ``d``'s lines (a
    caller showing several cuts of the same diff computes it once)."""
    fence = fence or _fence(d.lines)
    body = "\n".join(lines)
    return f"<details><summary>{object_summary(d)}</summary>\n\n{fence}diff\n{body}\n{fence}\n{note}\n</details>\n\n"


def _truncation_note(shown: int, total: int, rerun_hint: str) -> str:
    hint = f" Run {code(rerun_hint)} for the full diff." if rerun_hint else ""
    return f"\n⚠️ Diff truncated: {shown} of {total} lines shown.{hint}\n"


def _object_block(d: ObjectDiff, shard: str, rerun_hint: str) -> Block:
    fence = _fence(d.lines)

    def shrink(budget: int) -> str:
        """Keep the first diff lines that fit, close the fence, say what was dropped."""
        total = len(d.lines)
        lo, hi = 0, total
        while lo < hi:  # binary search: the most lines whose block still fits
            mid = (lo + hi + 1) // 2
            if len(_details(d, d.lines[:mid], _truncation_note(mid, total, rerun_hint), fence)) <= budget:
                lo = mid
            else:
                hi = mid - 1
        text = _details(d, d.lines[:lo], _truncation_note(lo, total, rerun_hint), fence)
        return text if len(text) <= budget else shrink_lines(text, budget)

    return Block(_details(d, d.lines, fence=fence), shard, _continuation(shard), shrink)


def _continuation(shard: str) -> str:
    return f"### {shard_title(shard, code)} (continued)\n\n"


DIAGRAM_DROPPED = (
    "*Gang structure diagram left out: with the diagrams this comment would need more parts"
    " than its size budget allows without them (see `--max-chars`).*\n\n"
)
DIAGRAM_TOO_LARGE = "*Gang structure diagram left out: alone it is larger than one comment part.*\n\n"
DIAGRAM_LEGEND = "Marked nodes: green = new (or drawn now and not before), amber = changed, red dashed = removed."


def _non_pods_by_shard(objects: Mapping[Any, Any]) -> dict[str, list[dict[str, Any]]]:
    """A side's non-Pod objects per shard (pods are most of a tree and never drawn)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for key, obj in objects.items():
        if key.kind != "Pod":
            out.setdefault(key.shard, []).append(obj.obj)
    return out


def _diagram_text(shard: str, base: list[dict[str, Any]], head: list[dict[str, Any]], labels: tuple[str, str]) -> str:
    """The shard's gang structure before and after, or ``""`` when neither side has a PodGang."""
    before, after = diagram.build_graph(shard, base), diagram.build_graph(shard, head)
    if before.empty and after.empty:
        return ""
    if after.empty:
        return (
            "<details><summary>Gang structure (removed)</summary>\n\n"
            + diagram.fenced(diagram.to_mermaid(before))
            + "\n</details>\n\n"
        )
    if before.empty:
        return (
            "<details open><summary>Gang structure (new)</summary>\n\n"
            + diagram.fenced(diagram.to_mermaid(after))
            + "\n</details>\n\n"
        )
    old_marks, new_marks = diagram.mark_changes(before, after)
    if not old_marks and not new_marks:
        return (
            "<details><summary>Gang structure (unchanged)</summary>\n\n"
            + diagram.fenced(diagram.to_mermaid(after))
            + "\n</details>\n\n"
        )
    return (
        "<details open><summary>Gang structure: before → after</summary>\n\n"
        f"**Before** ({code(labels[0])})\n\n"
        + diagram.fenced(diagram.to_mermaid(before, old_marks))
        + f"\n**After** ({code(labels[1])})\n\n"
        + diagram.fenced(diagram.to_mermaid(after, new_marks))
        + f"\n{DIAGRAM_LEGEND}\n\n</details>\n\n"
    )


def _diagram_block(text: str, shard: str) -> Block:
    """Indivisible: a Mermaid fence cut in half would break the rest of the comment."""
    return Block(text, shard, _continuation(shard), lambda budget: DIAGRAM_TOO_LARGE[:budget])


def report_blocks(
    report: Report, rerun_hint: str = "", plan_blocks: Sequence[Block] = (), diagrams: bool = True
) -> list[Block]:
    """The overview, the rollout plan (given by the caller: ``grove_gitops.plan`` builds on
    this package, not the reverse), then every shard's summary, gang diagram (a note saying
    it was left out when ``diagrams`` is false) and object diffs."""
    if report.identical:
        n = report.head.object_count
        return [Block(f"**No changes:** the rendered output is identical ({n} objects).\n")]
    blocks = [Block(_overview(report))]
    blocks += plan_blocks
    base = _non_pods_by_shard(report.base.objects)
    head = _non_pods_by_shard(report.head.objects)
    labels = (report.base.label, report.head.label)
    for s in report.shards:
        blocks.append(Block(_shard_summary(s), s.shard, _continuation(s.shard)))
        chart = _diagram_text(s.shard, base.get(s.shard, []), head.get(s.shard, []), labels)
        if chart:
            blocks.append(_diagram_block(chart if diagrams else DIAGRAM_DROPPED, s.shard))
        blocks += [_object_block(d, s.shard, rerun_hint) for d in s.diffs]
    return blocks


def _header(report: Report, title: str, key: str, i: int, n: int) -> str:
    label = f"{md_text(title)} (base {code(report.base.label)} → head {code(report.head.label)})"
    if n > 1:
        label += f" · part {i}/{n}"
    return f"{MARKER}\n{part_marker(key, i, n)}\n## {label}\n\n"


def render_markdown(
    report: Report,
    *,
    title: str = DEFAULT_TITLE,
    key: str = DEFAULT_KEY,
    max_chars: int = DEFAULT_MAX_CHARS,
    rerun_hint: str = "",
    plan_blocks: Sequence[Block] = (),
    lead_blocks: Sequence[Block] = (),
) -> list[str]:
    """The report as one or more Markdown parts, each shorter than ``max_chars`` characters.

    ``plan_blocks`` are the rollout plan's Markdown blocks
    (:func:`grove_gitops.plan.formats.markdown_blocks`), placed after the overview.
    ``lead_blocks`` (the PR check's feasibility section) go right after the overview, or
    after *No changes*: unlike the plan they matter even when nothing changed. The gang
    diagrams stay only when they cost no extra part.
    """

    blocks = markdown_blocks(
        report,
        title=title,
        key=key,
        max_chars=max_chars,
        rerun_hint=rerun_hint,
        plan_blocks=plan_blocks,
        lead_blocks=lead_blocks,
    )
    return pack(blocks, max_chars, header_for(report, title, key))


def markdown_blocks(
    report: Report,
    *,
    title: str = DEFAULT_TITLE,
    key: str = DEFAULT_KEY,
    max_chars: int = DEFAULT_MAX_CHARS,
    rerun_hint: str = "",
    plan_blocks: Sequence[Block] = (),
    lead_blocks: Sequence[Block] = (),
) -> list[Block]:
    """The blocks :func:`render_markdown` packs (with or without the diagrams, whichever
    needs fewer parts), for a caller that packs them its own way (the PR check caps the
    number of comments)."""
    header = header_for(report, title, key)

    def blocks(diagrams: bool) -> list[Block]:
        out = report_blocks(report, rerun_hint, plan_blocks, diagrams=diagrams)
        out[1:1] = lead_blocks
        return out

    full = blocks(True)
    parts = pack(full, max_chars, header)
    if len(parts) > 1:  # diagrams go first: drop them all if that saves a part
        lean = blocks(False)
        if len(pack(lean, max_chars, header)) < len(parts):
            return lean
    return full


def header_for(report: Report, title: str, key: str) -> Callable[[int, int], str]:
    """``header(i, n)``: the opening of part ``i`` of ``n``, for :func:`~.split.pack`."""
    return lambda i, n: _header(report, title, key, i, n)


def part_header(report: Report, title: str, key: str, i: int, n: int) -> str:
    """The opening of part ``i`` of ``n`` (markers and heading), for reports packed elsewhere."""
    return _header(report, title, key, i, n)
