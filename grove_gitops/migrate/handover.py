"""The writes of ``migrate apply``, with the user's credentials, each one idempotent.

Order (every step re-derived from the live state, so an interrupted run is simply run again):

1. **Services**: the headless Services drop ``managed-by`` from their selector, so they select
   Grove's pods before and after step 2 (and the render's pods later): no DNS gap.
2. **Pods**: each running Grove pod, already verified as its slot's (:mod:`.compare`), gets in
   one PATCH (conditional on the resourceVersion that was checked) the label
   ``managed-by: grove-gitops``, the adoption record (:mod:`grove_gitops.readmodel.adoption`) and no ownerReferences.
   From here Grove's PodClique no longer owns it, and the agent sees it.
3. **Children of the same name** (PodGangs, ServiceAccount, Role, RoleBinding, token Secret,
   Services): labelled ``managed-by: grove-gitops`` with no ownerReferences, so the GitOps
   tool's apply takes them over in place. A PodGang keeps its status: Grove marked it
   ``Initialized``, so the agent releases the rendered pods one slot at a time.
4. **The grove.io objects** (PodCliques, PodCliqueScalingGroups, the PodCliqueSet): Grove's
   finalizer removed, then deleted with ``propagationPolicy: Orphan`` (whatever still points
   at them is orphaned, never deleted). The server keeps each until the garbage collector has
   done the orphaning (its ``orphan`` finalizer); a freshly started collector learns a new CRD's
   resources only at its next discovery (about 30 s), so ``apply`` waits, bounded, until they
   are gone: when it returns 0 the hand-over is complete.
5. **Check**: no pod of the PodCliqueSet labelled ``managed-by: grove-operator`` is left. One
   is there only if Grove's operator ran during the hand-over and created it: that is reported
   (exit 1); the operator must be stopped while this runs (docs/migration.md).

Nothing here deletes a pod.
"""

from __future__ import annotations

import time
import urllib.parse
from collections.abc import Callable, Mapping
from typing import Any

from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from grove_gitops.agent.kube import Kube
from grove_gitops.migrate.compare import Comparison
from grove_gitops.migrate.live import GROVE_API, Live, MigrateError, collection, member
from grove_gitops.migrate.live import get as live_get
from grove_gitops.readmodel import adoption

MERGE = "application/merge-patch+json"
GROVE_FINALIZER_PREFIX = "grove.io/"
Raw = Mapping[str, Any]


def _write(kube: Kube, method: str, path: str, body: Any, *, gone_ok: bool = False) -> bool:
    """One write; False when the object is gone and ``gone_ok`` (it was deleted: done)."""
    try:
        kube.raw(method, path, body, MERGE if method == "PATCH" else "application/json")
    except ApiException as exc:
        if exc.status == 404 and gone_ok:
            return False
        detail = str(exc.body or "")[:300]
        if exc.status == 409:
            raise MigrateError(f"{method} {path}: the object changed since it was checked ({detail}); "
                               "nothing further was changed: run `migrate apply` again") from None
        raise MigrateError(f"{method} {path}: {exc.status} {exc.reason}: {detail}") from None
    except (HTTPError, OSError) as exc:
        raise MigrateError(f"{method} {path}: {exc}") from None
    return True


def _meta(obj: Raw) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _grove_labelled(obj: Raw) -> bool:
    return (_meta(obj).get("labels") or {}).get(adoption.MANAGED_BY) == adoption.GROVE


#: How long ``apply`` waits for the garbage collector to finish orphaning (step 4).
ORPHAN_WAIT_SECONDS = 180.0


def _wait_gone(kube: Kube, paths: list[str], say: Callable[[str], None], timeout: float) -> None:
    """Until every path answers 404, or ``timeout``: then a MigrateError that says what is left
    (running ``apply`` again finishes the job; nothing is half-done)."""
    deadline = time.monotonic() + timeout
    left = [p for p in paths if live_get(kube, p) is not None]
    if left:
        say(f"waiting for the garbage collector to finish orphaning {len(left)} grove.io object(s)")
    while left:
        if time.monotonic() > deadline:
            raise MigrateError(f"{len(left)} grove.io object(s) still being deleted {timeout:.0f} s after their Orphan "
                               f"delete ({', '.join(left[:3])}): is kube-controller-manager's garbage collector "
                               "running? Run `migrate apply` again once they are gone")
        time.sleep(0.5)
        left = [p for p in left if live_get(kube, p) is not None]


