"""Server-side apply (``PATCH`` with ``application/apply-patch+yaml``) and the ``managedFields`` it keeps.

Argo CD (``ServerSideApply=true``) and Flux apply server-side, and the agent writes the same objects
with ordinary updates (``/scale``, merge patches); whether two of them fight over a field is decided
by field ownership. Before issue 32 the fake answered 415 here, so no test could see such a fight.

What is kept (checked against a real kube-apiserver by tests/controlplane/test_contract.py):

- an apply creates a missing object (201) or merges the applied configuration into it; a field the
  manager applied before and leaves out now is removed unless another manager still owns it;
- ``managedFields`` entries per (manager, operation, subresource), ``fieldsV1`` encoded as the
  server does (``f:<key>``, ``k:{"name":...}`` with ``.`` for list items);
- a field another manager owns, applied with a different value, is a 409 ``Conflict`` with the
  server's message (``Apply failed with 1 conflict: conflict with "m": .data.a``, managers of
  ordinary updates as ``"m" using v1``) and ``FieldManagerConflict`` causes; ``force=true`` takes
  the field over; an equal value makes the field shared;
- ordinary writes to an object that has ``managedFields`` move the fields they change to their
  manager (``fieldManager``, else the User-Agent's product name), as an ``Update`` entry;
- the option errors: no ``fieldManager`` on an apply, ``force`` on another patch (422 on
  ``PatchOptions``), a body of the wrong type or name (400).

Not emulated: an apply to a subresource (``/status``, ``/scale``: 415). Simplified on purpose: lists of objects that all carry a ``name`` are merged by name (what
containers, env and ports use); every other list is atomic. Objects never applied carry no
``managedFields`` (the real server records one ``Update`` entry on every create), so tests that
compare whole objects are unaffected.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from tests.fakeserver.errors import ApiError, FieldError, bad_request, invalid
from tests.fakeserver.resources import GroupKind, ResourceType

JsonObj = dict[str, Any]
FieldPath = tuple[str, ...]
APPLY = "Apply"
UPDATE = "Update"
_MISSING = object()
_PATCH_OPTIONS = GroupKind("meta.k8s.io", "PatchOptions")
_MAX_DEPTH = 64  # bounds the walk of one object (Kubernetes objects are far shallower)
_TRACKED_METADATA = ("labels", "annotations")


def options_errors(query: dict[str, str], *, apply: bool) -> None:
    """``PatchOptions`` validation: an apply needs a manager; ``force`` belongs to applies only."""
    if apply and not query.get("fieldManager"):
        raise invalid(_PATCH_OPTIONS, "", [FieldError("Required", "fieldManager", "is required for apply patch")])
    if not apply and query.get("force") is not None:
        raise invalid(_PATCH_OPTIONS, "", [FieldError("Forbidden", "force", "may not be specified for non-apply patch")])


def decode_config(rt: ResourceType, raw: bytes, namespace: str | None, name: str) -> JsonObj:
    """The applied configuration, with the type, name and namespace checks of the real handler."""
    try:  # the body is YAML (JSON is YAML)
        config = yaml.safe_load(raw.decode("utf-8")) if raw.strip() else None
    except (yaml.YAMLError, UnicodeDecodeError) as error:
        raise bad_request(f"error decoding YAML: error converting YAML to JSON: {error}") from error
    config = config if isinstance(config, dict) else {}
    api_version, kind = str(config.get("apiVersion") or ""), str(config.get("kind") or "")
    group, _, version = api_version.rpartition("/") if "/" in api_version else ("", "", api_version)
    if api_version != rt.api_version or kind != rt.kind:
        raise bad_request(f"invalid object type: {group}/{version}, Kind={kind}")
    meta = config.get("metadata")
    if not isinstance(meta, dict):
        meta = config["metadata"] = {}
    if meta.get("name") and meta["name"] != name:
        raise bad_request(f"the name of the object ({meta['name']}) does not match the name on the URL ({name})")
    if rt.namespaced and meta.get("namespace") and meta["namespace"] != namespace:
        raise bad_request("the namespace of the provided object does not match the namespace sent on the request")
    meta["name"] = name
    return config


# -- field sets ----------------------------------------------------------------------------------
def _item_key(item: JsonObj) -> str:
    return "k:" + json.dumps({"name": item["name"]}, separators=(",", ":"))


def _keyed(value: Any) -> bool:
    """A list merged by ``name`` (every item an object with a distinct string name)."""
    if not isinstance(value, list) or not value:
        return False
    names = [item.get("name") for item in value if isinstance(item, dict)]
    return len(names) == len(value) and all(isinstance(n, str) for n in names) and len(set(names)) == len(names)


def _walk(value: JsonObj, prefix: FieldPath, out: set[FieldPath], depth: int) -> None:
    if depth > _MAX_DEPTH:
        raise bad_request("the applied object is nested too deeply")
    for key, child in value.items():
        path = (*prefix, f"f:{key}")
        if isinstance(child, dict) and child:
            _walk(child, path, out, depth + 1)
        elif _keyed(child):
            for item in child:
                item_path = (*path, _item_key(item))
                out.add(item_path)
                _walk(item, item_path, out, depth + 1)
        else:
            out.add(path)


def field_set(rt: ResourceType, obj: JsonObj, *, subresource: str = "") -> set[FieldPath]:
    """The fields an object (or applied configuration) sets, as the server's field paths."""
    out: set[FieldPath] = set()
    meta = obj.get("metadata") or {}
    tracked = {k: meta[k] for k in _TRACKED_METADATA if isinstance(meta.get(k), dict) and meta[k]}
    if tracked:
        _walk(tracked, ("f:metadata",), out, 1)
    skip = {"apiVersion", "kind", "metadata"}
    if rt.has_status and subresource != "status":
        skip.add("status")
    _walk({k: v for k, v in obj.items() if k not in skip}, (), out, 0)
    return out


