"""Read a source tree into typed inputs, collecting every problem of every file.

Recognised documents: PodCliqueSets and ClusterTopologyBindings (``grove.io/v1alpha1``), at
most one OperatorConfiguration and at most one RenderConfiguration. Any other Kubernetes
object passes through to the output unchanged (a Namespace, a Volcano Queue, a ConfigMap
the pods mount). Kustomize files are build instructions, not objects, and are skipped.

Everything of a pass-through object that later becomes part of a file path (namespace, name,
kind, API group) is checked here with Kubernetes' own rules, so a source tree can never
name a file outside the output (issue 9, section 1). The walk refuses symbolic links that
leave the source tree and reports folders it cannot read instead of skipping them.
"""

from __future__ import annotations

import errno
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from grove_gitops.api.clusterfacts import ClusterFacts
from grove_gitops.api.operatorconfig import OperatorConfiguration
from grove_gitops.api.podcliqueset import PodCliqueSet
from grove_gitops.api.podgang import PodGangSpec
from grove_gitops.api.renderconfig import RenderConfig
from grove_gitops.api.topology import ClusterTopologyBinding
from grove_gitops.errors import InputProblem
from grove_gitops.load.files import FileData, parse_files
from grove_gitops.load.marker import META_FILE, is_output_dir, is_output_meta
from grove_gitops.load.memory import MemorySource
from grove_gitops.load.schemarepair import Repaired, repair
from grove_gitops.load.treepaths import component_problem
from grove_gitops.load.treepaths import shown as shown_path
from grove_gitops.problems import cap_document, document_name
from grove_gitops.yamlfiles.yamlio import MAX_FILE_BYTES, MAX_OBJECT_BYTES, Document, type_name

if TYPE_CHECKING:
    import pathspec

    from grove_gitops.api.inventory import Node, NodeInventory
    from grove_gitops.cache import RenderCache
from grove_gitops.fields.fielderrors import FieldError, from_pydantic, invalid, required
from grove_gitops.fields.k8snames import dns1123_label_problems, dns1123_subdomain_problems
from grove_gitops.fields.suggest import closest

