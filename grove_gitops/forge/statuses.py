"""Commit statuses on GitHub and GitLab: where the controller says whether a source commit
renders, on the commit itself, where its author looks.

GitHub: ``POST /repos/{owner}/{repo}/statuses/{sha}`` with ``state`` pending / success /
failure, ``context`` and a ``description`` of at most 140 characters. GitLab: ``POST
/projects/:id/statuses/:sha`` with ``state`` pending / success / failed and ``name``.

Which forge and repository: derived from the source repository's URL
(:func:`status_target`; ``https://github.com/o/r.git``, ``git@gitlab.com:g/p.git``, …) or
given explicitly. The token goes to the forge API of *that* repository's host only: an
explicit API URL on another host than the repository's (``api.<host>`` allowed, as
``api.github.com`` for ``github.com``) is refused unless the repository is given explicitly
as well; everything else about where the token may go is :mod:`grove_gitops.forge.http`'s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

from grove_gitops.forge.gitlab import gitlab_http, project_ref
from grove_gitops.forge.http import ForgeError, ForgeHttp, api_base, origin

#: The status's name on both forges (GitHub's ``context``, GitLab's ``name``).
CONTEXT = "grove-gitops/render"
#: GitHub refuses a longer description; GitLab is given the same.
DESCRIPTION_CHARS = 140
FORGES = ("github", "gitlab")
_STATES = {
    "github": {"pending": "pending", "success": "success", "failure": "failure"},
    "gitlab": {"pending": "pending", "success": "success", "failure": "failed"},
}
_SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")
_GITHUB_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
_SCP = re.compile(r"^(?:[A-Za-z0-9._-]+@)?([A-Za-z0-9.-]+):(?!//)(.+)$")
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


class StatusConfigError(ForgeError):
    """Commit statuses cannot be set up from these options (a usage error)."""


@dataclass(frozen=True)
class StatusTarget:
    """Where statuses go: ``repo`` is ``owner/name`` (GitHub) or a project id or path (GitLab)."""

    forge: str
    api_url: str
    repo: str


def _remote(url: str) -> tuple[str, str, str, str] | None:
    """(scheme, host, host[:port] for an API URL, path) of a remote URL; ``None`` for a local
    path or a URL of another kind."""
    if "://" in url:
        parts = urlsplit(url)
        if parts.scheme not in ("https", "http", "ssh", "git") or not parts.hostname:
            return None
        try:
            port = parts.port
        except ValueError:
            return None
        host = parts.hostname.lower()
        netloc = f"[{host}]" if ":" in host else host
        if port and parts.scheme in ("https", "http"):
            netloc = f"{netloc}:{port}"
        return parts.scheme, host, netloc, parts.path
    match = _SCP.match(url)
    if match and "/" not in match.group(1):
        return "ssh", match.group(1).lower(), match.group(1).lower(), match.group(2)
    return None


def _path(path: str) -> str:
    path = path.strip("/")
    return path[: -len(".git")] if path.endswith(".git") else path


def status_target(repo_url: str, forge: str = "auto", api_url: str = "", repo: str = "") -> StatusTarget | None:
    """The status target for the source repository ``repo_url``; ``None`` when ``forge`` is
    ``auto`` and the URL names neither github.com nor gitlab.com (nor an explicit target)."""
    if forge not in ("auto", *FORGES):
        raise StatusConfigError(f"--status-forge: {forge!r}: expected auto, github or gitlab")
    found = _remote(repo_url)
    bare = found[1] if found else ""
    host = found[2] if found else ""
    if forge == "auto":
        forge = {"github.com": "github", "gitlab.com": "gitlab"}.get(bare, "")
        if not forge:
            return None
    explicit = bool(repo)
    if not repo:
        if not found:
            raise StatusConfigError(
                "--status-repo: the repository is not a URL of a forge: name it (owner/name or a GitLab project)"
            )
        repo = _path(found[3])
    if forge == "github" and not _GITHUB_REPO.match(repo):
        raise StatusConfigError(f"--status-repo: {repo[:100]!r} is not owner/name")
    if forge == "gitlab":
        project_ref(repo, "--status-repo")
    if not api_url:
        if not host:
            raise StatusConfigError("--status-api-url: needed when the repository is not a URL")
        scheme = "http" if found and found[0] == "http" else "https"
        if forge == "github":
            api_url = "https://api.github.com" if bare == "github.com" else f"{scheme}://{host}/api/v3"
        else:
            api_url = f"{scheme}://{host}/api/v4"
    api = api_base(api_url, "--status-api-url", "GROVE_GITOPS_STATUS_TOKEN", StatusConfigError)
    api_host = origin(api)[1]
    if host and not explicit and api_host not in (bare, f"api.{bare}"):
        raise StatusConfigError(
            f"--status-api-url: host {api_host} is not the repository's ({bare}): "
            "the token goes only to the repository's forge (name the repository with --status-repo to override)"
        )
    return StatusTarget(forge, api, repo)


def description(text: str) -> str:
    """One line of at most :data:`DESCRIPTION_CHARS` characters, controls removed."""
    text = " ".join(_CONTROL.sub(" ", text).split())
    return text if len(text) <= DESCRIPTION_CHARS else text[: DESCRIPTION_CHARS - 1] + "…"


def failure_description(errors: list[str]) -> str:
    """``3 errors: <first>; <second>…`` cut to the limit: the count and the first errors."""
    count = len(errors)
    head = f"{count} error{'s' if count != 1 else ''}: " if count else "failed to render"
    return description(head + "; ".join(errors[:3]))


class StatusClient:
    """Posts :data:`CONTEXT` statuses to one repository."""

    def __init__(self, target: StatusTarget, token: str, timeout: float = 10.0, target_url: str = "") -> None:
        self.target = target
        if target.forge == "github":
            self.http: ForgeHttp = ForgeHttp(
                target.api_url,
                token,
                label="GitHub API",
                url_name="--status-api-url",
                token_name="GROVE_GITOPS_STATUS_TOKEN",
                auth={"Authorization": f"Bearer {token}"},
                headers={"Accept": "application/vnd.github+json", "User-Agent": "grove-gitops"},
                timeout=timeout,
            )
            self._path = f"/repos/{target.repo}/statuses/"
        else:
            self.http = gitlab_http(target.api_url, token, timeout=timeout)
            self._path = f"/projects/{project_ref(target.repo)}/statuses/"
        if target_url:
            parts = urlsplit(target_url)
            if parts.scheme not in ("https", "http") or not parts.hostname or parts.username or parts.password:
                raise StatusConfigError("--status-target-url: expected an http(s) URL without credentials")
        self.target_url = target_url

    def post(self, sha: str, state: str, text: str) -> None:
        """Set the status of ``sha`` (``state``: pending, success or failure)."""
        if not _SHA.match(sha):
            raise ValueError(f"not a commit id: {sha!r}")
        body: dict[str, str] = {"state": _STATES[self.target.forge][state], "description": description(text)}
        body["context" if self.target.forge == "github" else "name"] = CONTEXT
        if self.target_url:
            body["target_url"] = self.target_url
        self.http.request("POST", f"{self.http.api}{self._path}{quote(sha)}", body)
