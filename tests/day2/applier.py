"""A GitOps applier simulator: applies a rendered output tree as Argo CD or Flux would.

One :meth:`Applier.sync` is one sync of an Argo CD Application (``mode="argocd"``, with
``selfHeal: true`` and ``prune: true``) or one reconcile of a Flux Kustomization
(``mode="flux"``, ``prune: true``):

- objects are applied in sync-wave order (``argocd.argoproj.io/sync-wave``; the file names
  already start with ``wave + 20``, so the file order is the same: PodGangs are wave 0, Pods
  wave 10). Each wave is listed afresh just before it is applied, and ``wave_delay`` seconds
  pass between two waves that both write, as Argo CD's ``ARGOCD_SYNC_WAVE_DELAY`` (2 s by
  default) does: a rollout's PodGang updates land that long before its new pods;
- ``pods_first=True`` applies the PodGangs (and the backend PodGroups) after the Pods, in a
  wave of their own: a tool without waves (Flux applies one batch; the order inside it is
  not the render's) or an admission retry can leave a pod in the cluster before its PodGang;
- :meth:`Applier.hold` stalls chosen objects: a matching object that needs a write (create or
  update) is not written until ``seconds`` have passed since a sync first found it pending, or,
  without ``seconds``, until the hold is released. A stuck pod wave, a quota, a slow pipeline
  for one object. Later waves are still applied (as Flux would; a held object is no failed
  sync);
- a missing object is created, whether it is new in Git or was deleted in the cluster
  (selfHeal / the periodic reconcile re-creates a deleted pod);
- an existing Pod is never modified: pods are immutable in practice and the render tells
  both tools so (Argo CD ``ignoreDifferences`` on the scheduling gates, Flux
  ``kustomize.toolkit.fluxcd.io/ssa: IfNotPresent``); Flux's ``IfNotPresent`` on any other
  object likewise means "create only";
- another object that differs from Git is updated: its spec (and other top-level fields)
  replaced by Git's, labels and annotations set to Git's, status kept. "Differs" ignores
  fields the API server defaulted, as both tools' diffs do. Both tools apply server-side,
  without a resourceVersion precondition, so an update that conflicts with another writer
  (the agent's PodGang status) is written again on a fresh read, within its wave;
- an update the API server refuses with 422 (an immutable field, e.g. KAI's Topology levels) is
  a failed sync, unless the object asks the tool to re-create it: Argo CD
  ``argocd.argoproj.io/sync-options: Force=true,Replace=true`` or Flux
  ``kustomize.toolkit.fluxcd.io/force: enabled``; then the live object is deleted (foreground)
  and Git's created once it is gone (``SyncResult.replaced``);
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
import time
from collections.abc import Callable
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
#: Kinds ``pods_first`` applies after the Pods: the gang objects a pod waits for.
GANG_KINDS = {("scheduler.grove.io/v1alpha1", "PodGang"), ("scheduling.run.ai/v2alpha2", "PodGroup")}


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


def recreates_on_sync(obj: Raw, mode: Mode) -> bool:
    """Whether this tool deletes and re-creates ``obj`` when the server refuses its update: Argo CD
    with ``Force=true,Replace=true`` in its sync options, Flux with ``force: enabled`` (each tool
    reads only its own annotation)."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    if mode == "argocd":
        options = {o.strip() for o in str(annotations.get("argocd.argoproj.io/sync-options", "")).split(",")}
        return {"Force=true", "Replace=true"} <= options
    return str(annotations.get("kustomize.toolkit.fluxcd.io/force", "")).lower() == "enabled"


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
    held: list[Ref] = field(default_factory=list)  # pending, but stalled by a hold
    replaced: list[Ref] = field(default_factory=list)  # deleted and created again (immutable field)


