"""Where in its source file a problem's field is: line and column from PyYAML's node marks.

The loader works on parsed objects, so a problem names a file and a field path
(``spec.template.cliques[1].spec.replicas``, ``metadata.annotations[gitops.grove.io/day2]``,
``spec.subGroups[worker].minMember``), not a position. The position is found again here,
once per file for all of that file's problems, from the node tree PyYAML's composer builds:
the text output (``file:line:col: field: message``), ``--output json`` and pr-check's
annotations all use this one lookup.

A file may hold several documents and the path does not say which, so the document where
the path resolves deepest wins (the first one on a tie). A path that resolves only partly
gives the position of its deepest part (a missing field: the mapping that lacks it), which
is still where the author should look. A file that does not parse has the position of its
YAML error, when the loader gave one. Files above the loader's size limit are never read.

Each mapping's keys (and each list's item names) are indexed the first time a path steps
into it, so a file's problems are placed in time linear in its size: a scan of the keys per
problem made 50,000 unknown keys in one mapping cost 50,000 x 50,000 comparisons.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

from grove_gitops.errors import InputProblem
from grove_gitops.yamlfiles.yamlio import MAX_FILE_BYTES

#: libyaml's composer when PyYAML has it (the same nodes and marks, several times faster).
_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_SEGMENT = re.compile(r"\[([^\]]*)\]|([^.\[\]]+)")
#: The position ``yamlfiles.yamlio`` writes into a malformed-YAML message.
_YAML_MARK = re.compile(r"\bline (\d+), column (\d+): ")

#: A file's documents as node trees, or the (line, column) where parsing failed.
Documents = list[yaml.Node] | tuple[int, int]
#: What a file is: a path on disk or its bytes (a tree held in memory).
FileData = Path | bytes


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


#: The attribute of a node holding its index, built once per node and dropped with its tree:
#: a mapping's scalar keys (the first of duplicates, as a scan finds it) or a list's mapping
#: items by ``name``. On the node itself: a lookup per path step, 30,000 problems' worth.
_INDEX = "_grove_gitops_index"


class _Index(dict[str, tuple[yaml.Node, yaml.Node]]):
    """Key → (key node, value node); ``dotted`` when some key holds a dot (a label key), the
    only case where a run of path segments can name one key."""

    dotted = False


def _index(node: yaml.Node) -> _Index:
    found: _Index | None = getattr(node, _INDEX, None)
    if found is not None:
        return found
    found = _Index()
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode):
                found.setdefault(k.value, (k, v))
                found.dotted = found.dotted or "." in k.value
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            if isinstance(item, yaml.MappingNode):
                name = _mapping_value(item, "name")
                if name and isinstance(name[1], yaml.ScalarNode):
                    found.setdefault(name[1].value, (item, item))
    setattr(node, _INDEX, found)
    return found


def _mapping_value(node: yaml.MappingNode, key: str) -> tuple[yaml.Node, yaml.Node] | None:
    return _index(node).get(key)


def _step(node: yaml.Node, segments: list[Segment], i: int) -> tuple[yaml.Node, yaml.Node, int] | None:
    """One step down: (node to report, node to continue from, segments consumed)."""
    seg = segments[i]
    if isinstance(node, yaml.MappingNode):
        if seg.bracketed:
            found = _mapping_value(node, seg.text)
            return (found[0], found[1], 1) if found else None
        # A key may itself hold dots (a label key): try the longest run of plain segments first.
        keys = _index(node)
        run = 0
        while keys.dotted and i + run < len(segments) and not segments[i + run].bracketed:
            run += 1
        for n in range(max(run, 1), 0, -1):
            found = keys.get(".".join(s.text for s in segments[i : i + n]))
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
        named = _index(node).get(seg.text)  # a list item addressed by its name
        if named is not None:
            return named[0], named[1], 1
    return None


def resolve(document: yaml.Node, path: str) -> tuple[int, int, int]:
    """(segments resolved, 1-based line, 1-based column) of the deepest resolved part of
    ``path`` in one document."""
    segments = parse_path(path)
    node, shown, depth, i = document, document, 0, 0
    while i < len(segments):
        step = _step(node, segments, i)
        if step is None:
            break
        shown, node, used = step
        depth += used
        i += used
    return depth, shown.start_mark.line + 1, shown.start_mark.column + 1


def compose(text: str) -> Documents:
    """The documents of YAML ``text`` as node trees, or the position where parsing failed."""
    try:
        return [d for d in yaml.compose_all(text, Loader=_LOADER) if d is not None]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        return (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
    except RecursionError:  # nesting deeper than the composer's stack: validate said so
        return (1, 1)


def position_in_documents(documents: Documents, path: str) -> tuple[int, int]:
    """(line, column) of ``path`` in documents :func:`compose` made."""
    if isinstance(documents, tuple):
        return documents
    best_depth, best = -1, (1, 1)
    for document in documents:
        depth, line, column = resolve(document, path) if path else (0, *_start(document))
        if depth > best_depth:
            best_depth, best = depth, (line, column)
    return best


def _start(node: yaml.Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


def read_documents(where: FileData) -> Documents:
    """:func:`compose` on a file (or its bytes); (1, 1) when it cannot be read, is not UTF-8
    or is over the size limit."""
    try:
        if isinstance(where, bytes):
            data = where
        else:
            if where.stat().st_size > MAX_FILE_BYTES:
                return (1, 1)
            data = where.read_bytes()
        if len(data) > MAX_FILE_BYTES:
            return (1, 1)
        return compose(data.decode("utf-8"))
    except (OSError, UnicodeDecodeError):
        return (1, 1)


def locate(problems: Iterable[InputProblem], files: Mapping[str, FileData]) -> list[InputProblem]:
    """``problems`` with the line and column of each one whose position can be known: a field
    in one of ``files`` (display name → file), or a YAML error the loader placed. Each file is
    read and composed once, and only one file's node tree is held at a time."""
    listed = list(problems)
    by_file: dict[str, list[int]] = {}
    out = list(listed)
    for i, problem in enumerate(listed):
        if problem.line is not None:
            continue
        if not problem.field:
            mark = _YAML_MARK.search(problem.message)
            if mark is not None and problem.file in files:  # the position moves to the front
                message = problem.message[: mark.start()] + problem.message[mark.end() :]
                out[i] = dataclasses.replace(
                    problem, message=message, line=int(mark.group(1)), column=int(mark.group(2))
                )
            continue
        if problem.file in files:
            by_file.setdefault(problem.file, []).append(i)
    for file, indices in by_file.items():
        documents = read_documents(files[file])
        if isinstance(documents, tuple):
            continue  # the file no longer parses (changed since it was loaded): no position
        for i in indices:
            line, column = position_in_documents(documents, listed[i].located_at or listed[i].field)
            out[i] = dataclasses.replace(listed[i], line=line, column=column)
    return out
