"""Untrusted text into GitHub Markdown, outside code spans: shown as typed, never as markup.

Error messages, warnings, file, object and node names in a PR comment come from the pull
request. GitHub renders a comment twice over: the Markdown parser (emphasis, links, images,
headings, raw HTML, autolinks) and then filters on the rendered text (``@user`` mentions that
notify, ``#123`` / ``GH-123`` references). :func:`md_text` defeats both, in every place the
comment puts such text: a paragraph, a list item, a table cell, and raw HTML (``<summary>``,
``<sub>``, ``<code>``), where backslash escapes would show literally:

* every character Markdown or HTML gives a meaning (``\\ ` * _ [ ] ( ) ! < > & | ~ $ # { }``)
  becomes a numeric character reference, which CommonMark and HTML both show as the
  character itself and never read as syntax (``&#91;`` is a ``[`` that opens no link); so
  no ``<!-- grove-gitops-diff`` marker can be forged either;
* a zero-width space after ``@``, ``#`` and ``GH`` before ``-``, inside ``://`` and after
  ``www``, so the text filters that run after rendering find no mention, reference or link;
* the text is one line (line breaks, tabs and runs of spaces become one space), so nothing in
  it can start a heading, a list, a quote or a table row, or end an HTML block; a leading
  list marker (``-``, ``+``, ``1.``, ``1)`` before a space) or a setext underline (``===``,
  ``---``) is escaped too, in case the text opens a line;
* control and bidirectional-override characters become U+FFFD.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from typing import Any

#: U+200B ZERO WIDTH SPACE: invisible, not a word character, breaks every GitHub text filter.
ZWSP = "\u200b"
#: Characters with a meaning in Markdown or HTML anywhere in a line.
_SPECIAL = frozenset("\\`*_[]()!<>&|~$#{}")
#: Line breaks, tabs and other whitespace runs collapse to one space.
_SPACE = re.compile(r"\s+")
#: C0/C1 controls and the bidi embeddings/overrides/isolates (\t\n\r are whitespace above).
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ufeff]")
#: Filters GitHub runs on the rendered text: break them with a zero-width space.
_FILTERS = re.compile(r"(?i)(@|gh(?=-\d)|://|www(?=\.)|#)")
#: Block markers that matter only when the text opens a line.
_LEADING = re.compile(r"^(?:[-+]|\d{1,9}[.)])(?= |$)|^(?:=+|-+)$")


def _one_line(value: Any) -> str:
    return _SPACE.sub(" ", _CONTROL.sub("\ufffd", str(value).replace(ZWSP, ""))).strip()


def _entity(ch: str) -> str:
    return f"&#{ord(ch)};"


def _break(match: re.Match[str]) -> str:
    token = match.group(1)
    if token == "://":
        return f":{ZWSP}//"
    return token + ZWSP


def md_text(value: Any, limit: int | None = None) -> str:
    """``value`` as inert, one-line text for a GitHub comment outside code (see the module).

    A mapping is shown as ``k: v, …`` and a list as ``a, b``; ``None`` as an em dash.
    ``limit`` cuts the *input* to that many characters first (an ellipsis marks the cut), so
    an entity is never cut in half.
    """
    if value is None:
        return "—"
    if isinstance(value, Mapping):
        value = ", ".join(f"{k}: {v}" for k, v in value.items())
    elif isinstance(value, list | tuple):
        value = ", ".join(str(v) for v in value)
    text = _one_line(value)
    if limit is not None and len(text) > limit:
        text = text[: max(limit, 0)] + "…"
    text = _FILTERS.sub(_break, text)
    out = "".join(_entity(ch) if ch in _SPECIAL else ch for ch in text)
    lead = _LEADING.match(out)
    if lead:
        end = lead.end()
        out = out[: end - 1] + _entity(out[end - 1]) + out[end:]
    return out


def html_code_text(value: Any) -> str:
    """``value`` for the inside of an HTML ``<code>`` element in a comment (raw HTML: no
    Markdown applies, and GitHub's text filters skip code): ``& < >`` escaped, one line, and
    the filter-breaking zero-width spaces of :func:`md_text` all the same."""
    return html.escape(_FILTERS.sub(_break, _one_line(value)), quote=False)
