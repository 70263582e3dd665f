"""The project's one exception root and its few subclasses.

Every error a user can cause is a :class:`GroveGitopsError`; the CLI turns it into a message
and exit code 1, never a traceback. Library errors are chained with ``from`` so a developer
still sees the cause.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass


class GroveGitopsError(Exception):
    """Root of every error raised on purpose by grove-gitops."""


@dataclass(frozen=True, order=True)
class InputProblem:
    """One problem in one source file, rendered as ``file: field: message``, or
    ``file:line:col: field: message`` once its position is known (``yamlfiles.positions``), the
    form editors and terminals turn into a link to the spot.

    ``field`` is a Kubernetes-style field path (``spec.template.cliques[1].spec.replicas``)
    or empty when the problem concerns the whole file (for example malformed YAML). The
    position is where the problem is, not what it is: two problems differing only there are
    the same problem.
    """

    file: str
    field: str
    message: str
    line: int | None = dataclasses.field(default=None, compare=False)
    column: int | None = dataclasses.field(default=None, compare=False)
    #: The key path in the file to place the problem at, when ``field`` (the name the message
    #: uses, Grove's) is not one: see ``FieldError.located_at``.
    located_at: str = dataclasses.field(default="", compare=False)

    @property
    def where(self) -> str:
        """``file``, with ``:line:col`` when known."""
        if self.line is None:
            return self.file
        return f"{self.file}:{self.line}:{self.column}" if self.column is not None else f"{self.file}:{self.line}"

    def __str__(self) -> str:
        if self.field:
            return f"{self.where}: {self.field}: {self.message}"
        return f"{self.where}: {self.message}"


class InvalidInputError(GroveGitopsError):
    """The source tree is invalid; carries every problem found, not just the first."""

    def __init__(self, problems: Iterable[InputProblem]) -> None:
        unique = list(dict.fromkeys(problems))  # drop repeats, keep the order they were found in
        self.problems: list[InputProblem] = sorted(unique, key=lambda p: p.file)
        super().__init__("\n".join(str(p) for p in self.problems))


class OutputError(GroveGitopsError):
    """Writing the output tree failed (the previous tree is left in place)."""


class GitError(GroveGitopsError):
    """A git operation of the controller failed."""


class GitPushRejectedError(GitError):
    """The remote moved while we rendered: fetch, re-render and retry."""


class GateLiftError(GroveGitopsError):
    """The gate-lifter could not complete an API operation."""
