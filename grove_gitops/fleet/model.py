"""``gitops.grove.io/v1alpha1`` Cluster: one render target of a fleet (issue 12).

A source tree that holds Cluster objects renders once per Cluster into ``OUT/<cluster>/``.
Each Cluster names its own OperatorConfiguration, RenderConfiguration and
ClusterTopologyBindings (by ``name`` or by ``path`` inside the source tree), selects the
PodCliqueSets it runs (a label selector and/or gitignore-style path patterns) and carries a
small, explicit set of overrides. Deliberately no templating: kustomize and Helm exist for that.

The source is untrusted: the Cluster's name becomes a directory of the output and a part of
generated Argo CD / Flux object names, so it must be a DNS-1123 label; a ``path`` must stay
inside the source tree. Everything is validated strictly, with ``file: field: message``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, ValidationError, model_validator

from grove_gitops.api.base import ObjectMeta, StrictModel
from grove_gitops.api.gitopswiring import (  # noqa: F401  (re-exported: the fleet's names)
    ArgoCDWiring,
    FluxWiring,
    GitOpsWiring,
    SourceRef,
    wiring_problems,
)
from grove_gitops.errors import InputProblem
from grove_gitops.fields.externalrefs import (  # noqa: F401  (MAX_PATH re-exported)
    MAX_PATH,
    image_registry_problems,
    path_problems,
    shown,
)
from grove_gitops.fields.fielderrors import from_pydantic
from grove_gitops.fields.k8snames import dns1123_label_problems
from grove_gitops.problems import cap_document, document_name

#: ``spec.workloads.paths``: more patterns than any cluster needs would only cost time.
MAX_PATTERNS = 256


class ConfigRef(StrictModel):
    """A configuration of the source tree, by ``metadata.name`` or by the file holding it."""

    name: str | None = None
    path: str | None = None

    @model_validator(mode="after")
    def _one(self) -> ConfigRef:
        if (self.name is None) == (self.path is None):
            raise ValueError("exactly one of name and path must be set")
        return self

    def describe(self) -> str:
        return f"name {self.name!r}" if self.name is not None else f"path {self.path!r}"


class LabelSelectorRequirement(StrictModel):
    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: list[str] = Field(default_factory=list)


class LabelSelector(StrictModel):
    """Kubernetes' ``metav1.LabelSelector``: every term must match (an empty one matches all)."""

    matchLabels: dict[str, str] = Field(default_factory=dict)
    matchExpressions: list[LabelSelectorRequirement] = Field(default_factory=list)

    def matches(self, labels: dict[str, str]) -> bool:
        if any(labels.get(k) != v for k, v in self.matchLabels.items()):
            return False
        for req in self.matchExpressions:
            present = req.key in labels
            if req.operator == "In" and not (present and labels[req.key] in req.values):
                return False
            if req.operator == "NotIn" and present and labels[req.key] in req.values:
                return False
            if req.operator == "Exists" and not present:
                return False
            if req.operator == "DoesNotExist" and present:
                return False
        return True


class Workloads(StrictModel):
    """Which PodCliqueSets (and pass-through objects) the cluster runs.

    ``paths``: gitignore-style patterns relative to the source root (``workloads/kai/``,
    ``common/*.yaml``); when given, only documents of matching files are taken, pass-through
    objects included. ``selector``: a label selector on PodCliqueSets. Both given: both must match.
    Neither: every PodCliqueSet and every pass-through object.
    """

    selector: LabelSelector | None = None
    paths: list[str] | None = None


class Overrides(StrictModel):
    """What differs per cluster without forking the workload. Small on purpose."""

    #: The scheduler profile a clique's empty ``schedulerName`` resolves to (the cluster
    #: OperatorConfiguration's ``scheduler.defaultProfileName`` for this cluster).
    defaultSchedulerProfile: str | None = None
    #: The gang queue of every selected PodCliqueSet, written where its scheduler backend
    #: reads it (KAI: label ``kai.scheduler/queue``; Volcano: annotation
    #: ``scheduling.grove.io/volcano-queue``); queue keys on clique templates are replaced.
    queue: str | None = None
    #: Registry (and optional path) replacing the registry of every container and init
    #: container image: ``mirror.example.com/ai`` turns ``nvcr.io/nvidia/x:1`` into
    #: ``mirror.example.com/ai/nvidia/x:1`` and ``vllm/vllm:1`` into ``mirror.example.com/ai/vllm/vllm:1``.
    imageRegistry: str | None = None
    #: ``spec.replicas`` per PodCliqueSet, keyed ``<namespace>/<name>`` (or ``<name>`` in the
    #: RenderConfiguration's default namespace). A key matching no selected PodCliqueSet is an error.
    replicas: dict[str, int] = Field(default_factory=dict)


