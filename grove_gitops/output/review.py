"""The output of a review-only source (RenderConfiguration ``mode: review``, docs/adoption.md).

Grove's operator reconciles the source's PodCliqueSets, so what Argo CD / Flux apply is the
source's own objects, never the expansion (gated pods no agent would release): one shard per
PodCliqueSet holding the ``grove.io`` PodCliqueSet exactly as written (its namespace filled in,
as ``kubectl apply`` would), ``_cluster/`` with the ClusterTopologyBindings and cluster-scoped
pass-through objects, ``<namespace>/_resources/`` with the rest. No scheduler topology object:
Grove's operator makes it from the binding (the coexistence check refuses one of ours). The
RenderConfiguration, the OperatorConfiguration (the operator's own configuration), ClusterFacts
and node inventories are grove-gitops' inputs and are not applied.

The layout, kustomizations, marker file and generated wiring are those of a full render
(:mod:`.layout`, :mod:`.wiring`), so the controller, Argo CD and Flux handle both alike;
``diff``, ``plan`` and the PR check still compare the expansion (what Grove's operator will
create), which this tree leaves out.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from grove_gitops.errors import InvalidInputError, OutputError
from grove_gitops.load.marker import META_FILE
from grove_gitops.output import layout, wiring
from grove_gitops.output.gitopsmeta import wave_of
from grove_gitops.output.serialize import dump_object
from grove_gitops.render import CLUSTER_SHARD, RenderedObject, RenderPlan
from grove_gitops.yamlfiles.yamlio import MAX_OBJECT_BYTES

README = """# Grove workloads for Grove's operator (review-only mode)

Written by grove-gitops from a source whose RenderConfiguration says `mode: review`: Grove's
operator reconciles these PodCliqueSets, and Argo CD / Flux apply them as written (one folder per
PodCliqueSet, ClusterTopologyBindings in `_cluster/`). grove-gitops reviews pull requests
(`diff`, `plan` in Grove's order, the PR check); no grove-gitops agent is expected. Do not edit:
change the source.

| PodCliqueSet | directory | source |
| --- | --- | --- |
"""


def review_objects(plan: RenderPlan) -> list[RenderedObject]:
    """What the cluster gets from a review-only source, each in its shard."""
    out: list[RenderedObject] = []
    for item in plan.items:
        if item.raw is None:
            raise ValueError(f"{item.file}: PodCliqueSet {item.key} has no source document")
        obj = copy.deepcopy(item.raw.obj)
        meta = obj.setdefault("metadata", {})
        meta["namespace"] = item.key[0]
        out.append(RenderedObject(f"{item.key[0]}/{item.key[1]}", obj))
    for binding in plan.inputs.bindings.values():
        obj = binding.model_dump(mode="json", exclude_none=True)
        obj.pop("status", None)
        out.append(RenderedObject(CLUSTER_SHARD, obj))
    for passthrough in plan.inputs.source.passthrough:
        ns = (passthrough.obj.get("metadata") or {}).get("namespace")
        out.append(RenderedObject(f"{ns}/_resources" if ns else CLUSTER_SHARD, passthrough.obj))
    return out


def build_review_tree(plan: RenderPlan) -> layout.Tree:
    """The review-only output tree of ``plan`` (same bytes for the same source)."""
    tree = layout.Tree()
    warnings = list(plan.warnings)
    for item in plan.items:
        warnings += item.warnings
    for ro in review_objects(plan):
        layout._check_shard(ro.shard)
        path = f"{ro.shard}/{layout.object_file_name(ro.obj, wave_of(ro.obj, ro.shard == CLUSTER_SHARD))}"
        if path in tree.files:
            meta = ro.obj.get("metadata") or {}
            raise OutputError(f"two objects map to the same output file {path} ({ro.obj.get('kind')} {meta.get('name')})")
        data = dump_object(ro.obj).encode()
        if len(data) > MAX_OBJECT_BYTES:
            raise InvalidInputError([layout._too_large("render", ro.obj, len(data))])
        tree.files[path] = data
        shard, _, name = path.rpartition("/")
        tree.shards.setdefault(shard, []).append(name)
        tree.objects += 1
    namespaces: dict[str, list[str]] = {}
    for shard, names in sorted(tree.shards.items()):
        tree.files[f"{shard}/{layout.KUSTOMIZATION}"] = layout._kustomization(sorted(names))
        if shard != CLUSTER_SHARD:
            ns, sub = shard.split("/", 1)
            namespaces.setdefault(ns, []).append(sub)
    for ns, subs in namespaces.items():
        tree.files[f"{ns}/{layout.KUSTOMIZATION}"] = layout._kustomization(sorted(subs))
    root = ([CLUSTER_SHARD] if CLUSTER_SHARD in tree.shards else []) + sorted(namespaces)
    tree.files[layout.KUSTOMIZATION] = layout._kustomization(root, root=True)
    config = plan.config
    if config.wiring is not None:
        target = wiring.WiringTarget(config.wiring, config.gitops, review=True)
        tree.files.update(wiring.wiring_files(target, tree.files, tree.shards))
    rows = [f"| {ns}/{name} | `{ns}/{name}/` | `{item.file}` |" for item in plan.items for ns, name in [item.key]]
    tree.files["README.md"] = (README + "\n".join(sorted(rows)) + "\n").encode()
    tree.files[META_FILE] = _meta(plan, tree).encode()
    tree.warnings = warnings
    return tree


def _meta(plan: RenderPlan, tree: layout.Tree) -> str:
    """The marker file of a full render (a later render may replace OUT; the loader skips it),
    saying review mode."""
    summary = layout._Summary(plan.config)
    summary.podcliquesets = {item.key: item.file for item in plan.items}
    summary.objects = tree.objects
    data: dict[str, Any] = json.loads(layout._meta(summary, tree))
    data["mode"] = "review"
    return json.dumps(data, indent=2, sort_keys=True) + "\n"
