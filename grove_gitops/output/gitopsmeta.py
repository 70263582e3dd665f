"""Argo CD sync waves and Flux apply policy (``spec/gitops.md`` §2-§3).

Waves order the apply so gang and topology objects exist before their pods: Namespaces and
CRDs (-20), prerequisites (-10), ServiceAccount token Secrets (-5), gangs, Services and claims
(0), pods (10). A token Secret must follow its ServiceAccount: Kubernetes' token controller
deletes a ``kubernetes.io/service-account-token`` Secret whose ServiceAccount does not exist
yet, so applying it first can lose it. The output's file names start with ``wave + 20``
(``00``, ``10``, ``15``, ``20``, ``30``) and the root kustomization applies files in that
order (``sortOptions: fifo``), so ``kubectl apply -k`` follows the waves too. Pods are gated, so a pod applied early is
harmless; the waves keep the lifter's wait short and the UI in causal order. Health checks
for the gang kinds must say Healthy once the object exists, or the waves deadlock.

Rendered pods get Flux's ``kustomize.toolkit.fluxcd.io/ssa: IfNotPresent``: once the
agent removed the gate, re-applying the Git copy would try to add it back, which the
API server forbids. (Argo CD's counterpart is ``ignoreDifferences`` on
``/spec/schedulingGates`` with ``RespectIgnoreDifferences=true`` on the Application.)

Rendered pods (``app.kubernetes.io/managed-by: grove-gitops``) are never pruned by the GitOps
tool (docs/day2.md): a spec change renames a pod, and the in-cluster agent, not Argo CD or
Flux, retires the old one in Grove's rolling order. Argo CD flavour: ``Prune=false`` in
``argocd.argoproj.io/sync-options`` (the sync skips the prune, "ignored (no prune)") and
``IgnoreExtraneous`` in ``argocd.argoproj.io/compare-options`` (a retired pod still in the
cluster does not make the Application OutOfSync). Argo CD matches both options exactly
(case-sensitive) after splitting the value on ``,`` and trimming spaces, so options a user set
on the clique template are kept and ours are added; a user's ``Prune=...`` is replaced by
``Prune=false``. Flux flavour: ``kustomize.toolkit.fluxcd.io/prune: disabled``, overwriting
a source value (lower case: recent Flux compares it case-insensitively, older releases
exactly). Pass-through Pods (no managed-by label) keep normal pruning: the agent never deletes
them, so nothing else would.
"""

from __future__ import annotations

import functools
from typing import Any

SA_TOKEN_TYPE = "kubernetes.io/service-account-token"
SYNC_WAVE = "argocd.argoproj.io/sync-wave"
FLUX_SSA = "kustomize.toolkit.fluxcd.io/ssa"
ARGOCD_SYNC_OPTIONS = "argocd.argoproj.io/sync-options"
ARGOCD_COMPARE_OPTIONS = "argocd.argoproj.io/compare-options"
ARGOCD_NO_PRUNE = "Prune=false"
ARGOCD_IGNORE_EXTRANEOUS = "IgnoreExtraneous"
FLUX_PRUNE = "kustomize.toolkit.fluxcd.io/prune"
FLUX_PRUNE_DISABLED = "disabled"
#: Recreate on sync (issue 32.3): an object a render marks so (a backend object whose fields the
#: API server keeps immutable, e.g. KAI's Topology ``nodeLabel``s) is deleted and created again
#: by the GitOps tool instead of updated in place, as Grove's operator does. Argo CD: ``Replace``
#: alone is ``kubectl replace`` (still an update, refused); with ``Force`` it is delete + create.
#: Flux: ``force: enabled`` recreates the object when the apply fails on an immutable field.
ARGOCD_RECREATE = "Force=true,Replace=true"
FLUX_FORCE = "kustomize.toolkit.fluxcd.io/force"
FLUX_FORCE_ENABLED = "enabled"
RECREATE_ON_SYNC = {ARGOCD_SYNC_OPTIONS: ARGOCD_RECREATE, FLUX_FORCE: FLUX_FORCE_ENABLED}
_MANAGED_BY = "app.kubernetes.io/managed-by"
_MANAGED_BY_VALUE = "grove-gitops"

WAVE_NAMESPACE = -20
WAVE_PREREQ = -10
WAVE_SA_TOKEN = -5
WAVE_GANG = 0
WAVE_POD = 10