PCS_KIND = ("grove.io/v1alpha1", "PodCliqueSet")
CTB_KIND = ("grove.io/v1alpha1", "ClusterTopologyBinding")
OPCFG_KIND = ("operator.config.grove.io/v1alpha1", "OperatorConfiguration")
RENDERCFG_KIND = ("gitops.grove.io/v1alpha1", "RenderConfiguration")
INVENTORY_KIND = ("gitops.grove.io/v1alpha1", "NodeInventory")
FACTS_KIND = ("gitops.grove.io/v1alpha1", "ClusterFacts")
#: A ``v1`` Node (``kubectl get nodes -o yaml``) is node inventory, never an output object.
NODE_KIND = ("v1", "Node")
HOSTNAME = "kubernetes.io/hostname"
#: A render target of a fleet (``grove_gitops.fleet``); read raw here, validated there.
CLUSTER_KIND = ("gitops.grove.io/v1alpha1", "Cluster")
MAX_FILES = 20_000
#: Present at the root of every rendered tree (see ``load.marker``).
OUTPUT_MARKER_FILE = META_FILE
#: gitignore-syntax file at the source root naming files to leave out.
IGNORE_FILE = ".grove-gitops-ignore"
#: The ignore file is read whole: no larger than any source file (a git tree refuses the same).
MAX_IGNORE_BYTES = MAX_FILE_BYTES
HELM_CHART_FILE = "Chart.yaml"
HELM_VALUES_FILES = ("values.yaml", "values.yml")
#: Every kind of the API groups grove-gitops owns or reads. Any other kind in these groups
#: is a typo (``PodCliqueSets``) that would otherwise pass through and be pruned away.
OWNED_KINDS: dict[str, tuple[str, ...]] = {
    "grove.io": ("PodCliqueSet", "ClusterTopologyBinding", "PodClique", "PodCliqueScalingGroup"),
    "scheduler.grove.io": ("PodGang",),
    "operator.config.grove.io": ("OperatorConfiguration",),
    "gitops.grove.io": ("RenderConfiguration", "NodeInventory", "Cluster", "ClusterFacts"),
}
_KIND_RE = re.compile(r"^[A-Za-z][A-Za-z0-9]*$")
_VERSION_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
#: Groups whose object names follow Kubernetes' path-segment rule, not the DNS-subdomain
#: rule: RBAC names such as ``system:controller:foo`` are valid.
_PATH_SEGMENT_NAME_GROUPS = ("rbac.authorization.k8s.io",)
_CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f]")


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
    warnings: list[str] = field(default_factory=list)
    #: The node inventory for ``feasibility`` (docs/feasibility.md): NodeInventory pools and
    #: ``v1`` Nodes, with the field prefix (``items[3].``) of a Node inside a List.
    inventories: list[Sourced[NodeInventory]] = field(default_factory=list)
    nodes: list[Sourced[tuple[str, Node]]] = field(default_factory=list)
    #: What the cluster has that the source refers to (``api.clusterfacts``, docs/authoring.md).
    cluster_facts: list[Sourced[ClusterFacts]] = field(default_factory=list)
    #: Fleet mode (``grove_gitops.fleet``): the Cluster documents, every OperatorConfiguration
    #: and RenderConfiguration (a fleet holds one per cluster), the "a second ..." problems,
    #: which only stand when there is no Cluster, and the problems of those second
    #: configurations, which only count when there is one.
    clusters: list[Sourced[dict[str, Any]]] = field(default_factory=list)
    operator_configs: list[Sourced[OperatorConfiguration]] = field(default_factory=list)
    render_configs: list[Sourced[RenderConfig]] = field(default_factory=list)
    config_conflicts: list[InputProblem] = field(default_factory=list)
    fleet_problems: list[InputProblem] = field(default_factory=list)
    #: Every file read, by the name problems give it: where ``yamlfiles.positions`` finds the
    #: line and column of a problem (a path on disk, or the bytes of a tree in memory).
    files: dict[str, FileData] = field(default_factory=dict)

    @property
    def has_inventory(self) -> bool:
        return bool(self.inventories or self.nodes)


