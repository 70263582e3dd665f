"""``diff --output json``: the report as data a CI script can gate on without parsing Markdown.

Per changed shard: its schedulers (and whether they switched), the PodGangs added, removed
and modified, and one entry per changed object with its kind, namespace and name, the change
type, the changed fields with old and new values and the gang settings among them; a replaced
pod names the pod it replaces and its hostname; an object the GitOps tool deletes and re-creates
on sync (an immutable field, e.g. KAI's Topology levels) carries ``recreatedOnSync`` and the note
``replaced: immutable field``. The rollout plan is the same document
``grove-gitops plan --output json`` prints. docs/diff.md documents it and
``docs/schemas/diff-output.schema.json`` is its JSON Schema.

Sizes are bounded: at most :data:`~grove_gitops.diff.fields.MAX_FIELDS` fields per object
(``fieldsOmitted`` counts the rest), every value cut at
:data:`~grove_gitops.diff.fields.MAX_VALUE_CHARS` characters of JSON (``oldTruncated`` /
``newTruncated``), and at most :data:`MAX_NAMES` gang names per list (the object entries
still list every object).
"""

from __future__ import annotations

from typing import Any

from grove_gitops.diff.autoscaling import shard_dict
from grove_gitops.diff.fields import MAX_FIELDS, bounded, changed_fields, field_dicts
from grove_gitops.diff.model import ChangeType, TreeObject
from grove_gitops.diff.report import Report
from grove_gitops.diff.semantic import Counts, FieldChange, ShardSummary, display_name
from grove_gitops.diff.unified import POD_NOISE_PATHS, ObjectDiff
from grove_gitops.diff.views import is_pcs_shard
from grove_gitops.output.gitopsmeta import RECREATED, recreated_on_sync
from grove_gitops.render import CLUSTER_SHARD

#: Gang names per ``podGangs`` list (a shard may hold hundreds).
MAX_NAMES = 1000
SCHEMA_VERSION = 1


def counts_dict(c: Counts) -> dict[str, int]:
    return {"added": c.added, "removed": c.removed, "modified": c.modified, "replaced": c.replaced}


def shard_type(shard: str) -> str:
    if shard == CLUSTER_SHARD:
        return "cluster"
    return "podCliqueSet" if is_pcs_shard(shard) else "namespace"


def _side(obj: TreeObject | None) -> dict[str, str] | None:
    return None if obj is None else {"name": obj.key.name, "path": obj.path}


def _setting(f: FieldChange) -> dict[str, Any]:
    entry: dict[str, Any] = {"path": f.path, "category": f.category}
    for side, value in (("old", f.old), ("new", f.new)):
        if value is not None:
            entry[side], cut = bounded(value)
            if cut:
                entry[f"{side}Truncated"] = True
    return entry


def object_dict(d: ObjectDiff, settings: list[FieldChange]) -> dict[str, Any]:
    """One changed object: identity, change, both sides' names and files, changed fields."""
    change = d.change
    key = change.key
    entry: dict[str, Any] = {
        "apiVersion": key.api_version,
        "kind": key.kind,
        "namespace": key.namespace,
        "name": key.name,
        "change": change.type.value,
        "base": _side(change.base),
        "head": _side(change.head),
        "lines": {"added": d.added, "removed": d.removed},
    }
    if key.kind == "Pod" and not key.group:
        entry["hostname"] = display_name(change)
    if change.type == ChangeType.REPLACED and change.base is not None:
        entry["replaces"] = change.base.key.name
    if change.type == ChangeType.MODIFIED and change.head is not None and recreated_on_sync(change.head.obj):
        # Argo CD / Flux delete and re-create it (issue 32.3): a script gating on "modified"
        # must be able to tell that no update in place happens, as the text and Markdown say.
        entry["recreatedOnSync"] = True
        entry["note"] = RECREATED
    if change.base is not None and change.head is not None:
        skip = POD_NOISE_PATHS if change.type == ChangeType.REPLACED else frozenset()
        fields, omitted = field_dicts(changed_fields(change.base.obj, change.head.obj), skip)
        entry["fields"] = fields
        if omitted:
            entry["fieldsOmitted"] = omitted
    if settings:
        entry["settings"] = [_setting(f) for f in settings[:MAX_FIELDS]]
    return entry


def shard_json(s: ShardSummary) -> dict[str, Any]:
    by_key: dict[Any, list[FieldChange]] = {}
    for f in s.fields:
        by_key.setdefault(f.key, []).append(f)
    return {
        "shard": s.shard,
        "type": shard_type(s.shard),
        "schedulers": {"base": s.schedulers_base, "head": s.schedulers_head, "switched": s.scheduler_switched},
        "podGangs": {t.value: s.gangs.get(t, [])[:MAX_NAMES] for t in (ChangeType.ADDED, ChangeType.REMOVED, ChangeType.MODIFIED)},
        "counts": {
            "gangObjects": counts_dict(s.gang_objects),
            "pods": counts_dict(s.pods),
            "others": counts_dict(s.others),
        },
        "objects": [object_dict(d, by_key.get(d.change.key, [])) for d in s.diffs],
    }


def report_dict(report: Report, plan: dict[str, Any] | None, plan_error: str = "") -> dict[str, Any]:
    """The structured keys of ``diff --output json`` (the caller adds ``ok`` and ``problems``).

    ``plan`` is :func:`grove_gitops.plan.formats.plan_dict` of the report's plan, or None with
    ``plan_error`` saying why it could not be computed.
    """
    totals = report.totals()
    return {
        "schemaVersion": SCHEMA_VERSION,
        "base": report.base.label,
        "head": report.head.label,
        "identical": report.identical,
        "totals": counts_dict(totals),
        "shards": [shard_json(s) for s in report.shards],
        "autoscaling": [shard_dict(s.shard, s.autoscaling) for s in report.shards if s.autoscaling is not None],
        "plan": plan if plan is not None else {"error": plan_error},
    }
