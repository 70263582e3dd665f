"""``gitops.grove.io/v1alpha1`` RenderConfiguration: grove-gitops' own small settings.

These are the deployment facts Grove's operator takes from its environment rather than from
the OperatorConfiguration (the init-container image), plus what only a renderer needs: the
Kubernetes version the output targets and which GitOps tool applies it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from pydantic import AfterValidator, Field, field_validator
from pydantic_core import PydanticCustomError

from grove_gitops.api.base import ObjectMeta, StrictModel
from grove_gitops.api.gitopswiring import GitOpsWiring
from grove_gitops.fields.k8snames import dns1123_label_problems

#: Grove's init container (chart value ``grove-initc``) at the Grove release we follow.
DEFAULT_INIT_IMAGE = "ghcr.io/ai-dynamo/grove/grove-initc:v0.1.0"

#: The minor versions a render can target (docs/kubernetes-versions.md). The oldest is the
#: oldest with a Kubernetes' schema in kubernetes-validate that upstream still patched in 2025;
#: 1.30 made scheduling gates GA, and every rendered pod carries one. A backend or feature
#: that needs a newer API refuses an older target itself (``backends/``,
#: ``validation/kubeversions.py``), naming the version it needs.
KubernetesVersion = Literal["1.31", "1.32", "1.33", "1.34", "1.35", "1.36", "1.37"]
SUPPORTED_KUBERNETES_VERSIONS: tuple[str, ...] = get_args(KubernetesVersion)
#: Why an unquoted version is refused rather than read: YAML makes ``1.30`` the number 1.3,
#: so no conversion back to a string can be trusted.
UNQUOTED_VERSION = (
    'quote it: the version must be a string (kubernetesVersion: "1.35"); '
    "unquoted, YAML reads it as a number, and 1.30 as 1.3"
)
GitOpsFlavour = Literal["argocd", "flux", "both"]
#: What a PodGang that does not fit the source's node inventory is (docs/feasibility.md).
FeasibilityMode = Literal["warn", "enforce"]
#: Who reconciles the source's PodCliqueSets (docs/adoption.md): ``full`` (grove-gitops renders
#: them and its agent runs them) or ``review`` (Grove's operator reconciles the grove.io
#: PodCliqueSets that Argo CD / Flux apply as written; grove-gitops only reviews pull requests,
#: and its plan follows Grove's order).
RenderMode = Literal["full", "review"]


#: Defaults far above real deployments (the largest Grove examples have a few hundred pods)
#: yet low enough that a render stays within seconds and a PodGang within etcd's object limit.
DEFAULT_MAX_PODS_PER_PCS = 20_000
DEFAULT_MAX_PODS_PER_RENDER = 50_000
#: The most either limit may be raised to. The limits come from the source tree, which a pull
#: request may change, so they need a ceiling of their own: rendering costs about half a
#: millisecond and a few KiB per pod, so this many pods is minutes and a few hundred MiB.
MAX_PODS_CEILING = 200_000
MAX_ACKNOWLEDGED = 1_000
#: Namespaces a cluster holds that the source does not create; far above any real cluster's.
MAX_EXISTING_NAMESPACES = 10_000


def _namespace_name(value: str) -> str:
    problems = dns1123_label_problems(value)
    if problems:
        raise ValueError("; ".join(problems))
    return value


#: A namespace name: a DNS-1123 label (at most 63 characters), as Kubernetes requires.
NamespaceName = Annotated[str, AfterValidator(_namespace_name)]


class RenderLimits(StrictModel):
    """Pod counts checked before expansion, so a typo in ``replicas`` cannot hang a render."""

    maxPodsPerPodCliqueSet: int = Field(default=DEFAULT_MAX_PODS_PER_PCS, ge=1, le=MAX_PODS_CEILING)
    maxPodsPerRender: int = Field(default=DEFAULT_MAX_PODS_PER_RENDER, ge=1, le=MAX_PODS_CEILING)


class RenderConfig(StrictModel):
    apiVersion: Literal["gitops.grove.io/v1alpha1"] = "gitops.grove.io/v1alpha1"
    kind: Literal["RenderConfiguration"] = "RenderConfiguration"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    #: Substrings of warnings the user has read; ``-q`` then stops printing them. At most
    #: ``MAX_ACKNOWLEDGED`` of them: each warning is compared with each.
    acknowledgedWarnings: list[str] = Field(default_factory=list, max_length=MAX_ACKNOWLEDGED)
    #: Namespaces the cluster already has (created outside this source): rendering into one
    #: is not warned about (``validation.namespaces``).
    existingNamespaces: list[NamespaceName] = Field(default_factory=list, max_length=MAX_EXISTING_NAMESPACES)
    kubernetesVersion: KubernetesVersion = "1.35"
    defaultNamespace: str = "default"
    initContainerImage: str = DEFAULT_INIT_IMAGE
    gitops: GitOpsFlavour = "both"
    limits: RenderLimits = Field(default_factory=RenderLimits)
    feasibility: FeasibilityMode = "warn"
    #: Opt in to generated Argo CD / Flux wiring (``_argocd/``, ``_flux/``: one Application and
    #: one Kustomization per shard, docs/gitops-wiring.md). Absent: none (a fleet takes its
    #: Cluster's ``spec.gitops`` instead, and refuses this field).
    wiring: GitOpsWiring | None = None
    #: ``review``: Grove's operator runs the workloads; nothing expects the agent.
    mode: RenderMode = "full"
    #: A Grove operator runs in the same cluster (for workloads this source does not hold):
    #: whatever it would fight over is an error (``validation.coexistence``). ``mode: review``
    #: implies it.
    coexistWithGroveOperator: bool = False

    @property
    def review(self) -> bool:
        """Grove's operator reconciles the source's PodCliqueSets (``mode: review``)."""
        return self.mode == "review"

    @property
    def coexists(self) -> bool:
        """A Grove operator runs beside whatever this source applies."""
        return self.review or self.coexistWithGroveOperator

    @field_validator("kubernetesVersion", mode="before")
    @classmethod
    def _version_is_text(cls, value: Any) -> Any:
        """A number gets "quote it" instead of an unsupported-value error that would show 1.3."""
        if isinstance(value, int | float) and not isinstance(value, bool):
            raise PydanticCustomError("kubernetes_version_unquoted", UNQUOTED_VERSION)
        return value
