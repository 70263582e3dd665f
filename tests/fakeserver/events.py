"""What the real apiserver refuses in an Event (``ValidateEventCreate``), so the fake does too.

The agent's Events were accepted here and refused 422 by a real kube-apiserver (issue 32):
its ``regarding`` had no namespace while the Event had one. The rule, for ``events.k8s.io/v1``
(``regarding``) and core ``v1`` (``involvedObject``) alike: an Event about a namespaced object
lives in that object's namespace; one about a cluster-scoped object in ``default`` (or none).
A new-style Event (``eventTime`` set) is judged more loosely, as the real server does: see
:func:`event_errors`. Validation runs on the core type, so refusals name the kind ``Event``.
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
    if obj.get("eventTime"):
        # A new-style Event (events.k8s.io always sets eventTime): only an empty namespace on the
        # regarded object is judged, and it is allowed in default and kube-system alone; a
        # different non-empty namespace is accepted (checked on a real server: test_contract).
        ok = bool(involved) or namespace in ("default", "kube-system")
    else:
        ok = (namespace == involved) if involved else namespace in ("", "default")
    if ok:
        return []
    # The real server names the field after the core type in both APIs.
    return [FieldError("Invalid", "involvedObject.namespace", "does not match event.namespace", involved)]


def fill_deprecated(obj: JsonObj) -> None:
    """The fields an events.k8s.io/v1 Event always shows (the type does not omit them when empty)."""
    obj.setdefault("deprecatedSource", {})
    obj.setdefault("deprecatedFirstTimestamp", None)
    obj.setdefault("deprecatedLastTimestamp", None)
