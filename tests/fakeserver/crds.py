"""Turn ``CustomResourceDefinition`` manifests into served :class:`ResourceType` s.

The real CRD YAML (not a hand-written stand-in) is what makes the fake trustworthy for custom
resources: scope, served versions, the ``status`` subresource and the ``openAPIV3Schema`` all
come from upstream. Parsing the big Grove CRDs takes ~100 ms, so parsed directories are cached
per process and keyed by file names, sizes and mtimes; every later server start is instant.
"""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path
from typing import Any

import yaml

from tests.fakeserver import scale
from tests.fakeserver.errors import FieldError
from tests.fakeserver.resources import GroupResource, ResourceRegistry, ResourceType
from tests.fakeserver.store import PreconditionFailed, Store

JsonObj = dict[str, Any]
CRDS = GroupResource("apiextensions.k8s.io", "customresourcedefinitions")

_CACHE_LOCK = threading.Lock()
_CACHE: dict[tuple[str, tuple[tuple[str, int, int], ...]], list[JsonObj]] = {}

# LibYAML is installed in the project venv; fall back to the pure-Python loader elsewhere.
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_crd_documents(crd_dir: Path) -> list[JsonObj]:
    """Every ``CustomResourceDefinition`` document below ``crd_dir`` (``*.yaml``/``*.yml``), or in it
    if it is a file; files may hold several documents (``---``), and other kinds are ignored.

    The documents are shared between servers (that is what makes later starts instant):
    treat them as read-only; the fake only reads them and builds new objects from them.
    """
    if crd_dir.is_file():
        files = [crd_dir]
    else:
        files = sorted(p for p in crd_dir.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())
    fingerprint = tuple((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in files)
    key = (str(crd_dir.resolve()), fingerprint)
    with _CACHE_LOCK:
        cached = _CACHE.get(key)
    if cached is None:
        cached = []
        for path in files:
            for doc in yaml.load_all(path.read_text(encoding="utf-8"), Loader=_Loader):
                if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                    cached.append(doc)
        with _CACHE_LOCK:
            _CACHE[key] = cached
    return list(cached)


def resource_types_from_crd(crd: JsonObj) -> list[ResourceType]:
    """One :class:`ResourceType` per served version of ``crd``.

    Raises ``ValueError`` for a CRD missing the fields a real server requires (group, names,
    scope, versions) or with scale paths it refuses, so a broken fixture fails loudly at server
    start and a CRD posted over HTTP gets a 422.
    """
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    group = spec.get("group")
    plural = names.get("plural")
    kind = names.get("kind")
    if not (group and plural and kind and spec.get("versions")):
        raise ValueError(f"CRD {crd.get('metadata', {}).get('name')!r} lacks group, names or versions")
    namespaced = spec.get("scope", "Namespaced") == "Namespaced"
    out = []
    for index, version in enumerate(spec["versions"]):
        if not version.get("served", True):
            continue
        subresources = version.get("subresources") or spec.get("subresources") or {}
        where = f"spec.versions[{index}].subresources" if version.get("subresources") else "spec.subresources"
        schema = (version.get("schema") or spec.get("validation") or {}).get("openAPIV3Schema")
        out.append(
            ResourceType(
                group=group,
                version=version["name"],
                plural=plural,
                kind=kind,
                namespaced=namespaced,
                has_status="status" in subresources,
                singular=names.get("singular", ""),
                short_names=tuple(names.get("shortNames") or ()),
                builtin=False,
                returns_deleted_object=True,
                schema=schema,
                categories=tuple(names.get("categories") or ()),
                scale=scale.parse_scale(subresources, where),
            )
        )
    return out


def established_status(crd: JsonObj) -> JsonObj:
    """The status a real apiextensions controller writes once a CRD is being served."""
    names = dict((crd.get("spec") or {}).get("names") or {})
    names.setdefault("singular", str(names.get("kind", "")).lower())
    names.setdefault("listKind", f"{names.get('kind', '')}List")
    versions = [v["name"] for v in (crd.get("spec") or {}).get("versions", []) if v.get("storage")]
    return {
        "acceptedNames": names,
        "conditions": [
            {
                "type": "NamesAccepted",
                "status": "True",
                "reason": "NoConflicts",
                "message": "no conflicts found",
            },
            {
                "type": "Established",
                "status": "True",
                "reason": "InitialNamesAccepted",
                "message": "the initial names have been accepted",
            },
        ],
        "storedVersions": versions,
    }


def crd_errors(rt: ResourceType, obj: JsonObj) -> list[FieldError]:
    """What the apiextensions validation would reject before a CRD is stored (a subset)."""
    if rt.group_resource != CRDS:
        return []
    spec = obj.get("spec") or {}
    expected = f"{(spec.get('names') or {}).get('plural')}.{spec.get('group')}"
    name = obj["metadata"].get("name")
    if name != expected:
        return [FieldError("Invalid", "metadata.name", 'must be spec.names.plural+"."+spec.group', name)]
    try:
        resource_types_from_crd(obj)
    except scale.ScalePathError as error:
        return error.errors
    except (ValueError, KeyError, TypeError) as error:
        return [FieldError("Invalid", "spec", str(error), None)]
    return []


def sync_served_types(
    registry: ResourceRegistry, store: Store, rt: ResourceType, crd: JsonObj, *, deleted: bool
) -> list[JsonObj]:
    """Keep the served types in step with a CustomResourceDefinition that was just written.

    A created or updated CRD (re)registers its served versions; a deleted one stops being
    served and takes its custom resources with it, as the apiextensions finalizer does.
    Returns the custom resources removed that way (for the garbage collector).
    """
    if rt.group_resource != CRDS:
        return []
    spec = crd.get("spec") or {}
    gr = GroupResource(spec.get("group", ""), (spec.get("names") or {}).get("plural", ""))
    registry.unregister(gr.group, gr.resource)
    removed: list[JsonObj] = []
    if deleted:
        items, _ = store.snapshot(gr, None)
        for item in items:
            meta = item["metadata"]
            with contextlib.suppress(PreconditionFailed):
                final = store.commit(gr, meta.get("namespace", ""), meta["name"], None)
                if final is not None:
                    removed.append(final)
        return removed
    for served in resource_types_from_crd(crd):
        registry.register(served)
    return removed
