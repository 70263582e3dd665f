"""A conversation the PR check keeps its sticky comments in: a GitHub pull request's issue
comments or a GitLab merge request's notes, behind one small interface."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Comment:
    """A comment (GitHub) or note (GitLab): ``login`` is its author's login or username,
    ``user_type`` GitHub's ``Bot``/``User`` (GitLab: ``User``, or ``System`` for the notes
    GitLab writes itself)."""

    id: int
    body: str
    login: str
    user_type: str


class Thread(Protocol):
    """What :func:`grove_gitops.prcheck.sticky.sync` needs of a forge."""

    def list_comments(self, issue: int) -> list[Comment]: ...

    def create_comment(self, issue: int, body: str) -> Comment: ...

    def update_comment(self, comment_id: int, body: str) -> None: ...

    def delete_comment(self, comment_id: int) -> None: ...
