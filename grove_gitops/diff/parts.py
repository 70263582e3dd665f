"""The Markdown report written to files: all parts in one file and each part in its own,
for a CI step that posts one comment per part."""

from __future__ import annotations

import re
from pathlib import Path

from grove_gitops.diff.errors import DiffError
from grove_gitops.diff.markdown import MARKER, PART_SEPARATOR


def part_path(out: Path, i: int) -> Path:
    """``diff.md`` → ``diff.1.md``; a name without ``.md`` gets ``.<i>.md`` appended."""
    stem = out.name[: -len(".md")] if out.name.endswith(".md") else out.name
    return out.with_name(f"{stem}.{i}.md")


def write_text(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise DiffError(f"{path}: cannot write: {exc}") from exc


def write_parts(out: Path, parts: list[str]) -> list[Path]:
    """Write every part to its own file and all of them (separated) to ``out``.

    Part files left over from an earlier, longer run are deleted — but only files that
    start with our marker, so a user's unrelated ``notes.3.md`` survives.
    """
    write_text(out, f"\n{PART_SEPARATOR}\n".join(parts))
    written = []
    for i, text in enumerate(parts, start=1):
        path = part_path(out, i)
        write_text(path, text)
        written.append(path)
    stem = part_path(out, 0).name[: -len(".0.md")]
    numbered = re.compile(rf"^{re.escape(stem)}\.(\d+)\.md$")
    for stale in sorted(out.parent.iterdir()):
        match = numbered.match(stale.name)
        if match is None or int(match.group(1)) <= len(parts) or not stale.is_file():
            continue
        try:
            if stale.read_text(encoding="utf-8").startswith(MARKER):
                stale.unlink()
        except (OSError, UnicodeDecodeError) as exc:
            raise DiffError(f"{stale}: cannot remove the stale part: {exc}") from exc
    return written
