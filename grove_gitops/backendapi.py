"""The scheduler-backend interface and its registry.

Grove's operator asks a backend four things (``operator/internal/scheduler/types.go``):
validate a PodCliqueSet, prepare a Pod, sync a PodGang into scheduler objects, and
(optionally) sync a ClusterTopologyBinding into the scheduler's topology object. The
renderer asks the same four questions, as pure functions: no cluster, no clock. The
expansion never branches on a scheduler name; a new scheduler is one new module under the
top-level ``backends`` package, registered through the ``grove_gitops.backends`` entry-point
group so third parties can add their own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any, ClassVar

from grove_gitops.errors import GroveGitopsError
from grove_gitops.fields import pointer

if TYPE_CHECKING:
    from grove_gitops.api.podcliqueset import PodCliqueSet
    from grove_gitops.api.renderconfig import RenderConfig
    from grove_gitops.api.topology import ClusterTopologyBinding

ENTRY_POINT_GROUP = "grove_gitops.backends"

K8sObject = dict[str, Any]


@dataclass(frozen=True)
class BackendContext:
    """What a backend may read besides the object it is asked about.

    ``profile_config`` is the ``config`` of the OperatorConfiguration scheduler profile that
    enabled this backend (``{}`` when absent); ``bindings`` holds every ClusterTopologyBinding
    of the source tree by name; ``tas_enabled`` mirrors
    ``topologyAwareScheduling.enabled``; ``source_objects`` are the other Kubernetes
    objects of the source tree, which a render can check references against (it cannot ask
    the cluster).
    """

    render: RenderConfig
    profile_config: Mapping[str, Any] = field(default_factory=dict)
    bindings: Mapping[str, ClusterTopologyBinding] = field(default_factory=dict)
    tas_enabled: bool = False
    #: The source tree's pass-through objects (e.g. a Volcano Queue the PCS refers to).
    source_objects: Sequence[Mapping[str, Any]] = ()


@dataclass(frozen=True)
class PodPlacement:
    """Where a pod sits in its gang: what ``prepare_pod`` needs to bind it to the scheduler."""

    pcs_name: str
    namespace: str
    podgang: str  # PodGang name (= the gang object name for most schedulers)
    podgroup: str  # PodGang podgroup name (= PodClique FQN)
    base_podgang: str | None  # set for pods of a scaled PodGang


@dataclass(frozen=True)
class BackendFinding:
    """A backend validation result: an error (rejects the PCS) or a warning (printed)."""

    field: str
    message: str
    warning: bool = False
    #: The ``field.Error`` type an error prints (``Required value`` for something missing). No
    #: value is printed: a finding is about the object, and Grove's ``"object"`` placeholder
    #: told the reader nothing.
    kind: str = "Invalid value"


class SchedulerBackend:
    """Base class of every scheduler translator; the defaults describe a backend that adds
    nothing (Grove's ``default-scheduler`` without gang scheduling).

    Subclasses set :attr:`name` (the OperatorConfiguration profile name, which is also the
    ``schedulerName`` a PodCliqueSet selects it with) and override what they need.
    """

    name: ClassVar[str] = ""
    #: ``pod.spec.schedulerName`` written on every pod (Grove: the backend name).
    pod_scheduler_name: ClassVar[str] = ""
    #: Whether a ClusterTopologyBinding may bind this scheduler to an external topology.
    topology_aware: ClassVar[bool] = False
    #: Where a PodCliqueSet names its gang queue: ``("labels" | "annotations", key)``, or None
    #: for a scheduler without queues. A fleet's ``overrides.queue`` writes it there.
    queue_key: ClassVar[tuple[str, str] | None] = None
    #: The cluster object a queue name names, ``(API group, kind)``: a reference checked
    #: against the source's ClusterFacts (``validation.references``); None for no queues.
    queue_object: ClassVar[tuple[str, str] | None] = None
    #: The keys of the profile's ``config`` this backend knows, when it declares them (any
    #: other key is an error of the OperatorConfiguration, with a did-you-mean); None for a
    #: backend that checks its config itself, or takes anything.
    config_keys: ClassVar[frozenset[str] | None] = None
    #: The stable codes of this backend's warnings (``grove_gitops.warningcodes``): code -> a
    #: regex of the warning's fixed wording, searched in its ``file: field: message`` text. A
    #: workload acknowledges one with its ``gitops.grove.io/acknowledge`` annotation.
    warning_codes: ClassVar[Mapping[str, str]] = {}
    #: Fields :meth:`prepare_pod` writes that do not tie the pod to its gang (a default a
    #: template may set otherwise), as JSON pointers: left out of :meth:`pod_binding`.
    unbound_fields: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, context: BackendContext) -> None:
        self.context = context

    def validate(self, pcs: PodCliqueSet) -> list[BackendFinding]:
        """Backend-specific admission checks (Grove's ``ValidatePodCliqueSet``)."""
        return []

    def prepare_pod(self, pod: K8sObject, placement: PodPlacement) -> None:
        """Mutate a rendered pod in place (Grove's ``PreparePod``): at least ``schedulerName``."""
        pod["spec"]["schedulerName"] = self.pod_scheduler_name or self.name

    def pod_binding(self, placement: PodPlacement) -> dict[str, Any]:
        """What ties a pod at ``placement`` to its gang, as JSON pointer -> value: every label,
        annotation and spec field :meth:`prepare_pod` writes, but :attr:`unbound_fields`.

        The render records it on each PodGang (``gitops.grove.io/pod-binding``) and the agent
        releases no pod that lost one of them: a pod whose applier or a webhook dropped its
        ``schedulerName`` or its PodGroup annotation would be placed alone, outside its gang.
        ``prepare_pod`` is run on an empty pod, so the values are those of the placement and
        the backend's configuration alone (tests/test_pod_binding.py holds them to the pods).
        """
        pod: K8sObject = {"metadata": {}, "spec": {}}
        self.prepare_pod(pod, placement)
        found: dict[str, Any] = {}
        meta = pod.get("metadata") or {}
        for part in ("labels", "annotations"):
            for key, value in (meta.get(part) or {}).items():
                found[pointer.encode("metadata", part, key)] = value
        for key, value in (pod.get("spec") or {}).items():
            found[pointer.encode("spec", key)] = value
        return {p: v for p, v in found.items() if p not in self.unbound_fields}

    def gang_objects(self, podgang: K8sObject, pcs: PodCliqueSet) -> list[K8sObject]:
        """Scheduler objects for one rendered PodGang (Grove's ``SyncPodGang``). A function of its
        arguments and this backend's configuration: an expansion reuses the objects of a PodGang
        whose inputs did not change (``expand.workload.ExpansionMemo``). It reads the PodGang's
        ``podReferences`` only through their number, never their names: the render's split
        between Git and the agent lists pods only Git's comparison sees under placeholder names
        (``expand.gitsplit``; tests/test_gitsplit_memo.py holds every backend to it)."""
        return []

    def reads_source_object(self, obj: Mapping[str, Any]) -> bool:
        """True for a pass-through source object :meth:`validate` or :meth:`gang_objects` reads
        (a Volcano Queue): it travels with the render inputs the agent expands live counts
        from (docs/autoscaling.md), so the agent's render judges it as the controller's did."""
        return False

    def validate_binding(self, binding: ClusterTopologyBinding) -> list[BackendFinding]:
        """Checks of a ClusterTopologyBinding that this scheduler's topology object imposes."""
        return []

    def topology_objects(self, binding: ClusterTopologyBinding) -> list[K8sObject]:
        """Cluster-scoped scheduler topology objects for one ClusterTopologyBinding."""
        return []

    def external_topology(self, binding: ClusterTopologyBinding) -> tuple[str, str, str] | None:
        """``(apiVersion, kind, name)`` of the externally managed topology object this binding
        points the scheduler at (``schedulerTopologyBindings``), for the gate-lifter's drift check."""
        return None

    def topology_drift(self, binding: ClusterTopologyBinding, live: Mapping[str, Any] | None) -> str | None:
        """Grove's ``CheckTopologyDrift``: a message when ``live`` (None = absent) does not match
        the binding, None when it is in sync."""
        return None

    def coexistence_findings(
        self, binding: ClusterTopologyBinding, applied: Sequence[AppliedObject]
    ) -> list[BackendFinding]:
        """With a Grove operator running beside (RenderConfiguration ``mode: review`` or
        ``coexistWithGroveOperator: true``): what Grove's topology sync for this scheduler would
        fight over among ``applied``, every cluster-scoped object this source puts in the
        cluster. Each finding is an error of ``binding``'s file, with the fix in its message."""
        return []


@dataclass(frozen=True)
class AppliedObject:
    """An object a source puts in the cluster, and where it comes from: ``rendered`` (from a
    ClusterTopologyBinding, by :meth:`SchedulerBackend.topology_objects`) or the source file
    it is passed through from."""

    origin: str
    obj: Mapping[str, Any]
    rendered: bool = False


class BackendNotFoundError(GroveGitopsError):
    """A profile names a backend that no installed module provides."""


def available_backends() -> dict[str, type[SchedulerBackend]]:
    """Every backend class registered under the entry-point group, keyed by name."""
    found: dict[str, type[SchedulerBackend]] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        cls = ep.load()
        if not (isinstance(cls, type) and issubclass(cls, SchedulerBackend)):
            raise BackendNotFoundError(f"entry point {ep.name!r} does not name a SchedulerBackend subclass")
        found[cls.name or ep.name] = cls
    return found
