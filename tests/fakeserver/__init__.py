"""In-process fake Kubernetes API server for controller tests (real HTTP, official client).

Public surface: :class:`FakeApiServer` plus the few types tests touch directly. The rest of
the package is private machinery, one job per module: ``store`` (objects, resourceVersion,
event log), ``routing``/``app``/``http_server`` (requests), ``handlers`` (verbs),
``strategies``/``pods`` (per-type rules), ``patch``, ``selector``, ``schema``/``validation``,
``watch``, ``faults``, ``discovery``, ``crds``, ``scale``/``scale_api`` (CRs' ``/scale``).

Fidelity, in short (details in each module): enforced — global resourceVersion with 409 on
stale writes, AlreadyExists/NotFound/Invalid/Gone Status bodies, JSON/merge/strategic patch
(with the ``test`` op → 422), status subresources, the scale subresource of CRDs that declare
one (``autoscaling/v1`` Scale, selector from ``labelSelectorPath``, replicas range checks on
every write, discovery entry), generation, finalizers, the scheduling-gate
and pod-immutability rules, Kubernetes (kubernetes_validate) and CRD schema validation, watch
resume/410/selector transitions. Deliberately stricter than a real server: unknown fields are
rejected (real default: pruned with a warning). Not emulated: server-side apply (415), CEL
``x-kubernetes-validations``, list-map uniqueness, admission webhooks, RBAC/auth, graceful pod
termination and namespace Terminating (deletes are immediate), protobuf/CBOR.
"""

from tests.fakeserver.faults import Fault, FaultInjector, RequestRecord
from tests.fakeserver.resources import GroupResource, ResourceType
from tests.fakeserver.server import FakeApiServer, default_crd_dir, project_crd_dir
from tests.fakeserver.store import Store
from tests.fakeserver.validation import KubernetesSchemaValidator, Validator

__all__ = [
    "FakeApiServer",
    "Fault",
    "FaultInjector",
    "GroupResource",
    "KubernetesSchemaValidator",
    "RequestRecord",
    "ResourceType",
    "Store",
    "Validator",
    "default_crd_dir",
    "project_crd_dir",
]
