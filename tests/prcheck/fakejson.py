"""The request handler the fake forges (GitHub, GitLab) share: JSON in, JSON out, no log noise."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any


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

    def _body(self) -> dict[str, Any]:
        n = int(self.headers.get("Content-Length") or 0)
        data = json.loads(self.rfile.read(n) or b"{}")
        assert isinstance(data, dict)
        return data
