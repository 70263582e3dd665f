"""Read a source tree into typed inputs, collecting every problem of every file.

Recognised documents: PodCliqueSets and ClusterTopologyBindings (``grove.io/v1alpha1``), at
most one OperatorConfiguration and at most one RenderConfiguration. Any other Kubernetes
object passes through to the output unchanged (a Namespace, a Volcano Queue, a ConfigMap
the pods mount). Kustomize files are build instructions, not objects, and are skipped.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from grove_gitops.api.operatorconfig import OperatorConfiguration
from grove_gitops.api.podcliqueset import PodCliqueSet
from grove_gitops.api.renderconfig import RenderConfig
from grove_gitops.api.topology import ClusterTopologyBinding
from grove_gitops.errors import InputProblem
from grove_gitops.load.yamlio import MAX_FILE_BYTES, MAX_OBJECT_BYTES, Document, load_documents, type_name

if TYPE_CHECKING:
    from grove_gitops.cache import RenderCache
from grove_gitops.validation.fielderrors import from_pydantic

PCS_KIND = ("grove.io/v1alpha1", "PodCliqueSet")
CTB_KIND = ("grove.io/v1alpha1", "ClusterTopologyBinding")
OPCFG_KIND = ("operator.config.grove.io/v1alpha1", "OperatorConfiguration")
RENDERCFG_KIND = ("gitops.grove.io/v1alpha1", "RenderConfiguration")
MAX_FILES = 20_000
#: Present at the root of every rendered tree (see ``output.layout.META_FILE``).
OUTPUT_MARKER_FILE = "render.meta"


M = TypeVar("M")
B = TypeVar("B", bound=BaseModel)


@dataclass(frozen=True)
class Sourced(Generic[M]):
    """A parsed input together with the file it came from (for messages)."""

    file: str
    obj: M


@dataclass
class SourceSet:
    #: PodCliqueSet documents, not yet parsed: parsing, defaulting and validation happen
    #: together in ``render`` (and are skipped for a document the render cache knows).
    podcliquesets: list[Sourced[dict[str, Any]]] = field(default_factory=list)
    bindings: list[Sourced[ClusterTopologyBinding]] = field(default_factory=list)
    operator_config: Sourced[OperatorConfiguration] | None = None
    render_config: Sourced[RenderConfig] | None = None
    passthrough: list[Sourced[dict[str, Any]]] = field(default_factory=list)
    problems: list[InputProblem] = field(default_factory=list)


def source_files(root: Path) -> list[Path]:
    """Every ``*.yaml`` / ``*.yml`` below ``root``, sorted.

    Hidden directories are skipped, and so is any earlier grove-gitops output (a directory
    holding ``render.meta``): rendering into a folder of the source tree must not feed the
    rendered objects back in as pass-through objects.
    """
    if root.is_file():
        return [root]
    outputs = [p.parent for p in root.rglob(OUTPUT_MARKER_FILE)]
    files = [
        p
        for p in root.rglob("*")
        if p.suffix in (".yaml", ".yml")
        and p.is_file()
        and not any(part.startswith(".") for part in p.relative_to(root).parts)
        and not any(p.is_relative_to(o) for o in outputs)
    ]
    return sorted(files)


def load_source(root: Path, cache: RenderCache | None = None) -> SourceSet:
    out = SourceSet()
    if not root.exists():
        out.problems.append(InputProblem(str(root), "", "source path does not exist"))
        return out
    files = source_files(root)
    if len(files) > MAX_FILES:
        out.problems.append(InputProblem(str(root), "", f"more than {MAX_FILES} YAML files"))
        return out
    base = root if root.is_dir() else root.parent
    for path in files:
        display = str(path.relative_to(base)) if path != base else path.name
        docs, problems = _load(path, display, cache)
        out.problems.extend(problems)
        for doc in docs:
            _classify(doc, out)
    return out


def _load(path: Path, display: str, cache: RenderCache | None) -> tuple[list[Document], list[InputProblem]]:
    if cache is None:
        return load_documents(path, display)
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return load_documents(path, display)  # reports the size problem
        key = cache.file_key(display, path.read_bytes())
    except OSError:
        return load_documents(path, display)
    found = cache.get_parsed(key)
    if found is None:
        found = load_documents(path, display)
        cache.put_parsed(key, found)
    return found


def parse_pcs(item: Sourced[dict[str, Any]]) -> tuple[PodCliqueSet | None, list[InputProblem]]:
    """Parse one PodCliqueSet document into its model (problems name the file and field)."""
    try:
        return PodCliqueSet.model_validate(item.obj), []
    except ValidationError as exc:
        return None, [InputProblem(item.file, e.path, e.message()) for e in from_pydantic(exc)]


def _parse(model: type[B], doc: Document, out: SourceSet) -> B | None:
    try:
        return model.model_validate(doc.data)
    except ValidationError as exc:
        out.problems.extend(InputProblem(doc.file, e.path, e.message()) for e in from_pydantic(exc))
        return None


def _classify(doc: Document, out: SourceSet) -> None:
    data = doc.data
    if not isinstance(data, dict):
        out.problems.append(InputProblem(doc.file, "", f"document {doc.index + 1} is not a mapping"))
        return
    api, kind = data.get("apiVersion"), data.get("kind")
    if not isinstance(api, str) or not api:
        out.problems.append(InputProblem(doc.file, "apiVersion", "Required value"))
        return
    if not isinstance(kind, str) or not kind:
        out.problems.append(InputProblem(doc.file, "kind", "Required value"))
        return
    if api.startswith("kustomize.config.k8s.io/"):
        return
    if (api, kind) == PCS_KIND:
        out.podcliquesets.append(Sourced(doc.file, data))
    elif (api, kind) == CTB_KIND:
        ctb = _parse(ClusterTopologyBinding, doc, out)
        if ctb is not None:
            out.bindings.append(Sourced(doc.file, ctb))
    elif (api, kind) == OPCFG_KIND:
        if out.operator_config is not None:
            out.problems.append(
                InputProblem(
                    doc.file, "", f"a second OperatorConfiguration (the first is in {out.operator_config.file})"
                )
            )
            return
        cfg = _parse(OperatorConfiguration, doc, out)
        if cfg is not None:
            out.operator_config = Sourced(doc.file, cfg)
    elif (api, kind) == RENDERCFG_KIND:
        if out.render_config is not None:
            out.problems.append(
                InputProblem(doc.file, "", f"a second RenderConfiguration (the first is in {out.render_config.file})")
            )
            return
        rc = _parse(RenderConfig, doc, out)
        if rc is not None:
            out.render_config = Sourced(doc.file, rc)
    elif kind in ("PodCliqueSet", "ClusterTopologyBinding", "OperatorConfiguration", "RenderConfiguration"):
        out.problems.append(InputProblem(doc.file, "apiVersion", f"unsupported apiVersion {api!r} for kind {kind}"))
    else:
        meta = data.get("metadata")
        if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta.get("name"):
            out.problems.append(InputProblem(doc.file, "metadata.name", "Required value"))
            return
        shape = passthrough_problems(doc.file, data)
        if shape:
            out.problems.extend(shape)
            return
        out.passthrough.append(Sourced(doc.file, data))


#: Pass-through kinds whose contents the renderer reads (the output README lists gangs).
_PODGANG_KIND = ("scheduler.grove.io", "PodGang")


def passthrough_problems(file: str, data: dict[str, Any]) -> list[InputProblem]:
    """Shape problems of a pass-through object that the API server would refuse too.

    Objects we do not model are copied as they are, but the renderer still reads their
    ``metadata`` (file names, shards, GitOps annotations): label and annotation values must be
    strings, as Kubernetes requires, and name and namespace strings without NUL bytes (they
    become file names). A pass-through PodGang is summarised in the README, so it needs
    ``spec.podgroups``.
    """
    problems: list[InputProblem] = []
    for key in ("apiVersion", "kind"):  # both become part of a file name
        if "\x00" in data[key]:
            problems.append(InputProblem(file, key, "must not contain a NUL byte"))
    meta = data["metadata"]
    for key in ("name", "namespace"):
        value = meta.get(key)
        if key in meta and value is not None and not isinstance(value, str):
            problems.append(InputProblem(file, f"metadata.{key}", f"must be a string, not {type_name(value)}"))
        elif isinstance(value, str) and "\x00" in value:
            problems.append(InputProblem(file, f"metadata.{key}", "must not contain a NUL byte"))
    for key in ("labels", "annotations"):
        value = meta.get(key)
        if value is None:
            continue
        if not isinstance(value, dict):
            problems.append(InputProblem(file, f"metadata.{key}", f"must be a mapping, not {type_name(value)}"))
            continue
        for k, v in value.items():
            if not isinstance(v, str):
                problems.append(
                    InputProblem(file, f"metadata.{key}.{k}", f"value must be a string, not {type_name(v)}")
                )
    size = len(json.dumps(data, separators=(",", ":")).encode())
    if size > MAX_OBJECT_BYTES:
        problems.append(
            InputProblem(
                file, "", f"object is {size} bytes, above the {MAX_OBJECT_BYTES} byte limit of what etcd stores"
            )
        )
    api = str(data.get("apiVersion", ""))
    if (api.split("/")[0], data.get("kind")) == _PODGANG_KIND:
        problems += _podgang_problems(file, data)
    return problems


def _podgang_problems(file: str, data: dict[str, Any]) -> list[InputProblem]:
    spec = data.get("spec")
    if not isinstance(spec, dict):
        return [InputProblem(file, "spec", "Required value")]
    groups = spec.get("podgroups")
    if not isinstance(groups, list):
        return [InputProblem(file, "spec.podgroups", "Required value: a list")]
    problems = []
    for i, group in enumerate(groups):
        if not isinstance(group, dict) or not isinstance(group.get("name"), str):
            problems.append(InputProblem(file, f"spec.podgroups[{i}].name", "Required value"))
        elif not isinstance(group.get("minReplicas"), int) or isinstance(group.get("minReplicas"), bool):
            problems.append(InputProblem(file, f"spec.podgroups[{i}].minReplicas", "Required value: an integer"))
    return problems
