"""Errors of ``grove-gitops diff``.

They subclass the project root :class:`~grove_gitops.errors.GroveGitopsError`, so the CLI
turns them into ``error: ...`` and exit code 1 like every other user-caused failure. An
invalid *source* tree is not one of these: it stays an
:class:`~grove_gitops.errors.InvalidInputError` (every problem listed), only tagged with the
side it came from.
"""

from __future__ import annotations

from grove_gitops.errors import GroveGitopsError, InvalidInputError


class DiffError(GroveGitopsError):
    """A diff could not be produced (unreadable rendered tree, duplicate objects, ...)."""


class GitRefError(DiffError):
    """A repository or ref given to ``diff --repo`` cannot be read."""


class RefusedTreeError(GitRefError):
    """A ref's tree holds an entry no reader of git accepts (``..``, ``.git``, a backslash,
    a symbolic link leaving the tree, a file count or size beyond the bounds): the message
    names the ref and the entry, escaped. The controller refuses the same trees
    (``grove_gitops.load.gittree``)."""


class SideInvalidError(DiffError):
    """One side's source tree failed validation; wraps the render error with the side's label.

    The wrapped :class:`InvalidInputError` keeps every problem so the CLI can print them in
    the same ``file: field: message`` style as ``render``.
    """

    def __init__(self, side: str, label: str, error: InvalidInputError) -> None:
        self.side = side
        self.label = label
        self.error = error
        super().__init__(f"{side} ({label}) is invalid:\n{error}")