def hand_over(kube: Kube, live: Live, comparison: Comparison, rendered_names: set[tuple[str, str]],
              say: Callable[[str], None], orphan_wait: float = ORPHAN_WAIT_SECONDS) -> int:
    """Steps 1-5 above; returns the number of writes. ``rendered_names``: (kind, name) of every
    object the render writes (only objects of those names are handed over)."""
    ns = live.namespace
    writes = 0
    for api_version, plural, obj in live.others:  # 1. Services select both managers' pods
        selector = (obj.get("spec") or {}).get("selector") or {}
        if plural == "services" and selector.get(adoption.MANAGED_BY) == adoption.GROVE:
            name = _meta(obj)["name"]
            _write(kube, "PATCH", member(api_version, plural, ns, name),
                   {"spec": {"selector": {adoption.MANAGED_BY: None}}})
            writes += 1
            say(f"service {ns}/{name}: selects pods of either manager")
    for pod in comparison.to_adopt:  # 2. pods
        meta = _meta(pod)
        body = {"metadata": {"resourceVersion": meta.get("resourceVersion"),
                             "labels": {adoption.MANAGED_BY: adoption.GITOPS},
                             "annotations": {adoption.ADOPT: adoption.marker(pod)},
                             "ownerReferences": None}}
        _write(kube, "PATCH", member("v1", "pods", ns, meta["name"]), body)
        writes += 1
        say(f"pod {ns}/{meta['name']}: handed over (slot {(pod.get('spec') or {}).get('hostname')})")
    for api_version, plural, obj in live.others:  # 3. children of the same name
        kind = _KINDS[plural]
        name = str(_meta(obj).get("name"))
        if not _grove_labelled(obj) or (kind, name) not in rendered_names:
            continue
        _write(kube, "PATCH", member(api_version, plural, ns, name),
               {"metadata": {"labels": {adoption.MANAGED_BY: adoption.GITOPS}, "ownerReferences": None}})
        writes += 1
        say(f"{kind} {ns}/{name}: handed over")
    grove = [("podcliques", o) for o in live.podcliques] + [("podcliquescalinggroups", o) for o in live.scaling_groups]
    grove += [("podcliquesets", live.pcs)] if live.pcs is not None else []
    deleted: list[str] = []
    for plural, obj in grove:  # 4. the grove.io objects, orphaning
        meta = _meta(obj)
        path = member(GROVE_API, plural, ns, meta.get("name"))
        deleted.append(path)
        finalizers = [f for f in meta.get("finalizers") or [] if isinstance(f, str)]
        kept = [f for f in finalizers if not f.startswith(GROVE_FINALIZER_PREFIX)]
        if kept != finalizers:
            writes += 1
            if not _write(kube, "PATCH", path, {"metadata": {"finalizers": kept or None}}, gone_ok=True):
                continue
        if not meta.get("deletionTimestamp") or kept != finalizers:
            # (on an object already being deleted, DELETE again sets the Orphan policy)
            writes += 1
            _write(kube, "DELETE", path, {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Orphan"},
                   gone_ok=True)
            say(f"{plural[:-1]} {ns}/{meta.get('name')}: deleted, its children orphaned")
    _wait_gone(kube, deleted, say, orphan_wait)
    selector = urllib.parse.quote(f"{adoption.MANAGED_BY}={adoption.GROVE},{adoption.PART_OF}={live.name}")
    left = (live_get(kube, f"{collection('v1', 'pods', ns)}?labelSelector={selector}&limit=5") or {}).get("items") or []
    left = [p for p in left if not _meta(p).get("deletionTimestamp")]
    if left:  # 5.
        names = ", ".join(str(_meta(p).get("name")) for p in left)
        raise MigrateError(f"Grove's operator is still running: pods of {ns}/{live.name} labelled managed-by=grove-operator "
                           f"exist after the hand-over ({names}). Stop the operator, delete those pods (they are new, not "
                           "the running workload's) and run `migrate apply` again")
    return writes


_KINDS = {"podgangs": "PodGang", "services": "Service", "serviceaccounts": "ServiceAccount", "secrets": "Secret",
          "roles": "Role", "rolebindings": "RoleBinding"}
