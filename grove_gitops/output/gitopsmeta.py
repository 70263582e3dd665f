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
gate-lifter removed the gate, re-applying the Git copy would try to add it back, which the
API server forbids. (Argo CD's counterpart is ``ignoreDifferences`` on
``/spec/schedulingGates`` with ``RespectIgnoreDifferences=true`` on the Application.)
"""

from __future__ import annotations

from typing import Any

SA_TOKEN_TYPE = "kubernetes.io/service-account-token"
SYNC_WAVE = "argocd.argoproj.io/sync-wave"
FLUX_SSA = "kustomize.toolkit.fluxcd.io/ssa"

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
    if kind == "Pod":
        return WAVE_POD
    if cluster_scoped or kind in _PREREQ_KINDS:
        return WAVE_PREREQ
    return WAVE_GANG


def annotate(obj: dict[str, Any], wave: int, flavour: str) -> None:
    """Add the GitOps annotations in place; a wave the user set on a passthrough object wins."""
    meta = obj.setdefault("metadata", {})
    annotations = dict(meta.get("annotations") or {})
    if flavour in ("argocd", "both"):
        annotations.setdefault(SYNC_WAVE, str(wave))
    if flavour in ("flux", "both") and obj.get("kind") == "Pod" and obj.get("apiVersion") == "v1":
        annotations.setdefault(FLUX_SSA, "IfNotPresent")
    if annotations:
        meta["annotations"] = annotations
