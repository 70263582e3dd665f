"""Split a long Markdown report into comment-sized parts without cutting an object in half.

GitHub refuses comment bodies over 65,536 characters ("Body is too long"), and a diff of
a PodCliqueSet with hundreds of pods is far longer. Like the fix the Argo CD diff actions
converged on (spec/gitops.md §4.2), the report is a sequence of indivisible *blocks*
(the overview, one summary per shard, one ``<details>`` per object) packed greedily into
parts, each with a ``part i/N`` header. A block that alone exceeds the budget is shrunk by
its own rule (an object diff keeps its first lines, closes its fence and says it was
truncated), never split across parts: half a code fence would break the rest of the
comment's rendering.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

#: Characters kept free below the limit for the separator between header and body.
_SLACK = 8


@dataclass(frozen=True)
class Block:
    """An indivisible piece of a report.

    ``section`` groups blocks (a shard's summary and its objects); when a part opens in the
    middle of a section, ``continuation`` (e.g. ``### ns/pcs (continued)``) is put first
    so the reader knows where they are. ``shrink(budget)`` returns a version of at most
    ``budget`` characters; without it the block is cut at a line boundary.
    """

    text: str
    section: str | None = None
    continuation: str = ""
    shrink: Callable[[int], str] | None = None


TRUNCATION_NOTE = "\n*… truncated to fit the comment size limit.*\n"


def shrink_lines(text: str, budget: int, note: str = TRUNCATION_NOTE) -> str:
    """Whole lines of ``text`` plus ``note``, at most ``budget`` characters in all."""
    if len(text) <= budget:
        return text
    room = budget - len(note)
    kept: list[str] = []
    used = 0
    for line in text.splitlines(keepends=True):
        if used + len(line) > room:
            break
        kept.append(line)
        used += len(line)
    out = "".join(kept) + note
    return out if len(out) <= budget else note[: max(budget, 0)]


def pack(blocks: Sequence[Block], max_chars: int, header: Callable[[int, int], str]) -> list[str]:
    """Lay ``blocks`` out in parts of fewer than ``max_chars`` characters each.

    ``header(i, n)`` is the text that opens part ``i`` of ``n``; it is sized with a
    seven-digit ``i``/``n`` before ``n`` is known, so no part overflows once the real
    numbers are filled in.
    """
    reserve = len(header(10**6, 10**6)) + _SLACK
    budget = max_chars - 1 - reserve
    if budget < 200:
        raise ValueError(f"max_chars={max_chars} leaves no room for a report (header alone is {reserve})")
    parts: list[list[str]] = [[]]
    used = 0
    previous: Block | None = None
    for block in blocks:
        if parts[-1] and used + len(block.text) > budget:
            parts.append([])
            used = 0
        opens_mid_section = (
            not parts[-1] and previous is not None and block.section is not None and block.section == previous.section
        )
        prefix = block.continuation if opens_mid_section else ""
        text = prefix + block.text
        if len(text) > budget:
            room = budget - len(prefix)
            text = prefix + (block.shrink(room) if block.shrink else shrink_lines(block.text, room))
        parts[-1].append(text)
        used += len(text)
        previous = block
    n = len(parts)
    return [header(i, n) + "".join(body) for i, body in enumerate(parts, start=1)]
