"""A clique's ``podSpec`` checked the way the API server will check the pods rendered from it.

Without this a typo (``resource:`` for ``resources:``, ``nodeSelecter:``), an out-of-range port or a
malformed quantity (``memory: 512GB``) renders with exit 0 and only fails at apply time; a negative
GPU limit may even be dropped silently.  Two checks run, both on the podSpec *as written* so that errors
name the user's source path (``spec.template.cliques[1].spec.podSpec.containers[0].resource``):

* the strict OpenAPI-derived JSON schema of ``v1 Pod`` for the target Kubernetes version, from the
  ``kubernetes-validate`` package (the same schemas the test suite validates rendered objects with);
  the podSpec is wrapped in a minimal Pod so one compiled validator serves every clique;
* Kubernetes' resource rules, which the schema cannot express: the quantity grammar
  (``k8s.io/apimachinery/pkg/api/resource``), non-negative values, ``requests <= limits``, and whole
  numbers with ``requests == limits`` for extended resources such as ``nvidia.com/gpu``.

Every pod of a clique shares its podSpec, so results are memoised by a digest of the podSpec and the
Kubernetes version: the cost is per distinct template, not per pod.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import re
from collections.abc import Callable, Iterator, Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

from grove_gitops.api.podcliqueset import PodCliqueSet
from grove_gitops.fields.fielderrors import FieldError, invalid, join_path, required, type_detail
from grove_gitops.fields.quantity import QUANTITY_HELP, parse_quantity
from grove_gitops.fields.suggest import MAX_SUGGESTIONS, did_you_mean
from grove_gitops.problems import MAX_PROBLEMS_PER_DOCUMENT

__all__ = [
    "builtin_validator",
    "object_errors",
    "pod_spec_errors",
    "preload",
    "resource_errors",
    "validate_pod_specs",
]

def _is_extended(name: str) -> bool:
    """``v1helper.IsExtendedResourceName``: a domain-prefixed name outside ``kubernetes.io``."""
    if "/" not in name or name.startswith("requests."):
        return False
    domain = name.split("/", 1)[0]
    return not (domain == "kubernetes.io" or domain.endswith(".kubernetes.io"))


def _quantity_map(resources: Mapping[str, Any], key: str, path: str) -> tuple[dict[str, Decimal], list[FieldError]]:
    raw = resources.get(key)
    if not isinstance(raw, Mapping):
        return {}, []  # absent; a wrong type is the schema's finding
    values: dict[str, Decimal] = {}
    errs: list[FieldError] = []
    for name, value in raw.items():
        where = f"{path}.{key}[{name}]"
        quantity = parse_quantity(value)
        if quantity is None:
            errs.append(invalid(where, value, QUANTITY_HELP))
            continue
        if quantity < 0:
            errs.append(invalid(where, value, "must be greater than or equal to 0"))
            continue
        if isinstance(name, str) and _is_extended(name) and quantity != quantity.to_integral_value():
            errs.append(invalid(where, value, "must be an integer"))
            continue
        values[str(name)] = quantity
    return values, errs


def resource_errors(resources: object, path: str) -> list[FieldError]:
    """Kubernetes' ``ValidateResourceRequirements`` for one ``resources`` block at ``path``."""
    if not isinstance(resources, Mapping):
        return []
    limits, errs = _quantity_map(resources, "limits", path)
    requests, request_errs = _quantity_map(resources, "requests", path)
    errs += request_errs
    for name, request in requests.items():
        where = f"{path}.requests[{name}]"
        raw = resources["requests"][name]
        limit = limits.get(name)
        if _is_extended(name) or name.startswith("hugepages-"):  # not helper.IsOvercommitAllowed
            if limit is None:
                errs.append(required(f"{path}.limits[{name}]", "Limit must be set for non overcommitable resources"))
            elif request != limit:
                errs.append(invalid(where, raw, f"must be equal to {name} limit of {resources['limits'][name]}"))
        elif limit is not None and request > limit:
            errs.append(
                invalid(where, raw, f"must be less than or equal to {name} limit of {resources['limits'][name]}")
            )
    return errs


def _container_resource_errors(pod: Mapping[str, Any], path: str) -> list[FieldError]:
    errs = resource_errors(pod.get("resources"), f"{path}.resources")
    for key in ("containers", "initContainers"):
        items = pod.get(key)
        if not isinstance(items, list):
            continue
        for j, container in enumerate(items):
            if isinstance(container, Mapping):
                errs += resource_errors(container.get("resources"), f"{path}.{key}[{j}].resources")
    return errs


