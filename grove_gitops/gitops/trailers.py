"""Provenance trailers of rendered commits (``spec/gitops.md`` §6.3-§6.4).

``Grove-Render-Dry-Sha`` names the source commit a rendered commit was made from; it is how
the controller finds where to resume and how it recognises (and ignores) its own commits.
Argo CD's ``Argocd-reference-commit-sha`` (and ``-author``, ``-subject``, ``-date``,
``-repourl``, the trailers its Source Hydrator reads) are added so Argo tooling shows the link too.
``Grove-Render-Config`` is a digest of what shapes the output besides the source (the
grove-gitops version and output-affecting flags): when it differs from the running
controller's, the source head is rendered again without waiting for a new source commit.
"""

from __future__ import annotations

from grove_gitops import __version__

DRY_SHA = "Grove-Render-Dry-Sha"
VERSION = "Grove-Render-Version"
ARGO_REFERENCE = "Argocd-reference-commit-sha"
CONFIG = "Grove-Render-Config"
EXAMINED = "Grove-Render-Examined"
#: On the examined record: whether the examined source commit rendered (``true``/``false``),
#: so a restarted controller knows the source head's state without rendering it again.
HEAD_RENDERS = "Grove-Render-Head-Renders"


ARGO_AUTHOR = "Argocd-reference-commit-author"
ARGO_SUBJECT = "Argocd-reference-commit-subject"
ARGO_DATE = "Argocd-reference-commit-date"
ARGO_REPO_URL = "Argocd-reference-commit-repourl"


def _one_line(value: str) -> str:
    """Trailer values must not contain newlines (Argo CD reads them line by line)."""
    return " ".join(value.split())


def message(
    source_sha: str,
    source_subject: str,
    source_path: str,
    config: str = "",
    *,
    author: str = "",
    date: str = "",
    repo_url: str = "",
) -> str:
    """The rendered commit's message. Besides our own trailers it carries the
    ``Argocd-reference-commit-*`` trailers Argo CD's Source Hydrator reads (sha, and when
    known author ``Name <email>``, subject, RFC 3339 date and repository URL), so Argo CD shows
    the source commit a rendered commit came from."""
    subject = f"Render {source_sha[:12]}: {source_subject}".strip()
    if len(subject) > 120:
        subject = subject[:117] + "..."
    where = source_path or "."
    body = f"Rendered {where} of source commit {source_sha} with grove-gitops {__version__}."
    trailers = f"{DRY_SHA}: {source_sha}\n{VERSION}: {__version__}\n{ARGO_REFERENCE}: {source_sha}"
    for key, value in ((ARGO_AUTHOR, author), (ARGO_SUBJECT, source_subject), (ARGO_DATE, date), (ARGO_REPO_URL, repo_url)):
        if (author or date or repo_url) and _one_line(value):
            trailers += f"\n{key}: {_one_line(value)}"
    if config:
        trailers += f"\n{CONFIG}: {config}"
    return f"{subject}\n\n{body}\n\n{trailers}\n"


def parse(commit_message: str) -> dict[str, str]:
    """Trailers of the last paragraph (``Key: value`` lines)."""
    paragraphs = [p for p in commit_message.strip().split("\n\n") if p.strip()]
    if not paragraphs:
        return {}
    out: dict[str, str] = {}
    for line in paragraphs[-1].splitlines():
        key, sep, value = line.partition(": ")
        if sep and key and " " not in key:
            out[key] = value.strip()
    return out


def dry_sha(commit_message: str) -> str | None:
    return parse(commit_message).get(DRY_SHA)


def examined_message(source_sha: str, config: str, renders: bool | None = None) -> str:
    """Message of the bookkeeping commit that records the last source commit examined."""
    head = "" if renders is None else f"{HEAD_RENDERS}: {'true' if renders else 'false'}\n"
    return f"grove-gitops: examined {source_sha[:12]}\n\n{EXAMINED}: {source_sha}\n{CONFIG}: {config}\n{head}"
