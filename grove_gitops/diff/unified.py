"""Per-object unified diffs (difflib) and the short "what changed" line of their headers.

The diff is of the rendered YAML text, exactly as it is in the output files, so what a
reviewer reads is what Git will hold. A replaced pod is diffed against the pod it replaces
(its predecessor with the same hostname): the reviewer sees the image bump, not two
unrelated 90-line files. The header's field list drops :data:`POD_NOISE_PATHS` (the hash in
the name, the template-hash label and the rendered-by proof), which change on every replacement; the diff body
still shows them.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from grove_gitops.diff.jsonannotations import changed_json_annotations, expand
from grove_gitops.diff.model import Change, ChangeType
from grove_gitops.diff.paths import changed_paths
from grove_gitops.diff.renderinputs import collapse_paths, condense_text

DEFAULT_CONTEXT = 3
#: Fields that change on every pod replacement and say nothing by themselves: the name
#: (hash suffix), Grove's template-hash label and the ownership proof. Hidden from headers, kept in the diff
#: (flux-local's ``strip-attrs`` idea, spec/gitops.md §4.3 / §4.5).
POD_NOISE_PATHS = frozenset({
    "metadata.name",
    "metadata.labels['grove.io/pod-template-hash']",
    "metadata.annotations['gitops.grove.io/rendered-by']",  # the ownership proof binds the name
})


@dataclass(frozen=True)
class ObjectDiff:
    """A change with its unified diff lines (no line terminators) and line counts."""

    change: Change
    lines: tuple[str, ...]
    added: int
    removed: int
    #: Changed field paths for the header (modified / replaced only; noise removed for pods).
    paths: tuple[str, ...]


def object_diff(change: Change, context: int = DEFAULT_CONTEXT) -> ObjectDiff:
    base, head = change.base, change.head
    # The gitops.grove.io PodCliqueSet's render inputs as one line (see .renderinputs).
    # ... and a changed one-line JSON annotation (gitops.grove.io/day2) one field per line.
    names = changed_json_annotations(base.obj, head.obj) if base and head else frozenset()
    old = expand(condense_text(base.key, base.text, base.obj), base.obj, names).splitlines() if base else []
    new = expand(condense_text(head.key, head.text, head.obj), head.obj, names).splitlines() if head else []
    from_label = f"a/{base.path}" if base else "/dev/null"
    to_label = f"b/{head.path}" if head else "/dev/null"
    lines = tuple(difflib.unified_diff(old, new, from_label, to_label, lineterm="", n=context))
    body = lines[2:]
    added = sum(1 for line in body if line.startswith("+"))
    removed = sum(1 for line in body if line.startswith("-"))
    paths: tuple[str, ...] = ()
    if base is not None and head is not None:
        found = changed_paths(base.obj, head.obj)
        if change.type == ChangeType.REPLACED:
            found = [p for p in found if p not in POD_NOISE_PATHS]
        paths = tuple(dict.fromkeys(collapse_paths(found)))
    return ObjectDiff(change, lines, added, removed, paths)
