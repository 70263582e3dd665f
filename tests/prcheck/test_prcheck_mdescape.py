"""Text from a PR reaches the comment inert: no mention, link, image, emphasis, heading, HTML
or sticky marker, whatever it holds (examples and hypothesis)."""

from __future__ import annotations

import html
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from grove_gitops.diff.mdescape import ZWSP, html_code_text, md_text

HOSTILE = "@octocat [click](https://x) ![i](https://y)"
#: Characters that must never appear raw in escaped text (they only appear inside ``&#N;``).
RAW_SPECIALS = set("\\`*_[]()!<>|~${}")
ENTITY = re.compile(r"&#\d+;")


def _without_entities(text: str) -> str:
    return ENTITY.sub("", text)


def _inert(out: str) -> None:
    """The properties GitHub's renderer and text filters need (see mdescape's docstring)."""
    bare = _without_entities(out)
    assert not RAW_SPECIALS & set(bare), out
    assert "&" not in bare and "#" not in bare, out  # every & and # is an entity we made
    assert not re.search(r"@\w", out), out  # no mention
    assert not re.search(r"(?i)gh-\d", out), out  # no GH-123 reference
    assert "://" not in out, out  # no URL autolink
    assert not re.search(r"(?i)www\.", out), out  # no www. autolink
    assert "\n" not in out and "\r" not in out, out  # one line: no heading, list, quote or table row
    assert not re.match(r"(?:[-+]|\d{1,9}[.)])(?: |$)|(?:=+|-+)$", out), out  # nor a list or setext marker


def test_the_issues_example_is_inert_and_reads_the_same() -> None:
    out = md_text(HOSTILE)
    _inert(out)
    assert out == (f"@{ZWSP}octocat &#91;click&#93;&#40;https:{ZWSP}//x&#41; &#33;&#91;i&#93;&#40;https:{ZWSP}//y&#41;")
    assert html.unescape(out).replace(ZWSP, "") == HOSTILE  # the reader sees what was typed


def test_markers_headings_emphasis_autolinks_and_references() -> None:
    marker = "<!-- grove-gitops-diff key=default part=1/1 -->"
    assert "<!--" not in md_text(marker) and html.unescape(md_text(marker)) == marker
    assert md_text("# Heading\n## two") == f"&#35;{ZWSP} Heading &#35;{ZWSP}&#35;{ZWSP} two"
    assert md_text("**bold** _em_ ~~s~~") == "&#42;&#42;bold&#42;&#42; &#95;em&#95; &#126;&#126;s&#126;&#126;"
    assert md_text("see www.example.com, a@b.example and GH-12 #3") == (
        f"see www{ZWSP}.example.com, a@{ZWSP}b.example and GH{ZWSP}-12 &#35;{ZWSP}3"
    )
    assert md_text("- item") == "&#45; item" and md_text("12. item") == "12&#46; item"
    assert md_text("---") == "--&#45;" and md_text("1.0Ti/2Ti") == "1.0Ti/2Ti" and md_text("-1") == "-1"
    assert md_text("a | b") == "a &#124; b"  # a table cell stays one cell
    assert md_text("&lt;b&gt;") == "&#38;lt;b&#38;gt;"  # an entity in the input stays literal
    assert md_text("right\u202eto left\x00") == "right\ufffdto left\ufffd"
    assert md_text(None) == "—" and md_text({"gpu": 8, "rack": "a"}) == "gpu: 8, rack: a"
    assert md_text("x" * 50, limit=10) == "x" * 10 + "…"
    # ordinary names are left as they are
    assert md_text("inference/llama-disagg-0 needs 24 nvidia.com/gpu") == (
        "inference/llama-disagg-0 needs 24 nvidia.com/gpu"
    )


def test_inside_an_html_code_element() -> None:
    out = html_code_text("@octocat </code><img src=x>\n\nhttps://x")
    assert out == f"@{ZWSP}octocat &lt;/code&gt;&lt;img src=x&gt; https:{ZWSP}//x"
    assert html_code_text("spec.podgroups[w].podReferences") == "spec.podgroups[w].podReferences"


@settings(max_examples=400, deadline=None)
@given(st.text())
def test_any_text_is_inert_and_reads_as_typed(text: str) -> None:
    out = md_text(text)
    _inert(out)
    # What the reader sees is the text typed: whitespace runs as one space, controls as U+FFFD.
    shown = html.unescape(out).replace(ZWSP, "")
    expected = re.sub(
        r"\s+",
        " ",
        re.sub(
            "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ufeff]", "\ufffd", text.replace(ZWSP, "")
        ),
    ).strip()
    assert shown == expected


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "@",
                "[",
                "](",
                "http",
                "://",
                "www",
                ".",
                "#",
                "GH",
                "-",
                "1",
                "a",
                "<",
                "!",
                " ",
                "\n",
                "`",
                "*",
                "_",
                "&",
                "#38;",
                "\u200b",
            ]
        ),
        max_size=30,
    )
)
def test_markdown_shaped_text_is_inert(pieces: list[str]) -> None:
    """Hypothesis with the alphabet of Markdown syntax, where plain st.text() rarely lands."""
    _inert(md_text("".join(pieces)))
    code = html_code_text("".join(pieces))
    assert not re.search(r"@\w", code) and "://" not in code and "<" not in code and "\n" not in code