class ClusterSpec(StrictModel):
    operatorConfiguration: ConfigRef | None = None
    renderConfiguration: ConfigRef | None = None
    clusterTopologyBindings: list[ConfigRef] = Field(default_factory=list)
    workloads: Workloads = Field(default_factory=Workloads)
    overrides: Overrides = Field(default_factory=Overrides)
    gitops: GitOpsWiring = Field(default_factory=GitOpsWiring)


class Cluster(StrictModel):
    apiVersion: Literal["gitops.grove.io/v1alpha1"] = "gitops.grove.io/v1alpha1"
    kind: Literal["Cluster"] = "Cluster"
    metadata: ObjectMeta
    spec: ClusterSpec = Field(default_factory=ClusterSpec)

    @property
    def name(self) -> str:
        return self.metadata.name


def pattern_problems(value: str) -> list[str]:
    """A ``spec.workloads.paths`` pattern: a path (:func:`path_problems`). Its wildcards need
    no limit: patterns are matched by RE2 (``load/patterns.py``), in time linear in the path,
    so ``*a*a*a*a*a*ab`` costs what ``*.yaml`` costs."""
    return path_problems(value)


def parse_cluster(file: str, data: dict[str, object]) -> tuple[Cluster | None, list[InputProblem]]:
    """Validate one Cluster document; every problem is ``file: field: message``."""
    try:
        cluster = Cluster.model_validate(data)
    except ValidationError as exc:
        errs = (InputProblem(file, e.path, e.message()) for e in from_pydantic(exc))
        return None, cap_document(file, errs, document_name(data))
    problems: list[InputProblem] = []
    name = cluster.metadata.name
    if not name:
        problems.append(InputProblem(file, "metadata.name", "Required value"))
    else:
        problems += [
            InputProblem(file, "metadata.name", f"Invalid value: {shown(name)}: {p} (it names the output directory)")
            for p in dns1123_label_problems(name)
        ]
    spec = cluster.spec
    refs: list[tuple[str, ConfigRef]] = []
    if spec.operatorConfiguration is not None:
        refs.append(("spec.operatorConfiguration", spec.operatorConfiguration))
    if spec.renderConfiguration is not None:
        refs.append(("spec.renderConfiguration", spec.renderConfiguration))
    refs += [(f"spec.clusterTopologyBindings[{i}]", r) for i, r in enumerate(spec.clusterTopologyBindings)]
    for where, ref in refs:
        if ref.path is not None:
            problems += [InputProblem(file, f"{where}.path", f"Invalid value: {shown(ref.path)}: {p}") for p in path_problems(ref.path)]
        if ref.name is not None and (not ref.name or len(ref.name) > 253):
            problems.append(InputProblem(file, f"{where}.name", "Invalid value: 1 to 253 characters"))
    patterns = spec.workloads.paths or []
    if len(patterns) > MAX_PATTERNS:
        problems.append(
            InputProblem(file, "spec.workloads.paths", f"Too many: {len(patterns)}: must have at most {MAX_PATTERNS} items")
        )
        patterns = []
    for i, pattern in enumerate(patterns):
        problems += [
            InputProblem(file, f"spec.workloads.paths[{i}]", f"Invalid value: {shown(pattern)}: {p}")
            for p in pattern_problems(pattern.lstrip("!"))
        ]
    overrides = spec.overrides
    for key, n in overrides.replicas.items():
        if n < 0:
            problems.append(InputProblem(file, f"spec.overrides.replicas[{key}]", "Invalid value: must be >= 0"))
    if overrides.queue is not None and not overrides.queue.strip():
        problems.append(InputProblem(file, "spec.overrides.queue", "Invalid value: must not be empty"))
    if overrides.imageRegistry is not None:
        problems += [
            InputProblem(file, "spec.overrides.imageRegistry", f"Invalid value: {shown(overrides.imageRegistry)}: {p}")
            for p in image_registry_problems(overrides.imageRegistry)
        ]
    problems += wiring_problems(file, spec.gitops, "spec.gitops")
    return (None, problems) if problems else (cluster, [])
