"""A GitOps applier simulator: applies a rendered output tree as Argo CD or Flux would.

One :meth:`Applier.sync` is one sync of an Argo CD Application (``mode="argocd"``, with
``selfHeal: true`` and ``prune: true``) or one reconcile of a Flux Kustomization
(``mode="flux"``, ``prune: true``):

- objects are applied in sync-wave order (``argocd.argoproj.io/sync-wave``; the file names
  already start with ``wave + 20``, so the file order is the same);
- a missing object is created, whether it is new in Git or was deleted in the cluster
  (selfHeal / the periodic reconcile re-creates a deleted pod);
- an existing Pod is never modified: pods are immutable in practice and the render tells
  both tools so (Argo CD ``ignoreDifferences`` on the scheduling gates, Flux
  ``kustomize.toolkit.fluxcd.io/ssa: IfNotPresent``); Flux's ``IfNotPresent`` on any other
  object likewise means "create only";
- another object that differs from Git is updated: its spec (and other top-level fields)
  replaced by Git's, labels and annotations set to Git's, status kept. "Differs" ignores
  fields the API server defaulted, as both tools' diffs do;
- objects this applier applied earlier that are no longer in the tree are pruned, in reverse
  wave order, except those whose *live* copy carries the tool's "do not prune" annotation:
  ``argocd.argoproj.io/sync-options`` containing ``Prune=false`` (argocd mode) or
  ``kustomize.toolkit.fluxcd.io/prune: disabled`` (flux mode). Each tool honours only its own
  annotation. Argo CD keeps such an object as extraneous (tracked, never deleted); Flux
  drops it from its inventory.

:meth:`start` runs syncs in a thread every ``interval`` seconds. API calls are counted in
``rest.calls``; :attr:`lock` is held during a sync so a test can swap the tree between syncs.
"""

from __future__ import annotations

import copy
import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import kubernetes.client
import yaml
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from tests.day2.rest import Raw, Rest

log = logging.getLogger("tests.day2.applier")
Mode = Literal["argocd", "flux"]
Ref = tuple[str, str, str, str]  # (apiVersion, kind, namespace, name)

SYNC_WAVE = "argocd.argoproj.io/sync-wave"
ARGO_SYNC_OPTIONS = "argocd.argoproj.io/sync-options"
FLUX_PRUNE = "kustomize.toolkit.fluxcd.io/prune"
FLUX_SSA = "kustomize.toolkit.fluxcd.io/ssa"
_SKIPPED_FILES = {"kustomization.yaml"}


def ref_of(obj: Raw) -> Ref:
    meta = obj.get("metadata") or {}
    return str(obj["apiVersion"]), str(obj["kind"]), str(meta.get("namespace") or ""), str(meta["name"])


def wave_of(obj: Raw) -> int:
    value = ((obj.get("metadata") or {}).get("annotations") or {}).get(SYNC_WAVE, "0")
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


FileCache = dict[Path, tuple[tuple[int, int], list[Raw]]]


def read_tree(out_dir: Path, cache: FileCache | None = None) -> list[Raw]:
    """Every object of a rendered tree, in apply order (wave, then file path).

    ``cache`` keeps each file's objects by (mtime, size): a periodic sync of a large tree
    (the rollout benchmark's 2,000 files) parses only what a render rewrote. The objects are
    shared between calls; callers never change them.
    """
    found: list[tuple[int, str, Raw]] = []
    for path in sorted(out_dir.rglob("*.yaml")):
        if path.name in _SKIPPED_FILES:
            continue
        rel = path.relative_to(out_dir).as_posix()
        stat = path.stat()
        stamp = (stat.st_mtime_ns, stat.st_size)
        kept = cache.get(path) if cache is not None else None
        if kept is not None and kept[0] == stamp:
            docs = kept[1]
        else:
            docs = [d for d in yaml.load_all(path.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)
                    if isinstance(d, dict) and d.get("kind")]
            if cache is not None:
                cache[path] = (stamp, docs)
        found.extend((wave_of(doc), rel, doc) for doc in docs)
    return [obj for _, _, obj in sorted(found, key=lambda item: (item[0], item[1]))]


def prune_disabled(live: Raw, mode: Mode) -> bool:
    """Whether ``mode``'s tool leaves this live object in place when it leaves Git."""
    annotations = (live.get("metadata") or {}).get("annotations") or {}
    if mode == "argocd":
        options = [o.strip() for o in str(annotations.get(ARGO_SYNC_OPTIONS, "")).split(",")]
        return "Prune=false" in options
    return str(annotations.get(FLUX_PRUNE, "")).strip() == "disabled"


def _covers(live: Any, desired: Any) -> bool:
    """``desired`` is contained in ``live``: server-side defaults are not differences."""
    if isinstance(desired, dict):
        return isinstance(live, dict) and all(_covers(live.get(k), v) for k, v in desired.items())
    if isinstance(desired, list):
        return isinstance(live, list) and len(live) == len(desired) and all(map(_covers, live, desired))
    return bool(live == desired)


def _out_of_sync(live: Raw, desired: Raw) -> bool:
    live_meta, desired_meta = live.get("metadata") or {}, desired.get("metadata") or {}
    for key in ("labels", "annotations"):
        if not _covers(live_meta.get(key) or {}, desired_meta.get(key) or {}):
            return True
    body_keys = [k for k in desired if k not in ("apiVersion", "kind", "metadata", "status")]
    return not all(_covers(live.get(k), desired[k]) for k in body_keys)


