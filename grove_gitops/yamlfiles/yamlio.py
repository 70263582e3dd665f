"""Safe, strict YAML reading with PyYAML's C LibYAML loader.

Source repositories are written by people and by scripts, so the loader refuses what
PyYAML would silently accept: duplicate mapping keys (the last one would win without a
word), alias expansion bombs ("billion laughs"), recursive aliases, files above a size
limit, and non-UTF-8 text. Problems come back as :class:`InputProblem` values so a caller
can report every broken file at once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from grove_gitops.errors import InputProblem

#: Largest source file accepted. A PodCliqueSet is a few KiB; etcd refuses objects above
#: ~1.5 MiB, so nothing legitimate comes near this.
MAX_FILE_BYTES = 2 * 1024 * 1024
#: Largest rendered object accepted, in serialised bytes. The API server takes requests up to
#: 3 MiB, but etcd stores an object only up to its default ``--max-request-bytes`` of 1.5 MiB,
#: so an object above 1.5 MiB applies nowhere. Checked on the YAML written for rendered
#: objects, and on compact JSON for pass-through objects before rendering.
MAX_OBJECT_BYTES = 1536 * 1024
#: Deepest nesting of lists and mappings accepted. Real manifests stay below 20 levels;
#: the limit keeps recursive code later on (pydantic, hashing, serialising) far from its own.
MAX_DEPTH = 100
#: Largest number of YAML nodes one document may expand to once aliases are followed.
MAX_EXPANDED_NODES = 200_000
#: Integers Kubernetes can hold: its JSON decoding and every integer field are 64-bit at most.
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
#: Longest integer scalar converted at all. A 64-bit integer is at most 20 digits (66 characters
#: in binary); longer text is refused before conversion, which for a decimal of 4,301 digits
#: would raise Python's ``ValueError`` and for a long base-60 ``1:2:3:...`` run in quadratic time.
MAX_INT_CHARS = 100
#: ``{{ ... }}``: Go template actions. Only consulted when the YAML does not parse, because a
#: ConfigMap may legitimately hold templates (alert rules, Argo Workflows) as string data.
_HELM_RE = re.compile(r"\{\{-?\s*[^{}]*?-?\}\}")


@dataclass(frozen=True)
class Document:
    """One YAML document of a source file; ``index`` counts from 0 within the file."""

    file: str
    index: int
    data: Any


#: Tags of plain scalars already resolved (``_Loader.resolve``), at most this many, each of a
#: value no longer than ``_TAG_MEMO_VALUE``: manifests repeat their keys and most values.
_TAG_MEMO_MAX = 4096
_TAG_MEMO_VALUE = 64
_PLAIN_TAGS: dict[str, str] = {}
#: PyYAML's own resolution (untyped).
_RESOLVE: Any = yaml.CSafeLoader.resolve


class _Loader(yaml.CSafeLoader):
    """CSafeLoader that keeps timestamp-looking scalars as strings.

    Kubernetes converts YAML to JSON, where ``2024-01-01`` is a string; PyYAML would build a
    ``datetime.date`` that neither JSON nor the API server understands.

    The C parser calls back into Python for every node: to resolve its tag, and to descend and
    ascend PyYAML's path resolvers, which this loader has none of. The tag of a plain scalar
    then depends on its text alone, so it is memoised; the path calls do nothing. About a tenth
    of the parse (issue 35.4: 41,000 scalars of the mid-size tree, 273 distinct texts).
    """

    def resolve(self, kind: type[yaml.Node], value: str, implicit: tuple[bool, bool]) -> str:
        plain = kind is yaml.ScalarNode and implicit[0]
        if plain:
            tag = _PLAIN_TAGS.get(value)
            if tag is not None:
                return tag
        tag = str(_RESOLVE(self, kind, value, implicit))
        if plain and len(value) <= _TAG_MEMO_VALUE:
            if len(_PLAIN_TAGS) >= _TAG_MEMO_MAX:
                _PLAIN_TAGS.clear()
            _PLAIN_TAGS[value] = tag
        return tag

    def descend_resolver(self, current_node: yaml.Node | None, current_index: object) -> None:
        pass  # no path resolvers (yaml_path_resolvers is empty)

    def ascend_resolver(self) -> None:
        pass


_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.CSafeLoader.yaml_implicit_resolvers.items()
}


class _YamlCheckError(Exception):
    def __init__(self, message: str, node: yaml.Node | None = None) -> None:
        where = f"line {node.start_mark.line + 1}: " if node is not None else ""
        super().__init__(where + message)


_TAG_WORDS = {"int": "integer", "float": "number", "bool": "boolean", "null": "null", "timestamp": "timestamp"}


def _shown(text: str) -> str:
    return repr(text) if len(text) <= 40 else f"{text[:20]!r}... ({len(text)} characters)"


def _guarded(construct: Any, tag: str) -> Any:
    """PyYAML's scalar constructor for ``tag``, with its crashes turned into a problem on the line.

    An explicit tag on text that is no such scalar (``!!int abc``, ``!!bool maybe``,
    ``!!timestamp x``, ``!!int ""``) makes PyYAML raise ``ValueError``, ``KeyError``,
    ``IndexError`` or ``AttributeError`` instead of a YAML error.
    """

    def construct_checked(loader: Any, node: yaml.Node) -> Any:
        try:
            return construct(loader, node)
        except (ValueError, KeyError, IndexError, AttributeError, TypeError, OverflowError) as exc:
            word = _TAG_WORDS.get(tag, tag)
            raise _YamlCheckError(f"{_shown(str(node.value))} is not a valid {word} (!!{tag})", node) from exc

    return construct_checked


def _construct_int(loader: Any, node: yaml.Node) -> int:
    """An integer scalar, refused unless it fits in 64 bits (what Kubernetes can hold).

    The text length is checked before any conversion, so a 4,301-digit literal or a megabyte
    of base-60 digits costs nothing and no Python limit is ever reached.
    """
    text = node.value if isinstance(node, yaml.ScalarNode) else ""
    if len(text) > MAX_INT_CHARS:
        raise _YamlCheckError(
            f"integer of {len(text)} characters is out of range (Kubernetes integers are 64-bit; quote it if it is text)",
            node,
        )
    value: int = _int_from_text(loader, node)
    if not INT64_MIN <= value <= INT64_MAX:
        raise _YamlCheckError(
            f"integer {value} is out of range (Kubernetes integers are 64-bit; quote it if it is text)", node
        )
    return value


_int_from_text = _guarded(yaml.constructor.SafeConstructor.construct_yaml_int, "int")
_Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)
for _tag, _construct in (
    ("float", yaml.constructor.SafeConstructor.construct_yaml_float),
    ("bool", yaml.constructor.SafeConstructor.construct_yaml_bool),
    ("null", yaml.constructor.SafeConstructor.construct_yaml_null),
    ("timestamp", yaml.constructor.SafeConstructor.construct_yaml_timestamp),
):
    _Loader.add_constructor(f"tag:yaml.org,2002:{_tag}", _guarded(_construct, _tag))


def _check_node(root: yaml.Node) -> None:
    """Reject duplicate keys, recursive aliases and documents that expand too far.

    Sizes are memoised per node object, so the check is linear in the *unexpanded* size
    even for a document built to explode.
    """
    sizes: dict[int, int] = {}
    active: set[int] = set()

    def size(node: yaml.Node) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in active:
            raise _YamlCheckError("recursive alias is not allowed", node)
        active.add(key)
        total = 1
        if isinstance(node, yaml.MappingNode):
            seen: set[str] = set()
            for k, v in node.value:
                if isinstance(k, yaml.ScalarNode) and k.value != "<<":
                    if k.value in seen:
                        raise _YamlCheckError(f'duplicate key "{k.value}"', k)
                    seen.add(k.value)
                total += size(k) + size(v)
        elif isinstance(node, yaml.SequenceNode):
            for item in node.value:
                total += size(item)
        if total > MAX_EXPANDED_NODES:
            raise _YamlCheckError(f"document expands to more than {MAX_EXPANDED_NODES} nodes (alias bomb?)", node)
        active.discard(key)
        sizes[key] = total
        return total

    size(root)


def _plain_tree_ok(root: yaml.Node) -> bool:
    """Whether a document composed without aliases passes :func:`_check_node`, found cheaply.

    Without an alias every node occurs once, so no recursion is possible and the expanded size
    is the node count: one walk with a stack, scalars counted by their parent, no per-node memo
    (the memo's ``id`` and set work was a quarter of parsing the mid-size tree, issue 35.4).
    False on any problem: the caller then runs :func:`_check_node`, whose error (and the node it
    names) is the one reported.
    """
    count = 1
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, yaml.MappingNode):
            pairs = node.value
            count += 2 * len(pairs)
            seen: set[str] = set()
            for k, v in pairs:
                if type(k) is yaml.ScalarNode:
                    if k.value != "<<":
                        if k.value in seen:
                            return False
                        seen.add(k.value)
                else:
                    stack.append(k)
                if type(v) is not yaml.ScalarNode:
                    stack.append(v)
        elif isinstance(node, yaml.SequenceNode):
            items = node.value
            count += len(items)
            stack.extend(item for item in items if type(item) is not yaml.ScalarNode)
        if count > MAX_EXPANDED_NODES:
            return False
    return True


def _may_alias(text: str) -> bool:
    """An alias needs an anchor (``&name``) and a reference to it (``*name``): a text without
    one of the two characters has none."""
    return "*" in text and "&" in text


_JSON_SCALARS = (str, int, bool, type(None))


def type_name(value: object) -> str:
    """The user's word for a loaded value's type (YAML/JSON terms, not Python's)."""
    names = {
        "NoneType": "null",
        "bool": "boolean",
        "int": "integer",
        "float": "number",
        "str": "string",
        "list": "list",
        "dict": "mapping",
        "datetime": "timestamp",
        "date": "timestamp",
        "bytes": "binary",
    }
    return names.get(type(value).__name__, type(value).__name__)


def json_problem(data: Any) -> tuple[str, str] | None:
    """The first place where ``data`` is not what JSON (and so the API server) can hold.

    Kubernetes turns YAML into JSON before it looks at it, so every later stage may assume
    str/int/float/bool/None/list/dict-with-str-keys. Explicit tags (``!!timestamp``,
    ``!!binary``, ``!!set``), non-string keys (``1:``, ``on:``), ``.nan`` and absurd nesting would otherwise
    reach code that sorts, hashes or serialises them and crash there. Returns
    ``(field path, message)`` or None. Iterative, so deep nesting cannot overflow the stack.
    """
    stack: list[tuple[str, Any, int]] = [("", data, 0)]
    while stack:
        path, value, depth = stack.pop()
        if depth > MAX_DEPTH:
            return path, f"nesting is deeper than {MAX_DEPTH} levels"
        if isinstance(value, float):
            if value != value or value in (float("inf"), float("-inf")):
                return path, f"{value} is not a JSON number"
        elif isinstance(value, _JSON_SCALARS):
            continue
        elif isinstance(value, list):
            stack.extend((f"{path}[{i}]", v, depth + 1) for i, v in enumerate(value))
        elif isinstance(value, dict):
            for k, v in value.items():
                if not isinstance(k, str):
                    return path, f"mapping key {k!r} is {type_name(k)}, not a string (quote it)"
                stack.append((f"{path}.{k}" if path else k, v, depth + 1))
        else:
            return path, f"{type_name(value)} value is not allowed (Kubernetes manifests are JSON; quote it)"
    return None


def load_documents(path: Path, display: str) -> tuple[list[Document], list[InputProblem]]:
    """Parse every document of ``path``; ``display`` is the name used in messages."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return [], [_too_large(display)]
        raw = path.read_bytes()
    except OSError as exc:
        return [], [InputProblem(display, "", f"cannot read file: {exc.strerror or exc}")]
    return load_bytes(raw, display)


def load_bytes(raw: bytes, display: str) -> tuple[list[Document], list[InputProblem]]:
    """Parse the bytes of a file (read from disk, or a blob of a git tree held in memory)
    with the checks of :func:`load_documents`: the size limit, UTF-8, then the YAML."""
    if len(raw) > MAX_FILE_BYTES:
        return [], [_too_large(display)]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return [], [InputProblem(display, "", f"file is not valid UTF-8 (byte {exc.start})")]
    return parse_documents(text, display)


def _too_large(display: str) -> InputProblem:
    return InputProblem(display, "", f"file is larger than the {MAX_FILE_BYTES} byte limit")


def parse_documents(text: str, display: str) -> tuple[list[Document], list[InputProblem]]:
    """Parse a multi-document YAML string (see :func:`load_documents`)."""
    docs: list[Document] = []
    loader = _Loader(text)
    index = 0
    plain = not _may_alias(text)
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:  # pragma: no cover - check_node guarantees a node
                break
            if not (plain and _plain_tree_ok(node)):
                _check_node(node)
            data = loader.construct_document(node)
            bad = json_problem(data)
            if bad is not None:
                field, message = bad
                return [], [InputProblem(display, field, f"document {index + 1}: {message}")]
            if data is not None:
                docs.append(Document(display, index, data))
            index += 1
    except yaml.MarkedYAMLError as exc:
        helm = _HELM_RE.search(text)
        if helm is not None:
            line = text.count("\n", 0, helm.start()) + 1
            return [], [
                InputProblem(display, "", f"looks like a Helm template; render it first (helm template): line {line}")
            ]
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = exc.problem or exc.context or "malformed YAML"
        return [], [InputProblem(display, "", f"malformed YAML: {where}{problem}")]
    except yaml.YAMLError as exc:
        return [], [InputProblem(display, "", f"malformed YAML: {exc}")]
    except _YamlCheckError as exc:
        return [], [InputProblem(display, "", f"invalid YAML: {exc}")]
    except RecursionError:
        return [], [InputProblem(display, "", "invalid YAML: nesting is too deep")]
    finally:
        loader.dispose()
    return docs, []
