"""The project's one exception root and its few subclasses.

Every error a user can cause is a :class:`GroveGitopsError`; the CLI turns it into a message
and exit code 1, never a traceback. Library errors are chained with ``from`` so a developer
still sees the cause.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


class GroveGitopsError(Exception):
    """Root of every error raised on purpose by grove-gitops."""


@dataclass(frozen=True, order=True)
class InputProblem:
    """One problem in one source file, rendered as ``file: field: message``.

    ``field`` is a Kubernetes-style field path (``spec.template.cliques[1].spec.replicas``)
    or empty when the problem concerns the whole file (for example malformed YAML).
    """

    file: str
    field: str
    message: str

    def __str__(self) -> str:
        if self.field:
            return f"{self.file}: {self.field}: {self.message}"
        return f"{self.file}: {self.message}"


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