def value_at(obj: Any, path: FieldPath) -> Any:
    node = obj
    for segment in path:
        if segment.startswith("f:") and isinstance(node, dict):
            node = node.get(segment[2:], _MISSING)
        elif segment.startswith("k:") and isinstance(node, list):
            name = json.loads(segment[2:])["name"]
            node = next((i for i in node if isinstance(i, dict) and i.get("name") == name), _MISSING)
        else:
            return _MISSING
        if node is _MISSING:
            return _MISSING
    return node


def _remove(obj: JsonObj, path: FieldPath) -> None:
    parent = value_at(obj, path[:-1]) if len(path) > 1 else obj
    last = path[-1]
    if last.startswith("f:") and isinstance(parent, dict):
        parent.pop(last[2:], None)
    elif last.startswith("k:") and isinstance(parent, list):
        name = json.loads(last[2:])["name"]
        parent[:] = [i for i in parent if not (isinstance(i, dict) and i.get("name") == name)]


def path_string(path: FieldPath) -> str:
    """``.spec.containers[name="main"].image``: how conflicts name a field."""
    out = []
    for segment in path:
        if segment.startswith("f:"):
            out.append("." + segment[2:])
        else:
            key = json.loads(segment[2:])
            out.append("[" + ",".join(f"{k}={json.dumps(v)}" for k, v in key.items()) + "]")
    return "".join(out)


def encode(paths: set[FieldPath]) -> JsonObj:
    """``fieldsV1``: a tree of ``f:``/``k:`` keys; a list item owned itself carries ``"."``."""
    root: JsonObj = {}
    for path in sorted(paths):
        node = root
        for segment in path:
            node = node.setdefault(segment, {})
        if path and path[-1].startswith("k:"):
            node["."] = {}
    return root


def decode(fields: Any, prefix: FieldPath = ()) -> set[FieldPath]:
    out: set[FieldPath] = set()
    if not isinstance(fields, dict):
        return out
    if prefix and (not fields or "." in fields):
        out.add(prefix)
    for segment, child in fields.items():
        if segment != "." and len(prefix) < _MAX_DEPTH:
            out |= decode(child, (*prefix, segment))
    return out


# -- merging -------------------------------------------------------------------------------------
def merge(current: Any, config: Any) -> Any:
    """The applied configuration laid over the live object (maps deep, name-keyed lists by name)."""
    if isinstance(current, dict) and isinstance(config, dict):
        out = dict(current)
        for key, value in config.items():
            out[key] = merge(current[key], value) if key in current else json.loads(json.dumps(value))
        return out
    if _keyed(current) and _keyed(config):
        by_name = {item["name"]: item for item in config}
        merged = [merge(item, by_name.pop(item["name"])) if item["name"] in by_name else item for item in current]
        return merged + [json.loads(json.dumps(item)) for item in config if item["name"] in by_name]
    return json.loads(json.dumps(config))


class _Entry:
    def __init__(self, raw: JsonObj) -> None:
        self.raw = raw
        self.manager = str(raw.get("manager") or "")
        self.operation = str(raw.get("operation") or "")
        self.subresource = str(raw.get("subresource") or "")
        self.api_version = str(raw.get("apiVersion") or "")
        self.fields = decode(raw.get("fieldsV1"))
        self.changed = False

    def key(self) -> tuple[str, str, str]:
        return self.manager, self.operation, self.subresource

    def printed(self) -> str:
        """apimachinery's ``printManager``: the name, its subresource, ``using <apiVersion>`` for updates."""
        text = json.dumps(self.manager)
        if self.subresource:
            text += f" with subresource {json.dumps(self.subresource)}"
        if self.operation == UPDATE:
            text += f" using {self.api_version}"  # the identifier in a conflict carries no time
        return text

    def render(self, now: str) -> JsonObj:
        out: JsonObj = {"manager": self.manager, "operation": self.operation, "apiVersion": self.api_version}
        out["time"] = now if self.changed or not self.raw.get("time") else self.raw["time"]
        out["fieldsType"] = "FieldsV1"
        out["fieldsV1"] = encode(self.fields)
        if self.subresource:
            out["subresource"] = self.subresource
        return out


