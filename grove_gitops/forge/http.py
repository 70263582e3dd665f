"""The one HTTP client of the forge APIs: a token that reaches its host and nowhere else.

GitHub's issue comments and commit statuses and GitLab's notes and commit statuses all go
through :class:`ForgeHttp`, so each rule below is written once:

* the API base URL is checked (:func:`api_base`): http(s) with a host, no credentials, query
  or fragment, and plain http only to this machine (a local proxy or a test server), so the
  token never crosses the network in clear and no message can print a URL's password;
* urllib follows redirects and keeps ``Authorization`` across hosts: a redirect to another
  origin is refused (:class:`SameOriginRedirects`), and so is any URL built from a reply (a
  next-page link) that leaves the API;
* an error names the call by its path and quotes only the forge's JSON ``message`` (cut short,
  the token masked), never a raw body: a 401 page may echo the request headers; a chained
  cause is dropped for the same reason;
* replies are bounded (:data:`MAX_REPLY_BYTES`) and must be JSON that Python can decode (a
  reply nested past the interpreter's recursion limit is an error of the forge, not a crash).
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from collections.abc import Mapping
from http.client import HTTPMessage
from typing import IO, Any
from urllib.parse import urlsplit

from grove_gitops.errors import GroveGitopsError

#: A reply larger than this is refused (100 comments of 65,536 characters are ~7 MB).
MAX_REPLY_BYTES = 16 * 1024 * 1024
#: An error body is read this far, for its ``message`` only.
MAX_ERROR_BYTES = 64 * 1024
#: The forge's ``message`` is quoted up to this many characters.
MESSAGE_CHARS = 300
#: Hosts plain http may be used with (a local proxy or a test server).
LOOPBACK = ("localhost", "127.0.0.1", "::1")
_NEXT = re.compile(r'<([^>]+)>\s*;\s*rel="next"')

Origin = tuple[str, str, int | None]


class ForgeError(GroveGitopsError):
    """A forge API call failed; ``status`` is the HTTP status (0: no answer)."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


def origin(url: str) -> Origin:
    """(scheme, host, port) with the scheme's default port filled in; port -1 when invalid."""
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = -1
    default = {"https": 443, "http": 80}.get(parts.scheme.lower())
    return parts.scheme.lower(), (parts.hostname or "").lower(), port if port is not None else default


def api_base(api_url: str, name: str, token_name: str, error: type[ForgeError] = ForgeError) -> str:
    """``api_url`` checked (see the module) without a trailing slash; ``name`` is what the
    user set (``GITHUB_API_URL``, ``--status-api-url``). The message never repeats the URL
    (it may hold a token)."""
    try:
        parts = urlsplit(api_url.strip())
        port_ok = parts.port is None or 0 < parts.port < 65536
    except ValueError:
        raise error(f"{name}: not a URL") from None
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise error(f"{name}: credentials in the URL are refused (the token goes in {token_name})")
    if parts.scheme.lower() not in ("https", "http") or not parts.hostname or not port_ok:
        raise error(f"{name}: expected an http(s) URL with a host")
    if parts.scheme.lower() == "http" and parts.hostname not in LOOPBACK:
        raise error(f"{name}: plain http only to this machine (the token would cross the network in clear)")
    if parts.query or parts.fragment:
        raise error(f"{name}: expected a URL without a query or fragment")
    return api_url.strip().rstrip("/")


class SameOriginRedirects(urllib.request.HTTPRedirectHandler):
    """Follow a redirect only within the API's origin: urllib would send the
    ``Authorization`` header along to any host a redirect names."""

    def __init__(self, api_origin: Origin, label: str = "forge API", error: type[ForgeError] = ForgeError) -> None:
        super().__init__()
        self.origin = api_origin
        self.label = label
        self.error = error

    def redirect_request(
        self, req: urllib.request.Request, fp: IO[bytes], code: int, msg: str, headers: HTTPMessage, newurl: str
    ) -> urllib.request.Request | None:
        if origin(newurl) != self.origin:
            fp.close()
            raise self.error(f"{self.label}: a {code} redirect to another host ({origin(newurl)[1]}) is refused", code)
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def _message(data: Any) -> str | None:
    """The forge's own words: GitHub's ``message``; GitLab's ``message`` (a string, or
    field errors as an object) or ``error``."""
    if not isinstance(data, dict):
        return None
    message = data.get("message")
    if isinstance(message, str):
        return message
    if isinstance(message, dict | list):
        return json.dumps(message, sort_keys=True)
    error = data.get("error")
    return error if isinstance(error, str) else None


