"""Where rendered output lives in Git and how Argo CD / Flux read it: the settings of the
generated wiring (``_flux/``, ``_argocd/``, :mod:`grove_gitops.output.wiring`).

One model for both places that ask for wiring: a fleet Cluster's ``spec.gitops`` and a
single-cluster RenderConfiguration's ``wiring`` (which opts in; absent, nothing is generated).
Every value is copied into Argo CD / Flux objects, so :func:`wiring_problems` checks each one
against what reads it (:mod:`grove_gitops.fields.externalrefs`); a URL is never shown with its userinfo.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field

from grove_gitops.api.base import StrictModel
from grove_gitops.errors import InputProblem
from grove_gitops.fields.externalrefs import (
    git_ref_problems,
    git_url_problems,
    path_problems,
    repo_path_problems,
    shown,
    shown_url,
)
from grove_gitops.fields.k8snames import dns1123_label_problems, dns1123_subdomain_problems

#: The Flux CRD's pattern for ``spec.interval`` / ``spec.timeout`` (a Go duration).
_DURATION_RE = re.compile(r"([0-9]+(\.[0-9]+)?(ms|s|m|h))+")
#: The Flux Kustomization of overlays/flux/kustomization-crds.yaml (grove-gitops' own CRDs).
CRDS_KUSTOMIZATION = "grove-gitops-crds"


class SourceRef(StrictModel):
    kind: Literal["GitRepository", "OCIRepository", "Bucket"] = "GitRepository"
    name: str
    namespace: str | None = None


class FluxWiring(StrictModel):
    """The generated ``_flux/`` Kustomizations (when the RenderConfiguration's ``gitops`` is
    ``flux`` or ``both``)."""

    sourceRef: SourceRef = Field(default_factory=lambda: SourceRef(name="grove-rendered"))
    namespace: str = "flux-system"
    interval: str = "10m"
    #: ``spec.timeout`` of every Kustomization: how long its health checks may take. With
    #: ``waitForWorkloads`` it must cover pod start-up (image pulls, model loading).
    timeout: str = "2m"
    #: The Flux Kustomization that installs grove-gitops' CRDs (overlays/flux); the first shard
    #: ``dependsOn`` it, because every shard holds a gitops.grove.io PodCliqueSet. null: none.
    crdsKustomization: str | None = CRDS_KUSTOMIZATION
    #: List each shard's gitops.grove.io PodCliqueSet under ``healthChecks`` too, so the
    #: Kustomization is Ready only once the workload is available (the agent reports it).
    waitForWorkloads: bool = True


class ArgoCDWiring(StrictModel):
    """The generated ``_argocd/`` Applications (``gitops: argocd`` or ``both``)."""

    namespace: str = "argocd"
    project: str = "default"
    #: ``spec.destination.name``: the cluster's name as registered in Argo CD (fleet default:
    #: the Cluster's own name; single cluster default: ``server: https://kubernetes.default.svc``).
    destinationName: str | None = None


class GitOpsWiring(StrictModel):
    """Where the rendered output lives, for the generated wiring and the hydrator files."""

    repoURL: str = "https://git.example.com/platform/grove-rendered.git"
    targetRevision: str = "HEAD"
    #: The output's directory inside that repository (the controller's ``--output-path``).
    path: str = ""
    flux: FluxWiring = Field(default_factory=FluxWiring)
    argocd: ArgoCDWiring = Field(default_factory=ArgoCDWiring)


def _duration(file: str, where: str, value: str) -> list[InputProblem]:
    if len(value) > 64 or not _DURATION_RE.fullmatch(value):
        return [InputProblem(file, where, f"Invalid value: {shown(value)}: a duration such as 10m or 1h30m")]
    return []


def wiring_problems(file: str, wiring: GitOpsWiring, prefix: str) -> list[InputProblem]:
    """Every problem of ``wiring`` (found at ``prefix`` of ``file``: ``spec.gitops`` of a
    Cluster, ``wiring`` of a RenderConfiguration)."""
    problems: list[InputProblem] = []
    for where, value in (
        (f"{prefix}.flux.namespace", wiring.flux.namespace),
        (f"{prefix}.argocd.namespace", wiring.argocd.namespace),
    ):
        problems += [InputProblem(file, where, f"Invalid value: {shown(value)}: {p}") for p in dns1123_label_problems(value)]
    source_ref = wiring.flux.sourceRef
    problems += [
        InputProblem(file, f"{prefix}.flux.sourceRef.name", f"Invalid value: {shown(source_ref.name)}: {p}")
        for p in dns1123_subdomain_problems(source_ref.name)
    ]
    if source_ref.namespace is not None:
        problems += [
            InputProblem(file, f"{prefix}.flux.sourceRef.namespace", f"Invalid value: {shown(source_ref.namespace)}: {p}")
            for p in dns1123_label_problems(source_ref.namespace)
        ]
    if wiring.flux.crdsKustomization is not None:
        problems += [
            InputProblem(
                file, f"{prefix}.flux.crdsKustomization", f"Invalid value: {shown(wiring.flux.crdsKustomization)}: {p}"
            )
            for p in dns1123_subdomain_problems(wiring.flux.crdsKustomization)
        ]
    problems += [
        InputProblem(file, f"{prefix}.argocd.project", f"Invalid value: {shown(wiring.argocd.project)}: {p}")
        for p in dns1123_subdomain_problems(wiring.argocd.project)
    ]
    problems += _duration(file, f"{prefix}.flux.interval", wiring.flux.interval)
    problems += _duration(file, f"{prefix}.flux.timeout", wiring.flux.timeout)
    problems += [
        InputProblem(file, f"{prefix}.targetRevision", f"Invalid value: {shown(wiring.targetRevision)}: {p}")
        for p in git_ref_problems(wiring.targetRevision)
    ]
    destination = wiring.argocd.destinationName
    if destination is not None and (
        not destination or len(destination) > 253 or any(not c.isprintable() for c in destination)
    ):
        problems.append(
            InputProblem(file, f"{prefix}.argocd.destinationName", "Invalid value: 1 to 253 printable characters")
        )
    if wiring.path:
        problems += [
            InputProblem(file, f"{prefix}.path", f"Invalid value: {shown(wiring.path)}: {p}")
            for p in path_problems(wiring.path) or repo_path_problems(wiring.path)
        ]
    problems += [
        InputProblem(file, f"{prefix}.repoURL", f"Invalid value: {shown_url(wiring.repoURL)}: {p}")
        for p in git_url_problems(wiring.repoURL)
    ]
    return problems
