"""At most a handful of comments per report: the rest is in the full report, not on the PR.

300 changed ConfigMaps of 58 KB each packed into 301 comments, one notification and one
screen of scrolling each. :func:`pack_capped` packs the same blocks as
:func:`~grove_gitops.diff.split.pack` but into at most ``max_parts`` parts; when the report
needs more, it keeps the most whole blocks that fit in that many parts with room for a note,
and the last part ends with the note saying how much was left out and where the full
report is (the job summary and ``report.md`` of the report directory, the Action's
``report-dir`` output). Blocks are never cut for the cap, so no code fence or ``<details>``
is left open.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import replace

from grove_gitops.diff.split import Block, pack

#: The default and the most comment parts one report may post.
DEFAULT_MAX_PARTS = 5
MAX_PARTS_CEILING = 10


def pack_capped(
    blocks: Sequence[Block],
    max_chars: int,
    header: Callable[[int, int], str],
    max_parts: int,
    note: Callable[[int, int], str],
) -> tuple[list[str], list[str]]:
    """(the parts to post, the full report's parts).

    ``note(shown, total)`` is the text that ends the last posted part when only the first
    ``shown`` of ``total`` blocks fit; it is sized with seven-digit numbers, like
    :func:`~grove_gitops.diff.split.pack`'s header, so the last part stays below ``max_chars``.
    """
    if not 1 <= max_parts <= MAX_PARTS_CEILING:
        raise ValueError(f"max_parts={max_parts}: expected 1 to {MAX_PARTS_CEILING}")
    # The search below packs the same blocks again and again: each oversized block is shrunk
    # to a given budget once (an object diff's shrink is itself a search).
    blocks = [replace(b, shrink=functools.cache(b.shrink)) if b.shrink else b for b in blocks]
    full = pack(blocks, max_chars, header)
    if len(full) <= max_parts:
        return full, full
    room = max_chars - len(note(10**6, 10**6))
    # The most leading blocks that still pack into max_parts parts with the note's room kept
    # free: more blocks never need fewer parts, so a binary search finds it.
    lo, hi = 0, len(blocks)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if len(pack(blocks[:mid], room, header)) <= max_parts:
            lo = mid
        else:
            hi = mid - 1
    kept = pack(blocks[:lo], room, header) if lo else []
    text = note(lo, len(blocks))
    if not kept:  # not even the first block fits next to the note: the note alone
        return [header(1, 1) + text], full
    return [*kept[:-1], kept[-1] + text], full
