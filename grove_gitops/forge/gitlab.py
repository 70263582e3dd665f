"""The few GitLab REST calls grove-gitops makes: a merge request's notes (the PR check's
sticky note set) and the user a token belongs to. Commit statuses are
:mod:`grove_gitops.forge.statuses`.

The token goes in ``PRIVATE-TOKEN`` (a project, group or personal access token with the
``api`` scope: ``GITLAB_TOKEN``) or ``JOB-TOKEN`` (``CI_JOB_TOKEN``, whose reach GitLab
limits: most instances refuse it the notes API). Everything about where the token may go is
:mod:`grove_gitops.forge.http`'s. Replies are checked for shape; listings follow GitLab's
``Link: rel="next"`` (or ``X-Next-Page``) for at most :data:`MAX_PAGES` pages.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

from grove_gitops.forge.http import ForgeError, ForgeHttp
from grove_gitops.forge.thread import Comment

DEFAULT_API_URL = "https://gitlab.com/api/v4"
#: GitLab refuses a note longer than this many characters ("Note is too long").
NOTE_LIMIT = 1_000_000
#: Pages of 100 notes followed at most.
MAX_PAGES = 100
#: A project id (``42``) or full path (``group/sub/project``).
#: A page number of ``X-Next-Page``.
_PAGE = re.compile(r"[0-9]{1,9}")
_PROJECT = re.compile(r"^(?:[0-9]{1,19}|[A-Za-z0-9_.][A-Za-z0-9_.-]*(?:/[A-Za-z0-9_.][A-Za-z0-9_.-]*){1,20})$")


class GitLabError(ForgeError):
    """A GitLab API call failed; ``status`` is the HTTP status (0: no answer)."""


def project_ref(project: str, name: str = "CI_PROJECT_ID") -> str:
    """``project`` for a request path: an id as is, a path URL-encoded (``group%2Fproject``);
    anything else (``..``, a query, a space) is refused before it reaches a URL."""
    if not _PROJECT.match(project) or ".." in project:
        raise GitLabError(f"{name}: {project[:100]!r} is not a project id or group/project path")
    return quote(project, safe="")


def gitlab_http(api_url: str, token: str, job_token: bool = False, timeout: float = 30.0) -> ForgeHttp:
    """The shared client set up for GitLab's REST API v4."""
    return ForgeHttp(
        api_url,
        token,
        label="GitLab API",
        url_name="CI_API_V4_URL",
        token_name="CI_JOB_TOKEN" if job_token else "GITLAB_TOKEN",
        auth={"JOB-TOKEN" if job_token else "PRIVATE-TOKEN": token},
        headers={"Accept": "application/json", "User-Agent": "grove-gitops"},
        error=GitLabError,
        timeout=timeout,
    )


def _note(data: Any, call: str) -> Comment:
    if not isinstance(data, dict):
        raise GitLabError(f"GitLab API: {call}: unexpected reply: a note is not an object")
    nid, body, author = data.get("id"), data.get("body"), data.get("author")
    if not isinstance(nid, int) or isinstance(nid, bool) or nid <= 0:
        raise GitLabError(f"GitLab API: {call}: unexpected reply: a note without a numeric id")
    if body is not None and not isinstance(body, str):
        raise GitLabError(f"GitLab API: {call}: unexpected reply: note {nid}: body is not a string")
    if author is not None and not isinstance(author, dict):
        raise GitLabError(f"GitLab API: {call}: unexpected reply: note {nid}: author is not an object")
    username = (author or {}).get("username")
    kind = "System" if data.get("system") is True else "User"
    return Comment(nid, body or "", username if isinstance(username, str) else "", kind)


class GitLab:
    """A client for one merge request's notes (``project``: id or path, ``mr``: its IID)."""

    def __init__(
        self,
        project: str,
        mr: int,
        token: str,
        api_url: str = DEFAULT_API_URL,
        job_token: bool = False,
        timeout: float = 30.0,
    ) -> None:
        if not 0 < mr < 2**63:
            raise GitLabError(f"CI_MERGE_REQUEST_IID: {mr} is not a merge request IID")
        self.project = project_ref(project)
        self.mr = mr
        self.http = gitlab_http(api_url, token, job_token, timeout)
        self.api = self.http.api
        self._notes = f"{self.api}/projects/{self.project}/merge_requests/{mr}/notes"

    def _check(self, issue: int) -> None:
        if issue != self.mr:
            raise ValueError(f"this client keeps the notes of !{self.mr}, not !{issue}")

    def current_user(self) -> str:
        """The username the token acts as (``GET /user``): the author of our notes."""
        data, _ = self.http.request("GET", f"{self.api}/user")
        username = data.get("username") if isinstance(data, dict) else None
        if not isinstance(username, str) or not username:
            raise GitLabError("GitLab API: GET /user: unexpected reply: no username")
        return username

    def _next(self, url: str, headers: dict[str, str]) -> str | None:
        nxt = self.http.next_page(headers.get("link", ""))
        page = headers.get("x-next-page", "").strip()
        if nxt is None and page:  # empty on the last page
            # ASCII digits only: str.isdigit() takes "²", which int() then refuses
            if not _PAGE.fullmatch(page):
                raise GitLabError(f"GitLab API: GET {self.http.where(url)}: X-Next-Page {page[:20]!r} is not a page number")
            base = url.split("&page=")[0]
            nxt = f"{base}&page={int(page)}"
        return nxt

    def list_comments(self, issue: int) -> list[Comment]:
        """Every note of the merge request, oldest first, GitLab's own system notes left out."""
        self._check(issue)
        url: str | None = f"{self._notes}?sort=asc&order_by=created_at&per_page=100"
        out: list[Comment] = []
        seen: set[str] = set()
        while url:
            if url in seen or len(seen) >= MAX_PAGES:
                raise GitLabError(f"GitLab API: listing notes: more than {MAX_PAGES} pages, or a page repeats")
            seen.add(url)
            page, headers = self.http.request("GET", url)
            call = f"GET {self.http.where(url)}"
            if not isinstance(page, list):
                raise GitLabError(f"GitLab API: {call}: unexpected reply: expected a list of notes")
            out += [n for n in (_note(item, call) for item in page) if n.user_type != "System"]
            url = self._next(url, headers)
        return out

    def create_comment(self, issue: int, body: str) -> Comment:
        self._check(issue)
        data, _ = self.http.request("POST", self._notes, {"body": body})
        return _note(data, f"POST {self.http.where(self._notes)}")

    def update_comment(self, comment_id: int, body: str) -> None:
        self.http.request("PUT", f"{self._notes}/{int(comment_id)}", {"body": body})

    def delete_comment(self, comment_id: int) -> None:
        self.http.request("DELETE", f"{self._notes}/{int(comment_id)}")
