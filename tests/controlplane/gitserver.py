"""A Git forge on loopback for the Flux tier (tests/controlplane/test_flux.py): git's own smart-HTTP
CGI program, ``git http-backend``, behind a tiny HTTPS server, run as its own process.

Why a real server and not a ``file://`` URL: Flux's source-controller only clones over http(s) or
ssh, and the grove-gitops controller must push over the same transport it uses against a forge.
Why HTTPS: a rendered wiring's ``repoURL`` must be https or ssh (grove-gitops refuses plain http),
and the GitRepository then trusts the test CA through its ``secretRef`` (``ca.crt``), as a private
forge's users do. Bound to 127.0.0.1 only; every repository under ``--root`` is served, pushes
included (``REMOTE_USER`` is set, which is what ``git http-backend`` asks before it accepts a
push). The port is written to ``--port-file`` once the socket listens.

    python -m tests.controlplane.gitserver --root DIR --cert C --key K --port-file F
"""

from __future__ import annotations

import argparse
import http.server
import os
import ssl
import subprocess
import sys
from pathlib import Path

MAX_BODY = 64 * 1024 * 1024  # a test push is far below this; anything above is refused
GIT_TIMEOUT = 120


class Handler(http.server.BaseHTTPRequestHandler):
    """One CGI call of ``git http-backend`` per request; the response relayed with a length."""

    root: Path

    def do_GET(self) -> None:
        self.cgi()

    def do_POST(self) -> None:
        self.cgi()

    def body(self) -> bytes | None:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":  # git's large pushes
            data = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return bytes(data)
                if len(data) + size > MAX_BODY:
                    return None
                data += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return None if length > MAX_BODY else self.rfile.read(length)

    def cgi(self) -> None:
        path, _, query = self.path.partition("?")
        data = self.body() if self.command == "POST" else b""
        if data is None:
            self.send_error(413)
            return
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG")}
        env.update({
            "GIT_PROJECT_ROOT": str(self.root), "GIT_HTTP_EXPORT_ALL": "1", "REMOTE_USER": "grove-gitops-test",
            "REMOTE_ADDR": self.client_address[0], "REQUEST_METHOD": self.command, "PATH_INFO": path,
            "QUERY_STRING": query, "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(data)), "GATEWAY_INTERFACE": "CGI/1.1", "SERVER_PROTOCOL": "HTTP/1.1",
        })
        for key, value in self.headers.items():  # Content-Encoding (gzip), Git-Protocol (v2), ...
            env["HTTP_" + key.upper().replace("-", "_")] = value
        proc = subprocess.run(["git", "http-backend"], input=data, capture_output=True, env=env, timeout=GIT_TIMEOUT)
        head, sep, payload = proc.stdout.partition(b"\r\n\r\n")
        if not sep:
            head, sep, payload = proc.stdout.partition(b"\n\n")
        if proc.returncode != 0 or not sep:
            sys.stderr.write(f"git http-backend failed ({proc.returncode}) for {self.command} {path}: "
                             f"{proc.stderr.decode(errors='replace')[-2000:]}\n")
            self.send_error(500)
            return
        status, headers = 200, []
        for line in head.decode("latin-1").splitlines():
            key, _, value = line.partition(":")
            if key.lower() == "status":
                status = int(value.split()[0])
            elif key:
                headers.append((key, value.strip()))
        self.send_response(status)
        for key, value in headers:
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--cert", type=Path, required=True)
    parser.add_argument("--key", type=Path, required=True)
    parser.add_argument("--port-file", type=Path, required=True)
    args = parser.parse_args(argv)
    Handler.root = args.root.resolve()
    Handler.protocol_version = "HTTP/1.1"
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(args.cert, args.key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    tmp = args.port_file.with_suffix(".tmp")
    tmp.write_text(str(server.server_address[1]))
    tmp.rename(args.port_file)
    server.serve_forever()  # until SIGTERM (stop_process)
    return 0


if __name__ == "__main__":
    sys.exit(main())
