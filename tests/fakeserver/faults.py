"""Fault injection and the request log: how tests make the API misbehave and count calls.

A controller's error paths (a 409 on the gate patch, a 500 during list, a slow API) are exactly
the code that never runs against a healthy server. :class:`FaultInjector` lets a test schedule
such failures per verb/resource/name; the injected response is a real ``Status`` body with the
real message shape, so the client cannot tell it from a genuine error. :class:`RequestLog`
records every request so a test can assert e.g. "exactly one PATCH per pod".
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import NamedTuple

from tests.fakeserver.routing import RequestInfo

VERBS = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection")
_ALIASES = {"replace": "update", "put": "update", "read": "get", "post": "create"}


def _canonical_verb(verb: str | None) -> str | None:
    if verb is None:
        return None
    canonical = _ALIASES.get(verb.lower(), verb.lower())
    if canonical not in VERBS:
        raise ValueError(f"unknown verb {verb!r}; use one of {', '.join(VERBS)}")
    return canonical


@dataclass(eq=False)  # identity, so two identical faults stay distinct
class Fault:
    """One scheduled misbehaviour. ``times=None`` means every matching request.

    ``resource`` is ``"pods"`` (main resource only), ``"pods/status"`` (the subresource) or a
    group-qualified ``"podgangs.scheduler.grove.io"``; ``None`` matches anything. ``status=None``
    with a ``delay`` only slows the request down.
    """

    verb: str | None = None
    resource: str | None = None
    namespace: str | None = None
    name: str | None = None
    status: int | None = 500
    times: int | None = 1
    delay: float = 0.0
    message: str | None = None
    retry_after: int | None = None
    hits: int = field(default=0)
    #: The delay comes after the request was carried out: the write happened, its answer is
    #: late (a loaded server or network), so the client may see the watch event of the write,
    #: or of what followed it, before the answer.
    late_answer: bool = False

    def matches(self, info: RequestInfo) -> bool:
        if self.verb is not None and self.verb != info.verb:
            return False
        if self.resource is not None:
            target, _, sub = self.resource.partition("/")
            plural, _, group = target.partition(".")
            if plural != info.plural or sub != info.subresource:
                return False
            if group and group != info.group:
                return False
        if self.namespace is not None and self.namespace != info.namespace:
            return False
        return self.name is None or self.name == info.name


class FaultInjector:
    """Thread-safe list of :class:`Fault` s, consumed in the order they were added."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: list[Fault] = []

    def add(
        self,
        verb: str | None = None,
        resource: str | None = None,
        *,
        namespace: str | None = None,
        name: str | None = None,
        status: int = 500,
        times: int | None = 1,
        message: str | None = None,
        retry_after: int | None = None,
        delay: float = 0.0,
    ) -> Fault:
        """Answer the next ``times`` matching requests with HTTP ``status`` (a real Status body)."""
        if not 400 <= status <= 599:
            raise ValueError("status must be an HTTP error code (400-599)")
        fault = Fault(
            _canonical_verb(verb), resource, namespace, name, status, times, delay, message, retry_after
        )
        with self._lock:
            self._faults.append(fault)
        return fault

    def delay(
        self,
        seconds: float,
        verb: str | None = None,
        resource: str | None = None,
        *,
        namespace: str | None = None,
        name: str | None = None,
        times: int | None = None,
        late_answer: bool = False,
    ) -> Fault:
        """Slow matching requests down by ``seconds`` (then serve them normally); with
        ``late_answer`` the request is served first and its answer sent ``seconds`` later."""
        fault = Fault(_canonical_verb(verb), resource, namespace, name, None, times, seconds, late_answer=late_answer)
        with self._lock:
            self._faults.append(fault)
        return fault

    def remove(self, fault: Fault) -> None:
        with self._lock:
            if fault in self._faults:
                self._faults.remove(fault)

    def clear(self) -> None:
        with self._lock:
            self._faults.clear()

    @property
    def pending(self) -> list[Fault]:
        """Faults that can still fire."""
        with self._lock:
            return list(self._faults)

    def take(self, info: RequestInfo) -> list[Fault]:
        """Consume the faults that apply to one request: any delays, then at most one error."""
        fired: list[Fault] = []
        with self._lock:
            for fault in list(self._faults):
                if not fault.matches(info):
                    continue
                if fault.status is not None and any(f.status is not None for f in fired):
                    continue
                fault.hits += 1
                fired.append(fault)
                if fault.times is not None:
                    fault.times -= 1
                    if fault.times <= 0:
                        self._faults.remove(fault)
        return fired


class RequestRecord(NamedTuple):
    """One served request: ``resource`` is ``pods`` or ``pods/status``; ``status`` the HTTP code."""

    verb: str
    path: str
    resource: str
    namespace: str | None
    name: str | None
    status: int


class RequestLog:
    """Thread-safe, bounded record of requests (oldest dropped beyond ``limit``)."""

    def __init__(self, limit: int = 100_000) -> None:
        self._lock = threading.Lock()
        self._records: list[RequestRecord] = []
        self._limit = limit

    def append(self, record: RequestRecord) -> None:
        with self._lock:
            self._records.append(record)
            if len(self._records) > self._limit:
                del self._records[: len(self._records) - self._limit]

    def snapshot(self) -> list[RequestRecord]:
        with self._lock:
            return list(self._records)

    def clear(self) -> None:
        with self._lock:
            self._records.clear()

    def count(
        self,
        verb: str | None = None,
        resource: str | None = None,
        namespace: str | None = None,
        name: str | None = None,
        status: int | None = None,
    ) -> int:
        """How many requests match every given filter."""
        wanted_verb = _canonical_verb(verb)
        return sum(
            1
            for r in self.snapshot()
            if (wanted_verb is None or r.verb == wanted_verb)
            and (resource is None or r.resource == resource)
            and (namespace is None or r.namespace == namespace)
            and (name is None or r.name == name)
            and (status is None or r.status == status)
        )