def _entries(obj: JsonObj) -> list[_Entry]:
    raw = (obj.get("metadata") or {}).get("managedFields")
    return [_Entry(e) for e in raw if isinstance(e, dict)] if isinstance(raw, list) else []


def _render(entries: list[_Entry], now: str) -> list[JsonObj]:
    return [e.render(now) for e in entries if e.fields]


def conflict_error(conflicts: list[tuple[_Entry, FieldPath]]) -> ApiError:
    causes = [
        {"reason": "FieldManagerConflict", "message": f"conflict with {e.printed()}", "field": path_string(p)}
        for e, p in conflicts
    ]
    if len(conflicts) == 1:
        entry, path = conflicts[0]
        message = f"Apply failed with 1 conflict: conflict with {entry.printed()}: {path_string(path)}"
    else:
        grouped: dict[str, list[str]] = {}
        for entry, path in conflicts:
            grouped.setdefault(entry.printed(), []).append(path_string(path))
        lines = [line for who in sorted(grouped) for line in (f"conflicts with {who}:", *(f"- {p}" for p in grouped[who]))]
        message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
    return ApiError(409, "Conflict", message, {"causes": causes})


def apply(rt: ResourceType, current: JsonObj, config: JsonObj, manager: str, *, force: bool, now: str) -> JsonObj:
    """The live object after ``manager`` applied ``config``, with its ``managedFields``; 409 on conflicts."""
    if rt.has_status:
        config = {k: v for k, v in config.items() if k != "status"}  # the status subresource owns it
    applied = field_set(rt, config)
    entries = _entries(current)
    conflicts = [
        (entry, path)
        for entry in entries
        if entry.key() != (manager, APPLY, "")
        for path in sorted(applied & entry.fields)
        if not path[-1].startswith("k:") and value_at(current, path) != value_at(config, path)
    ]
    if conflicts and not force:
        raise conflict_error(conflicts)
    for entry, path in conflicts:
        entry.fields.discard(path)
        entry.changed = True
    own = next((e for e in entries if e.key() == (manager, APPLY, "")), None)
    if own is None:
        own = _Entry({"manager": manager, "operation": APPLY, "apiVersion": rt.api_version})
        entries.insert(0, own)
    dropped = own.fields - applied
    own.changed = own.changed or own.fields != applied
    own.fields = applied
    merged: JsonObj = merge({k: v for k, v in current.items()}, {k: v for k, v in config.items() if k != "metadata"})
    meta = dict(current.get("metadata") or {})
    for key in _TRACKED_METADATA:
        if isinstance((config.get("metadata") or {}).get(key), dict):
            meta[key] = merge(meta.get(key) or {}, config["metadata"][key])
    merged["metadata"] = meta
    others = set().union(*(e.fields for e in entries if e is not own))
    for path in sorted(dropped, key=len, reverse=True):
        if path not in others:
            _remove(merged, path)
    merged["metadata"]["managedFields"] = _render(entries, now)
    return merged


def after_update(
    rt: ResourceType, current: JsonObj, new: JsonObj, manager: str, subresource: str, now: str
) -> list[JsonObj] | None:
    """The ``managedFields`` after an ordinary write by ``manager`` (``None``: the object has none)."""
    entries = _entries(current)
    if not entries:
        return None
    before, after = field_set(rt, current, subresource=subresource), field_set(rt, new, subresource=subresource)
    changed = {p for p in after if value_at(current, p) != value_at(new, p)}
    removed = before - after
    if not changed and not removed:
        return [e.raw for e in entries]
    for entry in entries:
        if entry.fields & (changed | removed):
            entry.fields -= changed | removed
            entry.changed = True
    own = next((e for e in entries if e.key() == (manager, UPDATE, subresource)), None)
    if own is None:
        own = _Entry({"manager": manager, "operation": UPDATE, "apiVersion": rt.api_version, "subresource": subresource})
        entries.append(own)
    own.fields |= changed
    own.changed = True
    return _render(entries, now)


def created(rt: ResourceType, config: JsonObj, manager: str, now: str) -> JsonObj:
    """The object an apply creates: the configuration with its one ``Apply`` entry."""
    obj = apply(rt, {"apiVersion": config["apiVersion"], "kind": config["kind"], "metadata": {}}, config, manager, force=False, now=now)
    obj["metadata"] = {**(config.get("metadata") or {}), **obj["metadata"]}
    if not obj["metadata"]["managedFields"]:
        obj["metadata"].pop("managedFields")
    return obj


def manager_of(query: dict[str, str], user_agent: str) -> str:
    """``fieldManager``, else the User-Agent's product name, as the server defaults it."""
    return query.get("fieldManager") or user_agent.split("/", 1)[0] or "unknown"
