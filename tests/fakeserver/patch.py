"""The three patch formats the apiserver accepts, with its semantics where they differ from naive ones.

- JSON patch (RFC 6902) is applied atomically; a failed ``test`` or a missing path is an error
  (the handler turns it into 422). This is what makes a guarded gate removal race-safe.
- JSON merge patch (RFC 7386): objects merge, ``null`` deletes, lists are replaced whole.
- Strategic merge patch: like merge patch, except lists the Kubernetes types declare as
  ``patchStrategy=merge`` are merged by their ``patchMergeKey`` (``schedulingGates`` and
  ``containers`` by ``name``, ``conditions`` by ``type``, ...), with the ``$patch``,
  ``$retainKeys``, ``$deleteFromPrimitiveList`` and ``$setElementOrder`` directives. One real
  trap is kept on purpose: patching a merge list with ``[]`` changes nothing; ``null`` clears it.
"""

from __future__ import annotations

import json
from typing import Any

JsonObj = dict[str, Any]


class PatchError(ValueError):
    """The patch does not apply to the object (maps to 422 for JSON patch)."""


class PatchFormatError(ValueError):
    """The patch document itself is malformed (maps to 400)."""


def _clone(value: Any) -> Any:
    return json.loads(json.dumps(value))


def json_equal(a: Any, b: Any) -> bool:
    """Equality of JSON values: ``true`` is not ``1`` (unlike Python's ``==``), ``1 == 1.0``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


# ------------------------------------------------------------------------------------ JSON patch
def _tokens(pointer: str) -> list[str]:
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise PatchError(f'invalid JSON pointer "{pointer}"')
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/")]


def _index(token: str, size: int, *, allow_end: bool) -> int:
    if token == "-" and allow_end:
        return size
    if not token.isdigit() or (len(token) > 1 and token.startswith("0")):
        raise PatchError(f"invalid array index {token!r}")
    index = int(token)
    if index > size or (index == size and not allow_end):
        raise PatchError(f"array index {index} out of bounds")
    return index


def _walk(doc: Any, tokens: list[str], op: str, pointer: str) -> Any:
    """Follow ``tokens`` from ``doc``; a missing step is the real server's "missing path" error."""
    node = doc
    for token in tokens:
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list):
            try:
                node = node[_index(token, len(node), allow_end=False)]
            except PatchError:
                raise PatchError(
                    f'{op} operation does not apply: doc is missing path: "{pointer}": missing value'
                ) from None
        else:
            raise PatchError(
                f'{op} operation does not apply: doc is missing path: "{pointer}": missing value'
            )
    return node


def _parent(doc: Any, tokens: list[str], op: str, pointer: str) -> Any:
    return _walk(doc, tokens[:-1], op, pointer)


def _get(doc: Any, pointer: str, op: str) -> Any:
    return _walk(doc, _tokens(pointer), op, pointer)


def _exists(doc: Any, pointer: str) -> bool:
    try:
        _get(doc, pointer, "test")
    except PatchError:
        return False
    return True


def _add(doc: Any, pointer: str, value: Any, op: str = "add") -> Any:
    tokens = _tokens(pointer)
    if not tokens:
        return value
    parent = _parent(doc, tokens, op, pointer)
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        try:
            parent.insert(_index(last, len(parent), allow_end=True), value)
        except PatchError:
            raise PatchError(
                f'{op} operation does not apply: doc is missing path: "{pointer}": missing value'
            ) from None
    else:
        raise PatchError(f'{op} operation does not apply: doc is missing path: "{pointer}": missing value')
    return doc


def _remove(doc: Any, pointer: str, op: str = "remove") -> tuple[Any, Any]:
    tokens = _tokens(pointer)
    if not tokens:
        raise PatchError(f"{op} operation does not apply: cannot remove the whole document")
    parent = _parent(doc, tokens, op, pointer)
    last = tokens[-1]
    if isinstance(parent, dict) and last in parent:
        return doc, parent.pop(last)
    if isinstance(parent, list):
        try:
            return doc, parent.pop(_index(last, len(parent), allow_end=False))
        except PatchError:
            pass
    raise PatchError(f'{op} operation does not apply: doc is missing path: "{pointer}": missing value')


