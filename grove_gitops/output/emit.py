"""A small deterministic block-YAML emitter for JSON-shaped objects (issue 10).

Why our own: a render of a thousand PodCliqueSets spent almost all its time in PyYAML's C
dumper, whose generic event pipeline (representer → serializer → emitter, with an analysis
pass per scalar) costs far more than the output needs. Rendered objects are plain JSON
shapes (dicts with string keys, lists, strings, ints, floats, bools, None), so the whole
emitter is two recursive functions and one memoised scalar formatter.

The style is what ``kubectl get -o yaml`` users read and what PyYAML produced before:
block style, keys sorted by code point, two-space indentation, sequences under a mapping key
not indented (``key:\\n- item``), empty collections as ``{}`` / ``[]``.

Quoting is chosen so that YAML 1.1 readers (PyYAML, old Go yaml.v2) *and* YAML 1.2 readers
(ruamel.yaml, Go yaml.v3 in kustomize, Argo CD and Flux) read every string back as the same
string: a string is written plain only when it cannot be taken for anything else by any of
them (no bool/null/number/timestamp look-alike of either version, no indicator, no ``: `` or
`` #``, printable, no surrounding spaces); otherwise single-quoted when printable on one line,
as a literal block (``|``) when it is a clean multi-line text, and double-quoted with escapes
in every other case. The output depends on nothing but the object, so bytes are deterministic.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from yaml.resolver import Resolver

from grove_gitops.frozen import SharedDict, SharedList

__all__ = ["emit", "format_string"]

#: First characters that start something other than a plain scalar.
_INDICATORS = frozenset("?:,[]{}#&*!|>'\"%@`")

#: YAML 1.2 (core schema) and Go yaml.v3 numbers, made loose on purpose: digits with ``_``,
#: ``0b``/``0o``/``0x`` prefixes, exponents without a dot (``1e3``), ``.inf``/``.nan``.
#: Quoting a string that would not have been a number is harmless; the reverse is not.
_NUMBERISH = re.compile(
    r"[-+]?(?:0b[0-1_]+|0o[0-7_]+|0x[0-9a-fA-F_]+|[0-9_]*\.?[0-9_]*(?:[eE][-+]?[0-9]+)?"
    r"|\.(?:inf|Inf|INF|nan|NaN|NAN))"
)

#: Dates with one-digit months or days, which Go's yaml (v2 behind sigs.k8s.io/yaml, which Argo
#: CD uses) reads as timestamps and PyYAML's stricter pattern does not.
_LOOSE_DATE = re.compile(r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt ].*)?")

#: Words some YAML version reads as a bool or null, compared case-insensitively
#: (YAML 1.1 has ``y``/``n`` in its spec even though PyYAML does not resolve them).
_WORDS = frozenset({"y", "n", "yes", "no", "on", "off", "true", "false", "null", "~"})

#: PyYAML's own YAML 1.1 implicit resolvers (bool, int, float incl. sexagesimal, null,
#: timestamp, merge ``<<``, value ``=``), by first character.
_RESOLVERS: dict[str | None, list[tuple[str, re.Pattern[str]]]] = Resolver.yaml_implicit_resolvers

#: The longest implicit (``key: value``) key YAML allows is 1024 characters.
_MAX_SIMPLE_KEY = 1000

_ESCAPES = {
    "\0": "\\0",
    "\x07": "\\a",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\x0b": "\\v",
    "\x0c": "\\f",
    "\r": "\\r",
    "\x1b": "\\e",
    '"': '\\"',
    "\\": "\\\\",
    "\x85": "\\N",
    "\xa0": "\\_",
    "\u2028": "\\L",
    "\u2029": "\\P",
}


def _resolves(s: str) -> bool:
    """Whether some YAML reader would take the plain scalar ``s`` for a non-string."""
    if s.lower() in _WORDS or _NUMBERISH.fullmatch(s) or _LOOSE_DATE.fullmatch(s):
        return True
    return any(regexp.match(s) for _, regexp in _RESOLVERS.get(s[0], ()))


#: A name-like string (a letter or digit, then letters, digits, ``._/-``) holding one of these
#: letters is decided without the resolver regexes: none of them occurs in a string that
#: :data:`_NUMBERISH` or PyYAML's int, float, timestamp, merge or value patterns match, and
#: its bools and nulls are words of :data:`_WORDS`; only a whole word and a loose date (any
#: letter may follow its ``T``) remain to rule out. Names, file names and hashes are most of
#: a render's unique strings, each formatted once (issue 35.4); ``_plain_ok_slow`` is the
#: definition, and the tests hold the shortcut to it.
_NAME_LIKE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]*")
_NON_NUMERIC_LETTER = re.compile(r"[g-hj-mp-suvwyG-HJ-MP-SUVWY]")


def _plain_ok(s: str) -> bool:
    """Whether ``s`` may be written as a plain scalar (see the module's docstring)."""
    if _NAME_LIKE.fullmatch(s) and _NON_NUMERIC_LETTER.search(s):
        return s.lower() not in _WORDS and not _LOOSE_DATE.fullmatch(s)
    return _plain_ok_slow(s)


def _plain_ok_slow(s: str) -> bool:
    if not s or not s.isprintable() or s[0] == " " or s[-1] == " ":
        return False
    first = s[0]
    if first in _INDICATORS or (first == "-" and (len(s) == 1 or s[1] == " ")):
        return False
    if s.startswith(("---", "...")):  # document markers when a top-level key
        return False
    if ": " in s or " #" in s or s[-1] == ":":
        return False
    return not _resolves(s)


def _single(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def _double(s: str) -> str:
    out: list[str] = []
    for ch in s:
        esc = _ESCAPES.get(ch)
        if esc is not None:
            out.append(esc)
        elif ch.isprintable():
            out.append(ch)
        else:
            code = ord(ch)
            if code <= 0xFF:
                out.append(f"\\x{code:02X}")
            elif code <= 0xFFFF:
                out.append(f"\\u{code:04X}")
            else:
                out.append(f"\\U{code:08X}")
    return '"' + "".join(out) + '"'


def _literal_lines(s: str) -> list[str] | None:
    """The lines of ``s`` when it reads back exactly from a literal block, else None.

    Only clean texts qualify: printable lines, no trailing spaces, and a first character
    that is neither a space nor a line break (so no indentation indicator is needed).
    """
    if "\n" not in s or s[0] in " \n":
        return None
    lines = s.split("\n")
    for line in lines:
        if line and (not line.isprintable() or line[-1] == " "):
            return None
    return lines


def format_string(s: str, indent: int = 2, key: bool = False) -> str:
    """A string as a scalar; ``indent`` is where a literal block's lines go (the emitter
    memoises the results that do not depend on it)."""
    if _plain_ok(s):
        return s
    if not key:
        lines = _literal_lines(s)
        if lines is not None:
            if s.endswith("\n\n"):
                header, lines = "|+", lines[:-1]
            elif s.endswith("\n"):
                header, lines = "|", lines[:-1]
            else:
                header = "|-"
            pad = " " * indent
            return header + "".join(f"\n{pad}{line}" if line else "\n" for line in lines)
    if s.isprintable():
        return _single(s)
    return _double(s)


def _float(v: float) -> str:
    """PyYAML's spelling: a dot always (YAML 1.1 floats need one), ``.inf``/``.nan``."""
    if math.isnan(v):
        return ".nan"
    if math.isinf(v):
        return ".inf" if v > 0 else "-.inf"
    text = repr(v).lower()
    if "." not in text and "e" in text:
        text = text.replace("e", ".0e", 1)
    return text


def _scalar(v: Any, indent: int) -> str:
    if isinstance(v, str):
        return _str(v, indent)
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int):
        return str(int(v))
    if isinstance(v, float):
        return _float(v)
    if isinstance(v, Mapping) and not v:
        return "{}"
    if isinstance(v, Sequence) and not v:
        return "[]"
    raise TypeError(f"cannot emit a {type(v).__name__} as YAML")


#: Formatted keys and one-line string scalars (neither depends on the indentation), so the
#: hot loop is a dict lookup. Cleared when full: keys, labels, images and env names repeat
#: and come right back; names and hashes are unique and would only hold memory (a full cache
#: of a large render's strings is about 25 MB, a fifth of the RSS bar).
_KEYS: dict[str, str] = {}
_FLAT: dict[str, str] = {}
_CACHE_LIMIT = 1 << 15


def _key(k: Any) -> str:
    found = _KEYS.get(k) if type(k) is str else None
    if found is not None:
        return found
    if not isinstance(k, str):
        raise TypeError(f"mapping keys must be strings, not {type(k).__name__}")
    text = format_string(k, 0, True)
    if len(text) <= _MAX_SIMPLE_KEY:  # only short keys are cached: a hit needs no length check
        if len(_KEYS) > _CACHE_LIMIT:
            _KEYS.clear()
        _KEYS[k] = text
    return text


def _str(s: str, indent: int) -> str:
    found = _FLAT.get(s)
    if found is not None:
        return found
    text = format_string(s, indent)
    if "\n" not in text:
        if len(_FLAT) > _CACHE_LIMIT:
            _FLAT.clear()
        _FLAT[s] = text
    return text


def _is_block(v: Any) -> bool:
    """A non-empty mapping or list (strings are sequences too, but scalars here)."""
    return bool(v) and isinstance(v, (Mapping, list, tuple))


def _node(v: Any, indent: int, first: str, out: list[str], sort_keys: bool) -> None:
    """``v`` as a collection whose first line starts with ``first`` (a prefix such as
    ``"- "`` already in place) and whose other lines are indented by ``indent``."""
    if isinstance(v, Mapping):
        _mapping(v, indent, first, out, sort_keys)
    else:
        _sequence(v, indent, first, out, sort_keys)


def _mapping(m: Mapping[str, Any], indent: int, first: str, out: list[str], sort_keys: bool) -> None:
    pad = " " * indent
    inner = indent + 2
    lead = first
    append = out.append
    keys_get = _KEYS.get
    flat_get = _FLAT.get
    for k in sorted(m) if sort_keys else m:
        v = m[k]
        key = keys_get(k)
        if key is None:
            key = _key(k)
            if len(key) > _MAX_SIMPLE_KEY:
                # An explicit key; its value follows ": " like a sequence item follows "- ".
                append(f"{lead}? {key}\n")
                if _is_block(v):
                    _node(v, inner, pad + ": ", out, sort_keys)
                else:
                    append(f"{pad}: {_scalar(v, inner)}\n")
                lead = pad
                continue
        t = type(v)
        if t is str:
            text = flat_get(v)
            if text is None:
                text = _str(v, inner)
            append(f"{lead}{key}: {text}\n")
        elif t is dict:
            if v:
                append(f"{lead}{key}:\n")
                _mapping(v, inner, pad + "  ", out, sort_keys)
            else:
                append(f"{lead}{key}: {{}}\n")
        elif t is list:
            if v:
                append(f"{lead}{key}:\n")
                _sequence(v, indent, pad, out, sort_keys)  # not indented under its key, as kubectl prints
            else:
                append(f"{lead}{key}: []\n")
        elif t is int:
            append(f"{lead}{key}: {v}\n")
        elif (t is SharedList or t is SharedDict) and v:
            append(f"{lead}{key}:\n")
            append(_shared(v, indent, sort_keys))
        elif _is_block(v):
            append(f"{lead}{key}:\n")
            if isinstance(v, Mapping):
                _mapping(v, inner, pad + "  ", out, sort_keys)
            else:
                _sequence(v, indent, pad, out, sort_keys)
        else:
            append(f"{lead}{key}: {_scalar(v, inner)}\n")
        lead = pad


def _shared(v: SharedList | SharedDict, indent: int, sort_keys: bool) -> str:
    """The block under a mapping key at ``indent``, written once per layout and then reused:
    it depends on nothing but the subtree, the indentation and the key order."""
    layout = (indent, sort_keys)
    text = v.texts.get(layout)
    if text is None:
        buf: list[str] = []
        pad = " " * indent
        if isinstance(v, SharedDict):
            _mapping(v, indent + 2, pad + "  ", buf, sort_keys)
        else:
            _sequence(v, indent, pad, buf, sort_keys)
        text = v.texts[layout] = "".join(buf)
    return text


def _sequence(items: Sequence[Any], indent: int, first: str, out: list[str], sort_keys: bool) -> None:
    pad = " " * indent
    inner = indent + 2
    lead = first
    append = out.append
    flat_get = _FLAT.get
    for v in items:
        t = type(v)
        if t is str:
            text = flat_get(v)
            if text is None:
                text = _str(v, inner)
            append(f"{lead}- {text}\n")
        elif t is dict and v:
            _mapping(v, inner, lead + "- ", out, sort_keys)
        elif _is_block(v):
            _node(v, inner, lead + "- ", out, sort_keys)
        else:
            append(f"{lead}- {_scalar(v, inner)}\n")
        lead = pad


def emit(obj: Any, *, sort_keys: bool = True) -> str:
    """``obj`` (JSON-shaped) as one YAML document; keys sorted unless ``sort_keys`` is False
    (our own small files, such as kustomization.yaml, keep the order they were built in)."""
    out: list[str] = []
    if isinstance(obj, Mapping) and obj:
        _mapping(obj, 0, "", out, sort_keys)
    elif _is_block(obj):
        _sequence(obj, 0, "", out, sort_keys)
    else:
        out.append(_scalar(obj, 2) + "\n")
    return "".join(out)
