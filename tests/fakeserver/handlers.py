"""The verbs: what get/list/create/update/patch/delete/watch do to the store, type-independently.

Every write goes through one pipeline, in the order the real apiserver runs it: decode and
check identity → CRD structural defaults → carry over server-owned metadata → status-subresource
rules → type strategy (defaulting, admission) → generation bump → validation (metadata, schema,
CRD CEL rules with the stored object as ``oldSelf``, transition rules) → admission that needs
the store (ResourceQuota for pod creates) → compare-and-swap commit → bookkeeping (served CRD
types, quota status) and, for an object removed, garbage collection of its dependents. Because the commit is a CAS on the resourceVersion read at the start,
a stale PUT gets 409 and a patch racing another writer is retried against the new state, just
like ``GuaranteedUpdate``. Server-side apply (:mod:`apply`) merges into that same pipeline, and
every write of an object that has ``managedFields`` moves the fields it changes to its manager.
"""

from __future__ import annotations

import base64
import contextlib
import json
import random
import re
import threading
import uuid
from collections.abc import Callable
from typing import Any

from tests.fakeserver import apply as ssa
from tests.fakeserver import crds, defaults, events, gc, owners, pods, quota, scale
from tests.fakeserver.crd_rules import CelRuleValidator
from tests.fakeserver.errors import (
    ApiError,
    FieldError,
    already_exists,
    bad_request,
    conflict,
    forbidden,
    gone,
    internal,
    invalid,
    invalid_patch,
    not_found,
    unsupported_media_type,
)
from tests.fakeserver.patch import (
    PatchError,
    PatchFormatError,
    apply_json_patch,
    apply_merge_patch,
    apply_strategic_merge_patch,
    json_equal,
)
from tests.fakeserver.resources import GroupKind, GroupResource, ResourceRegistry, ResourceType
from tests.fakeserver.selector import (
    SelectorError,
    fields_match,
    labels_match,
    parse_field_selector,
    parse_label_selector,
)
from tests.fakeserver.store import PreconditionFailed, Store, clone, now_rfc3339
from tests.fakeserver.strategies import Strategies
from tests.fakeserver.validation import Validator, metadata_errors, parse_message
from tests.fakeserver.watch import WatchStream

JsonObj = dict[str, Any]
Query = dict[str, str]

NAMESPACES = GroupResource("", "namespaces")
PODS = GroupResource("", "pods")
RESOURCE_QUOTAS = GroupResource("", "resourcequotas")
# Schema errors after which kube does not run CEL rules (``hasBlockingErr``: type, required,
# enum and size violations), recognised in the validators' messages.
_BLOCKING = re.compile(r"Required value|must be of type|Unsupported value|is too long|too many|Too long|Too many")
CEL_SKIPPED = (
    "some validation rules were not checked because the object was invalid; correct the existing errors to "
    "complete validation"
)
JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
_GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # apimachinery's SimpleNameGenerator alphabet
_MAX_CAS_RETRIES = 16


def _present(rt: ResourceType, obj: JsonObj) -> JsonObj:
    out = dict(obj)
    out["apiVersion"] = rt.api_version
    out["kind"] = rt.kind
    return out


