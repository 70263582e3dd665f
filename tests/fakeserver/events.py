"""What the real apiserver refuses in an Event (``ValidateEventCreate``), so the fake does too.

The agent's Events were accepted here and refused 422 by a real kube-apiserver (issue 32):
its ``regarding`` had no namespace while the Event had one. The rule, for ``events.k8s.io/v1``
(``regarding``) and core ``v1`` (``involvedObject``) alike: an Event about a namespaced object
lives in that object's namespace; one about a cluster-scoped object in ``default`` (or none).
"""

from __future__ import annotations

from typing import Any

from tests.fakeserver.errors import FieldError

JsonObj = dict[str, Any]


def event_errors(obj: JsonObj, *, events_api: bool) -> list[FieldError]:
    meta = obj.get("metadata") or {}
    namespace = str(meta.get("namespace") or "")
    ref = obj.get("regarding" if events_api else "involvedObject")
    involved = str((ref or {}).get("namespace") or "") if isinstance(ref, dict) else ""
    # The real server names the field after the core type in both APIs.
    if (namespace == involved) if involved else namespace in ("", "default"):
        return []
    return [FieldError("Invalid", "involvedObject.namespace", "does not match event.namespace", involved)]
