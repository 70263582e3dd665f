"""The few GitHub REST calls the PR check makes, on the standard library.

Issue comments only (commit statuses are :mod:`grove_gitops.forge.statuses`): list (every
page, following the ``Link: rel="next"`` header), create, update, delete. The token comes from the environment (``GITHUB_TOKEN``, the Action's
``github-token`` input) and the base URL from ``GITHUB_API_URL`` (GitHub Enterprise Server
sets it; github.com's default otherwise). An HTTP failure is a :class:`GitHubError` naming
the call and GitHub's own message, never a traceback.

The token goes to ``GITHUB_API_URL``'s origin (scheme, host, port) and nowhere else, and is
never printed (the rules live in :mod:`grove_gitops.forge.http`, shared with GitLab):

* urllib follows redirects and keeps ``Authorization`` across hosts: a redirect to another
  origin is refused (:class:`_SameOriginRedirects`), and so is a ``next`` page link to one;
* an error names the call by its path and quotes only GitHub's JSON ``message`` (cut short,
  the token masked), never a raw response body: a 401 page may echo the request headers;
* ``GITHUB_API_URL`` may not carry credentials (``https://user:token@host``), so no error
  message can print them;
* a reply of an unexpected shape (not JSON, a dict where a list belongs, a comment without
  an id) is a :class:`GitHubError` too. Replies and page counts are bounded.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

from grove_gitops.forge import http
from grove_gitops.forge.http import ForgeError, Origin, SameOriginRedirects, api_base, origin
from grove_gitops.forge.thread import Comment

DEFAULT_API_URL = "https://api.github.com"
#: A reply larger than this is refused (100 comments of 65,536 characters are ~7 MB).
MAX_REPLY_BYTES = http.MAX_REPLY_BYTES
#: Pages of 100 comments followed at most (a PR with more is not one the check can keep tidy).
MAX_PAGES = 100
#: GitHub's ``message`` is quoted up to this many characters.
MESSAGE_CHARS = http.MESSAGE_CHARS
_origin = origin


class GitHubError(ForgeError):
    """A GitHub API call failed; ``status`` is the HTTP status (0: no answer)."""


def _api_base(api_url: str) -> str:
    return api_base(api_url, "GITHUB_API_URL", "GITHUB_TOKEN", GitHubError)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _comment(data: Any, call: str) -> Comment:
    """A comment of a reply, checked: an integer id, a string body, a user object or null."""
    if not isinstance(data, dict):
        raise GitHubError(f"GitHub API: {call}: unexpected reply: a comment is not an object")
    cid, body, user = data.get("id"), data.get("body"), data.get("user")
    if not isinstance(cid, int) or isinstance(cid, bool) or cid <= 0:
        raise GitHubError(f"GitHub API: {call}: unexpected reply: a comment without a numeric id")
    if body is not None and not isinstance(body, str):
        raise GitHubError(f"GitHub API: {call}: unexpected reply: comment {cid}: body is not a string")
    if user is not None and not isinstance(user, dict):
        raise GitHubError(f"GitHub API: {call}: unexpected reply: comment {cid}: user is not an object")
    user = user or {}
    return Comment(cid, body or "", _text(user.get("login")), _text(user.get("type")))


class _SameOriginRedirects(SameOriginRedirects):
    """:class:`~grove_gitops.forge.http.SameOriginRedirects` raising :class:`GitHubError`."""

    def __init__(self, api_origin: Origin) -> None:
        super().__init__(api_origin, "GitHub API", GitHubError)


def github_http(api_url: str, token: str, timeout: float = 30.0) -> http.ForgeHttp:
    """The shared client set up for GitHub's REST API (headers, bearer token, messages)."""
    base = _api_base(api_url)
    return http.ForgeHttp(
        base,
        token,
        label="GitHub API",
        url_name="GITHUB_API_URL",
        token_name="GITHUB_TOKEN",
        auth={"Authorization": f"Bearer {token}"},
        headers={
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": "grove-gitops",
        },
        error=GitHubError,
        timeout=timeout,
        redirects=_SameOriginRedirects(origin(base)),
    )


class GitHub:
    """A client for one repository (``owner/name``)."""

    def __init__(self, repository: str, token: str, api_url: str = DEFAULT_API_URL, timeout: float = 30.0) -> None:
        if not re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", repository):
            raise GitHubError(f"GITHUB_REPOSITORY: {repository!r} is not owner/name")
        self.repo = repository
        self.token = token
        self.http = github_http(api_url, token, timeout)
        self.api = self.http.api
        self.origin = self.http.origin
        self.timeout = timeout

    def redact(self, text: str) -> str:
        """``text`` with the token masked (GitHub's messages can quote the request)."""
        return self.http.redact(text)

    def _where(self, url: str) -> str:
        return self.http.where(url)

    def _request(self, method: str, url: str, body: dict[str, Any] | None = None) -> tuple[Any, dict[str, str]]:
        return self.http.request(method, url, body, MAX_REPLY_BYTES)

    def _next_page(self, link: str) -> str | None:
        """The ``next`` link, when it is a page of this API: another host would get the token."""
        return self.http.next_page(link)

    def list_comments(self, issue: int) -> list[Comment]:
        """Every comment of the PR, over as many pages as GitHub returns (at most MAX_PAGES)."""
        url: str | None = f"{self.api}/repos/{self.repo}/issues/{issue}/comments?per_page=100"
        out: list[Comment] = []
        seen: set[str] = set()
        while url:
            if url in seen or len(seen) >= MAX_PAGES:
                raise GitHubError(f"GitHub API: listing comments: more than {MAX_PAGES} pages, or a page repeats")
            seen.add(url)
            page, headers = self._request("GET", url)
            if not isinstance(page, list):
                raise GitHubError(f"GitHub API: GET {self._where(url)}: unexpected reply: expected a list of comments")
            out += [_comment(c, f"GET {self._where(url)}") for c in page]
            url = self._next_page(headers.get("link", ""))
        return out

    def create_comment(self, issue: int, body: str) -> Comment:
        path = f"/repos/{self.repo}/issues/{issue}/comments"
        data, _ = self._request("POST", f"{self.api}{path}", {"body": body})
        return _comment(data, f"POST {path}")

    def update_comment(self, comment_id: int, body: str) -> None:
        self._request("PATCH", f"{self.api}/repos/{self.repo}/issues/comments/{quote(str(comment_id))}", {"body": body})

    def delete_comment(self, comment_id: int) -> None:
        self._request("DELETE", f"{self.api}/repos/{self.repo}/issues/comments/{quote(str(comment_id))}")