def _normalize_metadata(obj: JsonObj) -> None:
    """``omitempty``: empty labels/annotations/finalizers/ownerReferences are not stored."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        for key in ("labels", "annotations", "finalizers", "ownerReferences"):
            if key in meta and not meta[key]:
                del meta[key]


def _spec_changed(rt: ResourceType, old: JsonObj, new: JsonObj) -> bool:
    ignored = {"metadata", "apiVersion", "kind"} | ({"status"} if rt.has_status else set())
    return not json_equal(
        {k: v for k, v in old.items() if k not in ignored}, {k: v for k, v in new.items() if k not in ignored}
    )


# Built-in kinds without a spec whose objects carry no metadata.generation on a real server.
_NO_GENERATION = {("", "configmaps"), ("", "secrets"), ("", "events"), ("events.k8s.io", "events"), ("", "serviceaccounts")}


def _tracks_generation(rt: ResourceType) -> bool:
    return not (rt.builtin and (rt.group, rt.plural) in _NO_GENERATION)


def _error_kind(rt: ResourceType) -> GroupKind:
    """The kind a 422 names: events.k8s.io Events are validated as the core type (``Event "x"``)."""
    return GroupKind("", "Event") if (rt.group, rt.plural) == ("events.k8s.io", "events") else rt.group_kind


def _truthy(value: str | None) -> bool:
    return (value or "").lower() in ("true", "1")


class ApiHandlers:
    """Verb implementations shared by every resource type.

    ``builtin_validator`` and ``cr_validator`` are ``obj -> list[str]`` callables; an empty list
    means valid.
    """

    def __init__(
        self,
        registry: ResourceRegistry,
        store: Store,
        *,
        builtin_validator: Validator,
        cr_validator: Validator,
        strategies: Strategies | None = None,
        max_watch_seconds: float = 60.0,
        kubernetes_version: str = "1.35.0",
    ) -> None:
        self.registry = registry
        self.store = store
        self.builtin_validator = builtin_validator
        self.cr_validator = cr_validator
        self.strategies = strategies or Strategies()
        self.max_watch_seconds = max_watch_seconds
        minor = _minor(kubernetes_version)
        self.cel_rules = CelRuleValidator(omit_complex_values=minor >= 35, ratcheting=minor >= 30)
        self.gc = gc.GarbageCollector(store)
        self._quota_lock = threading.Lock()  # pod creates in one critical section, as quota's CAS on status
        # Who sends the request being handled (set by the app per request, per thread): the
        # User-Agent names the field manager of an ordinary write, the bearer token the caller.
        self.caller = threading.local()
        # Bearer tokens of restricted callers -> their rights (see owners.py); others are admins.
        self.restricted: dict[str, frozenset[owners.Right]] = {}

    # --------------------------------------------------------------------------- helpers
    @staticmethod
    def _ns_key(rt: ResourceType, namespace: str | None) -> str:
        return (namespace or "") if rt.namespaced else ""

    def _validate(
        self, rt: ResourceType, obj: JsonObj, subresource: str = "", old: JsonObj | None = None
    ) -> list[FieldError]:
        """Metadata, schema, scale and (custom resources) CEL rules; ``old`` is set on update."""
        validator = self.builtin_validator if rt.builtin else self.cr_validator
        messages = validator(obj)
        errors = [
            *metadata_errors(rt, obj),
            *(parse_message(m) for m in messages),
            *scale.field_errors(rt, obj, subresource),
        ]
        if not rt.builtin and self.cel_rules.has_rules(rt.schema):
            if any(_BLOCKING.search(m) for m in messages):
                errors.append(FieldError("Invalid", "<nil>", CEL_SKIPPED, None))
            else:
                errors.extend(self.cel_rules.errors(rt.schema, obj, old))
        return errors

    def _admit_owners(self, rt: ResourceType, obj: JsonObj, old: JsonObj | None) -> None:
        """OwnerReferencesPermissionEnforcement for a restricted caller (see :mod:`owners`)."""
        rights = self.restricted.get(getattr(self.caller, "token", ""))
        if rights is None:
            return

        def plural_of(api_version: str, kind: str) -> str | None:
            found = self.registry.by_kind(api_version, kind)
            return found.plural if found else None

        owners.check(rt, obj, old, rights, plural_of)

    @staticmethod
    def _default(rt: ResourceType, obj: JsonObj) -> JsonObj:
        """Structural defaults of a custom resource (on request bodies and on reads from storage)."""
        if not rt.builtin:
            defaults.apply(rt.schema, obj)
        return obj

    @staticmethod
    def _decode(rt: ResourceType, body: Any) -> JsonObj:
        if not isinstance(body, dict):
            raise bad_request(f"json: cannot unmarshal {type(body).__name__} into Go value of type {rt.kind}")
        api_version = body.get("apiVersion")
        if api_version and api_version != rt.api_version:
            raise bad_request(
                f"the API version in the data ({api_version}) does not match the expected "
                f"API version ({rt.api_version})"
            )
        kind = body.get("kind")
        if kind and kind != rt.kind:
            raise bad_request(f"the kind in the data ({kind}) does not match the expected kind ({rt.kind})")
        if not isinstance(body.setdefault("metadata", {}), dict):
            raise bad_request("json: cannot unmarshal metadata into Go struct field of type v1.ObjectMeta")
        return _present(rt, body)

    # --------------------------------------------------------------------------- reads
    def get(self, rt: ResourceType, namespace: str | None, name: str) -> JsonObj:
        obj = self.store.read(rt.group_resource, self._ns_key(rt, namespace), name)
        if obj is None:
            raise not_found(rt.group_resource, name)
        return _present(rt, self._default(rt, obj))

    def list_objects(self, rt: ResourceType, namespace: str | None, query: Query) -> JsonObj:
        try:
            labels = parse_label_selector(query.get("labelSelector"))
            fields = parse_field_selector(query.get("fieldSelector"), rt.plural, rt.builtin)
        except SelectorError as error:
            raise bad_request(str(error)) from error
        items, revision = self.store.snapshot(rt.group_resource, namespace if rt.namespaced else None)
        items = [self._default(rt, o) for o in items if labels_match(labels, o) and fields_match(fields, o)]
        start_after = self._decode_continue(query.get("continue"))
        if start_after is not None:
            items = [o for o in items if self._item_key(o) > start_after]
        meta: JsonObj = {"resourceVersion": str(revision)}
        limit = self._int_param(query, "limit")
        if limit and len(items) > limit:
            remaining = len(items) - limit
            items = items[:limit]
            token = {"rv": revision, "start": list(self._item_key(items[-1]))}
            meta["continue"] = base64.urlsafe_b64encode(json.dumps(token).encode()).decode()
            meta["remainingItemCount"] = remaining
        if rt.builtin:  # typed lists carry no per-item apiVersion/kind; unstructured ones do
            rendered = [{k: v for k, v in o.items() if k not in ("apiVersion", "kind")} for o in items]
        else:
            rendered = [_present(rt, o) for o in items]
        return {"kind": rt.list_kind, "apiVersion": rt.api_version, "metadata": meta, "items": rendered}

    @staticmethod
    def _item_key(obj: JsonObj) -> tuple[str, str]:
        meta = obj.get("metadata") or {}
        return (meta.get("namespace", ""), meta.get("name", ""))

    def _decode_continue(self, token: str | None) -> tuple[str, str] | None:
        if not token:
            return None
        try:
            data = json.loads(base64.urlsafe_b64decode(token.encode()))
            revision, start = int(data["rv"]), data["start"]
        except (ValueError, KeyError, TypeError) as error:
            raise bad_request(f"continue key is not valid: {error}") from error
        if revision < self.store.compacted_revision:
            raise gone(
                "The provided continue parameter is too old to display a consistent list result. "
                "You can start a new list without the continue parameter.",
                reason="Expired",
            )
        return (str(start[0]), str(start[1]))

    @staticmethod
    def _int_param(query: Query, key: str) -> int:
        raw = query.get(key)
        if raw in (None, ""):
            return 0
        try:
            return int(str(raw))
        except ValueError as error:
            raise bad_request(f"invalid {key} parameter {raw!r}") from error

    def watch(self, rt: ResourceType, namespace: str | None, query: Query) -> WatchStream:
        """Validate the parameters up front (errors before any byte is streamed)."""
        try:
            labels = parse_label_selector(query.get("labelSelector"))
            fields = parse_field_selector(query.get("fieldSelector"), rt.plural, rt.builtin)
        except SelectorError as error:
            raise bad_request(str(error)) from error
        raw_rv = query.get("resourceVersion") or ""
        since: int | None
        if raw_rv in ("", "0"):
            since = None
        else:
            try:
                since = int(raw_rv)
            except ValueError as error:
                raise bad_request(f"invalid resource version {raw_rv!r}") from error
        timeout = self._int_param(query, "timeoutSeconds")
        limit = self.max_watch_seconds
        return WatchStream(
            self.store,
            rt,
            namespace if rt.namespaced else None,
            labels,
            fields,
            since,
            min(float(timeout), limit) if timeout > 0 else limit,
            send_initial_events=_truthy(query.get("sendInitialEvents")),
            bookmarks=_truthy(query.get("allowWatchBookmarks")),
        )

    # --------------------------------------------------------------------------- create
    def create(
        self, rt: ResourceType, namespace: str | None, body: Any, query: Query, managed: list[JsonObj] | None = None
    ) -> JsonObj:
        obj = self._decode(rt, body)
        meta = obj["metadata"]
        if rt.namespaced:
            if meta.get("namespace") and meta["namespace"] != namespace:
                raise bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        if meta.get("resourceVersion"):
            raise bad_request("resourceVersion should not be set on objects to be created")
        if not meta.get("name") and meta.get("generateName"):
            suffix = "".join(random.choice(_GENERATE_ALPHABET) for _ in range(5))
            meta["name"] = f"{str(meta['generateName'])[:58]}{suffix}"
        name = str(meta.get("name") or "")
        for key in ("deletionTimestamp", "deletionGracePeriodSeconds", "selfLink", "managedFields"):
            meta.pop(key, None)
        if managed:  # only a server-side apply's create records managedFields here (see apply.py)
            meta["managedFields"] = managed
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = now_rfc3339()
        if _tracks_generation(rt):
            meta["generation"] = 1
        if rt.namespaced and self.store.read(NAMESPACES, "", namespace or "") is None:
            raise not_found(NAMESPACES, namespace or "")
        self._default(rt, obj)
        self.strategies.prepare_for_create(rt, obj)
        if rt.group_resource == crds.CRDS:
            obj["status"] = crds.established_status(obj)
        _normalize_metadata(obj)
        errors = [
            *self._validate(rt, obj),
            *self.strategies.create_errors(rt, obj),
            *crds.crd_errors(rt, obj),
        ]
        if errors:
            raise invalid(_error_kind(rt), name, errors)
        if (rt.group, rt.plural) == ("events.k8s.io", "events"):
            events.fill_deprecated(obj)
        self._admit_owners(rt, obj, None)
        if query.get("dryRun"):
            if rt.group_resource == PODS:
                self._admit_quota(obj, name)
            return obj
        if rt.group_resource == PODS:
            with self._quota_lock:  # admission and commit together, so concurrent creates cannot overshoot
                self._admit_quota(obj, name)
                stored = self._commit_new(rt, namespace, name, obj)
        else:
            stored = self._commit_new(rt, namespace, name, obj)
        crds.sync_served_types(self.registry, self.store, rt, stored, deleted=False)
        self._refresh_quotas(rt, stored)
        return _present(rt, stored)

    def _commit_new(self, rt: ResourceType, namespace: str | None, name: str, obj: JsonObj) -> JsonObj:
        try:
            stored = self.store.commit(rt.group_resource, self._ns_key(rt, namespace), name, obj, expect="")
        except PreconditionFailed as error:
            raise already_exists(rt.group_resource, name) from error
        assert stored is not None
        return stored

    # --------------------------------------------------------------------------- quota
    def _admit_quota(self, pod: JsonObj, name: str) -> None:
        """The ResourceQuota admission plugin for a pod being created (403 when over quota)."""
        namespace = str(pod["metadata"].get("namespace") or "")
        quotas, _ = self.store.snapshot(RESOURCE_QUOTAS, namespace)
        if not quotas:
            return
        try:
            self.store.with_objects(PODS, namespace, lambda existing: quota.admit(pod, quotas, existing))
        except quota.QuotaExceeded as error:
            raise forbidden(PODS, name, error.message) from error

    def _refresh_quotas(self, rt: ResourceType, obj: JsonObj, old: JsonObj | None = None) -> None:
        """Act as the quota controller after a pod's usage or a quota's spec changed (best effort)."""
        if rt.group_resource == PODS:
            if old is not None and quota.counts_compute(old) == quota.counts_compute(obj):
                return  # usage unchanged: only creation, removal and termination move it
        elif rt.group_resource != RESOURCE_QUOTAS:
            return
        namespace = str((obj.get("metadata") or {}).get("namespace") or "")
        quotas, _ = self.store.snapshot(RESOURCE_QUOTAS, namespace)
        for item in quotas:

            def status_of(pods: list[JsonObj], q: JsonObj = item) -> JsonObj:
                return quota.status_for(q, pods)

            status = self.store.with_objects(PODS, namespace, status_of)
            if json_equal(item.get("status") or {}, status):
                continue
            updated = dict(item, status=status)
            with contextlib.suppress(PreconditionFailed):  # a concurrent writer refreshes it again
                self.store.commit(
                    RESOURCE_QUOTAS,
                    namespace,
                    item["metadata"]["name"],
                    updated,
                    expect=item["metadata"]["resourceVersion"],
                )

    # --------------------------------------------------------------------------- update / patch
    def update(
        self, rt: ResourceType, namespace: str | None, name: str, body: Any, subresource: str, query: Query
    ) -> JsonObj:
        obj = self._decode(rt, body)
        meta = obj["metadata"]
        if meta.get("name") and meta["name"] != name:
            raise bad_request(
                f"the name of the object ({meta['name']}) does not match the name on the URL ({name})"
            )
        if rt.namespaced and meta.get("namespace") and meta["namespace"] != namespace:
            raise bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        meta["name"] = name
        if rt.namespaced:
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)  # ignored for cluster-scoped objects, as on create
        if not meta.get("resourceVersion") and not rt.builtin:
            raise invalid(
                rt.group_kind,
                name,
                [FieldError("Invalid", "metadata.resourceVersion", "must be specified for an update", 0)],
            )
        return self._write(rt, namespace, name, lambda _current: clone(obj), subresource, query)

    def patch(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        raw: bytes,
        content_type: str,
        subresource: str,
        query: Query,
    ) -> JsonObj:
        media = content_type.split(";", 1)[0].strip().lower()
        accepted = [JSON_PATCH, MERGE_PATCH] + ([STRATEGIC_PATCH] if rt.builtin else [])
        if media not in accepted:
            raise unsupported_media_type([*accepted, APPLY_PATCH])
        ssa.options_errors(query, apply=False)
        try:
            document = json.loads(raw or b"null")
        except ValueError as error:
            raise bad_request(f"error decoding patch: {error}") from error
        apply: Callable[[JsonObj, Any], JsonObj] = {
            JSON_PATCH: apply_json_patch,
            MERGE_PATCH: apply_merge_patch,
            STRATEGIC_PATCH: apply_strategic_merge_patch,
        }[media]

        def mutate(current: JsonObj) -> JsonObj:
            try:
                return apply(current, document)
            except PatchFormatError as error:
                raise bad_request(str(error)) from error
            except PatchError as error:
                raise invalid_patch(str(error)) from error

        return self._write(rt, namespace, name, mutate, subresource, query)

    def apply_patch(
        self, rt: ResourceType, namespace: str | None, name: str, raw: bytes, subresource: str, query: Query
    ) -> tuple[JsonObj, bool]:
        """Server-side apply (see :mod:`apply`): the object and whether the apply created it."""
        ssa.options_errors(query, apply=True)
        if subresource:
            raise unsupported_media_type([JSON_PATCH, MERGE_PATCH])
        config = ssa.decode_config(rt, raw, namespace, name)
        manager, force = query["fieldManager"], _truthy(query.get("force"))
        for _ in range(_MAX_CAS_RETRIES):
            if self.store.read(rt.group_resource, self._ns_key(rt, namespace), name) is None:
                obj = ssa.created(rt, config, manager, now_rfc3339())
                managed = obj["metadata"].pop("managedFields", None)
                try:
                    return self.create(rt, namespace, obj, query, managed), True
                except ApiError as error:
                    if error.reason != "AlreadyExists":
                        raise
                    continue  # created meanwhile: apply to it
            try:
                written = self._write(
                    rt,
                    namespace,
                    name,
                    lambda current: ssa.apply(rt, current, config, manager, force=force, now=now_rfc3339()),
                    "",
                    query,
                    applying=True,
                )
            except ApiError as error:
                if error.code != 404:
                    raise
                continue  # deleted meanwhile: create it
            return written, False
        raise internal(f"too many conflicting writes to {rt.group_resource} {name!r}")

    def update_via(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        mutate: Callable[[JsonObj], JsonObj],
        subresource: str,
        query: Query,
    ) -> JsonObj:
        """Update the stored object to ``mutate(current)`` through the whole update pipeline.

        For subresources whose REST storage rewrites the main object (``scale``): ``mutate`` may
        run several times (once per compare-and-swap attempt) and must derive everything from
        the object it is given.
        """
        return self._write(rt, namespace, name, mutate, subresource, query)

    def _write(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        mutate: Callable[[JsonObj], JsonObj],
        subresource: str,
        query: Query,
        *,
        applying: bool = False,
    ) -> JsonObj:
        gr = rt.group_resource
        ns = self._ns_key(rt, namespace)
        for _ in range(_MAX_CAS_RETRIES):
            current = self.store.read(gr, ns, name)
            if current is None:
                raise not_found(gr, name)
            current = self._default(rt, _present(rt, current))
            current_meta = current["metadata"]
            current_rv = current_meta["resourceVersion"]
            new = mutate(clone(current))
            if not isinstance(new, dict) or not isinstance(new.get("metadata", {}), dict):
                raise bad_request("the patched or submitted object is not a Kubernetes object")
            if new.get("apiVersion") != rt.api_version or new.get("kind") != rt.kind:
                raise bad_request("apiVersion and kind may not be changed by an update")
            self._default(rt, new)
            meta = new.setdefault("metadata", {})
            requested_rv = meta.get("resourceVersion")
            if requested_rv and requested_rv != current_rv:
                raise conflict(gr, name)
            if meta.get("uid") and meta["uid"] != current_meta.get("uid"):
                raise conflict(
                    gr,
                    name,
                    f"Precondition failed: UID in precondition: {meta['uid']}, UID in "
                    f"object meta: {current_meta.get('uid')}",
                )
            immutable = [
                FieldError("Invalid", f"metadata.{key}", "field is immutable", meta.get(key))
                for key in ("name", "namespace")
                if meta.get(key) != current_meta.get(key)
            ]
            if immutable:
                raise invalid(rt.group_kind, name, immutable)
            for key in (
                "uid",
                "creationTimestamp",
                "generation",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
            ):
                if key in current_meta:
                    meta[key] = current_meta[key]
                else:
                    meta.pop(key, None)
            meta.pop("selfLink", None)
            supplied = meta.pop("managedFields", None) if applying else None
            meta["resourceVersion"] = current_rv
            if subresource == "status":
                status = new.get("status")
                new = clone(current)
                if status is None:
                    new.pop("status", None)
                else:
                    new["status"] = status
            elif rt.has_status:
                if "status" in current:
                    new["status"] = clone(current["status"])
                else:
                    new.pop("status", None)
            self.strategies.prepare_for_update(rt, new, current)
            _normalize_metadata(new)
            meta = new["metadata"]
            manager = ssa.manager_of(query, getattr(self.caller, "user_agent", ""))
            managed = supplied if applying else ssa.after_update(rt, current, new, manager, subresource, now_rfc3339())
            if managed:
                meta["managedFields"] = managed
            else:
                meta.pop("managedFields", None)
            errors = self._finalizer_errors(current, new)
            if _tracks_generation(rt) and _spec_changed(rt, current, new):
                meta["generation"] = int(current_meta.get("generation", 0)) + 1
            errors += [
                *([] if _only_gates_removed(current, new) else self._validate(rt, new, subresource, current)),
                *self.strategies.update_errors(rt, new, current, subresource),
                *crds.crd_errors(rt, new),
            ]
            if errors:
                raise invalid(rt.group_kind, name, errors)
            self._admit_owners(rt, new, current)
            if json_equal(new, current):
                return current  # a no-op write keeps the resourceVersion and emits no event
            if query.get("dryRun"):
                return new
            deleting = bool(current_meta.get("deletionTimestamp")) and not meta.get("finalizers")
            try:
                stored = self.store.commit(
                    gr,
                    ns,
                    name,
                    None if deleting else new,
                    expect=current_rv,
                    tombstone=new if deleting else None,
                )
            except PreconditionFailed:
                continue  # lost a race: re-read and re-apply (a user precondition then yields 409)
            assert stored is not None
            if deleting:  # the last finalizer is gone: the object is removed now
                self._finish_removal(rt, stored)
                self.gc.collect(stored, "Background", self._remove_dependent)
            else:
                crds.sync_served_types(self.registry, self.store, rt, stored, deleted=False)
                self._refresh_quotas(rt, stored, current)
            return _present(rt, stored)
        raise internal(f"too many conflicting writes to {gr} {name!r}")

    @staticmethod
    def _finalizer_errors(current: JsonObj, new: JsonObj) -> list[FieldError]:
        if not current["metadata"].get("deletionTimestamp"):
            return []
        before = set(current["metadata"].get("finalizers") or [])
        added = [f for f in new["metadata"].get("finalizers") or [] if f not in before]
        if not added:
            return []
        rendered = "[]string{" + ", ".join(json.dumps(f) for f in added) + "}"
        return [
            FieldError(
                "Forbidden",
                "metadata.finalizers",
                f"no new finalizers can be added if the object is being deleted, found new "
                f"finalizers {rendered}",
            )
        ]

    # --------------------------------------------------------------------------- delete
    def delete(self, rt: ResourceType, namespace: str | None, name: str, body: Any, query: Query) -> JsonObj:
        """DELETE one object; if it is removed now, its dependents are garbage-collected (see :mod:`gc`)."""
        options = body if isinstance(body, dict) else {}
        policy = gc.propagation_policy(options, query)
        response, removed = self._delete(rt, namespace, name, options, query)
        if removed is not None:
            self.gc.collect(removed, policy, self._remove_dependent)
            # A real server first marks the owner with the policy's finalizer and answers with it;
            # the collector then removes the dependents (foreground) or their references (orphan)
            # and the owner. Here that all happened already: answer as the real server did.
            finalizer = gc.FINALIZERS.get(policy)
            if finalizer:
                marked = clone(removed)
                marked["metadata"].update(
                    deletionTimestamp=now_rfc3339(), deletionGracePeriodSeconds=0, finalizers=[finalizer]
                )
                response = _present(rt, marked)
        return response

    def _remove_dependent(self, key: tuple[GroupResource, str, str]) -> JsonObj | None:
        """The collector's DELETE of one dependent (background); the removed object or ``None``."""
        versions = self.registry.versions_of(key[0])
        if not versions:
            return None
        try:
            return self._delete(versions[0], key[1] or None, key[2], {}, {})[1]
        except ApiError as error:
            if error.code == 404:
                return None
            raise

    def _finish_removal(self, rt: ResourceType, final: JsonObj) -> None:
        """Bookkeeping once an object is gone: CRD types stop being served, quotas are recounted."""
        for removed in crds.sync_served_types(self.registry, self.store, rt, final, deleted=True):
            self.gc.collect(removed, "Background", self._remove_dependent)
        self._refresh_quotas(rt, final)

    def _delete(
        self, rt: ResourceType, namespace: str | None, name: str, options: JsonObj, query: Query
    ) -> tuple[JsonObj, JsonObj | None]:
        """The DELETE itself: the response body and the removed object (``None`` if it stays)."""
        gr = rt.group_resource
        ns = self._ns_key(rt, namespace)
        preconditions = options.get("preconditions") or {}
        dry_run = bool(query.get("dryRun") or options.get("dryRun"))
        for _ in range(_MAX_CAS_RETRIES):
            current = self.store.read(gr, ns, name)
            if current is None:
                raise not_found(gr, name)
            meta = current["metadata"]
            if preconditions.get("uid") and preconditions["uid"] != meta.get("uid"):
                raise conflict(
                    gr,
                    name,
                    f"Precondition failed: UID in precondition: {preconditions['uid']}, "
                    f"UID in object meta: {meta.get('uid')}",
                )
            if (
                preconditions.get("resourceVersion")
                and preconditions["resourceVersion"] != meta["resourceVersion"]
            ):
                raise conflict(
                    gr,
                    name,
                    "Precondition failed: ResourceVersion in precondition: "
                    f"{preconditions['resourceVersion']}, ResourceVersion in object meta: "
                    f"{meta['resourceVersion']}",
                )
            if dry_run:
                return _present(rt, current), None
            if meta.get("finalizers"):
                if meta.get("deletionTimestamp"):
                    return _present(rt, current), None
                pending = clone(current)
                pending["metadata"]["deletionTimestamp"] = now_rfc3339()
                pending["metadata"]["deletionGracePeriodSeconds"] = 0
                try:
                    stored = self.store.commit(gr, ns, name, pending, expect=meta["resourceVersion"])
                except PreconditionFailed:
                    continue
                assert stored is not None
                self._refresh_quotas(rt, stored, current)
                return _present(rt, stored), None
            if gr == NAMESPACES:
                self._delete_namespace_contents(name)
            try:
                final = self.store.commit(gr, ns, name, None, expect=meta["resourceVersion"])
            except PreconditionFailed:
                continue
            assert final is not None
            self._finish_removal(rt, final)
            if rt.returns_deleted_object:
                return _present(rt, final), final
            details: JsonObj = {"name": name, "kind": rt.plural, "uid": meta.get("uid")}
            if rt.group:
                details["group"] = rt.group
            status = {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Success",
                "details": details,
            }
            return status, final
        raise internal(f"too many conflicting writes to {gr} {name!r}")

    def delete_collection(self, rt: ResourceType, namespace: str | None, query: Query) -> JsonObj:
        listed = self.list_objects(
            rt, namespace, {k: v for k, v in query.items() if k in ("labelSelector", "fieldSelector")}
        )
        deleted = []
        for item in listed["items"]:
            item_meta = item["metadata"]
            try:
                deleted.append(self.delete(rt, item_meta.get("namespace"), item_meta["name"], None, query))
            except ApiError as error:
                if error.code != 404:
                    raise
        return {
            "kind": rt.list_kind,
            "apiVersion": rt.api_version,
            "metadata": {"resourceVersion": str(self.store.resource_version)},
            "items": deleted,
        }

    def _delete_namespace_contents(self, namespace: str) -> None:
        """Namespace deletion removes everything inside (immediately; real clusters go Terminating)."""
        seen: set[GroupResource] = set()
        for rt in self.registry.all():
            if not rt.namespaced or rt.group_resource in seen:
                continue
            seen.add(rt.group_resource)
            items, _ = self.store.snapshot(rt.group_resource, namespace)
            for item in items:
                with contextlib.suppress(PreconditionFailed):
                    self.store.commit(rt.group_resource, namespace, item["metadata"]["name"], None)

    # --------------------------------------------------------------------------- pods/binding
    def bind_pod(self, rt: ResourceType, namespace: str | None, name: str, body: Any) -> JsonObj:
        """``POST pods/<name>/binding``: what the scheduler does to place a pod."""
        target = (body or {}).get("target") or {} if isinstance(body, dict) else {}
        node = target.get("name")
        if not node:
            raise invalid(rt.group_kind, name, [FieldError("Required", "target.name")])
        ns = self._ns_key(rt, namespace)
        current = self.store.read(rt.group_resource, ns, name)
        if current is None:
            raise not_found(rt.group_resource, name)
        spec = current.get("spec") or {}
        if spec.get("nodeName"):
            raise conflict(
                rt.group_resource, name, f'pod {name} is already assigned to node "{spec["nodeName"]}"'
            )
        if spec.get("schedulingGates"):
            raise internal(f"pod {name} has non-empty .spec.schedulingGates")
        bound = clone(current)
        bound["spec"]["nodeName"] = node
        pods.set_condition(bound, "PodScheduled", "True")
        try:
            self.store.commit(
                rt.group_resource, ns, name, bound, expect=current["metadata"]["resourceVersion"]
            )
        except PreconditionFailed as error:
            raise conflict(rt.group_resource, name) from error
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}


