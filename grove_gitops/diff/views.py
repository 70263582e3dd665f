"""Wording shared by the Markdown and plain-text views, so both say the same thing.

Helpers take a ``wrap`` function for names and values: Markdown wraps them in code spans,
the terminal view leaves them bare.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from grove_gitops.diff.autoscaling import (
    AGENT_NOTE,
    BASE_GANG_NOTE,
    FLOOR_NOTE,
    LIVE_NOTE,
    MAX_UNITS,
    Bounds,
    ShardAutoscaling,
    UnitChange,
    agent_owned,
    git_owned,
)
from grove_gitops.diff.model import Change, ChangeType
from grove_gitops.diff.semantic import Category, Counts, ShardSummary, display_name
from grove_gitops.expand.scaling import PCLQ_KIND
from grove_gitops.output.gitopsmeta import RECREATED, recreated_on_sync
from grove_gitops.render import CLUSTER_SHARD

Wrap = Callable[[str], str]
#: Caps that keep one shard's summary readable (the diffs below it still list everything).
MAX_FIELD_ROWS = 40
MAX_NAMES = 10
MAX_PATHS = 4

#: How a modified object the render marks for re-creation on sync is applied (issue 32.3).

SYMBOL = {
    ChangeType.ADDED: "+",
    ChangeType.REMOVED: "−",
    ChangeType.MODIFIED: "±",
    ChangeType.REPLACED: "⇄",
}


def bare(text: str) -> str:
    return text


def is_pcs_shard(shard: str) -> bool:
    """``ns/pcs`` shards hold one PodCliqueSet; ``_cluster`` and ``ns/_resources`` do not."""
    return shard != CLUSTER_SHARD and "/" in shard and not shard.endswith("/_resources")


def shard_title(shard: str, wrap: Wrap = bare) -> str:
    if shard == CLUSTER_SHARD:
        return f"cluster-scoped objects ({wrap(shard)})"
    if shard.endswith("/_resources"):
        return f"other objects of namespace {wrap(shard.split('/', 1)[0])} ({wrap(shard)})"
    return wrap(shard) if shard else wrap(".")


def counts_text(c: Counts) -> str:
    """``+1 −2 ~3 ⇄4`` (added, removed, modified, replaced); ``—`` when nothing changed."""
    parts = []
    if c.added:
        parts.append(f"+{c.added}")
    if c.removed:
        parts.append(f"−{c.removed}")
    if c.modified:
        parts.append(f"~{c.modified}")
    if c.replaced:
        parts.append(f"⇄{c.replaced}")
    return " ".join(parts) or "—"


def gang_counts(s: ShardSummary) -> Counts:
    return Counts(
        added=len(s.gangs.get(ChangeType.ADDED, [])),
        removed=len(s.gangs.get(ChangeType.REMOVED, [])),
        modified=len(s.gangs.get(ChangeType.MODIFIED, [])),
    )


def scheduler_text(s: ShardSummary, wrap: Wrap = bare) -> str:
    base = ", ".join(wrap(n) for n in s.schedulers_base)
    head = ", ".join(wrap(n) for n in s.schedulers_head)
    if s.scheduler_switched:
        return f"{base} → {head}"
    return head or base or "—"


def settings_text(s: ShardSummary) -> str:
    """How many gang settings changed, by category: ``size 2, topology 1``."""
    return ", ".join(f"{name} {n}" for name, n in s.categories().items()) or "—"


#: What the overview's "gang settings" column counts (``size 5, queue 3, topology 5``).
SETTINGS_LEGEND = (
    "gang settings = changed settings of gang objects present on both sides, by kind: size (gang minimums "
    "such as minMember, minReplicas), queue, priority (priorityClassName), topology"
)


def category_text(counts: Mapping[Category, int]) -> str:
    return ", ".join(f"{name} {n}" for name, n in counts.items())


def whole_objects_text(s: ShardSummary, wrap: Wrap = bare) -> str:
    """``PodGang ml/x-0 (added: size 2), …``: added / removed objects' settings, one entry
    each instead of a "— → value" row per field; at most :data:`MAX_NAMES`."""
    items = s.whole_objects()
    shown = [
        f"{wrap(k.kind_label)} {wrap(k.object_label)} ({t.value}: {category_text(c)})"
        for k, t, c in items[:MAX_NAMES]
    ]
    more = len(items) - MAX_NAMES
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def names_text(names: list[str], wrap: Wrap = bare) -> str:
    shown = ", ".join(wrap(n) for n in names[:MAX_NAMES])
    more = len(names) - MAX_NAMES
    return shown + (f" and {more} more" if more > 0 else "")


def paths_text(paths: list[str], wrap: Wrap = bare) -> str:
    more = len(paths) - MAX_PATHS
    return ", ".join(wrap(p) for p in paths[:MAX_PATHS]) + (f" and {more} more" if more > 0 else "")


def _replaced_paths(s: ShardSummary, wrap: Wrap) -> str:
    """What the replaced pods have in common: the union of their changed fields."""
    paths: dict[str, None] = {}
    for d in s.diffs:
        if d.change.type == ChangeType.REPLACED:
            paths.update(dict.fromkeys(d.paths))
    return paths_text(list(paths), wrap) if paths else "name and hash only"


def summary_bullets(s: ShardSummary, wrap: Wrap = bare, strong: Wrap = bare) -> list[str]:
    """The semantic summary of one shard as short lines, most consequential first."""
    bullets = []
    if s.scheduler_switched:
        bullets.append(f"{strong('Scheduler switch:')} {scheduler_text(s, wrap)}")
    for change_type in (ChangeType.ADDED, ChangeType.REMOVED, ChangeType.MODIFIED):
        names = s.gangs.get(change_type, [])
        if names:
            bullets.append(f"{strong(f'PodGangs {change_type.value} ({len(names)}):')} {names_text(names, wrap)}")
    if s.gang_objects.total:
        bullets.append(f"{strong('Scheduler gang / topology objects:')} {counts_text(s.gang_objects)}")
    pods = [c for c in s.changes if c.key.kind == "Pod" and not c.key.group]
    for change_type, label in (
        (ChangeType.ADDED, "added"),
        (ChangeType.REMOVED, "removed"),
        (ChangeType.REPLACED, "replaced"),
        (ChangeType.MODIFIED, "modified in place"),
    ):
        names = [
            display_name(c) if change_type == ChangeType.REPLACED else c.key.name for c in pods if c.type == change_type
        ]
        if names:
            what = (
                f"Pods {label} ({len(names)}), by hostname:"
                if change_type == ChangeType.REPLACED
                else f"Pods {label} ({len(names)}):"
            )
            line = f"{strong(what)} {names_text(names, wrap)}"
            if change_type == ChangeType.REPLACED:
                line += f"; changed fields: {_replaced_paths(s, wrap)}"
            bullets.append(line)
    if s.others.total:
        bullets.append(f"{strong('Other objects:')} {counts_text(s.others)}")
    return bullets


def change_words(
    change: Change, added: int, removed: int, paths: tuple[str, ...], wrap: Wrap = bare, esc: Wrap = bare
) -> list[str]:
    """``[what, how, +a −r, changed fields]`` for an object's diff header; ``esc`` escapes the
    bare names (HTML in a Markdown ``<summary>``)."""
    key = change.key
    words = [f"{SYMBOL[change.type]} {wrap(key.kind_label)} {esc(key.object_label)}", change.type.value]
    if change.type == ChangeType.REPLACED and change.base is not None:
        words[1] = f"replaces {esc(change.base.key.name)}"
    elif change.type == ChangeType.MODIFIED and change.head is not None and recreated_on_sync(change.head.obj):
        words[1] = RECREATED  # Argo CD / Flux delete and re-create it: not an update in place
    words.append(f"+{added} −{removed}")
    if paths:
        words.append(paths_text(list(paths), wrap))
    elif change.type == ChangeType.REPLACED:
        words.append("name and hash only")
    return words


AUTOSCALING_HEADER = ["scale target", "kind", "floor", "max", "metrics (HPA)", "Git holds", "the agent creates", "change"]


def _moved(u: UnitChange, value: str) -> str:
    """``old → new`` of one bound when it changed, else its value."""
    b, h = u.base, u.head
    if b is None or h is None:
        return str(getattr(u.current, value))
    old, new = getattr(b, value), getattr(h, value)
    return f"{old} → {new}" if old != new else str(new)


def _metrics(b: Bounds, wrap: Wrap) -> str:
    return wrap(b.metrics) if b.metrics is not None else "no HPA"


def autoscaling_rows(a: ShardAutoscaling, wrap: Wrap = bare) -> list[list[str]]:
    """One row per scale target (at most :data:`MAX_UNITS`): the head's bounds (the base's
    for a removed target), moved bounds as ``old → new``, and what changed."""
    rows = []
    for u in a.units[:MAX_UNITS]:
        b = u.current
        rows.append(
            [
                wrap(u.name),
                b.kind,
                _moved(u, "floor"),
                _moved(u, "maximum"),
                _metrics(b, wrap),
                git_owned(b),
                agent_owned(b),
                "; ".join(u.changes()) or "—",
            ]
        )
    return rows


def autoscaling_notes(a: ShardAutoscaling, wrap: Wrap = bare) -> list[str]:
    """The sentences under the table: who creates which replica, floor moves, render inputs."""
    notes: list[str] = []
    if len(a.units) > MAX_UNITS:
        notes.append(f"{len(a.units) - MAX_UNITS} more scale targets not listed (see the HPA diffs).")
    if a.units:
        notes.append(f"{AGENT_NOTE} {LIVE_NOTE}")
    if any(u.current.kind == PCLQ_KIND and u.change in ("added", "removed") for u in a.units):
        notes.append(BASE_GANG_NOTE)
    moved = [u for u in a.units if u.floor_moved]
    if moved:
        notes.append(FLOOR_NOTE)
        notes += [f"{wrap(u.name)}: {u.floor_move()}." for u in moved[:MAX_NAMES]]
        if len(moved) > MAX_NAMES:
            notes.append(f"… and {len(moved) - MAX_NAMES} more scale targets whose floor moved.")
    if a.inputs:
        shown = []
        for c in a.inputs[:MAX_NAMES]:
            detail = f" ({paths_text(list(c.paths), wrap)})" if c.paths else ""
            shown.append(f"{wrap(c.document)} {c.how}{detail}")
        more = len(a.inputs) - MAX_NAMES
        notes.append(
            "Render inputs changed (spec.source of the gitops.grove.io PodCliqueSet, what the agent renders "
            f"from; condensed to one line in its diff): {'; '.join(shown)}" + (f"; and {more} more" if more > 0 else "")
        )
    return notes