def apply_json_patch(doc: JsonObj, operations: Any) -> JsonObj:
    """Apply RFC 6902 ``operations`` to a copy of ``doc``; all or nothing.

    Raises :class:`PatchFormatError` when ``operations`` is not a list of objects (400) and
    :class:`PatchError` when an operation does not apply (422).
    """
    if not isinstance(operations, list) or not all(isinstance(o, dict) for o in operations):
        raise PatchFormatError("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    result: Any = _clone(doc)
    for operation in operations:
        op = operation.get("op")
        path = operation.get("path")
        if not isinstance(path, str):
            raise PatchError(f"{op} operation does not apply: missing path")
        if op == "add":
            result = _add(result, path, _clone(_value(operation)))
        elif op == "remove":
            result, _ = _remove(result, path)
        elif op == "replace":
            if not _exists(result, path):
                raise PatchError(
                    f"replace operation does not apply: doc is missing key: {path}: missing value"
                )
            if path == "":
                result = _clone(_value(operation))
            else:
                result, _ = _remove(result, path, "replace")
                result = _add(result, path, _clone(_value(operation)), "replace")
        elif op in ("move", "copy"):
            source = operation.get("from")
            if not isinstance(source, str):
                raise PatchError(f"{op} operation does not apply: missing from")
            if op == "move":
                if path.startswith(source + "/"):
                    raise PatchError("move operation does not apply: cannot move a value into itself")
                result, value = _remove(result, source, "move")
            else:
                value = _clone(_get(result, source, "copy"))
            result = _add(result, path, value, op)
        elif op == "test":
            expected = _value(operation)
            if not _exists(result, path):
                if expected is None:
                    continue  # evanphx/json-patch (used by the apiserver) lets null match "missing"
                raise PatchError(f"testing value {path} failed: test failed")
            if not json_equal(_get(result, path, "test"), expected):
                raise PatchError(f"testing value {path} failed: test failed")
        else:
            raise PatchError(f"Unexpected kind: {op}")
    if not isinstance(result, dict):
        raise PatchError("the patched document is not an object")
    return result


def _value(operation: JsonObj) -> Any:
    if "value" not in operation:
        raise PatchError(f"{operation.get('op')} operation does not apply: missing value")
    return operation["value"]


# ------------------------------------------------------------------------------------ merge patch
def apply_merge_patch(doc: JsonObj, patch: Any) -> JsonObj:
    """RFC 7386 merge patch. A non-object patch body is a 400 (the server wants an object)."""
    if not isinstance(patch, dict):
        raise PatchFormatError("json: cannot unmarshal array into Go value of type map[string]interface {}")
    merged = _merge(doc, patch)
    assert isinstance(merged, dict)
    return merged


def _merge(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return _clone(patch)
    result = _clone(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = _merge(result.get(key), value)
    return result


# ------------------------------------------------------------------------- strategic merge patch
# Path suffix (field names only, list indices skipped) → merge key, from the Go struct tags of
# k8s.io/api. ``""`` marks a merge list of primitives (union). Anything absent is replaced whole.
MERGE_KEYS: dict[tuple[str, ...], str] = {
    ("metadata", "finalizers"): "",
    ("metadata", "ownerReferences"): "uid",
    ("spec", "schedulingGates"): "name",
    ("spec", "containers"): "name",
    ("spec", "initContainers"): "name",
    ("spec", "ephemeralContainers"): "name",
    ("spec", "volumes"): "name",
    ("spec", "imagePullSecrets"): "name",
    ("spec", "hostAliases"): "ip",
    ("spec", "topologySpreadConstraints"): "topologyKey",
    ("spec", "resourceClaims"): "name",
    ("containers", "ports"): "containerPort",
    ("initContainers", "ports"): "containerPort",
    ("containers", "env"): "name",
    ("initContainers", "env"): "name",
    ("containers", "volumeMounts"): "mountPath",
    ("initContainers", "volumeMounts"): "mountPath",
    ("containers", "volumeDevices"): "devicePath",
    ("initContainers", "volumeDevices"): "devicePath",
    ("containers", "resizePolicy"): "resourceName",
    ("status", "conditions"): "type",
    ("status", "podIPs"): "ip",
    ("status", "hostIPs"): "ip",
    ("spec", "ports"): "port",  # Service ports (a Pod spec has no top-level ports)
    ("spec", "finalizers"): "",  # Namespace spec.finalizers
}


def _merge_key(path: tuple[str, ...]) -> str | None:
    for length in (2, 1):
        if len(path) >= length and path[-length:] in MERGE_KEYS:
            return MERGE_KEYS[path[-length:]]
    return None


def apply_strategic_merge_patch(doc: JsonObj, patch: Any) -> JsonObj:
    """Strategic merge patch for built-in kinds (see the module docstring for the rules)."""
    if not isinstance(patch, dict):
        raise PatchFormatError("json: cannot unmarshal array into Go value of type map[string]interface {}")
    merged = _smp_map(_clone(doc), patch, ())
    if merged is _DELETE:
        raise PatchError("the patch deletes the whole object")
    assert isinstance(merged, dict)
    return merged


_DELETE: Any = object()


def _strip(value: Any) -> Any:
    """Drop directive keys from a value that is being inserted rather than merged."""
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if not k.startswith("$")}
    if isinstance(value, list):
        return [_strip(v) for v in value if not (isinstance(v, dict) and set(v) == {"$patch"})]
    return value


def _smp_map(original: JsonObj, patch: JsonObj, path: tuple[str, ...]) -> Any:
    patch = dict(patch)
    directive = patch.pop("$patch", None)
    if directive == "delete":
        return _DELETE
    if directive == "replace":
        return _strip(patch)
    if directive not in (None, "merge"):
        raise PatchFormatError(f"unknown patch type: {directive} in map: {patch}")
    result = original
    retain = patch.pop("$retainKeys", None)
    if retain is not None:
        if not isinstance(retain, list):
            raise PatchFormatError("$retainKeys must be a list")
        result = {k: v for k, v in result.items() if k in retain}
    deletions: dict[str, Any] = {}
    orders: dict[str, Any] = {}
    for key in list(patch):
        if key.startswith("$deleteFromPrimitiveList/"):
            deletions[key.split("/", 1)[1]] = patch.pop(key)
        elif key.startswith("$setElementOrder/"):
            orders[key.split("/", 1)[1]] = patch.pop(key)
    for key, value in patch.items():
        sub = (*path, key)
        current = result.get(key)
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            merged = _smp_map(current if isinstance(current, dict) else {}, value, sub)
            if merged is _DELETE:
                result.pop(key, None)
            else:
                result[key] = merged
        elif isinstance(value, list):
            merge_key = _merge_key(sub)
            if merge_key is None:
                result[key] = _strip(value)
            else:
                result[key] = _smp_list(current if isinstance(current, list) else [], value, merge_key, sub)
        else:
            result[key] = value
    for key, values in deletions.items():
        if isinstance(result.get(key), list):
            result[key] = [v for v in result[key] if v not in values]
    for key, order in orders.items():
        result[key] = _reorder(result.get(key), order, _merge_key((*path, key)))
    return result


def _smp_list(original: list[Any], patch: list[Any], merge_key: str, path: tuple[str, ...]) -> list[Any]:
    if not patch:
        return original  # merging nothing keeps everything: use null to clear a merge list
    if any(isinstance(item, dict) and item.get("$patch") == "replace" for item in patch):
        return [_strip(item) for item in patch if not (isinstance(item, dict) and item.get("$patch"))]
    if merge_key == "":
        if any(isinstance(item, dict | list) for item in patch):
            raise PatchFormatError("merge list of primitives got a non-primitive element")
        merged = list(original)
        for item in patch:
            if item not in merged:
                merged.append(item)
        return merged
    result = list(original)
    for item in patch:
        if not isinstance(item, dict):
            raise PatchFormatError(f"list element {item!r} of a merge list is not an object")
        if item.get("$patch") == "delete":
            key = item.get(merge_key)
            result = [x for x in result if not (isinstance(x, dict) and x.get(merge_key) == key)]
            continue
        if merge_key not in item:
            raise PatchFormatError(f"map: {item} does not contain declared merge key: {merge_key}")
        position = next(
            (
                i
                for i, x in enumerate(result)
                if isinstance(x, dict) and json_equal(x.get(merge_key), item[merge_key])
            ),
            None,
        )
        if position is None:
            result.append(_strip(item))
        else:
            merged = _smp_map(result[position], item, path)
            if merged is _DELETE:
                del result[position]
            else:
                result[position] = merged
    return result


def _reorder(values: Any, order: Any, merge_key: str | None) -> Any:
    """Apply a ``$setElementOrder`` hint: listed elements first in that order, the rest after."""
    if not isinstance(values, list) or not isinstance(order, list):
        return values

    def ident(v: Any) -> Any:
        return json.dumps(v.get(merge_key) if merge_key and isinstance(v, dict) else v, sort_keys=True)

    wanted = [ident(o) for o in order]
    ranked = sorted(
        range(len(values)),
        key=lambda i: wanted.index(ident(values[i])) if ident(values[i]) in wanted else len(wanted) + i,
    )
    return [values[i] for i in ranked]
