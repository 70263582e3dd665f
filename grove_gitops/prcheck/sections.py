"""The PR check's own comment sections, as :class:`~grove_gitops.diff.split.Block` lists so
they pack with the diff's blocks on whole-object boundaries.

* the gang-feasibility section, from ``grove-gitops feasibility --output json``;
* the failure report when head does not render (its problems, a bounded list);
* the ``text`` format: ``diff --output text`` cut at shard and object boundaries, each piece
  in its own code fence so no part ever holds half a fence.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from grove_gitops.diff.markdown import code
from grove_gitops.diff.mdescape import md_text
from grove_gitops.diff.split import Block, shrink_lines

FEASIBILITY_HEADING = "### Gang feasibility"
_FEAS_SECTION = "feasibility"
_FEAS_CONTINUATION = f"{FEASIBILITY_HEADING} (continued)\n\n"
#: Rows per table block: a block stays well below a part, and a long table may span parts.
ROWS_PER_BLOCK = 40


#: Columns of the capacity table (its keys are resource names from the node inventory).
MAX_COLUMNS = 20
#: A cell or a problem's message is cut to this many characters (a comment part is ~60,000).
CELL_CHARS = 2000


def cell(value: Any) -> str:
    """Text from the PR for a table cell, a list item or ``<sub>``: inert (no mention, link,
    image, emphasis, HTML or pipe: :func:`~grove_gitops.diff.mdescape.md_text`), one line."""
    return md_text(value, CELL_CHARS)


def _table_blocks(
    header: Sequence[str], rows: Sequence[Sequence[str]], wrap: tuple[str, str] = ("", "")
) -> list[Block]:
    head = "| " + " | ".join(header) + " |\n| " + " | ".join("---" for _ in header) + " |\n"
    blocks = []
    for start in range(0, len(rows), ROWS_PER_BLOCK):
        body = "".join("| " + " | ".join(r) + " |\n" for r in rows[start : start + ROWS_PER_BLOCK])
        blocks.append(Block(f"{wrap[0]}{head}{body}{wrap[1]}\n", _FEAS_SECTION, _FEAS_CONTINUATION))
    return blocks


def feasibility_note(text: str) -> list[Block]:
    """The section when nothing was checked (no command, no inventory, an error)."""
    return [Block(f"{FEASIBILITY_HEADING}\n\n{text}\n\n", _FEAS_SECTION, _FEAS_CONTINUATION)]


def has_inventory(doc: Mapping[str, Any]) -> bool:
    """Whether ``feasibility`` found a node inventory (it exits 0 with nothing placed otherwise)."""
    if doc.get("inventory") is False:
        return False
    return bool(doc.get("gangs") or doc.get("domains"))


def feasibility_blocks(doc: Mapping[str, Any]) -> list[Block]:
    """The section for one ``feasibility --output json`` document."""
    if not has_inventory(doc):
        return feasibility_note(
            "ℹ️ Not checked: the source tree holds no node inventory (a `NodeInventory` or a "
            "`kubectl get nodes -o yaml` List)."
        )
    gangs = [g for g in doc.get("gangs") or [] if isinstance(g, Mapping)]
    misfits = [g for g in gangs if not g.get("fits")]
    if misfits:
        verdict = f"❌ **{len(misfits)} of {len(gangs)} gang(s) do not fit** the node inventory."
    else:
        verdict = f"✅ All {len(gangs)} gang(s) fit the node inventory."
    intro = f"{FEASIBILITY_HEADING}\n\n{verdict}\n"
    heuristic = doc.get("heuristic")
    if heuristic:
        intro += f"\n<sub>Placement: {cell(heuristic)}</sub>\n"
    blocks = [Block(intro + "\n", _FEAS_SECTION, _FEAS_CONTINUATION)]
    columns = ["PodCliqueSet", "gang", "kind"]
    if misfits:
        rows = [
            [cell(g.get("podCliqueSet")), cell(g.get("name")), cell(g.get("kind")), cell(g.get("reason"))]
            for g in misfits
        ]
        blocks += _table_blocks([*columns, "why it does not fit"], rows)
    fitting = [g for g in gangs if g.get("fits")]
    if fitting:
        rows = [[cell(g.get("podCliqueSet")), cell(g.get("name")), cell(g.get("kind"))] for g in fitting]
        wrap = (f"<details><summary>{len(fitting)} gang(s) that fit</summary>\n\n", "\n</details>\n")
        blocks += _table_blocks(columns, rows, wrap)
    domains = [d for d in doc.get("domains") or [] if isinstance(d, Mapping)]
    if domains:
        keys: list[str] = []
        for d in domains:
            for k in d:
                if str(k) not in keys and len(keys) < MAX_COLUMNS:
                    keys.append(str(k))
        rows = [[cell(d.get(k)) for k in keys] for d in domains]
        wrap = (f"<details><summary>Capacity per topology domain ({len(domains)})</summary>\n\n", "\n</details>\n")
        # the columns are resource names from the PR's node inventory: escaped like cells
        blocks += _table_blocks([cell(k) for k in keys], rows, wrap)
    return blocks


def problem_blocks(problems: Iterable[Mapping[str, Any]], heading: str) -> list[Block]:
    """A heading and the problems as a bullet list, a bounded number per block."""
    items = []
    for p in problems:
        where = " ".join(code(str(x)[:CELL_CHARS]) for x in (p.get("file"), p.get("field")) if x)
        items.append(f"- {where + ': ' if where else ''}{cell(p.get('message'))}\n")
    blocks = [Block(f"{heading}\n\n", "problems", f"{heading} (continued)\n\n")]
    for start in range(0, len(items), ROWS_PER_BLOCK):
        blocks.append(
            Block("".join(items[start : start + ROWS_PER_BLOCK]) + "\n", "problems", f"{heading} (continued)\n\n")
        )
    return blocks


def _fence_for(text: str) -> str:
    longest = max((len(m) for m in re.findall(r"`{3,}", text)), default=0)
    return "`" * max(3, longest + 1)


def _fenced(text: str) -> Block:
    """One piece in a code fence: ``diff`` for an object's diff (colours), ``text`` otherwise."""
    fence = _fence_for(text)
    lang = "diff" if text.startswith("### ") else "text"

    def shrink(budget: int) -> str:
        note = "*… truncated to fit the comment size limit.*\n\n"
        room = budget - len(fence) * 2 - len(lang) - len("\n\n\n") - len(note)
        kept = shrink_lines(text, max(room, 0), note="")
        return f"{fence}{lang}\n{kept}\n{fence}\n{note}"

    return Block(f"{fence}{lang}\n{text}\n{fence}\n\n", shrink=shrink)


def text_blocks(text: str) -> list[Block]:
    """``diff --output text`` as fenced blocks cut before every shard title (a line underlined
    with ``=``) and every object diff (a line starting ``### ``)."""
    lines = text.rstrip("\n").split("\n")
    pieces: list[list[str]] = [[]]
    for i, line in enumerate(lines):
        starts_shard = i + 1 < len(lines) and line and set(lines[i + 1]) == {"="} and len(lines[i + 1]) == len(line)
        if (line.startswith("### ") or starts_shard) and pieces[-1]:
            pieces.append([])
        pieces[-1].append(line)
    return [_fenced("\n".join(p).rstrip("\n")) for p in pieces if any(x.strip() for x in p)]
