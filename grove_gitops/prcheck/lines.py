"""Find the source line of a problem's field path, for check annotations.

``validate --output json`` gives each problem's ``line`` and ``column`` when it knows them;
an older document, or a problem without one, is placed here with the same lookup the loader
uses (:mod:`grove_gitops.yamlfiles.positions`: PyYAML's node marks, the document where the path
resolves deepest, line 1 for a file that does not parse).

One file often has many problems (a PodCliqueSet with 400 bad pods): callers parse each file
once (:func:`read_documents`) and answer all its problems from that node tree
(:func:`line_in_documents`), instead of reading and parsing the file again per problem (400
problems in a 1.8 MB file took 388 s that way).
A file larger than the loader's limit is never read (validate refused it anyway: line 1).
"""

from __future__ import annotations

from pathlib import Path

import yaml

from grove_gitops.yamlfiles import positions
from grove_gitops.yamlfiles.positions import Segment, parse_path

__all__ = ["Segment", "compose", "find_line", "line_in_documents", "line_in_file", "parse_path", "read_documents"]


def resolve(document: yaml.Node, path: str) -> tuple[int, int]:
    """(segments resolved, 1-based line of the deepest resolved part) in one document."""
    depth, line, _ = positions.resolve(document, path)
    return depth, line


def compose(text: str) -> list[yaml.Node] | int:
    """The documents of YAML ``text`` as node trees, or the 1-based line where parsing failed."""
    documents = positions.compose(text)
    return documents[0] if isinstance(documents, tuple) else documents


def find_line(text: str, path: str) -> int:
    """The 1-based line of ``path`` in YAML ``text`` (1 when it cannot be found)."""
    return line_in_documents(compose(text), path)


def line_in_documents(documents: list[yaml.Node] | int, path: str) -> int:
    """:func:`find_line` on documents :func:`compose` made."""
    if isinstance(documents, int):
        return documents
    return positions.position_in_documents(documents, path)[0]


def read_documents(path: Path) -> list[yaml.Node] | int:
    """:func:`compose` on a file; line 1 when it cannot be read or is over the size limit."""
    documents = positions.read_documents(path)
    return documents[0] if isinstance(documents, tuple) else documents


def line_in_file(path: Path, field: str) -> int:
    """:func:`find_line` on a file; 1 when it cannot be read (one lookup: for several in
    the same file, :func:`read_documents` once and :func:`line_in_documents` per path)."""
    return line_in_documents(read_documents(path), field)
