"""What the fake forges (GitHub, GitLab) share: a JSON request handler with no log noise, the
server started on a free loopback port, and a fixture-ready ``running`` context."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol, TypeVar


class JsonHandler(BaseHTTPRequestHandler):
    """Answers with a JSON body (or ``raw`` bytes, for a misbehaving forge) and reads one."""

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, data: Any = None, headers: dict[str, str] | None = None, raw: bytes | None = None) -> None:
        if raw is None:
            raw = b"" if data is None else json.dumps(data).encode()
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def _drain(self) -> None:
        """Read the request body unanswered: a server that replies and closes with unread bytes
        makes the kernel reset the connection, and the client may see the reset, not the reply."""
        self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _body(self) -> dict[str, Any]:
        n = int(self.headers.get("Content-Length") or 0)
        data = json.loads(self.rfile.read(n) or b"{}")
        assert isinstance(data, dict)
        return data


def serve(handler: type[BaseHTTPRequestHandler]) -> tuple[ThreadingHTTPServer, str]:
    """A server on a free loopback port, answering in a daemon thread, and its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def shut(server: ThreadingHTTPServer | None) -> None:
    if server is not None:
        server.shutdown()
        server.server_close()


class _Startable(Protocol):
    def stop(self) -> None: ...


F = TypeVar("F", bound=_Startable)


@contextmanager
def running(fake: F) -> Iterator[F]:
    """``fake`` (already started) until the block ends, then stopped: one fixture body."""
    try:
        yield fake
    finally:
        fake.stop()