@dataclass(eq=False)
class Hold:
    """Objects ``match`` selects are not written while held (see :meth:`Applier.hold`).

    ``seconds``: each pending write of a matching object waits that long from the first sync
    that found it pending (then it is written, and a later write waits afresh); ``None``:
    until :meth:`release`. ``held`` names every object the hold ever stalled, ``applied`` when
    each was finally written (monotonic), so a test can tell what came first.
    """

    match: Callable[[Raw], bool]
    seconds: float | None = None
    what: str = ""
    released: bool = False
    held: set[Ref] = field(default_factory=set)
    applied: dict[Ref, float] = field(default_factory=dict)
    _pending: dict[Ref, float] = field(default_factory=dict)

    def release(self) -> None:
        self.released = True

    def stalls(self, obj: Raw, ref: Ref, now: float) -> bool:
        """Whether the pending write of ``obj`` waits (and the clock of its stall)."""
        if self.released or not self.match(obj):
            return False
        since = self._pending.setdefault(ref, now)
        if self.seconds is not None and now - since >= self.seconds:
            return False
        self.held.add(ref)
        return True

    def written(self, ref: Ref, now: float) -> None:
        if self._pending.pop(ref, None) is not None or ref in self.held:
            self.applied[ref] = now


UPDATE_ATTEMPTS = 10  # PUTs of one update, each on a fresh read, before the sync fails


def _update_body(obj: Raw, live: Raw) -> Raw:
    """Git's object as a full update of ``live``: its identity, finalizers, owners and status kept."""
    body = copy.deepcopy(obj)
    meta = body.setdefault("metadata", {})
    live_meta = live["metadata"]
    for key in ("resourceVersion", "uid", "creationTimestamp", "finalizers", "ownerReferences"):
        if key in live_meta:
            meta[key] = live_meta[key]
    if "status" in live:
        body["status"] = live["status"]
    return body


