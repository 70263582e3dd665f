"""Failure logs that carry the API server's own words, once per distinct message per interval.

A refused write is only worth a log line if it says *why*: ``403`` alone does not tell an
operator that the ServiceAccount may not update ``podcliquesets/finalizers``; the server's
``message`` does (issue 32). And a loop that retries twice a second must not print the same
line twice a second: each distinct line is logged once per :data:`INTERVAL`, and the next
one after a quiet period says how many copies were left out.

Every failure log of the agent (executor, scaler, watches, leader election, drift, Events)
goes through :class:`RateLimited`; :func:`describe` turns any exception into the text.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable

from kubernetes.client.exceptions import ApiException

INTERVAL = 60.0  # seconds between two copies of the same line
MAX_KEYS = 1024  # distinct lines remembered (bounded: at worst a line is logged again early)
MAX_MESSAGE = 500  # characters of a server message kept in a line


def describe(exc: BaseException) -> str:
    """``403 Forbidden: <the server's message>`` for an :class:`ApiException` (its body's
    ``message`` when it is a Status object, else its reason), ``ClassName: text`` otherwise."""
    if isinstance(exc, ApiException):
        message = ""
        body = exc.body
        if isinstance(body, bytes):
            body = body.decode("utf-8", "replace")
        if isinstance(body, str) and body:
            try:
                parsed = json.loads(body)
            except ValueError:
                parsed = None
            message = str(parsed.get("message") or "") if isinstance(parsed, dict) else body
        head = " ".join(str(p) for p in (exc.status, exc.reason) if p)
        text = f"{head}: {message}" if message and head else (message or head or "API error")
        return text[:MAX_MESSAGE]
    detail = str(exc)
    return f"{type(exc).__name__}: {detail}"[:MAX_MESSAGE] if detail else type(exc).__name__


class RateLimited:
    """A logger front that prints each distinct line at most once per ``interval``."""

    def __init__(self, logger: logging.Logger, interval: float = INTERVAL,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.logger = logger
        self.interval = interval
        self.clock = clock
        self._lock = threading.Lock()
        self._last: dict[str, tuple[float, int]] = {}  # line -> (when logged, copies left out since)

    def log(self, level: int, msg: str, *args: object, key: str | None = None) -> bool:
        """Log ``msg % args`` unless the same line (or ``key``) was logged within the
        interval; True when it was printed."""
        line = msg % args if args else msg
        mark = key if key is not None else line
        now = self.clock()
        with self._lock:
            last = self._last.get(mark)
            if last is not None and now - last[0] < self.interval:
                self._last[mark] = (last[0], last[1] + 1)
                return False
            if len(self._last) >= MAX_KEYS:
                self._last.clear()
            self._last[mark] = (now, 0)
        left_out = last[1] if last is not None else 0
        suffix = f" ({left_out} more like this in the last {self.interval:.0f}s)" if left_out else ""
        self.logger.log(level, "%s%s", line, suffix)
        return True

    def warning(self, msg: str, *args: object, key: str | None = None) -> bool:
        return self.log(logging.WARNING, msg, *args, key=key)

    def info(self, msg: str, *args: object, key: str | None = None) -> bool:
        return self.log(logging.INFO, msg, *args, key=key)


#: The agent's one rate-limited logger (the ``grove_gitops.agent`` logger behind it).
agent_log = RateLimited(logging.getLogger("grove_gitops.agent"))
