"""JSON with a nesting bound: what the autoscaling watch reads from the API server.

``spec.source`` of a ``gitops.grove.io`` PodCliqueSet is free-form (the render inputs), so
the API server stores any nesting. Python's JSON decoder raises ``RecursionError`` past about
a thousand levels, and before issue 31 one record nested 3,000 deep made the whole list
undecodable: the watch thread died and no workload in any namespace was scaled again.

:func:`loads_bounded` decodes a list or a watch event with every subtree deeper than
``max_depth`` replaced by ``null`` and says which list items (or whether the event's object)
lost something that way: the caller keeps those as unreadable and reports them on their own
workload, and everything else is read as usual. It first tries ``json.loads`` (a record it can
read but deeper than a render writes is refused later, by the render's own nesting limit);
only when that gives up does it scan: one pass of a C regular expression over the bytes
(string literals are skipped whole, so brackets inside strings do not count), then one
``json.loads`` of the result.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

#: Deep enough for every record a render writes: source documents are at most 100 levels
#: (``yamlfiles.yamlio.MAX_DEPTH``), under ``items[i].spec.source[j]`` of a list.
MAX_DEPTH = 128
_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.S)
_OPEN = frozenset(b"[{")
_QUOTE = ord('"')
_ARRAY = ord("[")


@dataclass
class Decoded:
    value: Any
    #: Indices of the top-level ``items`` entries of a list that were cut.
    cut_items: set[int] = field(default_factory=set)
    #: Whether anything was cut at all.
    cut: bool = False


def loads_bounded(payload: bytes | str, max_depth: int = MAX_DEPTH) -> Decoded:
    """``json.loads`` of ``payload`` with subtrees deeper than ``max_depth`` as ``null``;
    raises ``ValueError`` for what is not JSON (never ``RecursionError``)."""
    data = payload.encode() if isinstance(payload, str) else payload
    try:  # the usual case, at C speed; what it reads is deep enough for every check after it
        return Decoded(json.loads(data))
    except RecursionError:
        pass
    stack: list[int] = []
    pieces: list[bytes] = []
    last = 0
    cut_at = -1  # depth at which the subtree being cut began (-1: none)
    cut_start = 0
    item = -1
    out = Decoded(None)
    for match in _TOKENS.finditer(data):
        char = data[match.start()]
        if char == _QUOTE:
            continue
        if char in _OPEN:
            if len(stack) == 2 and stack[1] == _ARRAY:
                item += 1  # an entry of the array at depth 2: a list's items
            stack.append(char)
            if cut_at < 0 and len(stack) > max_depth:
                cut_at, cut_start = len(stack), match.start()
                out.cut = True
                if item >= 0 and len(stack) > 2 and stack[1] == _ARRAY:
                    out.cut_items.add(item)
            continue
        if not stack:
            raise ValueError("unbalanced JSON brackets")
        if cut_at == len(stack):
            pieces += [data[last:cut_start], b"null"]
            last = match.end()
            cut_at = -1
        stack.pop()
    if not pieces:
        out.value = json.loads(data)
        return out
    pieces.append(data[last:])
    out.value = json.loads(b"".join(pieces))
    return out
