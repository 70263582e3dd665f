"""Where every object goes: the output-tree contract of ``DESIGN.md`` and ``spec/gitops.md`` §1.5.

```
OUT/
  kustomization.yaml         resources: _cluster, then one entry per namespace
  README.md                  human summary
  render.meta                JSON provenance (not .json/.yaml: Argo CD would load it)
  _cluster/                  cluster-scoped objects (ClusterTopologyBindings, topology CRs)
  <namespace>/
    kustomization.yaml       resources: one entry per PodCliqueSet (+ _resources)
    <podcliqueset>/          one shard per PodCliqueSet: an Argo CD app or Flux Kustomization
      kustomization.yaml
      README.md
      <wave>-<kind>.<group>--<name>.yaml   one object per file
    _resources/              other objects of the source tree, passed through
```
File names sort into apply order and stay stable across renders, so a PR's file list reads
in causal order and a changed object is a changed file.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable, Collection, Generator, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from grove_gitops import __version__
from grove_gitops.api.renderconfig import RenderConfig
from grove_gitops.cache import CachedShard, RenderCache
from grove_gitops.errors import InputProblem, InvalidInputError, OutputError
from grove_gitops.fields.k8snames import dns1123_label_problems, dns1123_subdomain_problems
from grove_gitops.load.marker import META_FILE, META_MARKER
from grove_gitops.output import autoscaling_readme, diagram, parallel, wiring
from grove_gitops.output.autoscaling_readme import AgentPicture, agent_picture, gang_row
from grove_gitops.output.gitopsmeta import annotate, wave_of
from grove_gitops.output.serialize import dump_object, dump_plain
from grove_gitops.output.staging import Published
from grove_gitops.render import CLUSTER_SHARD, EarlyShards, PlannedPCS, RenderedObject, RenderPlan, RenderResult
from grove_gitops.yamlfiles.yamlio import MAX_OBJECT_BYTES

KUSTOMIZATION = "kustomization.yaml"
#: Longest file name most filesystems accept, in bytes.
MAX_NAME_BYTES = 255
#: Characters kept in a file name; anything else (``:`` of RBAC names, ``/``) becomes ``_``.
_UNSAFE_CHARS = re.compile(r"[^A-Za-z0-9._-]")


@dataclass
class Tree:
    """The output as ``{relative posix path: bytes}`` plus a per-shard index."""

    files: dict[str, bytes] = field(default_factory=dict)
    shards: dict[str, list[str]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    objects: int = 0
    #: Shard -> objects of PodCliqueSets built with ``skip`` (their files are not in ``files``).
    skipped: dict[str, int] = field(default_factory=dict)
    #: Files the render's workers wrote straight into the output (``render --jobs``, see
    #: :mod:`grove_gitops.output.staging`): part of the tree, their bytes not in ``files``.
    written: set[str] = field(default_factory=set)

    @property
    def file_count(self) -> int:
        """How many files the tree has, written by the workers or not."""
        return len(self.files) + len(self.written)


class Staging(Protocol):
    """An output's staging tree the render's workers may write their PodCliqueSets into
    (:class:`~grove_gitops.output.writer.TreeWriter`)."""

    def open_for_workers(self, namespaces: Iterable[str]) -> Published: ...

    def adopt(self, paths: Iterable[str]) -> None: ...


def object_file_name(obj: dict[str, Any], wave: int) -> str:
    """``<wave>-<kind>.<group>--<name>.yaml``: one path segment, whatever the object holds.

    Every character outside ``[A-Za-z0-9._-]`` becomes ``_`` (so no ``/``, NUL or ``..``
    trick can add a segment), and a name longer than a file name may be is cut to a stable
    prefix plus a hash of the whole name, so distinct objects keep distinct files.
    """
    api = str(obj.get("apiVersion", ""))
    group = _UNSAFE_CHARS.sub("_", api.split("/")[0]) if "/" in api else ""
    kind = _UNSAFE_CHARS.sub("_", str(obj.get("kind", "")).lower())
    kind_group = f"{kind}.{group}" if group else kind
    name = _UNSAFE_CHARS.sub("_", str((obj.get("metadata") or {}).get("name", "")))
    stem = f"{wave + 20:02d}-{kind_group}--{name}"
    if len(stem) + len(".yaml") <= MAX_NAME_BYTES:  # ASCII only after the substitution
        return f"{stem}.yaml"
    full = f"{wave + 20:02d}-{kind_group}--{(obj.get('metadata') or {}).get('name', '')}"
    tag = hashlib.sha256(full.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    keep = MAX_NAME_BYTES - len(".yaml") - len(tag) - 1
    return f"{stem[:keep]}-{tag}.yaml"


@functools.lru_cache(maxsize=4096)
def _check_shard(shard: str) -> None:
    """A shard is ``_cluster`` or ``<namespace>/<podcliqueset or _resources>``.

    The loader and Grove's validation already guarantee this; checked again because a shard
    becomes two path segments of the output.
    """
    if shard == CLUSTER_SHARD:
        return
    ns, _, sub = shard.partition("/")
    if dns1123_label_problems(ns) or (sub != "_resources" and dns1123_subdomain_problems(sub)):
        raise OutputError(f"refusing to write into {shard!r}: not <namespace>/<name>")


def _too_large(source: str, obj: dict[str, Any], size: int) -> InputProblem:
    meta = obj.get("metadata") or {}
    ident = f"{meta.get('namespace')}/{meta.get('name')}" if meta.get("namespace") else str(meta.get("name"))
    return InputProblem(
        source,
        "",
        f"rendered {obj.get('kind')} {ident} is {size} bytes, above the {MAX_OBJECT_BYTES} byte limit "
        "of what etcd stores (fewer pods per PodCliqueSet or replica keeps gangs smaller)",
    )


def _kustomization(resources: list[str], root: bool = False) -> bytes:
    return _kustomization_bytes(tuple(resources), root)


@functools.lru_cache(maxsize=16384)
def _kustomization_bytes(resources: tuple[str, ...], root: bool) -> bytes:
    """Memoised: a controller re-assembles thousands of unchanged directories per commit."""
    data: dict[str, Any] = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization"}
    if root:
        # Apply order = file order (waves), not kustomize's legacy kind order.
        data["sortOptions"] = {"order": "fifo"}
    data["resources"] = list(resources)
    return dump_plain(data).encode()


@dataclass
class _Summary:
    """What the README files need, collected while objects stream past."""

    config: RenderConfig
    warnings: list[str] = field(default_factory=list)
    kind_counts: Counter[str] = field(default_factory=Counter)
    podcliquesets: dict[tuple[str, str], str] = field(default_factory=dict)
    shard_counts: dict[str, Counter[str]] = field(default_factory=dict)
    shard_gangs: dict[str, list[tuple[str, str, str]]] = field(default_factory=dict)
    #: Every non-Pod object of each PodCliqueSet shard, for the gang-structure diagram.
    shard_objects: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    objects: int = 0
    #: Shard directory -> (how many .yaml files the rendered shard put there, their
    #: kustomization.yaml), from the shard. The tree's own list of that directory holds those
    #: files and never a duplicate, so the same count means the same files (no name lists
    #: built and compared per shard in the parent's output stage, issue 35.4).
    kustomizations: dict[str, tuple[int, bytes]] = field(default_factory=dict)


def _add_objects(
    tree: Tree,
    summary: _Summary,
    objects: Iterable[RenderedObject],
    files: dict[str, bytes],
    source: str,
    kept: dict[str, Any] | None = None,
) -> None:
    """Serialise objects into ``files`` (one per object) and record them in the summary.

    ``source`` names the file the objects come from, for the object-size error. ``kept``
    receives each file's object as serialised (see :attr:`CachedShard.objects`).
    """
    flavour = summary.config.gitops
    for item in objects:
        # Only metadata.annotations changes: copy that path, share the rest (no deep copy).
        obj = {**item.obj, "metadata": dict(item.obj.get("metadata") or {})}
        wave = wave_of(obj, item.shard == CLUSTER_SHARD)
        annotate(obj, wave, flavour)
        _check_shard(item.shard)
        path = f"{item.shard}/{object_file_name(obj, wave)}"
        if path in tree.files or path in files:
            kind, oname = obj.get("kind"), obj.get("metadata", {}).get("name")
            raise OutputError(f"two objects map to the same output file {path} ({kind} {oname})")
        data = dump_object(obj).encode()
        if len(data) > MAX_OBJECT_BYTES:
            raise InvalidInputError([_too_large(source, obj, len(data))])
        files[path] = data
        if kept is not None:
            kept[path] = obj
        kind = str(obj.get("kind"))
        summary.shard_counts.setdefault(item.shard, Counter())[kind] += 1
        if diagram.is_podgang(obj):  # a PodGang of another API group is any pass-through object
            summary.shard_gangs.setdefault(item.shard, []).append(gang_row(obj))
        if kind != "Pod" and item.shard != CLUSTER_SHARD:
            summary.shard_objects.setdefault(item.shard, []).append(obj)


def _merge(tree: Tree, summary: _Summary, files: dict[str, bytes]) -> None:
    for path, data in files.items():
        if path in tree.files:
            raise OutputError(f"two objects map to the same output file {path}")
        tree.files[path] = data
    _index(tree, summary, files)


def _index(tree: Tree, summary: _Summary, paths: Iterable[str]) -> None:
    """Each path's file in its shard's list (its kustomization's), and objects counted."""
    for path in paths:
        shard, _, name = path.rpartition("/")
        if name.endswith(".yaml"):
            tree.shards.setdefault(shard, []).append(name)
            summary.objects += 1


def build_tree(result: RenderResult) -> Tree:
    """The output tree of a fully materialised render."""
    tree, summary = Tree(), _Summary(result.config, list(result.warnings))
    files: dict[str, bytes] = {}
    _add_objects(tree, summary, result.objects, files, "render")
    _merge(tree, summary, files)
    summary.podcliquesets.update(result.podcliquesets)
    plan = result.plan
    pictures = {f"{i.key[0]}/{i.key[1]}": agent_picture(plan, i) for i in plan.items} if plan is not None else {}
    _finish(tree, summary, pictures)
    return tree


def build_tree_from_plan(
    plan: RenderPlan,
    cache: RenderCache | None = None,
    jobs: int = 1,
    min_pods: int | None = None,
    on_files: Callable[[dict[str, bytes]], None] | None = None,
    skip: Collection[str] = (),
    keep_objects: bool = False,
    staging: Staging | None = None,
) -> Tree:
    """The output tree, expanding one PodCliqueSet at a time (bounded memory) and reusing
    the bytes of every PodCliqueSet the cache already rendered with the same inputs.

    With ``jobs`` > 1 the PodCliqueSets the cache does not have are expanded and serialised
    in at most that many worker processes, each given at least ``min_pods`` pods to expand
    (default :data:`parallel.MIN_PODS`; :func:`parallel.worker_count`). Results are merged in plan order, so the tree is the
    same as with ``jobs=1``, and the cache is filled in the parent as the serial path fills it.

    ``on_files`` receives each PodCliqueSet's files as soon as they are merged (the CLI
    writes them while workers render the next ones).

    ``skip`` (``diff``): digests of cached PodCliqueSets whose files are not wanted, because
    the other side of the comparison has the very same ones. Only their object counts go
    into ``Tree.skipped``; their files, and so the non-object files that list them
    (kustomizations, READMEs), are left out: such a tree is for comparing objects only.
    ``keep_objects`` (``diff``): PodCliqueSets expanded here keep their objects as
    serialised (:attr:`CachedShard.objects`), so they need not be parsed back.

    ``staging`` (``render`` into OUT): the writer's staging tree, where worker processes write
    their PodCliqueSets' own files themselves when nothing here needs their bytes: a whole
    tree, no wiring reading the objects back, and no cache store to fill (those files are in
    ``Tree.written``). A memory-only cache does not get such a shard: it renders it again
    next time (``render`` without ``--cache-dir`` has one that ends with the command).
    """
    tree, summary = Tree(), _Summary(plan.config, list(plan.warnings))
    if cache is not None:
        plan = _recover_lost(plan, cache, skip)
    todo = [item for item in plan.items if not (item.pcs is None and cache is not None)]
    whole = not skip and not keep_objects
    direct = staging if whole and plan.config.wiring is None and (cache is None or cache.store is None) else None
    rendered, writing = _workers(plan, todo, jobs, min_pods, whole, direct)
    try:
        for item in plan.items:
            if item.pcs is None and cache is not None and item.digest in skip:
                meta = cache.known_meta(item.digest)
                if meta is not None:  # planning found it: in memory since
                    for shard, n in meta.objects_per_shard.items():
                        tree.skipped[shard] = tree.skipped.get(shard, 0) + n
                    summary.warnings += meta.warnings
                    continue
            if item.pcs is None and cache is not None:
                cached = cache.shards[item.digest]  # _recover_lost loaded it
            else:
                cached = next(rendered) if rendered is not None else _render_shard(tree, plan, item, keep_objects)
                if cache is not None and not cached.written:  # a written one has not all its bytes
                    cache.put_shard(item.digest, cached)
            for key, n in cached.kind_counts.items():
                shard, _, kind = key.partition("\0")
                summary.shard_counts.setdefault(shard, Counter())[kind] += n
            own = f"{cached.key[0]}/{cached.key[1]}"
            summary.shard_gangs.setdefault(own, []).extend(cached.gangs)
            before = len(tree.shards.get(own, ()))
            _merge(tree, summary, cached.files)
            if cached.written:
                if direct is None:
                    raise OutputError("internal error: a worker wrote files no staging tree was opened for")
                direct.adopt(cached.written)
                tree.written.update(cached.written)
                _index(tree, summary, cached.written)
            if cached.kustomization:
                summary.kustomizations[own] = (len(tree.shards.get(own, ())) - before, cached.kustomization)
            if on_files is not None:
                on_files(cached.files)
            summary.warnings += cached.warnings
            summary.podcliquesets[item.key] = item.file
    finally:
        if rendered is not None:
            rendered.close()  # stops the workers, also when merging failed
        if writing is not None:
            # Its workers may still be writing into the staging tree: stopped (never killed)
            # before the caller swaps the tree in or removes it after an error.
            writing.close()
    files: dict[str, bytes] = {}
    _add_objects(tree, summary, plan.extra, files, "render")
    _merge(tree, summary, files)
    _finish(tree, summary)
    return tree


def _workers(
    plan: RenderPlan,
    todo: list[PlannedPCS],
    jobs: int,
    min_pods: int | None,
    whole: bool,
    direct: Staging | None,
) -> tuple[Generator[CachedShard, None, None] | None, EarlyShards | None]:
    """The shards of ``todo`` from worker processes, in order: those the pool started during
    validation began (``pipeline.render_loaded``) if it has exactly these, else a pool started
    here when :func:`parallel.worker_count` says it pays (None: render them here). With
    ``direct``, the workers write into its staging tree from now on; the early pool is
    returned then, to be stopped before the tree is swapped in or removed."""
    namespaces = {item.key[0] for item in todo}
    if plan.early is not None and whole:
        rendered = plan.early.shards(todo)
        if rendered is not None:
            if direct is None:
                return rendered, None
            plan.early.publish(direct.open_for_workers(namespaces).encode())
            return rendered, plan.early
    workers = parallel.worker_count(jobs, todo, parallel.MIN_PODS if min_pods is None else min_pods)
    if not workers:
        return None, None
    published = direct.open_for_workers(namespaces) if direct is not None else None
    return parallel.render_shards(plan, todo, workers, render_shard, published=published), None


def _recover_lost(plan: RenderPlan, cache: RenderCache, skip: Collection[str]) -> RenderPlan:
    """Load the files of every cache hit the tree needs. A hit whose entry the store lost
    since planning is parsed again, to be rendered like a miss; a miss that another tree
    rendered since planning (``diff`` plans both sides first) is a hit after all."""
    items = []
    for item in plan.items:
        if item.pcs is not None and item.digest in cache.shards:
            item = dataclasses.replace(item, pcs=None)
        elif item.pcs is None and item.digest in skip and cache.known_meta(item.digest) is not None:
            pass  # not built: only its meta is needed
        elif item.pcs is None and cache.get_shard(item.digest) is None:
            item = plan.recover(item)
        items.append(item)
    return dataclasses.replace(plan, items=items)


def render_shard(plan: RenderPlan, item: PlannedPCS) -> CachedShard:
    """One PodCliqueSet's shard on its own (what a worker process runs)."""
    return _render_shard(Tree(), plan, item)


def _render_shard(tree: Tree, plan: RenderPlan, item: PlannedPCS, keep_objects: bool = False) -> CachedShard:
    """Expand and serialise one PodCliqueSet; its objects are dropped once they are bytes
    (unless ``keep_objects``)."""
    floor: list[RenderedObject] | None = [] if autoscaling_readme.scalable(item) else None
    objects, warnings = plan.expand(item, floor=floor)
    own = _Summary(plan.config)
    files: dict[str, bytes] = {}
    kept: dict[str, Any] | None = {} if keep_objects else None
    _add_objects(tree, own, objects, files, item.file, kept)
    counts = {f"{shard}\0{kind}": n for shard, counter in own.shard_counts.items() for kind, n in counter.items()}
    gangs = [row for rows in own.shard_gangs.values() for row in rows]
    shard = f"{item.key[0]}/{item.key[1]}"
    files[f"{shard}/README.md"] = _shard_readme(shard, item.file, own, agent_picture(plan, item, floor)).encode()
    kustomization = _kustomization(list(_yaml_names(files, shard)))
    return CachedShard(
        key=item.key,
        source_file=item.file,
        kind_counts=counts,
        gangs=gangs,
        warnings=item.warnings + warnings,
        pods=item.pods,
        update_strategy=item.update_strategy,
        kustomization=kustomization,
        files=files,
        objects=kept,
    )


def _yaml_names(files: dict[str, bytes], shard: str) -> tuple[str, ...]:
    """The sorted ``.yaml`` names directly in ``shard`` (what its kustomization lists)."""
    prefix = shard + "/"
    return tuple(
        sorted(
            p[len(prefix) :]
            for p in files
            if p.startswith(prefix) and p.endswith(".yaml") and "/" not in p[len(prefix) :]
        )
    )


def _finish(tree: Tree, summary: _Summary, pictures: dict[str, AgentPicture | None] | None = None) -> None:
    """Kustomizations, READMEs and the metadata file, from what was collected."""
    for counter in summary.shard_counts.values():
        summary.kind_counts.update(counter)
    namespaces: dict[str, list[str]] = {}
    for shard, names in sorted(tree.shards.items()):
        ordered = sorted(names)
        known = summary.kustomizations.get(shard)
        same = known is not None and known[0] == len(ordered)
        tree.files[f"{shard}/{KUSTOMIZATION}"] = known[1] if known is not None and same else _kustomization(ordered)
        if shard != CLUSTER_SHARD:
            ns, sub = shard.split("/", 1)
            namespaces.setdefault(ns, []).append(sub)
    for ns, subs in namespaces.items():
        tree.files[f"{ns}/{KUSTOMIZATION}"] = _kustomization(sorted(subs))
    root = ([CLUSTER_SHARD] if CLUSTER_SHARD in tree.shards else []) + sorted(namespaces)
    tree.files[KUSTOMIZATION] = _kustomization(root, root=True)
    if summary.config.wiring is not None:  # opted in: _flux/, _argocd/ (not in the root kustomization)
        target = wiring.WiringTarget(summary.config.wiring, summary.config.gitops)
        tree.files.update(wiring.wiring_files(target, tree.files, tree.shards))
    for (ns, pcs), source_file in summary.podcliquesets.items():
        shard = f"{ns}/{pcs}"
        if f"{shard}/README.md" not in tree.files and f"{shard}/README.md" not in tree.written:
            agent = (pictures or {}).get(shard)
            tree.files[f"{shard}/README.md"] = _shard_readme(shard, source_file, summary, agent).encode()
    tree.files["README.md"] = _root_readme(summary).encode()
    tree.files[META_FILE] = _meta(summary, tree).encode()
    tree.warnings = summary.warnings
    tree.objects = summary.objects


def _shard_readme(shard: str, source_file: str, summary: _Summary, agent: AgentPicture | None = None) -> str:
    """The shard's README: its objects, its gangs and their diagram. For an autoscaled
    workload (``agent``) the gangs and the diagram are the workload at its floor, the gangs
    the agent makes from the live count included, and a table says how far each unit scales."""
    counts = summary.shard_counts.get(shard, Counter())
    lines = [
        f"# {shard}",
        "",
        f"Rendered by grove-gitops {__version__} from `{source_file}`. Do not edit: change the source and re-render.",
        "",
        "| kind | objects |",
        "| --- | ---: |",
    ]
    lines += [f"| {kind} | {n} |" for kind, n in sorted(counts.items())]
    gangs = summary.shard_gangs.get(shard, [])
    objects: Iterable[dict[str, Any]] = summary.shard_objects.get(shard, ())
    if agent is None:
        lines += ["", "## Gangs", "", "| PodGang | scheduler | podgroups (minReplicas) |", "| --- | --- | --- |"]
        lines += [f"| `{name}` | {scheduler} | {groups} |" for name, scheduler, groups in gangs]
    else:
        lines += ["", "## Gangs at the floor", "", autoscaling_readme.FLOOR_NOTE, ""]
        lines += ["| PodGang | scheduler | podgroups (minReplicas) | in |", "| --- | --- | --- | --- |"]
        in_git = {name for name, _, _ in gangs}
        rows = sorted({*gangs, *agent.gang_rows}, key=lambda r: agent.gang_order.get(r[0], len(agent.gang_order)))
        for name, scheduler, groups in rows:
            where = "Git" if name in in_git else "cluster (the agent makes it)"
            lines.append(f"| `{name}` | {scheduler} | {groups} | {where} |")
        objects = agent.objects
        lines += ["", *autoscaling_readme.scaling_lines(agent)]
    chart = diagram.shard_diagram(shard, objects)
    if chart:
        lines += ["", "## Gang structure", "", diagram.README_LEGEND, "", diagram.fenced(chart).rstrip("\n")]
    return "\n".join(lines) + "\n"


#: RenderConfiguration's ``gitops`` in words: which tool's annotations the objects carry.
_FLAVOUR_WORDS = {"argocd": "Argo CD", "flux": "Flux", "both": "both Argo CD and Flux"}


def _root_readme(summary: _Summary) -> str:
    config = summary.config
    lines = [
        "# Rendered Grove workloads",
        "",
        f"Generated by grove-gitops {__version__} for Kubernetes {config.kubernetesVersion} (its API versions and"
        f" fields), with the apply-order annotations of {_FLAVOUR_WORDS[config.gitops]}"
        f" (RenderConfiguration `gitops: {config.gitops}`). Do not edit: change the source and re-render.",
        "",
        "| PodCliqueSet | directory | source |",
        "| --- | --- | --- |",
    ]
    for (ns, pcs), src in sorted(summary.podcliquesets.items()):
        lines.append(f"| {ns}/{pcs} | `{ns}/{pcs}/` | `{src}` |")
    lines += ["", "| kind | objects |", "| --- | ---: |"]
    lines += [f"| {kind} | {n} |" for kind, n in sorted(summary.kind_counts.items())]
    lines += ["", *_APPLY_ORDER]
    if summary.warnings:
        lines += ["", "## Warnings", ""] + [f"- {w}" for w in summary.warnings]
    return "\n".join(lines) + "\n"


#: The root README's explanation of the file-name prefixes (they are ``wave + 20``).
_APPLY_ORDER = (
    "## Apply order",
    "",
    "A file's prefix is its Argo CD sync wave plus 20, and `kubectl apply -k` / Flux apply the files in that order:",
    "",
    "| prefix | wave | objects |",
    "| --- | ---: | --- |",
    "| `00-` | -20 | Namespaces, CustomResourceDefinitions |",
    "| `10-` | -10 | ServiceAccounts, RBAC, ConfigMaps, other prerequisites and cluster-scoped objects |",
    "| `15-` | -5 | ServiceAccount token Secrets (after their ServiceAccount, or Kubernetes deletes them) |",
    "| `20-` | 0 | PodGangs, scheduler objects, Services, other objects |",
    "| `30-` | 10 | Pods (gated until their gang is complete) |",
)


def _meta(summary: _Summary, tree: Tree) -> str:
    data = {
        "generator": META_MARKER,
        "version": __version__,
        "kubernetesVersion": summary.config.kubernetesVersion,
        "gitops": summary.config.gitops,
        "podCliqueSets": sorted(f"{ns}/{n}" for ns, n in summary.podcliquesets),
        "objects": summary.objects,
        "files": tree.file_count + 1,
    }
    return json.dumps(data, indent=2, sort_keys=True) + "\n"