_FIRST_KINDS = {"Namespace", "CustomResourceDefinition"}
_PREREQ_KINDS = {
    "ServiceAccount",
    "Role",
    "RoleBinding",
    "ClusterRole",
    "ClusterRoleBinding",
    "Secret",
    "ConfigMap",
    "PriorityClass",
    "ResourceClaimTemplate",
    "LimitRange",
    "ResourceQuota",
}


def wave_of(obj: dict[str, Any], cluster_scoped: bool) -> int:
    """The Argo CD sync wave; ``wave + 20`` is also the file-name prefix (apply order)."""
    kind = obj.get("kind")
    if kind in _FIRST_KINDS:
        return WAVE_NAMESPACE
    if kind == "Secret" and obj.get("apiVersion") == "v1" and obj.get("type") == SA_TOKEN_TYPE:
        return WAVE_SA_TOKEN
    if kind == "Pod" or (kind == "PodCliqueSet" and str(obj.get("apiVersion", "")).startswith("gitops.grove.io/")):
        # The workload's gitops.grove.io record is Healthy only once its pods run: in an
        # earlier wave Argo CD would wait for it and never apply the pods.
        return WAVE_POD
    if cluster_scoped or kind in _PREREQ_KINDS:
        return WAVE_PREREQ
    return WAVE_GANG


@functools.lru_cache(maxsize=256)
def _with_option(value: str | None, option: str, drop_prefix: str | None = None) -> str:
    """``value`` (Argo CD's comma-separated options) with ``option`` added once.

    Items are split and trimmed as Argo CD does; items starting with ``drop_prefix`` (a
    contradicting ``Prune=true``) are dropped, the rest keep their order. Memoised (a pure
    function of strings): every rendered pod asks twice, nearly always with the same value
    (issue 35.4).
    """
    items = [item.strip() for item in (value or "").split(",") if item.strip()]
    if drop_prefix is not None:
        items = [item for item in items if item == option or not item.startswith(drop_prefix)]
    if option not in items:
        items.append(option)
    return ",".join(items)


def is_managed_pod(obj: dict[str, Any]) -> bool:
    """A Pod grove-gitops rendered (the agent's definition of "managed")."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return obj.get("kind") == "Pod" and obj.get("apiVersion") == "v1" and labels.get(_MANAGED_BY) == _MANAGED_BY_VALUE


def annotate(obj: dict[str, Any], wave: int, flavour: str) -> None:
    """Add the GitOps annotations in place; a wave the user set on a passthrough object wins."""
    meta = obj.setdefault("metadata", {})
    annotations = dict(meta.get("annotations") or {})
    argocd, flux = flavour in ("argocd", "both"), flavour in ("flux", "both")
    if argocd:
        annotations.setdefault(SYNC_WAVE, str(wave))
    if flux and obj.get("kind") == "Pod" and obj.get("apiVersion") == "v1":
        annotations.setdefault(FLUX_SSA, "IfNotPresent")
    if is_managed_pod(obj):
        if argocd:
            annotations[ARGOCD_SYNC_OPTIONS] = _with_option(
                annotations.get(ARGOCD_SYNC_OPTIONS), ARGOCD_NO_PRUNE, drop_prefix="Prune="
            )
            annotations[ARGOCD_COMPARE_OPTIONS] = _with_option(
                annotations.get(ARGOCD_COMPARE_OPTIONS), ARGOCD_IGNORE_EXTRANEOUS
            )
        if flux:
            annotations[FLUX_PRUNE] = FLUX_PRUNE_DISABLED
    if annotations:
        meta["annotations"] = annotations


#: How diff and plan name a change Argo CD / Flux apply by deleting and re-creating the object.
RECREATED = "replaced: immutable field"


def recreated_on_sync(obj: dict[str, Any]) -> bool:
    """Whether Argo CD or Flux deletes and re-creates ``obj`` on a change (:data:`RECREATE_ON_SYNC`)."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    if not isinstance(annotations, dict):
        return False
    options = {item.strip() for item in str(annotations.get(ARGOCD_SYNC_OPTIONS, "")).split(",")}
    argocd = {"Force=true", "Replace=true"} <= options
    return argocd or str(annotations.get(FLUX_FORCE, "")).lower() == FLUX_FORCE_ENABLED