class Applier:
    """See the module docstring."""

    def __init__(
        self,
        api_client: kubernetes.client.ApiClient,
        out_dir: Path,
        mode: Mode = "argocd",
        interval: float = 0.1,
        wave_delay: float = 0.0,
        pods_first: bool = False,
    ) -> None:
        if mode not in ("argocd", "flux"):
            raise ValueError(f"mode must be argocd or flux, not {mode!r}")
        self.out_dir = out_dir
        self.mode: Mode = mode
        self.interval = interval
        self.wave_delay = wave_delay
        self.pods_first = pods_first
        self.holds: list[Hold] = []
        self.rest = Rest(api_client)
        self.lock = threading.RLock()
        self.inventory: dict[Ref, int] = {}  # applied object -> its wave
        self.extraneous: set[Ref] = set()  # Argo CD: tracked, out of Git, kept by Prune=false
        self.syncs = 0
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._files: FileCache = {}

    # -- holds -------------------------------------------------------------------------------
    def hold(self, match: Callable[[Raw], bool], seconds: float | None = None, what: str = "") -> Hold:
        """Stall the writes of the objects ``match`` selects (see :class:`Hold`)."""
        held = Hold(match, seconds, what)
        with self.lock:
            self.holds.append(held)
        return held

    def _stalled(self, obj: Raw, ref: Ref) -> bool:
        now = time.monotonic()
        return any([h.stalls(obj, ref, now) for h in self.holds])  # every hold starts its clock

    # -- one sync ----------------------------------------------------------------------------
    def _waves(self, desired: list[Raw]) -> list[list[Raw]]:
        """The tree's objects by wave, in apply order (``pods_first``: gang objects last)."""
        last = max((wave_of(o) for o in desired), default=0) + 1
        by_wave: dict[int, list[Raw]] = {}
        for obj in desired:
            ref = ref_of(obj)
            wave = last if self.pods_first and (ref[0], ref[1]) in GANG_KINDS else wave_of(obj)
            by_wave.setdefault(wave, []).append(obj)
        return [by_wave[w] for w in sorted(by_wave)]

    def sync(self) -> SyncResult:
        """Apply the tree once (create, update, prune); raises on an unexpected API error."""
        with self.lock:
            result = SyncResult()
            desired = read_tree(self.out_dir, self._files)
            wanted = {ref_of(obj) for obj in desired}
            wrote = False  # an earlier wave of this sync wrote: the next writing wave waits
            for wave in self._waves(desired):
                live = self._list_live(wave)
                if wrote and self.wave_delay > 0 and any(self._plan(obj, live) for obj in wave):
                    if self._stop.wait(self.wave_delay):
                        break
                    live = self._list_live(wave)  # what changed meanwhile (the agent acts in the gap)
                before = len(result.created) + len(result.updated)
                for obj in wave:
                    self._apply(obj, result, live)
                wrote = wrote or len(result.created) + len(result.updated) > before
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

    def _live(self, obj: Raw, listed: dict[Ref, Raw | None] | None) -> Raw | None:
        ref = ref_of(obj)
        if listed is not None and ref in listed:
            return listed[ref]
        api_version, kind, namespace, name = ref
        return self.rest.get(api_version, kind, namespace or None, name)

    def _plan(self, obj: Raw, listed: dict[Ref, Raw | None] | None) -> str | None:
        """``"create"``, ``"update"`` or ``None`` (in sync, or never written by this tool)."""
        live = self._live(obj, listed)
        if live is None:
            return "create"
        api_version, kind = str(obj["apiVersion"]), str(obj["kind"])
        annotations = (obj.get("metadata") or {}).get("annotations") or {}
        if kind == "Pod" and api_version == "v1":
            return None  # never modify a pod (immutable; ignoreDifferences / ssa IfNotPresent)
        if self.mode == "flux" and annotations.get(FLUX_SSA) == "IfNotPresent":
            return None
        return "update" if _out_of_sync(live, obj) else None

    def _apply(self, obj: Raw, result: SyncResult, listed: dict[Ref, Raw | None] | None = None) -> None:
        ref = ref_of(obj)
        api_version, kind, namespace, _ = ref
        live = self._live(obj, listed)
        self.inventory[ref] = wave_of(obj)
        action = self._plan(obj, {ref: live})
        if action is None:
            return
        if self._stalled(obj, ref):
            result.held.append(ref)
            return
        now = time.monotonic()
        for held in self.holds:
            held.written(ref, now)
        if live is None:
            try:
                self.rest.request("POST", self.rest.path(api_version, kind, namespace or None), obj)
            except ApiException as exc:
                if exc.status != 409:  # created meanwhile (e.g. by a previous, interrupted sync)
                    raise
            result.created.append(ref)
            return
        # Argo CD and Flux apply server-side, without a resourceVersion precondition: a write by
        # someone else between the list and this update (the agent's PodGang status) does not
        # fail the apply, nor leave the object behind while the next waves go on. The PUT that
        # stands in for it is repeated on a fresh read when it conflicts.
        for _ in range(UPDATE_ATTEMPTS):
            try:
                self.rest.request("PUT", self.rest.object_path(obj), _update_body(obj, live))
            except ApiException as exc:
                if exc.status == 422 and recreates_on_sync(obj, self.mode):
                    self._recreate(obj, live, result)
                    return
                if exc.status != 409:
                    raise
                fresh = self.rest.get(api_version, kind, namespace or None, ref[3])
                if fresh is None:
                    return  # deleted meanwhile: the next sync creates it
                live = fresh
                continue
            result.updated.append(ref)
            return
        self.errors.append(f"{ref} kept conflicting ({UPDATE_ATTEMPTS} attempts); the next sync retries")

    def _recreate(self, obj: Raw, live: Raw, result: SyncResult) -> None:
        """Argo CD ``Force=true,Replace=true`` / Flux ``force: enabled`` after an update the server
        refused (an immutable field): delete the live object, wait until it is gone, create Git's."""
        ref = ref_of(obj)
        api_version, kind, namespace, name = ref
        path = self.rest.path(api_version, kind, namespace or None, name)
        body = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Foreground",
                "preconditions": {"uid": live["metadata"].get("uid")}}
        try:
            self.rest.request("DELETE", path, body)
        except ApiException as exc:
            if exc.status not in (404, 409):
                raise
        deadline = time.monotonic() + 30
        while self.rest.get(api_version, kind, namespace or None, name) is not None:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{kind} {namespace}/{name} still exists 30 s after its delete (re-create on sync)")
            time.sleep(0.05)
        self.rest.request("POST", self.rest.path(api_version, kind, namespace or None), obj)
        result.replaced.append(ref)

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
