"""Per-type create/update behaviour (the apiserver's "strategies"), kept out of the HTTP handlers.

The handlers run the same pipeline for every type; this module supplies the type-specific
steps: defaulting and admission on create, what an update may carry over, and the rules that
compare the new object with the old one. Pods get the full treatment (:mod:`pods`); services,
namespaces and custom resources get the few rules a controller would observe.
"""

from __future__ import annotations

import ipaddress
import threading
from typing import Any

from tests.fakeserver import events, pods
from tests.fakeserver.errors import FieldError
from tests.fakeserver.resources import ResourceType

JsonObj = dict[str, Any]


def _is(rt: ResourceType, group: str, plural: str) -> bool:
    return rt.group == group and rt.plural == plural


class Strategies:
    """Type hooks used by :class:`~tests.fakeserver.handlers.ApiHandlers`.

    Holds the little state a real cluster has too: the ClusterIP allocator.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._next_ip = int(ipaddress.IPv4Address("10.96.0.10"))

    def _allocate_ip(self) -> str:
        with self._lock:
            self._next_ip += 1
            return str(ipaddress.IPv4Address(self._next_ip))

    # ------------------------------------------------------------------------------- create
    def prepare_for_create(self, rt: ResourceType, obj: JsonObj) -> None:
        """Defaulting + admission mutations + status reset before validation and storage."""
        if _is(rt, "", "pods"):
            pods.apply_defaults(obj)
            pods.admit_create(obj)
            obj["status"] = pods.initial_status(obj)
            pods.normalize(obj)
        elif _is(rt, "", "services"):
            self._service_defaults(obj, None)
            obj["status"] = {"loadBalancer": {}}
        elif _is(rt, "", "namespaces"):
            name = obj["metadata"].get("name", "")
            obj["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = name
            obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
            obj["status"] = {"phase": "Active"}
        elif rt.has_status and not rt.builtin:
            obj.pop("status", None)  # a CRD with a status subresource drops status on create

    def create_errors(self, rt: ResourceType, obj: JsonObj) -> list[FieldError]:
        if _is(rt, "", "pods"):
            return pods.create_errors(obj)
        if _is(rt, "events.k8s.io", "events") or _is(rt, "", "events"):
            return events.event_errors(obj, events_api=rt.group == "events.k8s.io")
        return []

    # ------------------------------------------------------------------------------- update
    def prepare_for_update(self, rt: ResourceType, new: JsonObj, old: JsonObj) -> None:
        """Defaulting on the incoming object and carrying over server-owned fields."""
        if _is(rt, "", "pods"):
            pods.apply_defaults(new)
            pods.normalize(new)
        elif _is(rt, "", "services"):
            self._service_defaults(new, old)
        elif _is(rt, "", "namespaces"):
            name = new["metadata"].get("name", "")
            new["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = name

    def update_errors(
        self, rt: ResourceType, new: JsonObj, old: JsonObj, subresource: str
    ) -> list[FieldError]:
        if subresource:
            return []
        if _is(rt, "", "pods"):
            return pods.update_errors(new, old)
        if _is(rt, "", "services"):
            old_ip = (old.get("spec") or {}).get("clusterIP")
            new_ip = (new.get("spec") or {}).get("clusterIP")
            if old_ip and new_ip != old_ip:
                return [FieldError("Invalid", "spec.clusterIPs[0]", "may not change once set", new_ip)]
        return []

    # ------------------------------------------------------------------------------- helpers
    def _service_defaults(self, obj: JsonObj, old: JsonObj | None) -> None:
        spec = obj.setdefault("spec", {})
        spec.setdefault("type", "ClusterIP")
        spec.setdefault("sessionAffinity", "None")
        for port in spec.get("ports") or []:
            if isinstance(port, dict):
                port.setdefault("protocol", "TCP")
                port.setdefault("targetPort", port.get("port"))
        old_spec = (old or {}).get("spec") or {}
        if spec.get("type") == "ExternalName":
            return
        if not spec.get("clusterIP"):
            spec["clusterIP"] = old_spec.get("clusterIP") or self._allocate_ip()
        spec.setdefault("clusterIPs", [spec["clusterIP"]])
        spec.setdefault("ipFamilies", ["IPv4"])
        spec.setdefault("ipFamilyPolicy", "SingleStack")
        spec.setdefault("internalTrafficPolicy", "Cluster")