# --------------------------------------------------------------------------------------------------
# The strict v1 Pod schema of kubernetes-validate, compiled once per Kubernetes version.
# --------------------------------------------------------------------------------------------------


def _schemas_root() -> Path:
    """kubernetes-validate's folder of schemas, found without importing the package: its
    ``__init__`` imports what its own validator needs (``importlib_resources``, ``packaging``,
    ~7 ms of a render's CPU, issue 35.4), and only the JSON files are used here."""
    spec = importlib.util.find_spec("kubernetes_validate")
    if spec is None or not spec.submodule_search_locations:
        raise ValueError("kubernetes-validate is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "kubernetes-json-schema"


def preload() -> None:
    """Import the schema validator's modules ahead of the first check. ``jsonschema`` and
    ``referencing`` take ~50 ms of CPU to import, paid by the first podSpec checked, and so on
    the render's serial path before any PodCliqueSet can go to a worker (issue 35.4):
    ``render.preload`` runs this while worker processes parse the files."""
    import jsonschema  # noqa: F401
    import referencing  # noqa: F401


@functools.lru_cache(maxsize=4)
def _definitions(kube_version: str) -> tuple[Path, dict[str, Any]]:
    """The strict schema folder of Kubernetes ``kube_version`` (``"1.35"``) and its parsed
    ``_definitions.json`` (about 1.5 MB, ~25 ms to parse): read once, for the validators'
    registry and for the API groups the version serves alike."""
    root = _schemas_root()
    prefix = f"v{kube_version}."
    dirs = sorted(p.name for p in root.iterdir() if p.name.startswith(prefix) and p.name.endswith("-local-strict"))
    if not dirs:
        raise ValueError(f"kubernetes-validate has no schemas for Kubernetes {kube_version}")
    folder = root / dirs[-1]
    return folder, json.loads(folder.joinpath("_definitions.json").read_text("utf-8"))


@functools.lru_cache(maxsize=4)
def _schema_folder(kube_version: str) -> tuple[Path, Any]:
    """The strict schema folder of Kubernetes ``kube_version`` and a registry of its
    ``_definitions.json``."""
    import referencing

    folder, definitions = _definitions(kube_version)
    # Not crawled: every reference is a JSON pointer into this one document, which the
    # resolver walks on demand; crawling its 5,000 definitions cost ~0.1 s per process, paid
    # by every diff or --once run that validates one changed PodCliqueSet.
    return folder, referencing.Resource.from_contents(definitions) @ referencing.Registry()


_API_VERSION = re.compile(r"([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?v[0-9]+[a-z0-9]*")
_KIND = re.compile(r"[A-Za-z][A-Za-z0-9]*")


@functools.lru_cache(maxsize=256)
def builtin_validator(kube_version: str, api_version: str, kind: str) -> Any:
    """The compiled strict validator of a built-in kind, or ``None`` when the version has no schema
    for exactly this group/version/kind (custom resources, unknown kinds: not judged here).

    File names follow kubernetes-validate (``<kind>-<group prefix>-<version>.json``); the file's
    ``x-kubernetes-group-version-kind`` must name this kind, since embedded types share the scheme.
    Public because the test suite's conformance checks and fake API server judge built-in objects
    with this same loader: one implementation of the schema lookup, not one per consumer.
    """
    import jsonschema
    import referencing

    if not (_API_VERSION.fullmatch(api_version) and _KIND.fullmatch(kind)):
        return None  # never let input shape a file name
    folder, registry = _schema_folder(kube_version)
    munged = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    file = folder.joinpath(f"{kind.lower()}-{munged}.json")
    if not file.is_file():
        return None
    schema = json.loads(file.read_text("utf-8"))
    group, _, version = api_version.rpartition("/")
    if {"group": group, "version": version, "kind": kind} not in (schema.get("x-kubernetes-group-version-kind") or []):
        return None
    return jsonschema.Draft202012Validator(schema, registry=referencing.Resource.from_contents(schema) @ registry)


_INT32 = (-(2**31), 2**31 - 1)


def _format_errors(value: object, path: tuple[str | int, ...]) -> Iterator[tuple[tuple[str | int, ...], str]]:
    """``format: int32`` is not enforced by jsonschema; the API server refuses out-of-range ports."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield from _format_errors(item, (*path, str(key)))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _format_errors(item, (*path, i))
    elif isinstance(value, int) and not isinstance(value, bool) and path and path[-1] in _PORT_FIELDS:
        lowest = _PORT_FIELDS[str(path[-1])]
        if not lowest <= value <= 65535:
            yield path, f"must be between {lowest} and 65535, inclusive"


#: Port fields and their lowest valid value (``hostPort: 0`` / ``nodePort: 0`` mean "none"): container
#: and host ports, Service ports and target ports, probe and webhook ports (a name is a string).
_PORT_FIELDS = {"containerPort": 1, "hostPort": 0, "port": 1, "targetPort": 1, "nodePort": 0}


def _schema_errors(pod_spec: Mapping[str, Any], kube_version: str, path: str) -> list[FieldError]:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}, "spec": pod_spec}
    errs = _object_schema_errors(builtin_validator(kube_version, "v1", "Pod"), pod, lambda where: [path, *where[1:]])
    for where, message in _format_errors(pod_spec, ()):
        errs.append(invalid(join_path([path, *where]), _value_at(pod_spec, where), message))
    return errs


def _object_schema_errors(
    validator: Any, obj: Mapping[str, Any], to_source: Callable[[tuple[str | int, ...]], list[str | int]]
) -> list[FieldError]:
    """Schema errors of ``obj`` as field errors; ``to_source`` maps a path in ``obj`` to the user's."""
    errs: list[FieldError] = []
    suggested = 0
    for error in validator.iter_errors(obj):
        where = tuple(error.absolute_path)
        base = join_path(to_source(where))
        if error.validator == "additionalProperties" and isinstance(error.instance, Mapping):
            declared = (error.schema or {}).get("properties") or {}
            unused = [d for d in declared if d not in error.instance]
            for k in error.instance:
                if k not in declared:
                    hint = did_you_mean(str(k), unused) if suggested < MAX_SUGGESTIONS else ""
                    suggested += 1
                    errs.append(FieldError(join_path([base, str(k)]), "unknown field" + hint))
        elif error.validator == "required" and isinstance(error.instance, Mapping):
            errs += [required(join_path([base, str(k)])) for k in error.validator_value if k not in error.instance]
        elif error.validator == "type" and _expected_type(error.validator_value):
            # jsonschema's "True is not of type 'string', 'null'" is Python's spelling; say it as
            # Kubernetes does (true, must be of type string), with the "quote it" hint.
            errs.append(invalid(base, error.instance, type_detail(_expected_type(error.validator_value), error.instance)))
        elif "resources" in where and error.validator == "oneOf":
            continue  # a quantity of the wrong type; resource_errors names it with the grammar
        else:
            message = str(error.message)
            errs.append(invalid(base, error.instance, message if len(message) < 200 else message[:197] + "..."))
    return errs


def _expected_type(declared: object) -> str:
    """The one JSON type a schema's ``type`` asks for, ``null`` aside (empty when several)."""
    names = [declared] if isinstance(declared, str) else list(declared) if isinstance(declared, list) else []
    wanted = [n for n in names if n != "null" and isinstance(n, str)]
    return wanted[0] if len(wanted) == 1 else ""


def _value_at(pod_spec: Mapping[str, Any], where: tuple[str | int, ...]) -> Any:
    value: Any = pod_spec
    for part in where:
        value = value[part]
    return value


#: The first errors of a podSpec (paths relative to it, ``$``) and how many more it has: a
#: document lists :data:`MAX_PROBLEMS_PER_DOCUMENT` problems at most, so the memo keeps no
#: more than that per template, however many unknown fields a crafted one holds (4,096
#: templates of 50,000 errors each would otherwise stay in a long-running agent's memory).
_Found = tuple[tuple[tuple[str, str, str, Any], ...], int]
#: digest of (podSpec, Kubernetes version) -> its errors.
_MEMO: dict[str, _Found] = {}
_MEMO_MAX = 4096


def _cached(pod_json: str, kube_version: str) -> _Found:
    """Validate one distinct template once; every pod and every later render reuses the result."""
    key = hashlib.sha256(f"{kube_version}\0{pod_json}".encode()).hexdigest()
    found = _MEMO.get(key)
    if found is None:
        pod_spec = json.loads(pod_json)
        errs = _schema_errors(pod_spec, kube_version, "$") + _container_resource_errors(pod_spec, "$")
        unique = _dedupe(errs)
        kept = tuple((e.path, e.type, e.detail, e.value) for e in unique[:MAX_PROBLEMS_PER_DOCUMENT])
        found = (kept, len(unique) - len(kept))
        if len(_MEMO) >= _MEMO_MAX:
            _MEMO.clear()
        _MEMO[key] = found
    return found


def _dedupe(errs: list[FieldError]) -> list[FieldError]:
    seen: dict[str, FieldError] = {}
    for e in errs:
        seen.setdefault(str(e), e)
    return list(seen.values())


def pod_spec_errors(pod_spec: Mapping[str, Any], kube_version: str, path: str) -> list[FieldError]:
    """Every schema and resource problem of ``pod_spec``, reported under the source ``path``.

    ``kube_version`` is RenderConfiguration's ``kubernetesVersion`` (``"1.35"``).  A podSpec that is
    not JSON-serialisable (YAML tags such as ``!!binary``) is left to the loader's own checks.
    """
    try:
        pod_json = json.dumps(pod_spec, sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError):
        return []
    kept, more = _cached(pod_json, kube_version)
    out = [FieldError(path + rel[1:], kind, detail, value) for rel, kind, detail, value in kept]
    # The ones past the cap are only counted by the document's cap (problems.cap_document) and
    # never shown: they stand behind a full page of this podSpec's own errors. One shared
    # object each, so the count costs no memory per error.
    return out + out[-1:] * more


def validate_pod_specs(pcs: PodCliqueSet, kube_version: str) -> list[FieldError]:
    """:func:`pod_spec_errors` for every clique of ``pcs``, on ``spec.template.cliques[i].spec.podSpec``."""
    errs: list[FieldError] = []
    for i, clique in enumerate(pcs.cliques):
        errs += pod_spec_errors(clique.spec.podSpec, kube_version, f"spec.template.cliques[{i}].spec.podSpec")
    return errs


def object_errors(obj: Mapping[str, Any], kube_version: str) -> list[FieldError]:
    """A pass-through built-in object (ConfigMap, Service, Deployment, ...) against the strict schema
    of ``kube_version``, on the file's own field paths (``spec.ports[0].port``).

    Kinds without a bundled schema (custom resources, unknown kinds) are not judged here.  Errors in
    ``metadata`` are left out: names, namespaces, labels and annotations have their own checks with
    Kubernetes' messages, and one mistake should be reported once.
    """
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return []
    validator = builtin_validator(kube_version, api_version, kind)
    if validator is None:
        return []
    try:  # JSON's data model, as the API server sees it; YAML-only values are the loader's finding
        obj = json.loads(json.dumps(obj))
    except (TypeError, ValueError):
        return []
    errs = _object_schema_errors(validator, obj, list)
    errs += [invalid(join_path(where), _value_at(obj, where), m) for where, m in _format_errors(obj, ())]
    return [e for e in _dedupe(errs) if e.path != "metadata" and not e.path.startswith(("metadata.", "metadata["))]


@functools.lru_cache(maxsize=4)
def _builtin_groups(kube_version: str) -> frozenset[str]:
    """The API groups Kubernetes ``kube_version`` itself serves (``""`` is the core group).

    Read from the version's schema definitions, so CRD groups that merely end in ``.k8s.io``
    (Gateway API, snapshots) are not mistaken for built-in ones.
    """
    _, definitions = _definitions(kube_version)
    return frozenset(
        gvk.get("group", "")
        for schema in definitions.get("$defs", {}).values()
        for gvk in schema.get("x-kubernetes-group-version-kind") or []
    )


def unknown_builtin_kind(obj: Mapping[str, Any], kube_version: str) -> str | None:
    """A warning when a pass-through object claims a built-in API group but Kubernetes
    ``kube_version`` serves no such kind at that version (a typo, or an API removed or not yet
    added): the apply would fail, but the object may come from an aggregated API, so it is not
    an error."""
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return None
    group = api_version.rpartition("/")[0]
    if group not in _builtin_groups(kube_version) or builtin_validator(kube_version, api_version, kind) is not None:
        return None
    return f"kind: {api_version} {kind} is not a built-in kind of Kubernetes {kube_version}"
