"""A whole diff: the two sides, their object-level changes and per-shard summaries.

Formatters (:mod:`.markdown`, :mod:`.text`) only lay this out; everything they print is
computed here once, so the Markdown comment and the terminal view never disagree.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from grove_gitops.diff.model import Change, ObjectKey, TreeObject, compare
from grove_gitops.diff.semantic import Counts, ShardSummary, summarize
from grove_gitops.diff.unified import DEFAULT_CONTEXT
from grove_gitops.problems import workload_code
from grove_gitops.yamlfiles.positions import FileData


@dataclass
class Side:
    """One side of the comparison: a label for humans (a ref, a path) and its objects."""

    label: str
    objects: dict[ObjectKey, TreeObject]
    warnings: list[str] = field(default_factory=list)
    #: RenderConfiguration's ``acknowledgedWarnings`` of a source side (``-q`` hides those).
    acknowledged: list[str] = field(default_factory=list)
    #: (namespace, PodCliqueSet) -> update strategy, known for a source side only (a
    #: rendered side carries it in the PodGangs' ``gitops.grove.io/day2`` annotation).
    strategies: dict[tuple[str, str], str] = field(default_factory=dict)
    #: The clusters of a fleet source side (their trees are ``<cluster>/...``); empty otherwise.
    clusters: list[str] = field(default_factory=list)
    #: Shard -> how many objects it holds, for *every* shard of the side. ``objects`` may hold
    #: only the shards that differ from the other side (:func:`grove_gitops.diff.sides.pair_sources`
    #: never parses a shard equal on both); the overview's totals come from here. Derived from
    #: ``objects`` when not given.
    shard_objects: dict[str, int] = field(default_factory=dict)
    #: (namespace, PodGang) -> why it does not fit the source's node inventory (a head source
    #: side with an inventory only): the plan tells a gang a topology change strands.
    unfit_gangs: dict[tuple[str, str], str] = field(default_factory=dict)
    #: file -> warning codes its PodCliqueSets acknowledge (``gitops.grove.io/acknowledge``):
    #: those warnings are reported as acknowledged, not as warnings.
    acknowledged_codes: dict[str, frozenset[str]] = field(default_factory=dict)
    #: The source's files by the name problems give them (a source side only): where
    #: ``--output json`` finds a warning's line and column.
    files: Mapping[str, FileData] = field(default_factory=dict)
    #: The source's RenderConfiguration says ``mode: review``: Grove's operator reconciles its
    #: PodCliqueSets, so ``plan`` predicts Grove's order (:mod:`grove_gitops.plan.groveorder`).
    review: bool = False

    def __post_init__(self) -> None:
        if not self.shard_objects:
            for key in self.objects:
                self.shard_objects[key.shard] = self.shard_objects.get(key.shard, 0) + 1

    @property
    def object_count(self) -> int:
        """Objects of the whole side, parsed or not."""
        return sum(self.shard_objects.values())


@dataclass
class Report:
    base: Side
    head: Side
    shards: list[ShardSummary]

    @property
    def changes(self) -> list[Change]:
        return [c for s in self.shards for c in s.changes]

    @property
    def identical(self) -> bool:
        return not self.shards

    @property
    def all_shards(self) -> set[str]:
        """Every shard with objects on either side (changed or not)."""
        return set(self.base.shard_objects) | set(self.head.shard_objects)

    def new_warnings(self) -> tuple[list[str], list[str]]:
        """Head's warnings that base does not have: those to show as warnings, and those
        their workload acknowledges (``gitops.grove.io/acknowledge``), shown as acknowledged."""
        new = [w for w in self.head.warnings if w not in self.base.warnings]
        acked = [w for w in new if workload_code(w, self.head.acknowledged_codes) is not None]
        return [w for w in new if w not in acked], acked

    def totals(self) -> Counts:
        counts = Counts()
        for c in self.changes:
            counts.add(c)
        return counts

    @property
    def lines_added(self) -> int:
        return sum(s.lines_added for s in self.shards)

    @property
    def lines_removed(self) -> int:
        return sum(s.lines_removed for s in self.shards)


def build_report(base: Side, head: Side, context: int = DEFAULT_CONTEXT) -> Report:
    changes = compare(base.objects, head.objects)
    return Report(base, head, summarize(changes, base.objects, head.objects, context))
