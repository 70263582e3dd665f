"""The few GitHub REST calls the PR check makes, on the standard library.

Issue comments only: list (every page, following the ``Link: rel="next"`` header), create,
update, delete. The token comes from the environment (``GITHUB_TOKEN``, the Action's
``github-token`` input) and the base URL from ``GITHUB_API_URL`` (GitHub Enterprise Server
sets it; github.com's default otherwise). An HTTP failure is a :class:`GitHubError` naming
the call and GitHub's own message, never a traceback.
"""

from __future__ import annotations

import contextlib
import json
import re
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from grove_gitops.errors import GroveGitopsError

DEFAULT_API_URL = "https://api.github.com"
_NEXT = re.compile(r'<([^>]+)>\s*;\s*rel="next"')


class GitHubError(GroveGitopsError):
    """A GitHub API call failed; ``status`` is the HTTP status (0: no answer)."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Comment:
    id: int
    body: str
    login: str
    user_type: str


def _comment(data: Any) -> Comment:
    user = data.get("user") or {}
    return Comment(
        int(data["id"]), str(data.get("body") or ""), str(user.get("login") or ""), str(user.get("type") or "")
    )


class GitHub:
    """A client for one repository (``owner/name``)."""

    def __init__(self, repository: str, token: str, api_url: str = DEFAULT_API_URL, timeout: float = 30.0) -> None:
        if not re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", repository):
            raise GitHubError(f"GITHUB_REPOSITORY: {repository!r} is not owner/name")
        self.repo = repository
        self.token = token
        self.api = api_url.rstrip("/")
        self.timeout = timeout

    def _request(self, method: str, url: str, body: dict[str, Any] | None = None) -> tuple[Any, dict[str, str]]:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(url, data=data, method=method)
        req.add_header("Accept", "application/vnd.github+json")
        req.add_header("X-GitHub-Api-Version", "2022-11-28")
        req.add_header("User-Agent", "grove-gitops-pr-check")
        if self.token:
            req.add_header("Authorization", f"Bearer {self.token}")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                raw = resp.read()
                headers = {k.lower(): v for k, v in resp.headers.items()}
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode("utf-8", "replace")
            with contextlib.suppress(ValueError, AttributeError):
                detail = str(json.loads(detail).get("message", detail))
            path = url[len(self.api) :] if url.startswith(self.api) else url
            raise GitHubError(f"GitHub API: {method} {path}: {exc.code} {detail}".rstrip(), exc.code) from exc
        except (urllib.error.URLError, OSError) as exc:
            raise GitHubError(f"GitHub API: {method} {url}: {exc}") from exc
        if not raw:
            return None, headers
        try:
            return json.loads(raw), headers
        except ValueError as exc:
            raise GitHubError(f"GitHub API: {method} {url}: the answer is not JSON") from exc

    def list_comments(self, issue: int) -> list[Comment]:
        """Every comment of the PR, over as many pages as GitHub returns."""
        url: str | None = f"{self.api}/repos/{self.repo}/issues/{issue}/comments?per_page=100"
        out: list[Comment] = []
        while url:
            page, headers = self._request("GET", url)
            if not isinstance(page, list):
                raise GitHubError(f"GitHub API: GET {url}: expected a list of comments")
            out += [_comment(c) for c in page]
            match = _NEXT.search(headers.get("link", ""))
            url = match.group(1) if match else None
        return out

    def create_comment(self, issue: int, body: str) -> Comment:
        data, _ = self._request("POST", f"{self.api}/repos/{self.repo}/issues/{issue}/comments", {"body": body})
        return _comment(data)

    def update_comment(self, comment_id: int, body: str) -> None:
        self._request("PATCH", f"{self.api}/repos/{self.repo}/issues/comments/{quote(str(comment_id))}", {"body": body})

    def delete_comment(self, comment_id: int) -> None:
        self._request("DELETE", f"{self.api}/repos/{self.repo}/issues/comments/{quote(str(comment_id))}")
