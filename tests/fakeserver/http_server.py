"""HTTP/1.1 transport on the standard library's ``ThreadingHTTPServer``.

What matters for the official client: keep-alive with exact ``Content-Length`` (urllib3 pools
connections), chunked transfer for watches with one event per flushed chunk (the client's
``iter_resp_lines`` splits chunks into lines), and a clean terminating chunk when a watch ends
normally versus a cut connection when tests drop watches on purpose.

Boundedness: one thread per connection, each tracked, so :meth:`HttpServer.close_connections`
can shut the sockets and join the threads; idle keep-alive connections time out after
``idle_timeout`` seconds even if nobody stops the server.
"""

from __future__ import annotations

import contextlib
import json
import logging
import select
import socket
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.fakeserver.app import ApiApp, HttpRequest, HttpResponse
from tests.fakeserver.watch import WatchDropped, WatchStream

log = logging.getLogger("tests.fakeserver")
_KNOWN_CODES = {status.value for status in HTTPStatus}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "grove-gitops-fakeapi"
    server: HttpServer

    def setup(self) -> None:
        self.connection = self.request
        self.connection.settimeout(self.server.idle_timeout)  # bounds idle keep-alive connections
        # Small responses on keep-alive connections otherwise stall ~40 ms in Nagle + delayed ACK.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().setup()

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s - %s", self.address_string(), format % args)

    def do_GET(self) -> None:
        self._serve()

    do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_GET

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _serve(self) -> None:
        split = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(split.query, keep_blank_values=True).items()}
        request = HttpRequest(self.command, split.path, query, dict(self.headers.items()), self._read_body())
        response = self.server.app.handle(request)
        if response.stream is not None:
            self._stream(response.stream)
        else:
            self._send(response)

    def _send(self, response: HttpResponse) -> None:
        if isinstance(response.body, str):
            payload = response.body.encode()
            content_type = "text/plain; charset=utf-8"
        else:
            payload = json.dumps(response.body, separators=(",", ":")).encode()
            content_type = "application/json"
        headers = {
            "Content-Type": content_type,
            "Cache-Control": "no-cache, private",
            "Date": self.date_time_string(),
            **response.headers,
            "Content-Length": str(len(payload)),
        }
        reason = HTTPStatus(response.status).phrase if response.status in _KNOWN_CODES else ""
        head = [f"{self.protocol_version} {response.status} {reason}"]
        head += [f"{key}: {value}" for key, value in headers.items()]
        self.log_request(response.status)
        # Headers and body leave in one write (see setup() on why small writes are slow).
        body = payload if self.command != "HEAD" else b""
        self.wfile.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body)

    def _client_gone(self) -> bool:
        """True when the client closed its end (e.g. ``Watch.stop()``), checked without blocking.

        ``poll`` rather than ``select`` (no 1024-fd limit) and rather than a non-blocking
        ``recv``: on a socket with a timeout CPython would wait out that timeout on EAGAIN.
        """
        try:
            poller = select.poll()
            poller.register(self.connection, select.POLLIN | select.POLLHUP | select.POLLERR)
            ready = poller.poll(0)
            if not ready:
                return False
            if any(flags & (select.POLLHUP | select.POLLERR) for _, flags in ready):
                return True
            peeked: bytes = self.connection.recv(1, socket.MSG_PEEK)
            return peeked == b""
        except (OSError, ValueError):
            return True

    def _stream(self, stream: WatchStream) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Cache-Control", "no-cache, private")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        with self.server.track_watch():
            try:
                for line in stream.lines(self._client_gone):
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            except WatchDropped:
                self.close_connection = True
                with contextlib.suppress(OSError):
                    self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:  # the client went away mid-write
                self.close_connection = True


class HttpServer(ThreadingHTTPServer):
    """``ThreadingHTTPServer`` whose connection threads can be shut down and joined."""

    daemon_threads = True
    block_on_close = False
    # The listen backlog. socketserver's default is 5; kube-apiserver (Go) listens with the
    # kernel's somaxconn (4096 here). With 5, a client opening its connection pool at once
    # (the agent's 16 gate-patch workers at the first release) overflowed the accept queue:
    # the kernel dropped the handshake's last ACK and the client's request waited for the
    # SYN-ACK retransmit, a whole second (issue 35.3: three patches of the first gang at
    # 1.02-1.03 s each, the rest at 5-110 ms; TcpExtListenOverflows counted them).
    request_queue_size = 1024

    def __init__(self, address: tuple[str, int], app: ApiApp, idle_timeout: float = 30.0) -> None:
        super().__init__(address, _Handler)
        self.app = app
        self.idle_timeout = idle_timeout
        self._lock = threading.Lock()
        self._connections: dict[threading.Thread, socket.socket] = {}
        self._open_watches = 0

    def process_request(self, request: Any, client_address: Any) -> None:
        thread = threading.Thread(
            target=self._serve_connection,
            args=(request, client_address),
            name="fakeapi-connection",
            daemon=True,
        )
        with self._lock:
            self._connections[thread] = request
        thread.start()

    def _serve_connection(self, request: Any, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except OSError:
            pass  # client disconnects and forced shutdowns are normal here
        except Exception:
            log.exception("fake apiserver connection handler failed")
        finally:
            self.shutdown_request(request)
            with self._lock:
                self._connections.pop(threading.current_thread(), None)

    def track_watch(self) -> _WatchCounter:
        return _WatchCounter(self)

    @property
    def open_watches(self) -> int:
        with self._lock:
            return self._open_watches

    def close_connections(self, timeout: float) -> None:
        """Shut every connection's socket and join its thread (at most ``timeout`` seconds)."""
        with self._lock:
            connections = list(self._connections.items())
        for _, sock in connections:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        deadline = time.monotonic() + timeout
        for thread, _ in connections:
            thread.join(max(0.0, deadline - time.monotonic()))


class _WatchCounter:
    def __init__(self, server: HttpServer) -> None:
        self._server = server

    def __enter__(self) -> None:
        with self._server._lock:
            self._server._open_watches += 1

    def __exit__(self, *exc: object) -> None:
        with self._server._lock:
            self._server._open_watches -= 1
