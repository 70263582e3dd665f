"""The PodCliqueSet's supporting objects: headless Services and the init container's RBAC.

``spec/grove-desired-state.md`` §7.1 and §7.3. The ServiceAccount, Role, RoleBinding and
token Secret exist for ``grove-initc``, which lists pods of its own PodGang; they are
rendered even with ``replicas: 0``, as Grove creates them.
"""

from __future__ import annotations

from typing import Any

from grove_gitops.api.podcliqueset import PodCliqueSet
from grove_gitops.expand import labels as L
from grove_gitops.expand import names


def headless_service(pcs: PodCliqueSet, replica: int) -> dict[str, Any]:
    name = names.headless_service_name(pcs.name, replica)
    labels = L.default_labels(pcs.name)
    labels.update({L.NAME: name, L.COMPONENT: L.COMPONENT_HEADLESS_SERVICE, L.PCS_REPLICA_INDEX: str(replica)})
    selector = L.default_labels(pcs.name)
    selector[L.PCS_REPLICA_INDEX] = str(replica)
    cfg = pcs.spec.template.headlessServiceConfig
    publish = bool(cfg.publishNotReadyAddresses) if cfg is not None else False
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": pcs.namespace, "labels": labels},
        "spec": {"selector": selector, "clusterIP": "None", "publishNotReadyAddresses": publish},
    }


def _labels(pcs: PodCliqueSet, component: str, name: str) -> dict[str, str]:
    labels = L.default_labels(pcs.name)
    labels.update({L.COMPONENT: component, L.NAME: name})
    return labels


def rbac_objects(pcs: PodCliqueSet) -> list[dict[str, Any]]:
    ns, p = pcs.namespace, pcs.name
    sa, role = names.service_account_name(p), names.role_name(p)
    secret = names.token_secret_name(p)
    return [
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": sa, "namespace": ns, "labels": _labels(pcs, L.COMPONENT_SERVICE_ACCOUNT, p)},
            "automountServiceAccountToken": True,
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {
                "name": role,
                "namespace": ns,
                "labels": _labels(pcs, L.COMPONENT_ROLE, names.role_label_name(p)),
            },
            "rules": [{"apiGroups": [""], "resources": ["pods", "pods/status"], "verbs": ["get", "list", "watch"]}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {
                "name": role,
                "namespace": ns,
                "labels": _labels(pcs, L.COMPONENT_ROLE_BINDING, names.role_label_name(p)),
            },
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role},
            "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": ns}],
        },
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": secret,
                "namespace": ns,
                "labels": _labels(pcs, L.COMPONENT_TOKEN_SECRET, secret),
                "annotations": {"kubernetes.io/service-account.name": sa},
            },
            "type": "kubernetes.io/service-account-token",
        },
    ]
