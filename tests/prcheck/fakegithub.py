"""A fake of the GitHub REST API's issue-comment endpoints, served over real HTTP on localhost.

Enough of GitHub's behaviour for the sticky-comment logic: comments per issue in creation
order, pages of at most ``page_size`` (whatever ``per_page`` asks, so pagination is
exercised with a handful of comments) linked by an absolute ``Link: <...>; rel="next"``
header, bearer-token auth (401 otherwise), 404 for an unknown comment, and ``deny_writes``
to answer writes with 403 as GitHub does for a fork PR's read-only token.

For the token's safety, every request is recorded with the ``Authorization`` it carried
(``requests``), and a fake can misbehave: ``redirect_to`` answers everything with a 302 to
another server, ``link_base`` makes next-page links point elsewhere, ``echo_auth`` makes a
401 quote the request's ``Authorization`` header, and ``replies`` answers a method with a
fixed status and raw body (a dict where a list belongs, a comment without an id, not JSON).

Commit statuses (``POST /repos/{repo}/statuses/{sha}``) are kept in ``statuses``; ``fail``
answers that many requests with a 500 first (a flaky GitHub).
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

from tests.prcheck.fakejson import JsonHandler, serve, shut

BOT = {"login": "github-actions[bot]", "type": "Bot"}
HUMAN = {"login": "octocat", "type": "User"}


@dataclass
class FakeGitHub:
    repo: str = "acme/workloads"
    token: str = "s3cret"
    page_size: int = 2
    deny_writes: bool = False
    comments: dict[int, dict[str, Any]] = field(default_factory=dict)
    calls: list[tuple[str, str]] = field(default_factory=list)
    #: (method, path with query, Authorization header or "") of every request received.
    requests: list[tuple[str, str, str]] = field(default_factory=list)
    redirect_to: str = ""
    link_base: str = ""
    echo_auth: bool = False
    replies: dict[str, tuple[int, bytes]] = field(default_factory=dict)
    statuses: list[dict[str, Any]] = field(default_factory=list)
    fail: int = 0
    next_id: int = 100
    url: str = ""
    _server: ThreadingHTTPServer | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, issue: int, body: str, user: dict[str, str] = BOT) -> int:
        with self.lock:
            self.next_id += 1
            self.comments[self.next_id] = {"id": self.next_id, "issue": issue, "body": body, "user": dict(user)}
            return self.next_id

    def bodies(self, issue: int) -> list[str]:
        return [c["body"] for c in self.comments.values() if c["issue"] == issue]

    def writes(self) -> list[tuple[str, str]]:
        return [c for c in self.calls if c[0] != "GET"]

    def start(self) -> FakeGitHub:
        fake = self

        class Handler(JsonHandler):
            def _handle(self, method: str) -> None:
                parsed = urlparse(self.path)
                fake.calls.append((method, parsed.path))
                auth = self.headers.get("Authorization") or ""
                fake.requests.append((method, self.path, auth))
                if fake.redirect_to:
                    self._send(302, None, {"Location": f"{fake.redirect_to}{self.path}"})
                    return
                if fake.fail > 0:
                    fake.fail -= 1
                    self._send(500, {"message": "Server Error"})
                    return
                if auth != f"Bearer {fake.token}":
                    echo = f" (you sent Authorization: {auth})" if fake.echo_auth else ""
                    self._send(401, {"message": f"Bad credentials{echo}", "documentation_url": auth})
                    return
                if method in fake.replies:
                    code, raw = fake.replies[method]
                    self._drain()
                    self._send(code, raw=raw)
                    return
                if method != "GET" and fake.deny_writes:
                    self._send(403, {"message": "Resource not accessible by integration"})
                    return
                prefix = f"/repos/{fake.repo}/issues/"
                listing = re.fullmatch(re.escape(prefix) + r"(\d+)/comments", parsed.path)
                single = re.fullmatch(re.escape(prefix) + r"comments/(\d+)", parsed.path)
                status = re.fullmatch(rf"/repos/{re.escape(fake.repo)}/statuses/([0-9a-f]{{40}})", parsed.path)
                with fake.lock:
                    if status and method == "POST":
                        data = self._body()
                        if data.get("state") not in ("error", "failure", "pending", "success"):
                            self._send(422, {"message": "Validation Failed"})
                        elif len(data.get("description") or "") > 140:
                            self._send(422, {"message": "description is too long (maximum is 140 characters)"})
                        else:
                            fake.statuses.append({"sha": status.group(1), **data})
                            self._send(201, {"id": len(fake.statuses), "state": data["state"]})
                    elif listing and method == "GET":
                        issue = int(listing.group(1))
                        query = parse_qs(parsed.query)
                        per_page = min(int(query.get("per_page", ["30"])[0]), fake.page_size)
                        page = int(query.get("page", ["1"])[0])
                        items = [c for c in fake.comments.values() if c["issue"] == issue]
                        chunk = items[(page - 1) * per_page : page * per_page]
                        headers = {}
                        if page * per_page < len(items):
                            base = fake.link_base or fake.url
                            nxt = f"{base}{parsed.path}?per_page={per_page}&page={page + 1}"
                            headers["Link"] = f'<{nxt}>; rel="next", <{fake.url}{parsed.path}?page=1>; rel="first"'
                        self._send(200, [_public(c) for c in chunk], headers)
                    elif listing and method == "POST":
                        fake.next_id += 1
                        c = {
                            "id": fake.next_id,
                            "issue": int(listing.group(1)),
                            "body": self._body()["body"],
                            "user": dict(BOT),
                        }
                        fake.comments[fake.next_id] = c
                        self._send(201, _public(c))
                    elif single and int(single.group(1)) not in fake.comments:
                        self._send(404, {"message": "Not Found"})
                    elif single and method == "PATCH":
                        c = fake.comments[int(single.group(1))]
                        c["body"] = self._body()["body"]
                        self._send(200, _public(c))
                    elif single and method == "DELETE":
                        del fake.comments[int(single.group(1))]
                        self._send(204)
                    else:
                        self._send(404, {"message": "Not Found"})

            def do_GET(self) -> None:
                self._handle("GET")

            def do_POST(self) -> None:
                self._handle("POST")

            def do_PATCH(self) -> None:
                self._handle("PATCH")

            def do_DELETE(self) -> None:
                self._handle("DELETE")

        self._server, self.url = serve(Handler)
        return self

    def stop(self) -> None:
        shut(self._server)


def _public(c: dict[str, Any]) -> dict[str, Any]:
    return {"id": c["id"], "body": c["body"], "user": c["user"]}
