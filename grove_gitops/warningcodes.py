"""Stable codes of warnings, so that one can be acknowledged per workload (issue 34.10).

Warnings travel through the pipeline, and through the render cache, as ``file: field:
message`` strings; a code is recognised from that text rather than carried beside it, so a
cached warning has the same code as a fresh one and nothing else needs to change shape.
Each code names one kind of finding and is listed in docs/authoring.md; its pattern is the
message's fixed wording. A scheduler backend declares the codes of its own warnings
(:attr:`~grove_gitops.backendapi.SchedulerBackend.warning_codes`), so nothing here knows a
backend. A warning no pattern matches has the code :data:`UNCODED` and cannot be
acknowledged per workload (RenderConfiguration's ``acknowledgedWarnings`` still can).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import cache

from grove_gitops.backendapi import available_backends

UNCODED = "uncoded"
#: A code: lowercase words joined by dashes, at most 63 characters (it is written in an
#: annotation value, beside others).
CODE_RE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
MAX_CODE = 63

#: The project's own warnings: code -> the fixed wording of its message (a regex searched in
#: the whole ``file: field: message`` text).
CORE_CODES: Mapping[str, str] = {
    "namespace-default": r": metadata\.namespace: not set, and RenderConfiguration sets no defaultNamespace",
    "namespace-undeclared": r": metadata\.namespace: namespace .* is not created by the source",
    "starts-after-unknown": r"\.spec\.startsAfter: names no clique of this PodCliqueSet",
    "preferred-redundant": r"\.pack\.preferred is coarser than .* and is redundant",
    "dra-feature-gate": r"\.podSpec\.resourceClaims: pod resourceClaims need dynamic resource allocation",
    "hpa-counts-pods": r"\.metrics: the HorizontalPodAutoscaler of scaling group .* counts pods",
    "infeasible": r"PodGang \S+ does not fit the node inventory",
    "autoscaled-maximum": r"PodCliqueSet \S+ (fits|does not fit) at the floor \(",
    "unknown-kind": r"is not a built-in kind of Kubernetes",
    "helm-chart": r": a Helm chart \(",
    "helm-values": r": a Helm values file, not a Kubernetes manifest",
    "queue-override-unused": r"spec\.overrides\.queue: scheduler .* has no queue; the override does not apply",
    "unused-by-fleet": r"(is used by no Cluster; ignored|is selected by no Cluster; not rendered)$",
    "unknown-priorityclass": r"priorityClassName: PriorityClass .* is not in the cluster facts",
    "unknown-serviceaccount": r"serviceAccountName: ServiceAccount .* is not in the cluster facts",
    "unknown-secret": r": Secret .* is not in the cluster facts",
    "unknown-queue": r": queue .* is not in the cluster facts",
}


@cache
def _compiled() -> tuple[tuple[str, re.Pattern[str]], ...]:
    codes = dict(CORE_CODES)
    for backend in available_backends().values():
        for code, pattern in backend.warning_codes.items():
            codes.setdefault(code, pattern)  # two backends may share a code (preferred-ignored)
    return tuple((code, re.compile(pattern)) for code, pattern in codes.items())


def known_codes() -> list[str]:
    """Every code a warning can have (but :data:`UNCODED`)."""
    return [code for code, _ in _compiled()]


def code_of(warning: str) -> str:
    """The code of a ``file: field: message`` warning, or :data:`UNCODED`."""
    for code, pattern in _compiled():
        if pattern.search(warning):
            return code
    return UNCODED


def parse_codes(value: str) -> tuple[list[str], list[str]]:
    """The codes of an acknowledge annotation (``namespace-undeclared, infeasible``) and the
    entries that are no code (to report)."""
    codes: list[str] = []
    bad: list[str] = []
    for part in value.split(","):
        word = part.strip()
        if not word:
            continue
        (codes if len(word) <= MAX_CODE and CODE_RE.match(word) else bad).append(word)
    return codes, bad


def unknown_codes(codes: Iterable[str]) -> list[str]:
    known = set(known_codes())
    return [c for c in codes if c not in known]
