"""README and docs/README.md are what a newcomer reads first (issue 34 §12): the two-command quick
start first, then what runs where, then the words it uses, short, with the details one link away
and every document of docs/ listed in its index."""

from __future__ import annotations

import re
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
README = PROJECT / "README.md"
DOCS = PROJECT / "docs"
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def _sections(text: str) -> list[str]:
    return [line[3:] for line in text.splitlines() if line.startswith("## ")]


def test_readme_is_short_and_opens_with_the_two_command_quick_start() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    assert _sections(text)[0] == "Quick start"
    quick = text[text.index("## Quick start") : text.index("\n## ", text.index("## Quick start") + 1)]
    blocks = re.findall(r"```bash\n(.*?)```", quick, re.DOTALL)
    assert len(blocks) == 1, "the quick start holds one block of commands"
    commands = [line.split("#", 1) for line in blocks[0].splitlines()]
    assert [c[0].strip() for c in commands] == ["bash ./scripts/demo.sh", "bash ./scripts/test.sh"]
    assert all(len(c) == 2 and c[1].strip() for c in commands), "each command has its one-line comment"
    # The demo line says what the demo shows: the rendered branch and a change's OUTAGE.
    assert "OUTAGE" in commands[0][1] and "plan" in commands[0][1]


def test_the_picture_comes_before_the_glossary_which_defines_the_words_before_use() -> None:
    text = README.read_text(encoding="utf-8")
    sections = _sections(text)
    assert sections[1].startswith("The picture") and sections[2] == "Glossary"
    picture = text[text.index("## The picture") : text.index("## Glossary")]
    for part in ("CI", "Git", "controller", "Argo CD", "Flux", "agent", "REQUIRED"):
        assert part in picture, part
    glossary_at = text.index("## Glossary")
    glossary = text[glossary_at : text.index("\n## ", glossary_at + 1)]
    defined = {m.group(1) for m in re.finditer(r"^\| ([^|]+?) \|", glossary, re.MULTILINE)}
    for term in ("shard", "gang", "gate", "agent (gate-lifter)", "wave", "floor", "plan", "OUTAGE"):
        assert term in defined, term
    for term in ("shard", "floor", "wave", "gate-lifter"):
        assert not re.search(rf"\b{term}", text[:glossary_at], re.IGNORECASE), f"{term} used before the glossary"
    assert "## Development" in text


def test_docs_index_lists_every_document_and_every_link_resolves() -> None:
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    listed = {target for target in LINK.findall(index)}
    for doc in sorted(DOCS.rglob("*.md")):
        rel = doc.relative_to(DOCS).as_posix()
        if rel != "README.md":
            assert rel in listed, f"docs/README.md does not list {rel}"
    for page in [README, DOCS / "README.md", *sorted(DOCS.glob("*.md"))]:
        for target in LINK.findall(page.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target):
                continue
            assert (page.parent / target).exists(), f"{page.relative_to(PROJECT)}: broken link {target}"
    assert "(docs/README.md)" in README.read_text(encoding="utf-8")


def test_what_the_readme_said_before_still_stands_in_docs() -> None:
    """The README shrank by moving, not deleting: facts it used to state are where it points."""
    docs = "".join(p.read_text(encoding="utf-8") for p in sorted(DOCS.glob("*.md")))
    for fact in (
        "`Grove-Render-Dry-Sha`", "`refs/grove-gitops/examined/<output-branch>`", "--cache-max-mb",
        "acknowledgedWarnings", "`.grove-gitops-ignore`", "maxPodsPerPodCliqueSet", "sortOptions: fifo",
        "15-secret--<pcs>-ic-sat.yaml", "imageRegistry", "HasSuffix", "mnnvl-claim", "lpx-scheduler",
        "gitops.grove.io/gang-objects", "about 280 MB", "--hydrator-files", "`make bench`",
        "GROVE_GITOPS_<COMMAND>_<OPTION>", "kubectl get gpcs",
    ):
        assert fact in docs, fact