class ForgeHttp:
    """Requests to one API base URL with one token.

    ``auth`` is the header carrying the token (``("Authorization", "Bearer …")``,
    ``("PRIVATE-TOKEN", …)``); ``label`` opens every error message (``GitHub API``).
    """

    def __init__(
        self,
        api_url: str,
        token: str,
        *,
        label: str,
        url_name: str,
        token_name: str,
        auth: Mapping[str, str],
        headers: Mapping[str, str] | None = None,
        error: type[ForgeError] = ForgeError,
        timeout: float = 30.0,
        redirects: urllib.request.HTTPRedirectHandler | None = None,
    ) -> None:
        if any(ch in token for ch in "\r\n\0"):
            raise error(f"{token_name}: holds a line break or NUL")
        self.label = label
        self.error = error
        self.token = token
        self.api = api_base(api_url, url_name, token_name, error)
        self.origin = origin(self.api)
        self.timeout = timeout
        self.auth = dict(auth) if token else {}
        self.headers = dict(headers or {})
        self._opener = urllib.request.build_opener(redirects or SameOriginRedirects(self.origin, label, error))

    def redact(self, text: str) -> str:
        """``text`` with the token masked (a forge's message can quote the request)."""
        return text.replace(self.token, "***") if len(self.token) >= 4 else text

    def where(self, url: str) -> str:
        return url[len(self.api) :] if url.startswith(self.api) else url

    def _error_message(self, exc: urllib.error.HTTPError) -> str:
        """The forge's JSON message, short and masked; never the raw body."""
        try:
            message = _message(json.loads(exc.read(MAX_ERROR_BYTES)))
        except (OSError, ValueError, RecursionError):
            return "(no JSON message)"
        if message is None:
            return "(no JSON message)"
        message = " ".join(self.redact(message).split())
        return message[:MESSAGE_CHARS] + ("…" if len(message) > MESSAGE_CHARS else "")

    def request(
        self, method: str, url: str, body: Mapping[str, Any] | None = None, max_reply: int = MAX_REPLY_BYTES
    ) -> tuple[Any, dict[str, str]]:
        """(the reply's JSON or ``None`` when empty, the reply's headers lower-cased)."""
        call = f"{method} {self.where(url)}"
        if origin(url) != self.origin:  # nothing built from a reply may take the token elsewhere
            raise self.error(f"{self.label}: {method}: refusing a URL on another host ({origin(url)[1]})")
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(url, data=data, method=method)
        for key, value in {**self.headers, **self.auth}.items():
            req.add_header(key, value)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with self._opener.open(req, timeout=self.timeout) as resp:
                raw = resp.read(max_reply + 1)
                headers = {k.lower(): v for k, v in resp.headers.items()}
        # ``from None``: a chained cause would carry the response (its body may echo the token)
        # into any traceback.
        except urllib.error.HTTPError as exc:
            with exc:
                message = self._error_message(exc)  # GitLab's own start with the status: "401 Unauthorized"
                message = message if message.startswith(f"{exc.code} ") else f"{exc.code} {message}"
                raise self.error(f"{self.label}: {call}: {message}", exc.code) from None
        except urllib.error.URLError as exc:
            raise self.error(self.redact(f"{self.label}: {call}: {self.api}: {exc.reason}")) from None
        except (OSError, ValueError) as exc:  # a reset connection, a malformed reply
            raise self.error(self.redact(f"{self.label}: {call}: {self.api}: {exc}")) from None
        if len(raw) > max_reply:
            raise self.error(f"{self.label}: {call}: the reply is larger than {max_reply} bytes")
        if not raw:
            return None, headers
        try:
            return json.loads(raw), headers
        except ValueError:
            raise self.error(f"{self.label}: {call}: the reply is not JSON") from None
        except RecursionError:  # Python's decoder recurses once per level: [[[[... 100,000 deep
            raise self.error(f"{self.label}: {call}: the reply is nested too deeply") from None

    def next_page(self, link: str) -> str | None:
        """The ``Link: rel="next"`` URL, when it is a page of this API: another host would get
        the token."""
        match = _NEXT.search(link)
        if not match:
            return None
        url = match.group(1).strip()
        if origin(url) != self.origin or not urlsplit(url).path.startswith(urlsplit(self.api).path + "/"):
            raise self.error(f"{self.label}: refusing a next-page link to another host ({origin(url)[1]})")
        return url
