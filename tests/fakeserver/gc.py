"""Garbage collection by ``metadata.ownerReferences``, as kube-controller-manager's garbage collector.

Rules kept (Kubernetes docs "Garbage Collection" and "Owners and Dependents"):

- when an owner is finally removed (deleted without finalizers, or its last finalizer is
  removed), each dependent naming its uid in ``ownerReferences`` is deleted too: cascading
  *background* deletion, the default ``propagationPolicy``. A dependent with finalizers is
  marked for deletion like any DELETE would, and the cascade continues from each dependent
  that is actually removed;
- ``propagationPolicy: Orphan`` (or the deprecated ``orphanDependents: true``) keeps the
  dependents and removes the ownerReference to the deleted owner from each of them;
- a dependent that still has another existing owner is kept; the references to owners that no
  longer exist are removed from it (the collector's "dangling references" patch);
- a namespaced owner only owns dependents in its own namespace; a cluster-scoped owner owns
  dependents anywhere.

Differences, on purpose: the fake collects synchronously, before the DELETE that removed the
owner answers (a cluster does it shortly after). A ``Foreground`` or ``Orphan`` DELETE answers
with the owner marked by the ``foregroundDeletion``/``orphan`` finalizer, as the real server does,
but the owner is already gone when it answers (a cluster keeps it until the dependents are
handled). What is left in the end is the same (tests/controlplane/test_contract.py). Objects
removed with ``FakeApiServer.delete_object`` (a test back door) and by namespace deletion are
not collected.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.fakeserver.store import ObjectKey, PreconditionFailed, Store, clone

JsonObj = dict[str, Any]
ORPHAN = "Orphan"
# The finalizer a DELETE with an explicit policy puts on the owner (its answer shows it).
FINALIZERS = {"Foreground": "foregroundDeletion", ORPHAN: "orphan"}
_MAX_RETRIES = 16
_MAX_OBJECTS = 100_000  # bound on one cascade (the store holds far fewer in any test)

# Deletes the object at a key through the API's delete path; returns it if it was removed now
# (not merely marked for deletion because of finalizers), else None.
Remover = Callable[[ObjectKey], JsonObj | None]


def propagation_policy(options: JsonObj, query: dict[str, str]) -> str:
    """The request's policy: DeleteOptions body first, then the query parameter; default Background."""
    policy = options.get("propagationPolicy") or query.get("propagationPolicy")
    if not policy and (options.get("orphanDependents") is True or query.get("orphanDependents") == "true"):
        policy = ORPHAN
    return str(policy or "Background")


def _refs(obj: JsonObj) -> list[JsonObj]:
    refs = (obj.get("metadata") or {}).get("ownerReferences")
    return [r for r in refs if isinstance(r, dict)] if isinstance(refs, list) else []


class GarbageCollector:
    """Cascades deletions over the store's owner index."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def _owner_exists(self, uid: str, dependent_namespace: str) -> bool:
        key = self.store.key_of_uid(uid)
        return key is not None and key[1] in ("", dependent_namespace)

    def collect(self, owner: JsonObj, policy: str, remove: Remover) -> None:
        """Handle the dependents of ``owner``, which was just removed, and of every object this removes."""
        queue: list[tuple[JsonObj, str]] = [(owner, policy)]
        handled = 0
        while queue and handled < _MAX_OBJECTS:
            gone, how = queue.pop(0)
            meta = gone.get("metadata") or {}
            uid = str(meta.get("uid") or "")
            if not uid:
                continue
            owner_namespace = str(meta.get("namespace") or "")
            for key in self.store.dependents_of(uid):
                handled += 1
                if owner_namespace and key[1] != owner_namespace:
                    continue  # a namespaced owner cannot own objects elsewhere
                if how == ORPHAN or self._has_other_owner(key, uid):
                    self._drop_dangling(key, uid)
                    continue
                removed = remove(key)
                if removed is not None:
                    queue.append((removed, "Background"))

    def _has_other_owner(self, key: ObjectKey, uid: str) -> bool:
        dependent = self.store.read(*key)
        if dependent is None:
            return False
        return any(
            str(r.get("uid")) != uid and self._owner_exists(str(r.get("uid") or ""), key[1]) for r in _refs(dependent)
        )

    def _drop_dangling(self, key: ObjectKey, uid: str) -> None:
        """Remove from the dependent its references to ``uid`` and to any other owner that is gone."""
        for _ in range(_MAX_RETRIES):
            current = self.store.read(*key)
            if current is None:
                return
            keep = [
                r
                for r in _refs(current)
                if str(r.get("uid")) != uid and self._owner_exists(str(r.get("uid") or ""), key[1])
            ]
            if len(keep) == len(_refs(current)):
                return
            updated = clone(current)
            if keep:
                updated["metadata"]["ownerReferences"] = keep
            else:
                updated["metadata"].pop("ownerReferences", None)
            try:
                self.store.commit(*key, updated, expect=current["metadata"]["resourceVersion"])
                return
            except PreconditionFailed:
                continue