@dataclass
class SyncResult:
    created: list[Ref] = field(default_factory=list)
    updated: list[Ref] = field(default_factory=list)
    pruned: list[Ref] = field(default_factory=list)
    kept: list[Ref] = field(default_factory=list)  # left out of Git, not pruned (annotation)


class Applier:
    """See the module docstring."""

    def __init__(
        self,
        api_client: kubernetes.client.ApiClient,
        out_dir: Path,
        mode: Mode = "argocd",
        interval: float = 0.1,
    ) -> None:
        if mode not in ("argocd", "flux"):
            raise ValueError(f"mode must be argocd or flux, not {mode!r}")
        self.out_dir = out_dir
        self.mode: Mode = mode
        self.interval = interval
        self.rest = Rest(api_client)
        self.lock = threading.RLock()
        self.inventory: dict[Ref, int] = {}  # applied object -> its wave
        self.extraneous: set[Ref] = set()  # Argo CD: tracked, out of Git, kept by Prune=false
        self.syncs = 0
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._files: FileCache = {}

    # -- one sync ----------------------------------------------------------------------------
    def sync(self) -> SyncResult:
        """Apply the tree once (create, update, prune); raises on an unexpected API error."""
        with self.lock:
            result = SyncResult()
            desired = read_tree(self.out_dir, self._files)
            wanted = {ref_of(obj) for obj in desired}
            live = self._list_live(desired)
            for obj in desired:
                self._apply(obj, result, live)
            stale = [ref for ref in self.inventory if ref not in wanted]
            for ref in sorted(stale, key=lambda r: -self.inventory[r]):
                self._prune(ref, result)
            self.extraneous -= wanted
            self.syncs += 1
            return result

    def _list_live(self, desired: list[Raw]) -> dict[Ref, Raw | None]:
        """The live objects of every kind and namespace the tree holds, one LIST each (as a
        GitOps tool compares against its cache, not a GET per object). A kind that cannot be
        listed is left out and read object by object."""
        live: dict[Ref, Raw | None] = {}
        groups = sorted({(ref[0], ref[1], ref[2]) for ref in map(ref_of, desired)})
        for api_version, kind, namespace in groups:
            try:
                listing = self.rest.request("GET", self.rest.path(api_version, kind, namespace or None))
            except (ApiException, LookupError):
                continue
            for ref in (r for r in map(ref_of, desired) if r[:3] == (api_version, kind, namespace)):
                live[ref] = None
            for item in listing.get("items") or []:
                name = str((item.get("metadata") or {}).get("name", ""))
                live[(api_version, kind, namespace, name)] = {"apiVersion": api_version, "kind": kind, **item}
        return live

    def _apply(self, obj: Raw, result: SyncResult, listed: dict[Ref, Raw | None] | None = None) -> None:
        ref = ref_of(obj)
        api_version, kind, namespace, name = ref
        if listed is not None and ref in listed:
            live = listed[ref]
        else:
            live = self.rest.get(api_version, kind, namespace or None, name)
        self.inventory[ref] = wave_of(obj)
        if live is None:
            try:
                self.rest.request("POST", self.rest.path(api_version, kind, namespace or None), obj)
            except ApiException as exc:
                if exc.status != 409:  # created meanwhile (e.g. by a previous, interrupted sync)
                    raise
            result.created.append(ref)
            return
        annotations = (obj.get("metadata") or {}).get("annotations") or {}
        if kind == "Pod" and api_version == "v1":
            return  # never modify a pod (immutable; ignoreDifferences / ssa IfNotPresent)
        if self.mode == "flux" and annotations.get(FLUX_SSA) == "IfNotPresent":
            return
        if not _out_of_sync(live, obj):
            return
        body = copy.deepcopy(obj)
        meta = body.setdefault("metadata", {})
        live_meta = live["metadata"]
        for key in ("resourceVersion", "uid", "creationTimestamp", "finalizers", "ownerReferences"):
            if key in live_meta:
                meta[key] = live_meta[key]
        if "status" in live:
            body["status"] = live["status"]
        try:
            self.rest.request("PUT", self.rest.object_path(obj), body)
        except ApiException as exc:
            if exc.status != 409:  # changed under us: the next sync retries
                raise
            return
        result.updated.append(ref)

    def _prune(self, ref: Ref, result: SyncResult) -> None:
        api_version, kind, namespace, name = ref
        live = self.rest.get(api_version, kind, namespace or None, name)
        if live is None:
            del self.inventory[ref]
            return
        if prune_disabled(live, self.mode):
            del self.inventory[ref]
            if self.mode == "argocd":
                self.extraneous.add(ref)
            result.kept.append(ref)
            return
        uid = live["metadata"].get("uid")
        body = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background",
                "preconditions": {"uid": uid}}
        try:
            self.rest.request("DELETE", self.rest.path(api_version, kind, namespace or None, name), body)
        except ApiException as exc:
            if exc.status not in (404, 409):
                raise
        del self.inventory[ref]
        result.pruned.append(ref)

    # -- background --------------------------------------------------------------------------
    def start(self) -> Applier:
        """Sync every ``interval`` seconds in a thread (Argo CD selfHeal / Flux's interval)."""
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="sim-gitops", daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.sync()
            except (ApiException, HTTPError, OSError, yaml.YAMLError) as exc:
                self.errors.append(str(exc))
                log.warning("applier simulator: sync failed: %s", exc)
            self._stop.wait(self.interval)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
