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

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from grove_gitops import __version__
from grove_gitops.errors import OutputError
from grove_gitops.output.gitopsmeta import annotate, wave_of
from grove_gitops.output.serialize import dump_object, dump_plain
from grove_gitops.render import CLUSTER_SHARD, RenderResult

KUSTOMIZATION = "kustomization.yaml"
META_FILE = "render.meta"
META_MARKER = "grove-gitops"


@dataclass
class Tree:
    """The output as ``{relative posix path: bytes}`` plus a per-shard index."""

    files: dict[str, bytes] = field(default_factory=dict)
    shards: dict[str, list[str]] = field(default_factory=dict)


def object_file_name(obj: dict[str, Any], wave: int) -> str:
    api = str(obj.get("apiVersion", ""))
    group = api.split("/")[0] if "/" in api else ""
    kind = str(obj.get("kind", "")).lower()
    kind_group = f"{kind}.{group}" if group else kind
    name = str(obj.get("metadata", {}).get("name", "")).replace(":", "_").replace("/", "_")
    return f"{wave + 20:02d}-{kind_group}--{name}.yaml"


def _kustomization(resources: list[str], root: bool = False) -> bytes:
    data: dict[str, Any] = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization"}
    if root:
        # Apply order = file order (waves), not kustomize's legacy kind order.
        data["sortOptions"] = {"order": "fifo"}
    data["resources"] = resources
    return dump_plain(data).encode()


def build_tree(result: RenderResult) -> Tree:
    tree = Tree()
    flavour = result.config.gitops
    for item in result.objects:
        # Only metadata.annotations changes: copy that path, share the rest (no deep copy).
        obj = {**item.obj, "metadata": dict(item.obj.get("metadata") or {})}
        wave = wave_of(obj, item.shard == CLUSTER_SHARD)
        annotate(obj, wave, flavour)
        name = object_file_name(obj, wave)
        path = f"{item.shard}/{name}"
        if path in tree.files:
            kind, oname = obj.get("kind"), obj.get("metadata", {}).get("name")
            raise OutputError(f"two objects map to the same output file {path} ({kind} {oname})")
        tree.files[path] = dump_object(obj).encode()
        tree.shards.setdefault(item.shard, []).append(name)
    namespaces: dict[str, list[str]] = {}
    for shard, names in sorted(tree.shards.items()):
        tree.files[f"{shard}/{KUSTOMIZATION}"] = _kustomization(sorted(names))
        if shard != CLUSTER_SHARD:
            ns, sub = shard.split("/", 1)
            namespaces.setdefault(ns, []).append(sub)
    for ns, subs in namespaces.items():
        tree.files[f"{ns}/{KUSTOMIZATION}"] = _kustomization(sorted(subs))
    root = ([CLUSTER_SHARD] if CLUSTER_SHARD in tree.shards else []) + sorted(namespaces)
    tree.files[KUSTOMIZATION] = _kustomization(root, root=True)
    for (ns, pcs), source_file in result.podcliquesets.items():
        shard = f"{ns}/{pcs}"
        tree.files[f"{shard}/README.md"] = _shard_readme(shard, source_file, result).encode()
    tree.files["README.md"] = _root_readme(result).encode()
    tree.files[META_FILE] = _meta(result, tree).encode()
    return tree


def _kind_counts(result: RenderResult, shard: str) -> Counter[str]:
    return Counter(str(o.obj.get("kind")) for o in result.objects if o.shard == shard)


def _shard_readme(shard: str, source_file: str, result: RenderResult) -> str:
    counts = _kind_counts(result, shard)
    gangs = [o.obj for o in result.objects if o.shard == shard and o.obj.get("kind") == "PodGang"]
    lines = [
        f"# {shard}",
        "",
        f"Rendered by grove-gitops {__version__} from `{source_file}`. Do not edit: change the source and re-render.",
        "",
        "| kind | objects |",
        "| --- | ---: |",
    ]
    lines += [f"| {kind} | {n} |" for kind, n in sorted(counts.items())]
    lines += ["", "## Gangs", "", "| PodGang | scheduler | podgroups (minReplicas) |", "| --- | --- | --- |"]
    for gang in gangs:
        groups = ", ".join(f"`{g['name']}` ({g['minReplicas']})" for g in gang["spec"]["podgroups"])
        scheduler = gang["metadata"]["labels"].get("grove.io/scheduler-name", "")
        lines.append(f"| `{gang['metadata']['name']}` | {scheduler} | {groups} |")
    return "\n".join(lines) + "\n"


def _root_readme(result: RenderResult) -> str:
    counts = Counter(str(o.obj.get("kind")) for o in result.objects)
    lines = [
        "# Rendered Grove workloads",
        "",
        f"Generated by grove-gitops {__version__} for Kubernetes {result.config.kubernetesVersion}"
        f" ({result.config.gitops}). Do not edit: change the source and re-render.",
        "",
        "| PodCliqueSet | directory | source |",
        "| --- | --- | --- |",
    ]
    for (ns, pcs), src in sorted(result.podcliquesets.items()):
        lines.append(f"| {ns}/{pcs} | `{ns}/{pcs}/` | `{src}` |")
    lines += ["", "| kind | objects |", "| --- | ---: |"]
    lines += [f"| {kind} | {n} |" for kind, n in sorted(counts.items())]
    if result.warnings:
        lines += ["", "## Warnings", ""] + [f"- {w}" for w in result.warnings]
    return "\n".join(lines) + "\n"


def _meta(result: RenderResult, tree: Tree) -> str:
    data = {
        "generator": META_MARKER,
        "version": __version__,
        "kubernetesVersion": result.config.kubernetesVersion,
        "gitops": result.config.gitops,
        "podCliqueSets": sorted(f"{ns}/{n}" for ns, n in result.podcliquesets),
        "objects": len(result.objects),
        "files": len(tree.files) + 1,
    }
    return json.dumps(data, indent=2, sort_keys=True) + "\n"
