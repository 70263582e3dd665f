"""Find the source line of a problem's field path, for check annotations.

``validate --output json`` names a problem by file and field path
(``spec.template.cliques[1].spec.replicas``, ``metadata.annotations[gitops.grove.io/day2]``,
``spec.subGroups[worker].minMember``) but not by line: the loader works on parsed objects.
The line is found again here from PyYAML's node marks. A file may hold several documents and
the path does not say which, so the document where the path resolves deepest wins (the
first one on a tie). A path that resolves only partly gives the line of its deepest part,
which is still where a reviewer should look; a file that does not parse gives line 1.

One file often has many problems (a PodCliqueSet with 400 bad pods): callers parse each file
once (:func:`read_documents`) and answer all its problems from that node tree
(:func:`line_in_documents`), instead of reading and parsing the file again per problem (400
problems in a 1.8 MB file took 388 s that way).
A file larger than the loader's limit is never read (validate refused it anyway: line 1).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from grove_gitops.load.yamlio import MAX_FILE_BYTES

#: libyaml's composer when PyYAML has it (the same nodes and marks, several times faster).
_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_SEGMENT = re.compile(r"\[([^\]]*)\]|([^.\[\]]+)")


@dataclass(frozen=True)
class Segment:
    text: str
    bracketed: bool


def parse_path(path: str) -> list[Segment]:
    """``a.b[1].c[x.y]`` → a, b, [1], c, [x.y]."""
    return [
        Segment(m.group(1), True) if m.group(1) is not None else Segment(m.group(2), False)
        for m in _SEGMENT.finditer(path)
    ]


def _mapping_value(node: yaml.MappingNode, key: str) -> tuple[yaml.Node, yaml.Node] | None:
    for k, v in node.value:
        if isinstance(k, yaml.ScalarNode) and k.value == key:
            return k, v
    return None


def _step(node: yaml.Node, segments: list[Segment], i: int) -> tuple[yaml.Node, yaml.Node, int] | None:
    """One step down: (node to report, node to continue from, segments consumed)."""
    seg = segments[i]
    if isinstance(node, yaml.MappingNode):
        if seg.bracketed:
            found = _mapping_value(node, seg.text)
            return (found[0], found[1], 1) if found else None
        # A key may itself hold dots (a label key): try the longest run of plain segments first.
        run = 0
        while i + run < len(segments) and not segments[i + run].bracketed:
            run += 1
        for n in range(run, 0, -1):
            found = _mapping_value(node, ".".join(s.text for s in segments[i : i + n]))
            if found:
                return found[0], found[1], n
        return None
    if isinstance(node, yaml.SequenceNode) and seg.bracketed:
        if seg.text.isdigit():
            index = int(seg.text)
            if index < len(node.value):
                item = node.value[index]
                return item, item, 1
            return None
        for item in node.value:  # a list item addressed by its name
            if isinstance(item, yaml.MappingNode):
                name = _mapping_value(item, "name")
                if name and isinstance(name[1], yaml.ScalarNode) and name[1].value == seg.text:
                    return item, item, 1
    return None


def resolve(document: yaml.Node, path: str) -> tuple[int, int]:
    """(segments resolved, 1-based line of the deepest resolved part) in one document."""
    segments = parse_path(path)
    node, line, depth, i = document, document.start_mark.line + 1, 0, 0
    while i < len(segments):
        step = _step(node, segments, i)
        if step is None:
            break
        shown, node, used = step
        line = shown.start_mark.line + 1
        depth += used
        i += used
    return depth, line


def compose(text: str) -> list[yaml.Node] | int:
    """The documents of YAML ``text`` as node trees, or the 1-based line where parsing failed."""
    try:
        return [d for d in yaml.compose_all(text, Loader=_LOADER) if d is not None]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        return mark.line + 1 if mark is not None else 1
    except RecursionError:  # nesting deeper than the composer's stack: validate said so
        return 1


def find_line(text: str, path: str) -> int:
    """The 1-based line of ``path`` in YAML ``text`` (1 when it cannot be found)."""
    return line_in_documents(compose(text), path)


def line_in_documents(documents: list[yaml.Node] | int, path: str) -> int:
    """:func:`find_line` on documents :func:`compose` made."""
    if isinstance(documents, int):
        return documents
    best_depth, best_line = -1, 1
    for document in documents:
        depth, line = resolve(document, path) if path else (0, document.start_mark.line + 1)
        if depth > best_depth:
            best_depth, best_line = depth, line
    return best_line


def read_documents(path: Path) -> list[yaml.Node] | int:
    """:func:`compose` on a file; line 1 when it cannot be read or is over the size limit."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return 1
        return compose(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return 1


def line_in_file(path: Path, field: str) -> int:
    """:func:`find_line` on a file; 1 when it cannot be read (one lookup: for several in
    the same file, :func:`read_documents` once and :func:`line_in_documents` per path)."""
    return line_in_documents(read_documents(path), field)
