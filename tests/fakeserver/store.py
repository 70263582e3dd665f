"""Object storage with etcd's contract: one global revision, compare-and-swap writes, a watch log.

What controllers rely on and the store guarantees:

- every successful write bumps a single global counter, and the object's
  ``metadata.resourceVersion`` is that counter (as a string), so a stale write is detectable;
- :meth:`Store.commit` is a compare-and-swap against that version, taken under one lock, so two
  concurrent writers with the same version cannot both win (the leader-election test depends
  on this);
- every write appends exactly one event to a bounded log; watchers resume from any version
  still in the log and get ``410 Expired`` for one that has been compacted away.

Stored dicts are never mutated after commit; readers get copies.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar, cast

from tests.fakeserver.resources import GroupResource, ResourceRegistry

JsonObj = dict[str, Any]
_T = TypeVar("_T")


def clone(obj: _T) -> _T:
    """Deep copy of JSON data (a C-speed round trip, faster than ``copy.deepcopy``)."""
    return cast(_T, json.loads(json.dumps(obj)))


def now_rfc3339() -> str:
    """Seconds-precision UTC timestamp as the apiserver writes ``metav1.Time``."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class WatchEvent:
    """One entry of the event log. ``old`` is the previous state (for selector transitions)."""

    rv: int
    type: str  # ADDED, MODIFIED, DELETED
    group_resource: GroupResource
    namespace: str
    obj: JsonObj
    old: JsonObj | None


class PreconditionFailed(Exception):
    """A :meth:`Store.commit` expectation did not hold: ``why`` is exists/missing/stale."""

    def __init__(self, why: str, current: JsonObj | None) -> None:
        super().__init__(why)
        self.why = why
        self.current = current


class ResourceExpired(Exception):
    """A watch asked for events that were compacted away."""

    def __init__(self, requested: int, compacted: int) -> None:
        super().__init__(f"too old resource version: {requested} ({compacted})")
        self.requested = requested
        self.compacted = compacted


class WatchInterrupted(Exception):
    """:meth:`Store.interrupt_watches` was called (``abrupt``) or the server is closing."""

    def __init__(self, abrupt: bool) -> None:
        super().__init__("watch interrupted")
        self.abrupt = abrupt


ANY = "*"  # commit expectation: the object must exist, any version

ObjectKey = tuple[GroupResource, str, str]  # (group resource, namespace or "", name)


def _owner_uids(obj: JsonObj | None) -> set[str]:
    refs = ((obj or {}).get("metadata") or {}).get("ownerReferences")
    if not isinstance(refs, list):
        return set()
    return {str(r["uid"]) for r in refs if isinstance(r, dict) and r.get("uid")}


def _uid(obj: JsonObj | None) -> str:
    return str(((obj or {}).get("metadata") or {}).get("uid") or "")


