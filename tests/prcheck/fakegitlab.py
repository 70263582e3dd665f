"""A fake of GitLab's REST API v4 (merge request notes, the current user, commit statuses),
served over real HTTP on localhost.

Enough of GitLab's behaviour for the sticky note set and the controller's commit statuses:
notes per merge request in creation order, pages of at most ``page_size`` linked by an
absolute ``Link: <...>; rel="next"`` header (and ``X-Next-Page``), ``PRIVATE-TOKEN`` or
``JOB-TOKEN`` auth (401 ``{"message": "401 Unauthorized"}`` otherwise), only a note's author
may edit or delete it (403), system notes, and ``POST /projects/:id/statuses/:sha``.

Every request is recorded with its token headers (``requests``); ``redirect_to`` answers
everything with a 302 to another server, ``fail`` answers a number of requests with 500
first, ``replies`` answers a method with a fixed status and raw body.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

from tests.prcheck.fakejson import JsonHandler, serve, shut

BOT = "project_42_bot_0123"
HUMAN = "alice"


@dataclass
class FakeGitLab:
    project: str = "acme/workloads"
    project_id: int = 42
    token: str = "glpat-s3cret"
    job_token: str = ""
    user: str = BOT
    page_size: int = 2
    prefix: str = "/api/v4"
    notes: dict[int, dict[str, Any]] = field(default_factory=dict)
    statuses: list[dict[str, Any]] = field(default_factory=list)
    #: (method, path with query, token header as "NAME: value" or "") of every request.
    requests: list[tuple[str, str, str]] = field(default_factory=list)
    redirect_to: str = ""
    fail: int = 0
    replies: dict[str, tuple[int, bytes]] = field(default_factory=dict)
    #: Headers sent with every ``replies`` answer (a misbehaving ``X-Next-Page``).
    reply_headers: dict[str, str] = field(default_factory=dict)
    next_id: int = 500
    url: str = ""
    _server: ThreadingHTTPServer | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def api(self) -> str:
        return f"{self.url}{self.prefix}"

    def add(self, mr: int, body: str, author: str = BOT, system: bool = False) -> int:
        with self.lock:
            self.next_id += 1
            self.notes[self.next_id] = {"id": self.next_id, "mr": mr, "body": body, "author": author, "system": system}
            return self.next_id

    def bodies(self, mr: int) -> list[str]:
        return [n["body"] for n in self.notes.values() if n["mr"] == mr and not n["system"]]

    def writes(self) -> list[tuple[str, str, str]]:
        return [r for r in self.requests if r[0] != "GET"]

    def start(self) -> FakeGitLab:
        fake = self

        class Handler(JsonHandler):
            def _project_ok(self, ref: str) -> bool:
                return unquote(ref) in (fake.project, str(fake.project_id))

            def _handle(self, method: str) -> None:
                parsed = urlparse(self.path)
                private, job = self.headers.get("PRIVATE-TOKEN"), self.headers.get("JOB-TOKEN")
                sent = f"PRIVATE-TOKEN: {private}" if private else f"JOB-TOKEN: {job}" if job else ""
                sent += " Authorization: " + self.headers["Authorization"] if self.headers.get("Authorization") else ""
                with fake.lock:
                    fake.requests.append((method, self.path, sent))
                    failing = fake.fail > 0
                    fake.fail -= 1 if failing else 0
                if fake.redirect_to:
                    self._send(302, None, {"Location": f"{fake.redirect_to}{self.path}"})
                    return
                if failing:
                    self._send(500, {"message": "500 Internal Server Error"})
                    return
                if not ((private and private == fake.token) or (job and fake.job_token and job == fake.job_token)):
                    self._send(401, {"message": "401 Unauthorized"})
                    return
                if method in fake.replies:
                    status, raw = fake.replies[method]
                    self._drain()
                    self._send(status, headers=fake.reply_headers, raw=raw)
                    return
                path = parsed.path[len(fake.prefix) :] if parsed.path.startswith(fake.prefix) else ""
                # The raw path: a project path arrives URL-encoded (group%2Fproject).
                raw_path = self.path.split("?")[0][len(fake.prefix) :]
                notes = re.fullmatch(r"/projects/([^/]+)/merge_requests/(\d+)/notes", raw_path)
                note = re.fullmatch(r"/projects/([^/]+)/merge_requests/(\d+)/notes/(\d+)", raw_path)
                status = re.fullmatch(r"/projects/([^/]+)/statuses/([0-9a-f]{40})", raw_path)
                with fake.lock:
                    if path == "/user" and method == "GET":
                        self._send(200, {"id": 7, "username": fake.user, "bot": True})
                    elif status and method == "POST" and self._project_ok(status.group(1)):
                        data = self._body()
                        if data.get("state") not in ("pending", "running", "success", "failed", "canceled"):
                            self._send(400, {"message": "state does not have a valid value"})
                            return
                        fake.statuses.append({"sha": status.group(2), **data})
                        self._send(201, {"id": len(fake.statuses), "status": data["state"]})
                    elif notes and method == "GET" and self._project_ok(notes.group(1)):
                        mr = int(notes.group(2))
                        query = parse_qs(parsed.query)
                        per_page = min(int(query.get("per_page", ["20"])[0]), fake.page_size)
                        page = int(query.get("page", ["1"])[0])
                        items = [n for n in fake.notes.values() if n["mr"] == mr]
                        chunk = items[(page - 1) * per_page : page * per_page]
                        headers = {}
                        if page * per_page < len(items):
                            nxt = f"{fake.url}{parsed.path}?per_page={per_page}&page={page + 1}"
                            headers["Link"] = f'<{nxt}>; rel="next", <{fake.url}{parsed.path}?page=1>; rel="first"'
                            headers["X-Next-Page"] = str(page + 1)
                        self._send(200, [_public(n) for n in chunk], headers)
                    elif notes and method == "POST" and self._project_ok(notes.group(1)):
                        body = self._body()["body"]
                        if len(body) > 1_000_000:
                            self._send(400, {"message": {"note": ["is too long (maximum is 1000000 characters)"]}})
                            return
                        fake.next_id += 1
                        n = {"id": fake.next_id, "mr": int(notes.group(2)), "body": body, "author": fake.user,
                             "system": False}
                        fake.notes[fake.next_id] = n
                        self._send(201, _public(n))
                    elif note and self._project_ok(note.group(1)) and int(note.group(3)) in fake.notes:
                        n = fake.notes[int(note.group(3))]
                        if n["author"] != fake.user:
                            self._send(403, {"message": "403 Forbidden"})
                        elif method == "PUT":
                            n["body"] = self._body()["body"]
                            self._send(200, _public(n))
                        elif method == "DELETE":
                            del fake.notes[n["id"]]
                            self._send(204)
                        else:
                            self._send(405, {"message": "405 Method Not Allowed"})
                    else:
                        self._send(404, {"message": "404 Not found"})

            def do_GET(self) -> None:
                self._handle("GET")

            def do_POST(self) -> None:
                self._handle("POST")

            def do_PUT(self) -> None:
                self._handle("PUT")

            def do_DELETE(self) -> None:
                self._handle("DELETE")

        self._server, self.url = serve(Handler)
        return self

    def stop(self) -> None:
        shut(self._server)


def _public(n: dict[str, Any]) -> dict[str, Any]:
    return {"id": n["id"], "body": n["body"], "author": {"username": n["author"]}, "system": n["system"]}
