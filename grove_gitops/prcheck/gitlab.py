"""The PR check's comment parts as GitLab merge request notes.

The parts ``pr-check run`` writes are sized for GitHub (at most 65,536 characters each);
GitLab takes notes of up to 1,000,000 characters, so the parts are joined into as few notes
as fit below ``limit`` (one, for any report the run step writes), each opening with the same
hidden markers, so :func:`~grove_gitops.prcheck.sticky.sync` keeps the set exactly as it keeps
GitHub's. A part larger than ``limit`` (only with a small ``limit``) is cut at line
boundaries, a code fence open at a cut closed and opened again in the next note.

The parts were escaped for GitHub (:mod:`grove_gitops.diff.mdescape`); GitLab reads a few
more things in a note, and :func:`inert_for_gitlab` defeats them outside code fences:

* a quick action: a line whose first character is ``/`` (``/merge``, ``/approve``) would
  be run with the token's rights; the ``/`` becomes ``&#47;``;
* references GitLab's filters find in the rendered text, after character references are
  decoded: ``!12`` (merge request), ``~label``, ``%milestone``, ``$12`` (snippet), ``&12``
  (epic), ``*iteration:``, ``[vulnerability:``; a zero-width space follows each of those
  characters where the escaping wrote it as a character reference, and every ``%`` before a
  word character or a quote.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from grove_gitops.diff.markdown import MARKER, part_marker
from grove_gitops.diff.mdescape import ZWSP
from grove_gitops.forge.gitlab import NOTE_LIMIT, GitLab
from grove_gitops.prcheck.sticky import SyncResult, sync

#: The most notes one report may post (a guard against a tiny ``limit``).
MAX_NOTES = 100
#: The smallest ``limit`` that leaves room for the markers and some text.
MIN_LIMIT = 400
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_REFERENCE_ENTITIES = re.compile(r"(&#(?:33|126|36|38|42|91);)")
_PERCENT = re.compile(r"%(?=[\w\"])")
_QUICK_ACTION = re.compile(r"^(\s*)/")
_PART_MARKER = re.compile(r"^<!-- grove-gitops-diff key=[A-Za-z0-9._-]+ part=\d+/\d+ -->$")


def _fence_step(line: str, fence: str) -> str:
    """The open fence after ``line`` ("" when outside code)."""
    match = _FENCE.match(line)
    if not match:
        return fence
    mark = match.group(1)
    if not fence:
        return mark
    if mark[0] == fence[0] and len(mark) >= len(fence) and not line.strip().strip(mark[0]):
        return ""
    return fence


def inert_for_gitlab(text: str) -> str:
    """``text`` with GitLab's quick actions and references defeated outside code fences."""
    out: list[str] = []
    fence = ""
    for line in text.splitlines(keepends=True):
        if fence or _FENCE.match(line):
            out.append(line)
        else:
            line = _QUICK_ACTION.sub(r"\1&#47;", line)
            line = _REFERENCE_ENTITIES.sub(rf"\1{ZWSP}", line)
            out.append(_PERCENT.sub(f"%{ZWSP}", line))
        fence = _fence_step(line, fence)
    return "".join(out)


def _body(part: str) -> str:
    """A part without the two marker lines it opens with (the note gets its own)."""
    lines = part.split("\n", 2)
    if len(lines) == 3 and lines[0] == MARKER and _PART_MARKER.match(lines[1]):
        return lines[2]
    return part


def _cut(text: str, budget: int) -> list[str]:
    """``text`` (lines ending in a line break) in pieces of at most ``budget`` characters:
    cut between lines (inside a line only when it alone is too long), a code fence open at a
    cut closed there and opened again at the start of the next piece."""
    pieces: list[str] = []
    current, fence, opener = "", "", ""
    for line in text.splitlines(keepends=True):
        after = _fence_step(line, fence)
        reserve = len(after) + 1 if after else 0  # room to close the fence at a later cut
        if current and len(current) + len(line) + reserve > budget:
            pieces.append(current + (f"{fence}\n" if fence else ""))
            current = opener if fence else ""
        while len(current) + len(line) + reserve > budget:
            room = max(1, budget - len(current) - reserve - 1)
            pieces.append(current + line[:room] + "\n" + (f"{fence}\n" if fence else ""))
            current, line = (opener if fence else ""), line[room:]
        current += line
        if after and not fence:  # this line opens a fence: a cut reopens it with this line
            opener = line if len(line) <= 100 else f"{after}\n"
        fence = after
    if current:
        pieces.append(current)
    return pieces


def _header(key: str, i: int, n: int) -> str:
    return f"{MARKER}\n{part_marker(key, i, n)}\n\n"


def gitlab_notes(parts: Sequence[str], key: str, limit: int = NOTE_LIMIT) -> list[str]:
    """The notes for ``parts``: joined in order, each note below ``limit`` characters."""
    if not MIN_LIMIT <= limit <= NOTE_LIMIT:
        raise ValueError(f"limit={limit}: expected {MIN_LIMIT} to {NOTE_LIMIT}")
    budget = limit - len(_header(key, 10**6, 10**6)) - 1
    bodies: list[str] = []
    for part in parts:
        bodies += _cut(inert_for_gitlab(_body(part)).strip("\n") + "\n", budget)
    notes: list[str] = []
    current = ""
    for body in bodies:
        if current and len(current) + 1 + len(body) > budget:
            notes.append(current)
            current = ""
        current = f"{current}\n{body}" if current else body  # each piece ends with a line break
        if len(notes) > MAX_NOTES:
            raise ValueError(f"more than {MAX_NOTES} notes below {limit} characters")
    if current:
        notes.append(current)
    if len(notes) > MAX_NOTES:
        raise ValueError(f"more than {MAX_NOTES} notes below {limit} characters")
    return [_header(key, i, len(notes)) + note for i, note in enumerate(notes, start=1)]


def post_notes(
    parts: Sequence[str],
    key: str,
    project: str,
    mr: int,
    token: str,
    api_url: str,
    job_token: bool = False,
    author: str = "",
    limit: int = NOTE_LIMIT,
    log: Callable[[str], None] = lambda _: None,
) -> SyncResult:
    """Keep the merge request's sticky note set for ``key`` equal to ``parts``.

    Our notes are those whose author is ``author``, by default the token's own user (GitLab
    does not mark bots on notes): a human's note that quotes our marker is never touched.
    """
    gl = GitLab(project, mr, token, api_url, job_token=job_token)
    notes = gitlab_notes(parts, key, limit)
    return sync(gl, mr, key, notes, author or gl.current_user(), log=log)
