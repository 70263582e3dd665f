"""One watch request as a stream of newline-delimited JSON events.

Semantics copied from the apiserver's watch cache because informers and hand-rolled watch loops
depend on them:

- no ``resourceVersion`` (or ``"0"``): synthetic ``ADDED`` for every current object first, then
  live events; with a version: only events newer than it;
- a version older than the compacted revision: one ``ERROR`` event carrying a 410 ``Expired``
  Status, then the stream ends (the client relists);
- with a label/field selector, an object that stops matching arrives as ``DELETED`` and one that
  starts matching as ``ADDED``;
- the stream ends cleanly at ``timeoutSeconds`` (capped by the server) or when the server stops,
  and abruptly (connection cut, no terminating chunk) on ``drop_watches()``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

from tests.fakeserver.errors import expired
from tests.fakeserver.resources import ResourceType
from tests.fakeserver.selector import FieldRequirement, Requirement, fields_match, labels_match
from tests.fakeserver.store import ResourceExpired, Store, WatchInterrupted

JsonObj = dict[str, Any]

# How long one wait on the store may block before the stream re-checks deadline and client.
_POLL_SECONDS = 0.25


class WatchDropped(Exception):
    """The stream must be cut without a clean end (``drop_watches``)."""


class WatchStream:
    """The events of one ``?watch=true`` request; iterate :meth:`lines` to serve it."""

    def __init__(
        self,
        store: Store,
        rt: ResourceType,
        namespace: str | None,
        labels: list[Requirement],
        fields: list[FieldRequirement],
        since: int | None,
        timeout: float,
        *,
        send_initial_events: bool = False,
        bookmarks: bool = False,
    ) -> None:
        self._store = store
        self._rt = rt
        self._namespace = namespace
        self._labels = labels
        self._fields = fields
        self._since = since
        self._timeout = timeout
        self._send_initial = send_initial_events
        self._bookmarks = bookmarks

    def _matches(self, obj: JsonObj) -> bool:
        return labels_match(self._labels, obj) and fields_match(self._fields, obj)

    def _event(self, kind: str, obj: JsonObj) -> bytes:
        body = dict(obj)
        body["apiVersion"] = self._rt.api_version
        body["kind"] = self._rt.kind
        return (json.dumps({"type": kind, "object": body}, separators=(",", ":")) + "\n").encode()

    def _bookmark(self, revision: int, initial_end: bool) -> bytes:
        meta: JsonObj = {"resourceVersion": str(revision)}
        if initial_end:
            meta["annotations"] = {"k8s.io/initial-events-end": "true"}
        body = {"kind": self._rt.kind, "apiVersion": self._rt.api_version, "metadata": meta}
        return (json.dumps({"type": "BOOKMARK", "object": body}) + "\n").encode()

    def lines(self, client_gone: Callable[[], bool] = lambda: False) -> Iterator[bytes]:
        """Yield encoded events until timeout, server stop or client disconnect.

        Raises :class:`WatchDropped` when watches are dropped on purpose.
        """
        deadline = time.monotonic() + self._timeout
        epoch = self._store.watch_epoch()
        gr = self._rt.group_resource
        if self._since is None:
            items, after = self._store.snapshot(gr, self._namespace)
            for obj in items:
                if self._matches(obj):
                    yield self._event("ADDED", obj)
            if self._send_initial and self._bookmarks:
                yield self._bookmark(after, initial_end=True)
        else:
            after = self._since
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                if self._bookmarks:
                    yield self._bookmark(after, initial_end=False)
                return
            try:
                events = self._store.wait_events(after, min(remaining, _POLL_SECONDS), epoch)
            except ResourceExpired as error:
                status = expired(error.requested, error.compacted).to_status()
                yield (json.dumps({"type": "ERROR", "object": status}) + "\n").encode()
                return
            except WatchInterrupted as interrupted:
                if interrupted.abrupt:
                    raise WatchDropped() from interrupted
                return
            for event in events:
                after = event.rv
                if event.group_resource != gr or (
                    self._namespace is not None and event.namespace != self._namespace
                ):
                    continue
                now_matches = self._matches(event.obj)
                was_matching = event.old is not None and self._matches(event.old)
                if event.type == "ADDED" and now_matches:
                    yield self._event("ADDED", event.obj)
                elif event.type == "MODIFIED":
                    if now_matches:
                        yield self._event("MODIFIED" if was_matching else "ADDED", event.obj)
                    elif was_matching:
                        yield self._event("DELETED", event.obj)
                elif event.type == "DELETED" and now_matches:
                    yield self._event("DELETED", event.obj)
            if client_gone():
                return