@dataclass
class SourceScan:
    """The YAML files of a source tree, and what the walk had to report."""

    files: list[Path] = field(default_factory=list)
    problems: list[InputProblem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def source_files(root: Path) -> list[Path]:
    """Every ``*.yaml`` / ``*.yml`` below ``root``, sorted (see :func:`scan_source`)."""
    return scan_source(root).files


#: The source root is a chart (same on disk and in memory).
_HELM_ROOT = InputProblem(
    HELM_CHART_FILE,
    "",
    "the source tree is a Helm chart; render it first (helm template) and point grove-gitops at the result",
)


def scan_source(root: Path) -> SourceScan:
    """Walk ``root`` and list the YAML files to read, sorted by path.

    Left out: hidden entries, files matched by ``.grove-gitops-ignore``, any earlier
    grove-gitops output below the root (a folder whose ``render.meta`` grove-gitops wrote;
    rendering into the source tree must not feed objects back in) and Helm chart folders
    (with a warning). Errors, never silent skips: a folder that cannot be read, a broken
    symbolic link, and a symbolic link leading outside the source tree (it would copy
    whatever it points at, a Secret elsewhere on the machine, into the output). Each file or
    folder is read once, however many in-tree links lead to it.
    """
    scan = SourceScan()
    if not root.is_dir():
        scan.files.append(root)
        return scan
    if not _can_enter(root, ".", scan):
        return scan
    real_root = root.resolve()
    if (root / HELM_CHART_FILE).is_file():
        scan.problems.append(_HELM_ROOT)
        return scan
    ignore = _ignore_spec(root, scan)
    seen: set[tuple[int, int]] = set()
    try:
        st = root.stat()
        seen.add((st.st_dev, st.st_ino))
    except OSError:  # pragma: no cover - is_dir() just succeeded
        pass
    _walk(root, PurePosixPath(), real_root, ignore, seen, scan)
    scan.files.sort()
    return scan


def _can_enter(folder: Path, shown: str, scan: SourceScan) -> bool:
    """Whether the entries of ``folder`` can be looked at; if not, a problem naming it.

    A folder without search permission (mode 000 or 666, for a user other than root) lists
    nothing and makes every ``stat`` of an entry raise ``PermissionError``, which
    ``Path.is_file`` does not swallow: the walk's ``Chart.yaml`` check would be a traceback.
    """
    try:
        (folder / HELM_CHART_FILE).stat()
    except FileNotFoundError:
        return True
    except OSError as exc:
        if exc.errno in (errno.ENOTDIR, errno.ELOOP, errno.ENAMETOOLONG):
            return True
        scan.problems.append(InputProblem(shown, "", f"cannot read folder: {exc.strerror or exc}"))
        return False
    return True


def _ignore_spec(root: Path, scan: SourceScan | MemoryScan) -> pathspec.GitIgnoreSpec | None:
    path = root / IGNORE_FILE
    if not path.exists():
        return None
    try:
        if path.stat().st_size > MAX_IGNORE_BYTES:
            scan.problems.append(InputProblem(IGNORE_FILE, "", f"file too large: more than {MAX_IGNORE_BYTES} bytes"))
            return None
        data = path.read_bytes()
    except OSError as exc:
        scan.problems.append(InputProblem(IGNORE_FILE, "", f"cannot read file: {exc.strerror or exc}"))
        return None
    return _ignore_from_bytes(data, scan)


def _ignore_from_bytes(data: bytes, scan: SourceScan | MemoryScan) -> pathspec.GitIgnoreSpec | None:
    """The ignore file's patterns (on disk or in memory). ``splitlines`` splits on ``\r\n``
    and ``\r`` as well, as reading the file as text would."""
    try:
        lines = data.decode("utf-8").splitlines()
    except UnicodeDecodeError as exc:
        scan.problems.append(InputProblem(IGNORE_FILE, "", f"cannot read file: {exc}"))
        return None
    # Imported only for a tree that has an ignore file: pathspec and RE2 cost ~17 ms of every
    # render's start-up otherwise (issue 35.4). A missing RE2 still fails loudly, here.
    from grove_gitops.load.patterns import gitignore_spec

    return gitignore_spec(lines)


def _walk(
    folder: Path,
    rel: PurePosixPath,
    real_root: Path,
    ignore: pathspec.GitIgnoreSpec | None,
    seen: set[tuple[int, int]],
    scan: SourceScan,
) -> None:
    shown = str(rel) if rel.parts else "."
    try:
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError as exc:
        scan.problems.append(InputProblem(shown, "", f"cannot read folder: {exc.strerror or exc}"))
        return
    for entry in entries:
        if entry.name.startswith("."):
            continue
        child = rel / entry.name
        path = Path(entry.path)
        wanted = entry.name.endswith((".yaml", ".yml"))
        try:
            is_link = entry.is_symlink()
            is_dir = entry.is_dir()
        except OSError as exc:
            scan.problems.append(InputProblem(str(child), "", f"cannot read: {exc.strerror or exc}"))
            continue
        if not (is_dir or wanted or is_link):
            continue
        if ignore is not None and ignore.match_file(f"{child}/" if is_dir else str(child)):
            continue
        reason = component_problem(entry.name)
        if reason is not None:  # the rule every git tree reader applies (load/treepaths.py)
            scan.problems.append(InputProblem(shown_path(str(child)), "", f"refused: the path {reason}"))
            continue
        if is_link:
            try:
                target = path.resolve(strict=True)
            except (OSError, RuntimeError):
                if wanted:
                    scan.problems.append(InputProblem(str(child), "", "broken symbolic link"))
                continue
            if not target.is_relative_to(real_root):
                if is_dir or wanted:
                    scan.problems.append(
                        InputProblem(
                            str(child), "", "symbolic link points outside the source tree; refusing to follow it"
                        )
                    )
                continue
        if not (is_dir or wanted):
            continue
        try:
            st = entry.stat()
        except OSError as exc:
            scan.problems.append(InputProblem(str(child), "", f"cannot read: {exc.strerror or exc}"))
            continue
        key = (st.st_dev, st.st_ino)
        if key in seen:
            continue
        seen.add(key)
        if is_dir:
            if is_output_dir(path):
                continue
            if not _can_enter(path, str(child), scan):
                continue
            if (path / HELM_CHART_FILE).is_file():
                scan.warnings.append(
                    f"{child}: a Helm chart ({HELM_CHART_FILE}), not manifests; skipped: render it first (helm template)"
                )
                continue
            _walk(path, child, real_root, ignore, seen, scan)
        elif entry.is_file() and _keep_name(str(child), scan):
            scan.files.append(path)


#: A folder of a source tree held in memory: name -> sub-folder or file bytes.
_MemoryDir = dict[str, "_MemoryDir | bytes"]


@dataclass
class MemoryScan:
    """:class:`SourceScan` of a :class:`MemorySource`: the files are its relative paths."""

    files: list[str] = field(default_factory=list)
    problems: list[InputProblem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _memory_tree(source: MemorySource) -> _MemoryDir:
    """The folders of ``files`` as nested dicts (a path that is both a file and a folder
    cannot come from git or a disk; the first one seen wins)."""
    root: _MemoryDir = {}
    for path, data in source.files.items():
        *folders, name = path.split("/")
        node = root
        for folder in folders:
            sub = node.setdefault(folder, {})
            if not isinstance(sub, dict):
                break
            node = sub
        else:
            node.setdefault(name, data)
    return root


def scan_memory(source: MemorySource) -> MemoryScan:
    """:func:`scan_source` of a tree held in memory, with the same rules in the same order
    (see :func:`_walk_memory`); the files sorted as ``scan_source`` sorts paths (by parts).

    Symbolic links and submodules have no place here: a git tree's are left out when it is
    read (``grove_gitops.diff.gitrefs``), as extracting them to disk did.
    """
    scan = MemoryScan()
    tree = _memory_tree(source)
    if isinstance(tree.get(HELM_CHART_FILE), bytes):
        scan.problems.append(_HELM_ROOT)
        return scan
    ignore: pathspec.GitIgnoreSpec | None = None
    found = tree.get(IGNORE_FILE)
    if isinstance(found, bytes):
        ignore = _ignore_from_bytes(found, scan)
    elif found is not None:  # a folder: reading it as a file fails on disk too
        scan.problems.append(InputProblem(IGNORE_FILE, "", f"cannot read file: {os.strerror(errno.EISDIR)}"))
    _walk_memory(tree, "", ignore, scan)
    scan.files.sort(key=lambda path: path.split("/"))
    return scan


def _keep_name(child: str, scan: SourceScan | MemoryScan) -> bool:
    """A file whose path is not valid UTF-8 (bytes a file system or git tree allows) is an
    error naming it with the bad bytes escaped: its name goes into messages, cache keys and
    output annotations, which are text."""
    try:
        child.encode("utf-8")
    except UnicodeEncodeError:
        shown = os.fsencode(child).decode("utf-8", "backslashreplace")
        scan.problems.append(InputProblem(shown, "", "file name is not valid UTF-8; rename the file"))
        return False
    return True


def _walk_memory(folder: _MemoryDir, rel: str, ignore: pathspec.GitIgnoreSpec | None, scan: MemoryScan) -> None:
    """:func:`_walk` of a folder held in memory (keep the two in step)."""
    for name in sorted(folder):
        if name.startswith("."):
            continue
        entry = folder[name]
        child = f"{rel}/{name}" if rel else name
        is_dir = isinstance(entry, dict)
        if not (is_dir or name.endswith((".yaml", ".yml"))):
            continue
        if ignore is not None and ignore.match_file(f"{child}/" if is_dir else child):
            continue
        if isinstance(entry, dict):
            meta = entry.get(META_FILE)
            if isinstance(meta, bytes) and is_output_meta(meta):
                continue
            if isinstance(entry.get(HELM_CHART_FILE), bytes):
                scan.warnings.append(
                    f"{child}: a Helm chart ({HELM_CHART_FILE}), not manifests; skipped: render it first (helm template)"
                )
                continue
            _walk_memory(entry, child, ignore, scan)
        elif _keep_name(child, scan):
            scan.files.append(child)


def load_source(
    root: Path | MemorySource,
    cache: RenderCache | None = None,
    jobs: int = 1,
    meanwhile: Callable[[], object] | None = None,
) -> SourceSet:
    """Every file under ``root`` (a folder, a file, or a tree held in memory), parsed (in
    ``jobs`` processes for a large tree) and sorted. ``meanwhile``: see
    :func:`~grove_gitops.load.files.parse_files`."""
    out = SourceSet()
    named: list[tuple[FileData, str]]
    if isinstance(root, MemorySource):
        mscan = scan_memory(root)
        out.problems.extend(mscan.problems)
        out.warnings.extend(mscan.warnings)
        named = [(root.files[path], path) for path in mscan.files]
        where = root.label
    else:
        if not root.exists():
            out.problems.append(InputProblem(str(root), "", "source path does not exist"))
            return out
        scan = scan_source(root)
        out.problems.extend(scan.problems)
        out.warnings.extend(scan.warnings)
        base = root if root.is_dir() else root.parent
        named = [(path, str(path.relative_to(base)) if path != base else path.name) for path in scan.files]
        where = str(root)
    if len(named) > MAX_FILES:
        out.problems.append(InputProblem(where, "", f"more than {MAX_FILES} YAML files"))
        return out
    out.files = {display: data for data, display in named}
    for (_, display), (docs, problems) in zip(named, parse_files(named, jobs, cache, meanwhile), strict=True):
        out.problems.extend(problems)
        if Path(display).name in HELM_VALUES_FILES and not problems and not any(_is_object(d.data) for d in docs):
            out.warnings.append(f"{display}: a Helm values file, not a Kubernetes manifest; skipped")
            continue
        for doc in docs:
            _classify(doc, out)
    out.problems += _inventory_problems(out)
    return out


def _inventory_problems(source: SourceSet) -> list[InputProblem]:
    """Limits, names and duplicate nodes of the inventory (``api.inventorycheck``), without
    ever listing a pool's nodes one by one."""
    if not source.inventories and not source.nodes:
        return []
    # The inventory's models and checks load only for a tree that has one (see _classify).
    from grove_gitops.api.inventorycheck import inventory_problems

    inventories = [(item.file, item.obj) for item in source.inventories]
    found = inventory_problems(inventories, [(s.file, s.obj[0], s.obj[1]) for s in source.nodes])
    by_file: dict[str, list[InputProblem]] = {}
    for problem in found:  # a file's pools or Nodes: capped as one document (problems.py)
        by_file.setdefault(problem.file, []).append(problem)
    return [p for file, problems in by_file.items() for p in cap_document(file, problems, "its node inventory")]


def parse_pcs(item: Sourced[dict[str, Any]]) -> tuple[PodCliqueSet | None, list[InputProblem]]:
    """Parse one PodCliqueSet document into its model (problems name the file and field)."""
    try:
        return PodCliqueSet.model_validate(item.obj), []
    except ValidationError as exc:
        return None, [InputProblem(item.file, e.path, e.message()) for e in from_pydantic(exc, model=PodCliqueSet)]


def repaired_pcs(item: Sourced[dict[str, Any]]) -> Repaired[PodCliqueSet] | None:
    """A PodCliqueSet document that failed its schema, repaired for Grove's remaining checks
    when its only schema errors are unknown fields (see ``load.schemarepair``)."""
    try:
        PodCliqueSet.model_validate(item.obj)
    except ValidationError as exc:
        return repair(PodCliqueSet, item.obj, exc)
    return None


def _parse(model: type[B], doc: Document, out: SourceSet, prefix: str = "") -> B | None:
    try:
        return model.model_validate(doc.data)
    except ValidationError as exc:
        where = prefix.rstrip(".")
        errs = (InputProblem(doc.file, e.path, e.message()) for e in from_pydantic(exc, where, model))
        out.problems.extend(cap_document(doc.file, errs, document_name(doc.data, doc.index)))
        return None


def _is_object(data: Any) -> bool:
    return isinstance(data, dict) and "apiVersion" in data and "kind" in data


def _classify(doc: Document, out: SourceSet, prefix: str = "") -> None:
    """Sort one document into ``out``; ``prefix`` is ``items[i].`` for an item of a List."""
    data = doc.data
    if not isinstance(data, dict):
        where = prefix.rstrip(".") or f"document {doc.index + 1}"
        out.problems.append(InputProblem(doc.file, "", f"{where} is not a mapping"))
        return
    api, kind = data.get("apiVersion"), data.get("kind")
    if not isinstance(api, str) or not api:
        out.problems.append(InputProblem(doc.file, f"{prefix}apiVersion", "Required value"))
        return
    if not isinstance(kind, str) or not kind:
        out.problems.append(InputProblem(doc.file, f"{prefix}kind", "Required value"))
        return
    if api.startswith("kustomize.config.k8s.io/"):
        return
    if (api, kind) == ("v1", "List"):
        _classify_list(doc, out, prefix)
        return
    owned = _owned_kind_problem(api, kind)
    if owned is not None:
        out.problems.append(InputProblem(doc.file, f"{prefix}{owned.path}", owned.message()))
        return
    if (api, kind) == PCS_KIND:
        out.podcliquesets.append(Sourced(doc.file, data))
    elif (api, kind) == CTB_KIND:
        ctb = _parse(ClusterTopologyBinding, doc, out)
        if ctb is not None:
            out.bindings.append(Sourced(doc.file, ctb))
    elif (api, kind) == CLUSTER_KIND:
        out.clusters.append(Sourced(doc.file, data))
    elif (api, kind) == OPCFG_KIND:
        if out.operator_config is not None:
            first = out.operator_config.file
            _conflict(out, InputProblem(doc.file, "", f"a second OperatorConfiguration (the first is in {first})"))
        cfg = _parse_config(OperatorConfiguration, doc, out, first=out.operator_config is None)
        if cfg is not None:
            out.operator_config = out.operator_config or Sourced(doc.file, cfg)
            out.operator_configs.append(Sourced(doc.file, cfg))
    elif (api, kind) == RENDERCFG_KIND:
        if out.render_config is not None:
            first = out.render_config.file
            _conflict(out, InputProblem(doc.file, "", f"a second RenderConfiguration (the first is in {first})"))
        rc = _parse_config(RenderConfig, doc, out, first=out.render_config is None)
        if rc is not None:
            out.render_config = out.render_config or Sourced(doc.file, rc)
            out.render_configs.append(Sourced(doc.file, rc))
    elif (api, kind) in (INVENTORY_KIND, NODE_KIND):
        _classify_inventory(api, kind, doc, out, prefix)
    elif (api, kind) == FACTS_KIND:
        facts = _parse(ClusterFacts, doc, out, prefix)
        if facts is not None:
            out.cluster_facts.append(Sourced(doc.file, facts))
    elif kind in (
        "PodCliqueSet",
        "ClusterTopologyBinding",
        "OperatorConfiguration",
        "RenderConfiguration",
        "NodeInventory",
        "ClusterFacts",
    ):
        out.problems.append(
            InputProblem(doc.file, f"{prefix}apiVersion", f"unsupported apiVersion {api!r} for kind {kind}")
        )
    else:
        errs = passthrough_problems(data)
        if errs:
            problems = (InputProblem(doc.file, f"{prefix}{e.path}", e.message()) for e in errs)
            out.problems.extend(cap_document(doc.file, problems, document_name(data, doc.index)))
            return
        shape = passthrough_shape_problems(doc.file, data)
        if shape:
            out.problems.extend(
                cap_document(
                    doc.file,
                    (InputProblem(p.file, f"{prefix}{p.field}" if p.field else prefix.rstrip("."), p.message) for p in shape),
                    document_name(data, doc.index),
                )
            )
            return
        out.passthrough.append(Sourced(doc.file, data))


def _classify_inventory(api: str, kind: str, doc: Document, out: SourceSet, prefix: str) -> None:
    """A NodeInventory or a ``v1`` Node: their models are imported with the first one, so a
    render without an inventory never builds them (issue 35.4: start-up)."""
    from grove_gitops.api.inventory import Node, NodeInventory

    if (api, kind) == INVENTORY_KIND:
        inventory = _parse(NodeInventory, doc, out, prefix)
        if inventory is not None:
            out.inventories.append(Sourced(doc.file, inventory))
        return
    node = _parse(Node, doc, out, prefix)
    if node is not None and not node.metadata.name:
        out.problems.append(InputProblem(doc.file, f"{prefix}metadata.name", "Required value"))
    elif node is not None:
        out.nodes.append(Sourced(doc.file, (prefix.rstrip("."), node)))


def _conflict(out: SourceSet, problem: InputProblem) -> None:
    """A second configuration: an error unless the tree is a fleet (see ``SourceSet``)."""
    out.problems.append(problem)
    out.config_conflicts.append(problem)


def _parse_config(model: type[B], doc: Document, out: SourceSet, *, first: bool) -> B | None:
    """Parse a configuration; the problems of a second one only count in a fleet (without
    Cluster objects its mere presence is the error, reported as before)."""
    if first:
        return _parse(model, doc, out)
    try:
        return model.model_validate(doc.data)
    except ValidationError as exc:
        errs = (InputProblem(doc.file, e.path, e.message()) for e in from_pydantic(exc, model=model))
        out.fleet_problems.extend(cap_document(doc.file, errs, document_name(doc.data, doc.index)))
        return None


def _classify_list(doc: Document, out: SourceSet, prefix: str) -> None:
    """A ``v1 List`` (what ``kubectl get -o yaml`` writes) stands for its items."""
    if prefix:
        out.problems.append(InputProblem(doc.file, f"{prefix}kind", "a List inside a List is not supported"))
        return
    items = doc.data.get("items")
    if items is None:
        items = []
    if not isinstance(items, list):
        out.problems.append(InputProblem(doc.file, "items", "Invalid value: a List holds its objects in a list"))
        return
    for i, item in enumerate(items):
        _classify(Document(doc.file, doc.index, item), out, f"items[{i}].")


def _owned_kind_problem(api: str, kind: str) -> FieldError | None:
    """An unknown kind in a group grove-gitops owns is a typo; suggest the closest known one."""
    group = api.rpartition("/")[0]
    known = OWNED_KINDS.get(group)
    if known is None or kind in known:
        return None
    for other, kinds in OWNED_KINDS.items():
        if kind in kinds:
            version = api.rpartition("/")[2]
            return invalid(
                "apiVersion",
                api,
                f"kind {kind} belongs to API group {other}, not {group} (apiVersion {other}/{version})",
            )
    detail = f"{group} has no kind {kind}"
    guess = closest(kind, known) or closest(kind, (k for ks in OWNED_KINDS.values() for k in ks))
    detail += f"; did you mean {guess}?" if guess else f"; its kinds are {', '.join(known)}"
    return FieldError("kind", "Unsupported value", detail, kind)


def passthrough_problems(data: dict[str, Any]) -> list[FieldError]:
    """Check everything of a pass-through object that becomes part of a file path.

    Kubernetes' own rules: the API group is a DNS subdomain, the kind ``^[A-Za-z][A-Za-z0-9]*$``,
    the namespace a DNS-1123 label and the name a DNS-1123 subdomain (RBAC objects use the
    looser path-segment rule, as the API server does, so ``system:aggregate-to-view`` works).
    """
    errs: list[FieldError] = []
    api, kind = str(data.get("apiVersion")), str(data.get("kind"))
    group, slash, version = api.rpartition("/")
    if "/" in group or (slash and not group):
        errs.append(invalid("apiVersion", api, "must be <version> or <group>/<version>"))
    else:
        errs += (
            [invalid("apiVersion", api, "API group: " + p) for p in dns1123_subdomain_problems(group)] if group else []
        )
        if not _VERSION_RE.match(version):
            errs.append(invalid("apiVersion", api, "version must consist of lower case alphanumeric characters or '-'"))
    if not _KIND_RE.match(kind):
        errs.append(
            invalid(
                "kind",
                kind,
                "must start with a letter and consist of letters and digits (regex used for validation is '^[A-Za-z][A-Za-z0-9]*$')",
            )
        )
    meta = data.get("metadata")
    if meta is None:
        return [*errs, required("metadata.name")]
    if not isinstance(meta, dict):
        return [*errs, invalid("metadata", meta, "must be an object")]
    name, namespace = meta.get("name"), meta.get("namespace")
    if name is None or name == "":
        errs.append(required("metadata.name"))
    elif not isinstance(name, str):
        errs.append(invalid("metadata.name", name, "must be of type string"))
    else:
        errs += [invalid("metadata.name", name, p) for p in _name_problems(name, group, kind)]
    if namespace is not None and namespace != "":
        if not isinstance(namespace, str):
            errs.append(invalid("metadata.namespace", namespace, "must be of type string"))
        else:
            errs += [invalid("metadata.namespace", namespace, p) for p in dns1123_label_problems(namespace)]
    return errs


def _name_problems(name: str, group: str, kind: str) -> list[str]:
    if group in _PATH_SEGMENT_NAME_GROUPS:
        out = []
        if name in (".", ".."):
            out.append(f"may not be '{name}'")
        for bad in ("/", "%"):
            if bad in name:
                out.append(f"may not contain '{bad}'")
        if _CONTROL_CHARS.search(name):
            out.append("may not contain control characters")
        if len(name) > 253:
            out.append("must be no more than 253 characters")
        return out
    if group == "" and kind == "Namespace":
        return dns1123_label_problems(name)
    return dns1123_subdomain_problems(name)


#: Pass-through kinds whose contents the renderer reads (the output README lists gangs).
_PODGANG_KIND = ("scheduler.grove.io", "PodGang")


def passthrough_shape_problems(file: str, data: dict[str, Any]) -> list[InputProblem]:
    """Shape problems of a pass-through object that the API server would refuse too.

    Runs after :func:`passthrough_problems` has accepted every path segment (apiVersion, kind,
    name, namespace), so only what the renderer still reads is checked here: label and
    annotation values must be strings, as Kubernetes requires, and a pass-through PodGang is
    summarised in the README, so it needs ``spec.podgroups``.
    """
    problems: list[InputProblem] = []
    meta = data["metadata"]
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
    """The spec against Grove's PodGang type (``api.podgang``), strictly: the README, the
    diagram and the agent read it, and the API server would refuse what does not match."""
    spec = data.get("spec")
    if not isinstance(spec, dict):
        return [InputProblem(file, "spec", "Required value")]
    try:
        PodGangSpec.model_validate(spec, strict=True)
    except ValidationError as exc:
        return [InputProblem(file, e.path, e.message()) for e in from_pydantic(exc, "spec", PodGangSpec)]
    return []
