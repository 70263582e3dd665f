"""One sticky comment set per key on a PR (or a GitLab merge request's note set): update in
place, create what is missing, delete what a shorter report no longer needs.

The same rules as the github-script the in-repo workflow used before the Action: a comment is
ours when its author is a bot (or exactly ``author`` when given: a PAT posts as a user) and
its body *starts* with :data:`~grove_gitops.diff.markdown.MARKER` and carries this key's part
marker. A human quoting the marker is never edited or deleted, since the body of a quote
starts with ``>``, and an author filter excludes humans anyway. Of two comments claiming the
same part (a re-run that raced another), the first is kept and the other deleted.

GitLab does not say whether a note's author is a bot, so there ``author`` is always given (by
default the token's own user, ``GET /user``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from grove_gitops.diff.markdown import MARKER
from grove_gitops.forge.thread import Comment, Thread

_PART = re.compile(r"<!-- grove-gitops-diff key=([A-Za-z0-9._-]+) part=(\d+)/(\d+) -->")


def part_of(body: str, key: str) -> int | None:
    match = _PART.search(body)
    return int(match.group(2)) if match and match.group(1) == key else None


def is_ours(comment: Comment, author: str = "") -> bool:
    if author:
        if comment.login != author:
            return False
    elif comment.user_type != "Bot":
        return False
    return comment.body.startswith(MARKER)


@dataclass
class SyncResult:
    created: list[int] = field(default_factory=list)
    updated: list[int] = field(default_factory=list)
    unchanged: list[int] = field(default_factory=list)
    deleted: list[int] = field(default_factory=list)  # comment ids: stale parts and duplicates


def sync(
    gh: Thread,
    issue: int,
    key: str,
    parts: Sequence[str],
    author: str = "",
    log: Callable[[str], None] = lambda _: None,
) -> SyncResult:
    """Make the PR's comments for ``key`` equal ``parts`` (part ``i`` = ``parts[i-1]``)."""
    if not parts:
        raise ValueError("no comment parts to post")
    result = SyncResult()
    ours: dict[int, Comment] = {}
    for c in gh.list_comments(issue):
        if not is_ours(c, author):
            continue
        part = part_of(c.body, key)
        if part is None:
            continue
        if part in ours:
            gh.delete_comment(c.id)
            result.deleted.append(c.id)
            log(f"deleted duplicate of part {part} (comment {c.id})")
        else:
            ours[part] = c
    n = len(parts)
    for i, body in enumerate(parts, start=1):
        existing = ours.get(i)
        if existing is None:
            created = gh.create_comment(issue, body)
            result.created.append(created.id)
            log(f"created part {i}/{n}")
        elif existing.body != body:
            gh.update_comment(existing.id, body)
            result.updated.append(existing.id)
            log(f"updated part {i}/{n}")
        else:
            result.unchanged.append(existing.id)
            log(f"part {i}/{n} unchanged")
    for part, c in sorted(ours.items()):
        if part > n:
            gh.delete_comment(c.id)
            result.deleted.append(c.id)
            log(f"deleted stale part {part}")
    return result