def _minor(version: str) -> int:
    """``"1.35.0"`` → 35 (a version the fake cannot read counts as the newest behaviour)."""
    match = re.match(r"v?1\.(\d+)", version)
    return int(match.group(1)) if match else 1_000


def _only_gates_removed(current: JsonObj, new: JsonObj) -> bool:
    """True when ``new`` is ``current`` minus some scheduling gates (metadata bookkeeping aside).

    The stored object passed schema validation when it was written, and removing list items
    from ``spec.schedulingGates`` cannot make it invalid, so re-validating the whole pod
    against Kubernetes' schema (a few ms of jsonschema per pod, where the real API server's
    Go validation is microseconds) is skipped: a gate-lifter releasing a thousand pods then
    measures itself, not the fake. The pod update rules still run.
    """
    if current.get("kind") != "Pod" or new.get("kind") != "Pod":
        return False
    old_spec, new_spec = current.get("spec") or {}, new.get("spec") or {}
    if {k: v for k, v in old_spec.items() if k != "schedulingGates"} != {
        k: v for k, v in new_spec.items() if k != "schedulingGates"
    }:
        return False
    ignored = ("spec", "metadata")
    if {k: v for k, v in current.items() if k not in ignored} != {k: v for k, v in new.items() if k not in ignored}:
        return False
    old_meta, new_meta = current.get("metadata") or {}, new.get("metadata") or {}
    bookkeeping = ("resourceVersion", "managedFields", "generation")
    if {k: v for k, v in old_meta.items() if k not in bookkeeping} != {
        k: v for k, v in new_meta.items() if k not in bookkeeping
    }:
        return False
    old_gates = old_spec.get("schedulingGates") or []
    return all(gate in old_gates for gate in new_spec.get("schedulingGates") or [])
