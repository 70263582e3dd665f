"""The ``OwnerReferencesPermissionEnforcement`` admission plugin, for callers the test restricted.

The fake has no RBAC: every request is a cluster admin's, unless its bearer token was registered
with :meth:`FakeApiServer.restrict`, which lists the few rights (verb, API group, resource) this
plugin asks about. The plugin is on by default in OpenShift and on in the project's real control
plane; under it the agent's autoscaling died with a 403 the fake never gave (issue 32.2). Rules
and messages are the plugin's (checked against a real kube-apiserver by
tests/controlplane/test_contract.py):

- changing an object's ``ownerReferences`` on update needs ``delete`` on that object
  (``cannot set an ownerRef on a resource you can't delete``); a create needs nothing for it;
- a reference that newly sets ``blockOwnerDeletion: true`` needs ``update`` on the owner's
  ``<resource>/finalizers`` (``cannot set blockOwnerDeletion if an ownerReference refers to a
  resource you can't set finalizers on``).

The server's RBAC authorizer gives no reason on a denial, hence the ``: , <nil>`` ending.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.fakeserver.errors import ApiError, forbidden
from tests.fakeserver.resources import ResourceType

JsonObj = dict[str, Any]
Right = tuple[str, str, str]  # (verb, API group, resource or resource/subresource)
# apiVersion, kind -> the resource plural (None when the kind is not served)
PluralOf = Callable[[str, str], "str | None"]


def _refs(obj: JsonObj | None) -> list[JsonObj]:
    refs = ((obj or {}).get("metadata") or {}).get("ownerReferences")
    return [r for r in refs if isinstance(r, dict)] if isinstance(refs, list) else []


def check(rt: ResourceType, obj: JsonObj, old: JsonObj | None, rights: frozenset[Right], plural_of: PluralOf) -> None:
    """Raise the plugin's 403 when a restricted caller may not make this ownerReferences change."""
    new_refs, old_refs = _refs(obj), _refs(old)
    if new_refs == old_refs:
        return
    name = str((obj.get("metadata") or {}).get("name") or "")
    if old is not None and ("delete", rt.group, rt.plural) not in rights:
        raise _denied(rt, name, "cannot set an ownerRef on a resource you can't delete")
    blocking_before = {str(r.get("uid")) for r in old_refs if r.get("blockOwnerDeletion") is True}
    for ref in new_refs:
        if ref.get("blockOwnerDeletion") is not True or str(ref.get("uid")) in blocking_before:
            continue
        api_version = str(ref.get("apiVersion") or "")
        group = api_version.rpartition("/")[0] if "/" in api_version else ""
        plural = plural_of(api_version, str(ref.get("kind") or ""))
        if plural is None or ("update", group, f"{plural}/finalizers") not in rights:
            raise _denied(
                rt, name, "cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on"
            )


def _denied(rt: ResourceType, name: str, why: str) -> ApiError:
    return forbidden(rt.group_resource, name, f"{why}: , <nil>")
