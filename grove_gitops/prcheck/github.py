"""The few GitHub REST calls the PR check makes, on the standard library.

Issue comments only: list (every page, following the ``Link: rel="next"`` header), create,
update, delete. The token comes from the environment (``GITHUB_TOKEN``, the Action's
``github-token`` input) and the base URL from ``GITHUB_API_URL`` (GitHub Enterprise Server
sets it; github.com's default otherwise). An HTTP failure is a :class:`GitHubError` naming
the call and GitHub's own message, never a traceback.

The token goes to ``GITHUB_API_URL``'s origin (scheme, host, port) and nowhere else, and is
never printed:

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

import json
import re
import urllib.error
import urllib.request
from dataclasses import dataclass
from http.client import HTTPMessage
from typing import IO, Any
from urllib.parse import quote, urlsplit

from grove_gitops.errors import GroveGitopsError

DEFAULT_API_URL = "https://api.github.com"
_NEXT = re.compile(r'<([^>]+)>\s*;\s*rel="next"')
#: A reply larger than this is refused (100 comments of 65,536 characters are ~7 MB).
MAX_REPLY_BYTES = 16 * 1024 * 1024
#: An error body is read this far, for its ``message`` only.
MAX_ERROR_BYTES = 64 * 1024
#: Pages of 100 comments followed at most (a PR with more is not one the check can keep tidy).
MAX_PAGES = 100
#: Hosts plain http may be used with (a local proxy or a test server).
_LOOPBACK = ("localhost", "127.0.0.1", "::1")
#: GitHub's ``message`` is quoted up to this many characters.
MESSAGE_CHARS = 300


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


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = -1
    default = {"https": 443, "http": 80}.get(parts.scheme.lower())
    return parts.scheme.lower(), (parts.hostname or "").lower(), port if port is not None else default


def _api_base(api_url: str) -> str:
    """``GITHUB_API_URL`` checked: http(s), a host, no credentials, query or fragment. The
    message never repeats the URL (it may hold a token)."""
    try:
        parts = urlsplit(api_url.strip())
        port_ok = parts.port is None or 0 < parts.port < 65536
    except ValueError:
        raise GitHubError("GITHUB_API_URL: not a URL") from None
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise GitHubError("GITHUB_API_URL: credentials in the URL are refused (the token goes in GITHUB_TOKEN)")
    if parts.scheme.lower() not in ("https", "http") or not parts.hostname or not port_ok:
        raise GitHubError("GITHUB_API_URL: expected an http(s) URL with a host")
    if parts.scheme.lower() == "http" and parts.hostname not in _LOOPBACK:
        raise GitHubError(
            "GITHUB_API_URL: plain http only to this machine (the token would cross the network in clear)"
        )
    if parts.query or parts.fragment:
        raise GitHubError("GITHUB_API_URL: expected a URL without a query or fragment")
    return api_url.strip().rstrip("/")


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


class _SameOriginRedirects(urllib.request.HTTPRedirectHandler):
    """Follow a redirect only within the API's origin: urllib would send the
    ``Authorization`` header along to any host a redirect names."""

    def __init__(self, origin: tuple[str, str, int | None]) -> None:
        super().__init__()
        self.origin = origin

    def redirect_request(
        self, req: urllib.request.Request, fp: IO[bytes], code: int, msg: str, headers: HTTPMessage, newurl: str
    ) -> urllib.request.Request | None:
        if _origin(newurl) != self.origin:
            fp.close()
            raise GitHubError(f"GitHub API: a {code} redirect to another host ({_origin(newurl)[1]}) is refused", code)
        return super().redirect_request(req, fp, code, msg, headers, newurl)


class GitHub:
    """A client for one repository (``owner/name``)."""

    def __init__(self, repository: str, token: str, api_url: str = DEFAULT_API_URL, timeout: float = 30.0) -> None:
        if not re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", repository):
            raise GitHubError(f"GITHUB_REPOSITORY: {repository!r} is not owner/name")
        if any(ch in token for ch in "\r\n\0"):
            raise GitHubError("GITHUB_TOKEN: holds a line break or NUL")
        self.repo = repository
        self.token = token
        self.api = _api_base(api_url)
        self.origin = _origin(self.api)
        self.timeout = timeout
        self._opener = urllib.request.build_opener(_SameOriginRedirects(self.origin))

    def redact(self, text: str) -> str:
        """``text`` with the token masked (GitHub's messages can quote the request)."""
        return text.replace(self.token, "***") if len(self.token) >= 4 else text

    def _where(self, url: str) -> str:
        return url[len(self.api) :] if url.startswith(self.api) else url

    def _error_message(self, exc: urllib.error.HTTPError) -> str:
        """GitHub's JSON ``message``, short and masked; never the raw body."""
        try:
            raw = exc.read(MAX_ERROR_BYTES)
            data = json.loads(raw)
        except (OSError, ValueError):
            return "(no JSON message)"
        message = data.get("message") if isinstance(data, dict) else None
        if not isinstance(message, str):
            return "(no JSON message)"
        message = " ".join(self.redact(message).split())
        return message[:MESSAGE_CHARS] + ("…" if len(message) > MESSAGE_CHARS else "")

    def _request(self, method: str, url: str, body: dict[str, Any] | None = None) -> tuple[Any, dict[str, str]]:
        call = f"{method} {self._where(url)}"
        if _origin(url) != self.origin:  # nothing built from a reply may take the token elsewhere
            raise GitHubError(f"GitHub API: {method}: refusing a URL on another host ({_origin(url)[1]})")
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
            with self._opener.open(req, timeout=self.timeout) as resp:
                raw = resp.read(MAX_REPLY_BYTES + 1)
                headers = {k.lower(): v for k, v in resp.headers.items()}
        # ``from None``: a chained cause would carry the response (its body may echo the token)
        # into any traceback.
        except urllib.error.HTTPError as exc:
            with exc:
                raise GitHubError(f"GitHub API: {call}: {exc.code} {self._error_message(exc)}", exc.code) from None
        except urllib.error.URLError as exc:
            raise GitHubError(self.redact(f"GitHub API: {call}: {self.api}: {exc.reason}")) from None
        except (OSError, ValueError) as exc:  # a reset connection, a malformed reply
            raise GitHubError(self.redact(f"GitHub API: {call}: {self.api}: {exc}")) from None
        if len(raw) > MAX_REPLY_BYTES:
            raise GitHubError(f"GitHub API: {call}: the reply is larger than {MAX_REPLY_BYTES} bytes")
        if not raw:
            return None, headers
        try:
            return json.loads(raw), headers
        except ValueError:
            raise GitHubError(f"GitHub API: {call}: the reply is not JSON") from None

    def _next_page(self, link: str) -> str | None:
        """The ``next`` link, when it is a page of this API: another host would get the token."""
        match = _NEXT.search(link)
        if not match:
            return None
        url = match.group(1).strip()
        if _origin(url) != self.origin or not urlsplit(url).path.startswith(urlsplit(self.api).path + "/"):
            raise GitHubError(f"GitHub API: refusing a next-page link to another host ({_origin(url)[1]})")
        return url

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