class Store:
    """Thread-safe objects + global resourceVersion + bounded watch-event log.

    Keys are (group resource, namespace, name); cluster-scoped objects use namespace ``""``.
    ``event_window`` bounds the log: older events are dropped and count as compacted.

    The public ``get``/``put``/``delete``/``list`` take a resource name such as ``"pods"`` or
    ``"podgangs.scheduler.grove.io"`` and bypass HTTP, validation and admission, so tests can set
    up state a controller would only observe (a pod marked Scheduled, a PodGang's status).
    """

    def __init__(self, registry: ResourceRegistry, event_window: int = 1000) -> None:
        if event_window < 1:
            raise ValueError("event_window must be >= 1")
        self._registry = registry
        self._cond = threading.Condition(threading.RLock())
        self._objects: dict[GroupResource, dict[tuple[str, str], JsonObj]] = {}
        # Indexes for the garbage collector: uid → key, and owner uid → keys of its dependents.
        self._by_uid: dict[str, ObjectKey] = {}
        self._dependents: dict[str, set[ObjectKey]] = {}
        self._rv = 0
        self._events: deque[WatchEvent] = deque()
        self._window = event_window
        self._compacted = 0
        self._epoch = 0
        self._closed = False

    # ----------------------------------------------------------------------------- versions
    @property
    def resource_version(self) -> int:
        """The current global revision (the last write's resourceVersion)."""
        with self._cond:
            return self._rv

    @property
    def compacted_revision(self) -> int:
        """Watching from a version below this one yields ``410 Expired``."""
        with self._cond:
            return self._compacted

    def compact(self, revision: int | None = None) -> int:
        """Drop events up to ``revision`` (default: all of them); returns the compacted revision.

        Mirrors etcd compaction: afterwards a watch from any older version gets ``410``.
        """
        with self._cond:
            target = self._rv if revision is None else min(revision, self._rv)
            while self._events and self._events[0].rv <= target:
                self._events.popleft()
            self._compacted = max(self._compacted, target)
            self._cond.notify_all()
            return self._compacted

    def set_event_window(self, size: int) -> None:
        """Change how many events are retained (trimming right away if smaller)."""
        if size < 1:
            raise ValueError("event window must be >= 1")
        with self._cond:
            self._window = size
            self._trim()

    # ----------------------------------------------------------------------------- raw access
    def read(self, gr: GroupResource, namespace: str, name: str) -> JsonObj | None:
        """The stored object (a copy) or ``None``."""
        with self._cond:
            obj = self._objects.get(gr, {}).get((namespace, name))
            return clone(obj) if obj is not None else None

    def with_objects(self, gr: GroupResource, namespace: str, fn: Callable[[list[JsonObj]], _T]) -> _T:
        """Run ``fn`` over the stored objects of one type in one namespace, under the lock.

        No copies (for per-write bookkeeping over many objects, such as quota usage): ``fn``
        must only read them and must not call back into the store.
        """
        with self._cond:
            bucket = self._objects.get(gr, {})
            return fn([obj for (ns, _), obj in bucket.items() if ns == namespace])

    def key_of_uid(self, uid: str) -> ObjectKey | None:
        """Where the object with ``uid`` is stored, if it exists."""
        with self._cond:
            return self._by_uid.get(uid)

    def dependents_of(self, uid: str) -> list[ObjectKey]:
        """Keys of the stored objects whose ``metadata.ownerReferences`` name ``uid``."""
        with self._cond:
            return sorted(self._dependents.get(uid, ()))

    def _reindex(self, key: ObjectKey, before: JsonObj | None, after: JsonObj | None) -> None:
        old_uid, new_uid = _uid(before), _uid(after)
        if old_uid and self._by_uid.get(old_uid) == key:
            del self._by_uid[old_uid]
        if new_uid:
            self._by_uid[new_uid] = key
        old_owners, new_owners = _owner_uids(before), _owner_uids(after)
        for owner in old_owners - new_owners:
            keys = self._dependents.get(owner)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._dependents[owner]
        for owner in new_owners - old_owners:
            self._dependents.setdefault(owner, set()).add(key)

    def snapshot(self, gr: GroupResource, namespace: str | None) -> tuple[list[JsonObj], int]:
        """Objects of one type (one namespace or all), sorted like etcd keys, and the revision.

        Copied outside the lock: a stored dict is never mutated after commit, so the references
        taken under it stay that revision's objects. A list of thousands of pods then never
        holds every write back while it is copied (a real apiserver serves lists from its watch
        cache beside the writes; issue 35.1: the rollout benchmark's lists, every 0.25 s, held
        the agent's DELETEs for hundreds of milliseconds).
        """
        with self._cond:
            bucket = self._objects.get(gr, {})
            keys = sorted(k for k in bucket if namespace is None or k[0] == namespace)
            taken = [bucket[k] for k in keys]
            revision = self._rv
        return [clone(obj) for obj in taken], revision

    def commit(
        self,
        gr: GroupResource,
        namespace: str,
        name: str,
        obj: JsonObj | None,
        *,
        expect: str | None = None,
        check: Callable[[JsonObj | None], None] | None = None,
        tombstone: JsonObj | None = None,
    ) -> JsonObj | None:
        """Atomically write (``obj``) or delete (``None``) one object and log the event.

        ``expect``: ``None`` unconditional, ``""`` must not exist, :data:`ANY` must exist, any
        other string must exist with exactly that resourceVersion. ``check`` runs under the lock
        with the current object and may raise to abort. Returns the stored object (a copy, with
        its new resourceVersion) or, for a delete, the final state carrying the deletion's
        version (``tombstone`` if given, e.g. the object with its last finalizer removed).
        Raises :class:`PreconditionFailed`.
        """
        with self._cond:
            bucket = self._objects.setdefault(gr, {})
            current = bucket.get((namespace, name))
            if expect == "" and current is not None:
                raise PreconditionFailed("exists", clone(current))
            if expect is not None and expect != "" and current is None:
                raise PreconditionFailed("missing", None)
            if (
                expect not in (None, "", ANY)
                and current is not None
                and current["metadata"].get("resourceVersion") != expect
            ):
                raise PreconditionFailed("stale", clone(current))
            if check is not None:
                check(clone(current) if current is not None else None)
            if obj is None:
                if current is None:
                    raise PreconditionFailed("missing", None)
                self._rv += 1
                final = clone(tombstone if tombstone is not None else current)
                final.setdefault("metadata", {})["resourceVersion"] = str(self._rv)
                del bucket[(namespace, name)]
                self._reindex((gr, namespace, name), current, None)
                self._append(WatchEvent(self._rv, "DELETED", gr, namespace, final, current))
                return clone(final)
            self._rv += 1
            stored = clone(obj)
            stored.setdefault("metadata", {})["resourceVersion"] = str(self._rv)
            bucket[(namespace, name)] = stored
            self._reindex((gr, namespace, name), current, stored)
            kind = "ADDED" if current is None else "MODIFIED"
            self._append(WatchEvent(self._rv, kind, gr, namespace, stored, current))
            return clone(stored)

    def _append(self, event: WatchEvent) -> None:
        self._events.append(event)
        self._trim()
        self._cond.notify_all()

    def _trim(self) -> None:
        while len(self._events) > self._window:
            dropped = self._events.popleft()
            self._compacted = max(self._compacted, dropped.rv)

    # ----------------------------------------------------------------------------- watching
    def watch_epoch(self) -> int:
        """Token a watcher keeps; :meth:`interrupt_watches` invalidates every older token."""
        with self._cond:
            return self._epoch

    def wait_events(self, after: int, timeout: float, epoch: int) -> list[WatchEvent]:
        """Events newer than ``after``, waiting up to ``timeout`` seconds for the first one.

        Raises :class:`ResourceExpired` when ``after`` was compacted away and
        :class:`WatchInterrupted` when watches were dropped or the store was closed.
        """
        with self._cond:
            self._raise_if_interrupted(epoch)
            if after < self._compacted:
                raise ResourceExpired(after, self._compacted)
            if self._rv <= after and timeout > 0:
                self._cond.wait(timeout)
                self._raise_if_interrupted(epoch)
                if after < self._compacted:
                    raise ResourceExpired(after, self._compacted)
            return list(self._iter_after(after))

    def _iter_after(self, after: int) -> Iterator[WatchEvent]:
        if not self._events or self._events[-1].rv <= after:
            return iter(())
        start = max(0, after - self._events[0].rv + 1)  # revisions in the log are contiguous
        return (self._events[i] for i in range(start, len(self._events)))

    def _raise_if_interrupted(self, epoch: int) -> None:
        if self._closed:
            raise WatchInterrupted(abrupt=False)
        if epoch != self._epoch:
            raise WatchInterrupted(abrupt=True)

    def interrupt_watches(self) -> None:
        """Make every currently open watch end abruptly (as on an apiserver restart)."""
        with self._cond:
            self._epoch += 1
            self._cond.notify_all()

    def close(self) -> None:
        """End every watch cleanly; used when the server stops."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    # ----------------------------------------------------------------------------- test API
    def get(self, resource: str, namespace: str | None, name: str) -> JsonObj | None:
        """A stored object by resource name (``"pods"``, ``"podgangs.scheduler.grove.io"``)."""
        rt = self._registry.resolve(resource)
        obj = self.read(rt.group_resource, (namespace or "") if rt.namespaced else "", name)
        if obj is not None:
            obj["apiVersion"] = rt.api_version
        return obj

    def list_objects(self, resource: str, namespace: str | None = None) -> list[JsonObj]:
        """Stored objects of one type, optionally in one namespace."""
        rt = self._registry.resolve(resource)
        items, _ = self.snapshot(rt.group_resource, namespace if rt.namespaced else None)
        return items

    def put(self, obj: JsonObj) -> JsonObj:
        """Insert or overwrite ``obj`` as-is (no validation, admission or status rules).

        The type comes from ``apiVersion``/``kind``; missing ``uid``, ``creationTimestamp`` and
        ``generation`` are filled in so the object looks server-made. Emits ADDED/MODIFIED.
        """
        rt = self._registry.by_kind(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
        if rt is None:
            raise KeyError(f"no served type for {obj.get('apiVersion')}/{obj.get('kind')}")
        body = clone(obj)
        meta = body.setdefault("metadata", {})
        if not meta.get("name"):
            raise ValueError("metadata.name is required")
        namespace = meta.get("namespace", "default") if rt.namespaced else ""
        if rt.namespaced:
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        meta.setdefault("uid", str(uuid.uuid4()))
        meta.setdefault("creationTimestamp", now_rfc3339())
        meta.setdefault("generation", 1)
        stored = self.commit(rt.group_resource, namespace, meta["name"], body)
        assert stored is not None
        return stored

    def update(
        self, resource: str, namespace: str | None, name: str, mutate: Callable[[JsonObj], None]
    ) -> JsonObj:
        """Read-modify-write one object in place of a controller, atomically (no validation)."""
        rt = self._registry.resolve(resource)
        ns = (namespace or "") if rt.namespaced else ""
        while True:
            current = self.read(rt.group_resource, ns, name)
            if current is None:
                raise KeyError(f"{rt.group_resource} {ns}/{name} not found")
            rv = current["metadata"]["resourceVersion"]
            mutate(current)
            try:
                stored = self.commit(rt.group_resource, ns, name, current, expect=rv)
            except PreconditionFailed:
                continue
            assert stored is not None
            return stored

    def delete(self, resource: str, namespace: str | None, name: str) -> JsonObj | None:
        """Remove one object immediately (ignoring finalizers); ``None`` if it was absent."""
        rt = self._registry.resolve(resource)
        ns = (namespace or "") if rt.namespaced else ""
        try:
            return self.commit(rt.group_resource, ns, name, None)
        except PreconditionFailed:
            return None
