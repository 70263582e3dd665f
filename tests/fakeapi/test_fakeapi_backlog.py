"""The fake API server's listen backlog (issue 35.3).

kube-apiserver listens with the kernel's ``somaxconn`` backlog; socketserver's default is 5.
With 5, a client that opens its connection pool at once (the agent's gate-patch workers at its
first release) overflowed the accept queue, and each refused handshake cost the client a SYN-ACK
retransmit: a request of one second instead of milliseconds, which the release benchmark
counted against the agent. Here nothing accepts (the server is never started), so every
connection the kernel completes sits in the accept queue: all of a pool's worth must fit.
"""

from __future__ import annotations

import contextlib
import select
import socket
import time
from typing import Any, cast

from tests.fakeserver.http_server import HttpServer

POOL = 48  # the agent's day-2 and autoscaling workers (16 each) and its watches, at once


def test_a_pool_of_connections_opened_at_once_all_complete_their_handshake() -> None:
    server = HttpServer(("127.0.0.1", 0), app=cast(Any, None))  # listening, never accepting
    port = server.server_address[1]
    clients: list[socket.socket] = []
    try:
        for _ in range(POOL):
            sock = socket.socket()
            sock.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                sock.connect(("127.0.0.1", port))
            clients.append(sock)
        # A handshake the kernel completes does so at once on loopback; one it refuses waits
        # for a retransmit a second later. Wait well short of that, but long enough for a
        # loaded machine to run the kernel's side.
        pending = set(clients)
        deadline = time.monotonic() + 0.5
        while pending and time.monotonic() < deadline:
            _, writable, _ = select.select([], list(pending), [], 0.05)
            pending -= set(writable)
        connected = [s for s in clients if s not in pending and s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0]
        assert len(connected) == POOL, f"{len(connected)} of {POOL} connections completed (listen backlog too small)"
    finally:
        for sock in clients:
            sock.close()
        server.server_close()
