"""In-process fake Kubernetes API server for controller tests (real HTTP, official client).

Public surface: :class:`FakeApiServer` plus the few types tests touch directly. The rest of
the package is private machinery, one job per module: ``store`` (objects, resourceVersion,
event log, owner index), ``routing``/``app``/``http_server`` (requests), ``handlers`` (verbs),
``strategies``/``pods`` (per-type rules), ``patch``, ``selector``, ``schema``/``validation``,
``cel``/``crd_rules`` (CRD CEL rules), ``defaults`` (CRD structural defaults), ``quota``/
``quantity`` (ResourceQuota), ``gc`` (garbage collection), ``watch``, ``faults``, ``discovery``,
``crds``, ``scale``/``scale_api`` (CRs' ``/scale``), ``apply`` (server-side apply, managedFields),
``owners`` (OwnerReferencesPermissionEnforcement for restricted callers), ``events``.

Fidelity, in short (details in each module): enforced — global resourceVersion with 409 on
stale writes, AlreadyExists/NotFound/Invalid/Gone Status bodies, JSON/merge/strategic patch
(with the ``test`` op → 422), status subresources, the scale subresource of CRDs that declare
one (``autoscaling/v1`` Scale, selector from ``labelSelectorPath``, replicas range checks on
every write, discovery entry), generation, finalizers, the scheduling-gate
and pod-immutability rules, Kubernetes (kubernetes_validate) and CRD schema validation, CRD
CEL ``x-kubernetes-validations`` (celpy; transition rules, ratcheting, message/
messageExpression/reason/fieldPath, on every write incl. ``/scale`` and ``/status``, metered;
rules needing Kubernetes' CEL libraries or ``optionalOldSelf`` are skipped and listed by
``cel.skipped_rules()``), CRD structural defaults (request bodies and reads), ResourceQuota
admission of pod creates (403 ``exceeded quota``) with ``status.hard``/``used``, garbage
collection by ownerReferences (background/foreground/orphan; synchronous, the DELETE answered as a
real server does), server-side apply (managers, conflicts, force; see ``apply``), the
OwnerReferencesPermissionEnforcement refusals for tokens registered with ``restrict``, watch resume/410/selector
transitions; extra CRD files via ``extra_crds``. Deliberately stricter than a real server:
unknown fields are rejected (real default: pruned with a warning). Not emulated: server-side
apply on ``/scale`` (415), managedFields of objects never applied, list-map uniqueness, admission
webhooks, RBAC/auth beyond ``restrict``, graceful pod termination and namespace Terminating
(deletes are immediate), quota scopes and non-pod object counts, defaults in watch events of objects stored with
``put_object``, protobuf/CBOR.
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
